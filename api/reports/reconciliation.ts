/**
 * Financial reconciliation: each sale that involves money (CONFIRMED or REFUNDED, or any gateway attempt) set
 * against what the gateways did with it, from the recorded payment attempts:
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
import { joinSql, raw, type Sql, sql } from './sql.js';

export const ReconciliationQuery = z
  .object({
    ...RANGE_SHAPE,
    status: z.enum(SALE_STATUSES).optional(),
    mismatch: BooleanParam.optional().meta({ description: 'true: only sales flagged as a mismatch' }),
  })
  .superRefine(checkRange);
export type ReconciliationFilters = z.infer<typeof ReconciliationQuery>;

/** Gateway A and B spell "approved" differently in what the checkout records (as the reconciler reads them). */
const APPROVED = raw(`((a.gateway = 'GATEWAY_A' and a.status = 'approved')
  or (a.gateway = 'GATEWAY_B' and a.status in ('APPROVED', 'SALE_APPROVED')))`);
/** One payment: its provider id, or the sale on that gateway when the gateway gave none. */
const PAYMENT_KEY = raw(`coalesce(a.provider_payment_id, a.gateway || ':' || a.sale_id)`);

export const MISMATCH_REASONS = [
  'refund_in_flight',
  'confirmed_without_payment',
  'money_kept_without_sale',
  'amount_differs',
  'gateway_renotified',
] as const;
export type MismatchReason = (typeof MISMATCH_REASONS)[number];

/**
 * The per-sale rows, filtered. Without a page, the money columns only (what the totals add up); with one, the
 * newest `limit` rows (after the keyset position `after`), newest first, with the sale's own columns joined to
 * those rows alone: carried through every row, the wide columns were most of the work of the mismatch filter.
 */
function reconciled(
  scope: Scope,
  filters: ReconciliationFilters,
  page?: { limit: number; after?: string | undefined },
): Sql {
  const after = page?.after;
  const where = joinSql([saleConditions(scope, filters), ...(after ? [sql`s.id < ${after}`] : [])], ' and ');
  const mismatchOnly =
    filters.mismatch === undefined ? raw('true') : filters.mismatch ? raw('r.mismatch') : raw('not r.mismatch');
  // One pass over the attempts groups them per payment (approval and refund of one payment land together, so a
  // refund without an amount takes its payment's), a second folds payments per sale; both are hash aggregates.
  return sql`with payments as (
      select a.sale_id, max(s.total) as total,
             bool_or(a.kind <> 'REFUND' and ${APPROVED}) as approved,
             max(a.amount) filter (where a.kind <> 'REFUND' and ${APPROVED}) as approved_amount,
             bool_or(a.kind = 'REFUND') as refund_asked,
             bool_or(a.kind = 'REFUND' and a.status = 'refunded') as refund_done,
             max(a.amount) filter (where a.kind = 'REFUND') as refund_amount
        from payment_attempts a join sales s on s.id = a.sale_id
       where ${where}
       group by a.sale_id, ${PAYMENT_KEY}),
    per_sale as (
      select sale_id, count(*) filter (where approved) as payments,
             coalesce(sum(coalesce(approved_amount, total)) filter (where approved), 0) as charged,
             coalesce(sum(coalesce(refund_amount, approved_amount, total)) filter (where refund_done), 0) as refunded,
             count(*) filter (where refund_asked and not refund_done) as pending
        from payments group by sale_id),
    -- Materialized: with order by id and a limit on top the planner would walk sales by id and re-aggregate the
    -- attempts for each one (a nested loop), and under the totals each parallel worker would aggregate them all
    -- again; computed once, it is one hash join whatever the page.
    money as materialized (
      select s.id, s.status, s.payment_status, s.total, coalesce(p.payments, 0) as payments,
             coalesce(p.charged, 0) as charged, coalesce(p.refunded, 0) as refunded, coalesce(p.pending, 0) as pending,
             case when s.status = 'CONFIRMED' and s.payment_provider is not null and s.payment_ref is not null
                  then s.total else 0 end as expected
        from sales s left join per_sale p on p.sale_id = s.id
       where ${where} and (s.status in ('CONFIRMED', 'REFUNDED') or p.sale_id is not null)),
    reasoned as (
      select m.*, m.charged - m.refunded as net,
             case when m.pending > 0 then 'refund_in_flight'
                  when m.expected > 0 and m.charged = 0 then 'confirmed_without_payment'
                  when m.charged - m.refunded > 0 and m.expected = 0 then 'money_kept_without_sale'
                  when m.charged - m.refunded <> m.expected then 'amount_differs'
                  when m.status = 'CONFIRMED' and m.payment_status = 'FT_SALE_APPROVED_POST_CONFIRM' then 'gateway_renotified'
             end as reason
        from money m),
    reconciled as (select r.*, r.reason is not null as mismatch from reasoned r)
    ${
      page
        ? sql`select r.*, s.reference, s.channel, s.payment_provider, s.payment_ref, s.created_at, s.confirmed_at
                from (select r.* from reconciled r where ${mismatchOnly} order by r.id desc limit ${page.limit}) r
                join sales s on s.id = r.id
               order by r.id desc`
        : sql`select r.* from reconciled r where ${mismatchOnly}`
    }`;
}

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

export async function reconciliationTotals(
  em: EntityManager,
  scope: Scope,
  filters: ReconciliationFilters,
): Promise<ReconciliationTotals> {
  const [row] = await run<Record<keyof ReconciliationTotals, Numeric>>(
    em,
    sql`select count(*) as "sales",
               coalesce(sum(t.total) filter (where t.status = 'CONFIRMED'), 0) as "confirmedAmount",
               coalesce(sum(t.charged), 0) as "charged", coalesce(sum(t.refunded), 0) as "refunded",
               coalesce(sum(t.pending), 0) as "refundsPending", coalesce(sum(t.expected), 0) as "expectedAtGateway",
               coalesce(sum(t.net), 0) as "netAtGateway", count(*) filter (where t.mismatch) as "mismatches"
          from (${reconciled(scope, filters)}) t`,
  );
  return {
    sales: Number(row?.sales ?? 0),
    confirmedAmount: Number(row?.confirmedAmount ?? 0),
    charged: Number(row?.charged ?? 0),
    refunded: Number(row?.refunded ?? 0),
    refundsPending: Number(row?.refundsPending ?? 0),
    expectedAtGateway: Number(row?.expectedAtGateway ?? 0),
    netAtGateway: Number(row?.netAtGateway ?? 0),
    mismatches: Number(row?.mismatches ?? 0),
  };
}

/** One page, newest sale first; `after` is the keyset position (the last sale id of the previous page). */
export async function reconciliationPage(
  em: EntityManager,
  scope: Scope,
  filters: ReconciliationFilters,
  page: { limit: number; after?: string | undefined },
): Promise<ReconciliationRow[]> {
  const rows = await run<RawRow>(em, reconciled(scope, filters, page));
  return rows.map(toReconciliationRow);
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
    query: (limit) => sql`
      select x.id as "saleId", x.reference as "reference", x.status as "status", x.channel as "channel",
             x.payment_provider as "gateway", x.payment_ref as "paymentRef", x.created_at as "createdAt",
             x.confirmed_at as "confirmedAt", x.total as "total",
             case when x.status = 'CONFIRMED' then x.total else 0 end as "confirmedAmount",
             x.payments as "approvedPayments", x.charged as "charged", x.refunded as "refunded",
             x.pending as "refundsPending", x.expected as "expectedAtGateway", x.net as "netAtGateway",
             x.mismatch as "mismatch", x.reason as "mismatchReason"
        from (${reconciled(scope, filters, { limit })}) x
       order by x.id desc`,
  };
}
