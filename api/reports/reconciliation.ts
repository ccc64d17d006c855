/**
 * Financial reconciliation: each sale that involves money (CONFIRMED or REFUNDED, or any gateway attempt) set
 * against what the gateways did with it, from the recorded payment attempts as the database folds them per sale while
 * they are written (sale_payment_totals; the folding rules are its SQL function, see that migration):
 *   charged    Σ distinct approved payments (the amount the gateway reported, else the sale's total, which is the
 *              only amount the checkout ever accepts);
 *   refunded   Σ refunds the gateway reports done; refundsPending counts those still in flight;
 *   expected   what the organizer keeps at the gateway: the total of a CONFIRMED sale paid through a gateway, else 0;
 *   mismatch   charged − refunded ≠ expected, a refund still in flight, or gateway B re-notifying a confirmed charge
 *              (how it reports refunds, contract part 2).
 * Everything is one statement of hash joins, so the totals and the page come from the same rows.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { SALE_STATUSES } from '../../domain/sale-state.js';
import type { ExportColumnKind, ExportSource } from './exports.js';
import { BooleanParam, checkRange, RANGE_SHAPE, type Scope, saleConditions } from './filters.js';
import { run } from './queries.js';
import { raw, type Sql, sql } from './sql.js';

export const ReconciliationQuery = z
  .object({
    ...RANGE_SHAPE,
    status: z.enum(SALE_STATUSES).optional(),
    mismatch: BooleanParam.optional().meta({ description: 'true: only sales flagged as a mismatch' }),
  })
  .superRefine(checkRange);
export type ReconciliationFilters = z.infer<typeof ReconciliationQuery>;

export const MISMATCH_REASONS = [
  'refund_in_flight',
  'confirmed_without_payment',
  'money_kept_without_sale',
  'amount_differs',
  'gateway_renotified',
] as const;
export type MismatchReason = (typeof MISMATCH_REASONS)[number];

/** The sale's own columns a row shows beside the money. */
const SALE_COLUMNS = raw('s.reference, s.channel, s.payment_provider, s.payment_ref, s.created_at, s.confirmed_at');

/**
 * The per-sale rows of the filter (without any page position), computed once per statement: the totals and the
 * page of one request come from the same rows. `withSaleColumns` carries the sale's own columns in every row (an
 * export shows thousands of them); a page joins them to its few rows instead.
 */
function reconciledRows(scope: Scope, filters: ReconciliationFilters, withSaleColumns = false): Sql {
  const mismatchOnly =
    filters.mismatch === undefined ? raw('true') : filters.mismatch ? raw('reason is not null') : raw('reason is null');
  // The attempts are folded per sale as they are written (sale_payment_totals, kept by the database in the same
  // transaction as each attempt): one hash join of two narrow tables, whatever the period.
  return sql`select r.*, r.reason is not null as mismatch from (
      select m.*, m.charged - m.refunded as net,
             case when m.pending > 0 then 'refund_in_flight'
                  when m.expected > 0 and m.charged = 0 then 'confirmed_without_payment'
                  when m.charged - m.refunded > 0 and m.expected = 0 then 'money_kept_without_sale'
                  when m.charged - m.refunded <> m.expected then 'amount_differs'
                  when m.status = 'CONFIRMED' and m.payment_status = 'FT_SALE_APPROVED_POST_CONFIRM' then 'gateway_renotified'
             end as reason
        from (select s.id, s.status, s.payment_status, s.total, coalesce(p.approved_payments, 0) as payments,
                     coalesce(p.charged, 0) as charged, coalesce(p.refunded, 0) as refunded,
                     coalesce(p.refunds_pending, 0) as pending,
                     case when s.status = 'CONFIRMED' and s.payment_provider is not null and s.payment_ref is not null
                          then s.total else 0 end as expected${withSaleColumns ? sql`, ${SALE_COLUMNS}` : raw('')}
                from sales s left join sale_payment_totals p on p.sale_id = s.id
               where ${saleConditions(scope, filters)}
                 and (s.status in ('CONFIRMED', 'REFUNDED') or p.sale_id is not null)) m) r
     where ${mismatchOnly}`;
}

/**
 * The newest `limit` rows (after the keyset position `after`), newest first, with the sale's own columns joined to
 * those rows alone (carried through every row, the wide columns were most of the work of the mismatch filter).
 */
const pageOf = (page: { limit: number; after?: string | undefined }): Sql =>
  sql`select p.*, ${SALE_COLUMNS}
        from (select r.* from reconciled r ${page.after ? sql`where r.id < ${page.after}` : raw('')}
               order by r.id desc limit ${page.limit}) p
        join sales s on s.id = p.id`;

type Numeric = string | number | null;

interface RawRow {
  id: string;
  reference: string;
  status: string;
  channel: string;
  payment_provider: string | null;
  payment_ref: string | null;
  total: number;
  created_at: Date;
  confirmed_at: Date | null;
  payments: Numeric;
  charged: Numeric;
  refunded: Numeric;
  pending: Numeric;
  expected: Numeric;
  net: Numeric;
  mismatch: boolean;
  reason: MismatchReason | null;
}

export interface ReconciliationRow {
  saleId: string;
  reference: string;
  status: string;
  channel: string;
  gateway: string | null;
  paymentRef: string | null;
  createdAt: string;
  confirmedAt: string | null;
  total: number;
  /** The sale's total when it is CONFIRMED (any channel), else 0. */
  confirmedAmount: number;
  approvedPayments: number;
  charged: number;
  refunded: number;
  refundsPending: number;
  expectedAtGateway: number;
  netAtGateway: number;
  mismatch: boolean;
  mismatchReason: MismatchReason | null;
}

export function toReconciliationRow(row: RawRow): ReconciliationRow {
  return {
    saleId: row.id,
    reference: row.reference,
    status: row.status,
    channel: row.channel,
    gateway: row.payment_provider,
    paymentRef: row.payment_ref,
    createdAt: new Date(row.created_at).toISOString(),
    confirmedAt: row.confirmed_at ? new Date(row.confirmed_at).toISOString() : null,
    total: Number(row.total),
    confirmedAmount: row.status === 'CONFIRMED' ? Number(row.total) : 0,
    approvedPayments: Number(row.payments ?? 0),
    charged: Number(row.charged ?? 0),
    refunded: Number(row.refunded ?? 0),
    refundsPending: Number(row.pending ?? 0),
    expectedAtGateway: Number(row.expected ?? 0),
    netAtGateway: Number(row.net ?? 0),
    mismatch: row.mismatch,
    mismatchReason: row.reason,
  };
}

export interface ReconciliationTotals {
  sales: number;
  confirmedAmount: number;
  charged: number;
  refunded: number;
  refundsPending: number;
  expectedAtGateway: number;
  netAtGateway: number;
  mismatches: number;
}

/**
 * The totals over the filter and one page of it, newest sale first (`after` is the keyset position: the last sale id
 * of the previous page), from one statement. Every row carries the totals (prefixed `total_`); when the page is
 * empty, one row carries them alone.
 */
export async function reconciliation(
  em: EntityManager,
  scope: Scope,
  filters: ReconciliationFilters,
  page: { limit: number; after?: string | undefined },
): Promise<{ totals: ReconciliationTotals; rows: ReconciliationRow[] }> {
  const rows = await run<RawRow & Record<`total_${keyof ReconciliationTotals}`, Numeric>>(
    em,
    sql`with reconciled as materialized (${reconciledRows(scope, filters)}),
        totals as (
          select count(*) as "total_sales",
                 coalesce(sum(t.total) filter (where t.status = 'CONFIRMED'), 0) as "total_confirmedAmount",
                 coalesce(sum(t.charged), 0) as "total_charged", coalesce(sum(t.refunded), 0) as "total_refunded",
                 coalesce(sum(t.pending), 0) as "total_refundsPending",
                 coalesce(sum(t.expected), 0) as "total_expectedAtGateway",
                 coalesce(sum(t.net), 0) as "total_netAtGateway",
                 count(*) filter (where t.mismatch) as "total_mismatches"
            from reconciled t),
        page as (${pageOf(page)})
      select totals.*, page.* from totals left join page on true order by page.id desc`,
  );
  const first = rows[0];
  const total = (column: keyof ReconciliationTotals): number => Number(first?.[`total_${column}`] ?? 0);
  const totals: ReconciliationTotals = {
    sales: total('sales'),
    confirmedAmount: total('confirmedAmount'),
    charged: total('charged'),
    refunded: total('refunded'),
    refundsPending: total('refundsPending'),
    expectedAtGateway: total('expectedAtGateway'),
    netAtGateway: total('netAtGateway'),
    mismatches: total('mismatches'),
  };
  return { totals, rows: rows.filter((row) => row.id !== null).map(toReconciliationRow) };
}

/** The CSV export of the same rows, newest first (streamed and capped by exports.ts). */
export function reconciliationSource(scope: Scope, filters: ReconciliationFilters): ExportSource {
  return {
    name: 'reconciliation',
    columns: [
      ['saleId', 'text'],
      ['reference', 'text'],
      ['status', 'text'],
      ['channel', 'text'],
      ['gateway', 'text'],
      ['paymentRef', 'text'],
      ['createdAt', 'time'],
      ['confirmedAt', 'time'],
      ['total', 'number'],
      ['confirmedAmount', 'number'],
      ['approvedPayments', 'number'],
      ['charged', 'number'],
      ['refunded', 'number'],
      ['refundsPending', 'number'],
      ['expectedAtGateway', 'number'],
      ['netAtGateway', 'number'],
      ['mismatch', 'boolean'],
      ['mismatchReason', 'text'],
    ] satisfies ReadonlyArray<readonly [keyof ReconciliationRow, ExportColumnKind]>,
    cursorColumn: 'saleId',
    cursorOrder: 'desc',
    query: (limit, after) => sql`
      select x.id as "saleId", x.reference as "reference", x.status as "status", x.channel as "channel",
             x.payment_provider as "gateway", x.payment_ref as "paymentRef", x.created_at as "createdAt",
             x.confirmed_at as "confirmedAt", x.total as "total",
             case when x.status = 'CONFIRMED' then x.total else 0 end as "confirmedAmount",
             x.payments as "approvedPayments", x.charged as "charged", x.refunded as "refunded",
             x.pending as "refundsPending", x.expected as "expectedAtGateway", x.net as "netAtGateway",
             x.mismatch as "mismatch", x.reason as "mismatchReason"
        from (${reconciledRows(scope, filters, true)}) x
       ${after === null ? sql`` : sql`where x.id < ${after}`}
       order by x.id desc
       limit ${limit}`,
  };
}
