/**
 * What the reconciler reports to people rather than fixes itself: refunds asked for long ago that the gateway has not
 * confirmed, and refunds of sales a sent settlement already paid out that no later settlement carries yet. The
 * reconciler's run counts, logs and gauges them (activities/reconciler.ts); operators list them with
 * `npx tsx scripts/operator-reconciler.ts …`. Plain reads, shared by both so they always agree.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * REFUND attempt statuses that mean the money is back with the buyer: gateway A's `refunded` (the checkout's and the
 * organizer's refunds), gateway B's void (its refund), and an organizer's refund made outside the gateways. Anything
 * else (`requested`, `refund_refused`, a gateway's in-between state) is money still owed.
 */
export const REFUND_DONE_STATUSES = ['refunded', 'VOIDED', 'VOID_APPROVED', 'FT_REFUNDED_OFFLINE'] as const;
export const REFUND_DONE_SQL = `(${REFUND_DONE_STATUSES.map((status) => `'${status}'`).join(', ')})`;

/** A refund still not done this long after it was asked for is one an operator should look at. */
export const REFUND_OVERDUE_AFTER_MS = 60 * 60_000;

export interface OverdueRefund {
  saleId: string;
  reference: string;
  workspaceId: string;
  saleStatus: string;
  gateway: string;
  providerPaymentId: string | null;
  /** The latest recorded state of the refund: `requested`, `refund_refused`, … */
  refundStatus: string | null;
  /** Why it was asked for (second_charge, late_no_stock, …), as the checkout recorded it. */
  reason: string | null;
  requestedAt: string;
  amount: number | null;
  currency: string;
}

interface OverdueRefundRow {
  sale_id: string;
  reference: string;
  workspace_id: string;
  sale_status: string;
  gateway: string;
  provider_payment_id: string | null;
  refund_status: string | null;
  reason: string | null;
  requested_at: string;
  amount: number | null;
  currency: string;
}

export interface ListingScope {
  workspaceId: string | null;
  limit: number;
}

/**
 * Refunds (one per sale and payment) first asked for more than `olderThanMs` ago with no REFUND attempt of that
 * payment in a done status, oldest first. Only REFUND rows not done are read (payment_attempts_refund_open_index):
 * a refund with a done row is not listed whatever its other rows say, so the done rows, which pile up with every
 * refund ever made, are never scanned.
 */
export async function listOverdueRefunds(
  em: EntityManager,
  scope: ListingScope & { olderThanMs: number },
): Promise<OverdueRefund[]> {
  const filter = scope.workspaceId ? { sql: 'and s.workspace_id = ?', params: [scope.workspaceId] } : null;
  // Refunds are grouped from their open rows first; each group's sale is then read by its key (a lateral `limit 1`,
  // never a hash of every sale). A group's amount is the largest of its rows' amounts and, where a row has none, the
  // sale's total.
  const rows = await em.execute<OverdueRefundRow[]>(
    `with owed as (
       select r.sale_id, r.gateway, r.provider_payment_id,
              (array_agg(r.status order by r.created_at desc))[1] as refund_status,
              (array_agg(r.status_detail order by r.created_at))[1] as reason,
              min(r.created_at) as requested_at, max(r.amount) as amount, bool_or(r.amount is null) as some_without_amount
         from payment_attempts r
        where r.kind = 'REFUND' and (r.status is null or r.status not in ${REFUND_DONE_SQL})
          and not exists (select 1 from payment_attempts d
                           where d.kind = 'REFUND' and d.sale_id = r.sale_id
                             and d.provider_payment_id is not distinct from r.provider_payment_id
                             and d.status in ${REFUND_DONE_SQL})
        group by r.sale_id, r.gateway, r.provider_payment_id
       having min(r.created_at) < ?)
     select owed.sale_id, s.reference, s.workspace_id, s.status as sale_status, owed.gateway, owed.provider_payment_id,
            owed.refund_status, owed.reason, owed.requested_at,
            case when owed.some_without_amount then greatest(owed.amount, s.total) else owed.amount end as amount,
            s.currency
       from owed
       join lateral (select s.reference, s.workspace_id, s.status, s.total, s.currency from sales s
                      where s.id = owed.sale_id ${filter?.sql ?? ''} limit 1) s on true
      order by owed.requested_at limit ?`,
    [new Date(Date.now() - scope.olderThanMs), ...(filter?.params ?? []), scope.limit],
  );
  return rows.map((row) => ({
    saleId: row.sale_id,
    reference: row.reference,
    workspaceId: row.workspace_id,
    saleStatus: row.sale_status,
    gateway: row.gateway,
    providerPaymentId: row.provider_payment_id,
    refundStatus: row.refund_status,
    reason: row.reason,
    requestedAt: new Date(row.requested_at).toISOString(),
    amount: row.amount === null ? null : Number(row.amount),
    currency: row.currency,
  }));
}

export interface UnappliedAdjustment {
  workspaceId: string;
  saleId: string;
  saleReference: string;
  /** The sent settlement that paid the sale out. */
  settlementId: string;
  settlementReference: string;
  /** Signed minor units the next settlement of the workspace will carry (negative: the organizer owes it). */
  amount: number;
  currency: string;
  refundedAt: string | null;
}

interface UnappliedAdjustmentRow {
  workspace_id: string;
  sale_id: string;
  sale_reference: string;
  settlement_id: string;
  settlement_reference: string;
  amount: number;
  currency: string;
  refunded_at: string | null;
}

/**
 * Sales refunded after a sent settlement paid them out that no settlement carries yet: only the workspace's next
 * settlement applies them (activities/settlements.ts `claimAdjustments`), and an organizer with no further event
 * never has one. Oldest refund first.
 */
export async function listUnappliedAdjustments(em: EntityManager, scope: ListingScope): Promise<UnappliedAdjustment[]> {
  const filter = scope.workspaceId ? { sql: 'and st.workspace_id = ?', params: [scope.workspaceId] } : null;
  const rows = await em.execute<UnappliedAdjustmentRow[]>(
    `select st.workspace_id, ss.sale_id, s.reference as sale_reference, st.id as settlement_id,
            st.reference as settlement_reference, coalesce(a.amount, -ss.net) as amount, st.currency,
            s.closed_at as refunded_at
       from settlement_sales ss
       join settlements st on st.id = ss.settlement_id
       join sales s on s.id = ss.sale_id
       left join settlement_adjustments a on a.sale_id = ss.sale_id
      where st.status in ('SENT', 'AWAITING_PAYMENT', 'PAID') and s.status = 'REFUNDED'
        and a.applied_settlement_id is null
        ${filter?.sql ?? ''}
      order by s.closed_at nulls first, ss.sale_id limit ?`,
    [...(filter?.params ?? []), scope.limit],
  );
  return rows.map((row) => ({
    workspaceId: row.workspace_id,
    saleId: row.sale_id,
    saleReference: row.sale_reference,
    settlementId: row.settlement_id,
    settlementReference: row.settlement_reference,
    amount: Number(row.amount),
    currency: row.currency,
    refundedAt: row.refunded_at === null ? null : new Date(row.refunded_at).toISOString(),
  }));
}
