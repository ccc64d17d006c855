import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Refunds a gateway refused for good: the checkout (or the organizer's refund) tried a bounded number of times, then
 * recorded the REFUND attempt `refund_refused` and parked it for an operator (scripts/operator.ts
 * `refunds-refused retry`). Until someone acts, the buyer's money is still with the merchant: every row is owed.
 */
export interface RefundRefusedRow {
  saleId: string;
  reference: string;
  saleStatus: string;
  gateway: string;
  providerPaymentId: string | null;
  /** Why the payment was being given back (second_charge, late_no_stock, …, or the organizer's refund). */
  refundReason: string | null;
  /** The gateway's last refusal, as recorded. */
  note: string | null;
  total: number;
  currency: string;
  requestedAt: string;
}

interface Row {
  sale_id: string;
  reference: string;
  sale_status: string;
  gateway: string;
  provider_payment_id: string | null;
  status_detail: string | null;
  note: string | null;
  total: number;
  currency: string;
  created_at: Date | string;
}

/** Refused refunds of one workspace, or of every workspace (operators), newest first. */
export async function refundsRefused(
  em: EntityManager,
  options: { workspaceId: string | null; limit: number },
): Promise<RefundRefusedRow[]> {
  const rows = await em.execute<Row[]>(
    `select s.id as sale_id, s.reference, s.status as sale_status, a.gateway, a.provider_payment_id, a.status_detail,
            a.note, s.total, s.currency, a.created_at
       from payment_attempts a join sales s on s.id = a.sale_id
      where a.kind = 'REFUND' and a.status = 'refund_refused' and (?::uuid is null or s.workspace_id = ?::uuid)
      order by a.created_at desc, a.id desc
      limit ?`,
    [options.workspaceId, options.workspaceId, options.limit],
  );
  return rows.map((row) => ({
    saleId: row.sale_id,
    reference: row.reference,
    saleStatus: row.sale_status,
    gateway: row.gateway,
    providerPaymentId: row.provider_payment_id,
    refundReason: row.status_detail,
    note: row.note,
    total: row.total,
    currency: row.currency,
    requestedAt: new Date(row.created_at).toISOString(),
  }));
}
