import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../entities/ids.js';

/** One entry of a sale's payment history (`payment_attempts`). */
export interface PaymentAttemptRecord {
  saleId: string;
  gateway: 'GATEWAY_A' | 'GATEWAY_B';
  kind: 'OPEN' | 'CARD' | 'PSE' | 'NOTIFICATION' | 'STATUS_CHECK' | 'REFUND' | 'LATE_PAYMENT';
  providerPaymentId: string | null;
  status: string | null;
  statusDetail: string | null;
  amount: number | null;
  dedupeKey: string | null;
  /** The idempotency key of the request to the gateway that made this payment (card charges), when there was one. */
  requestKey?: string | null;
  note: string | null;
}

/** Appends to the sale's payment history; an entry seen before (same dedupe key) is reported as a duplicate. */
export async function recordPaymentAttempt(
  em: EntityManager,
  input: PaymentAttemptRecord,
): Promise<{ duplicate: boolean }> {
  const rows = await em.execute<{ id: string }[]>(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, status_detail, amount, dedupe_key, request_key, note, created_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now()) on conflict (dedupe_key) do nothing returning id`,
    [
      newId(),
      input.saleId,
      input.gateway,
      input.kind,
      input.providerPaymentId,
      input.status?.slice(0, 60) ?? null,
      input.statusDetail?.slice(0, 120) ?? null,
      input.amount,
      input.dedupeKey,
      input.requestKey ?? null,
      input.note?.slice(0, 300) ?? null,
    ],
  );
  return { duplicate: rows.length === 0 };
}
