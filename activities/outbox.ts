import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../entities/ids.js';

/**
 * Appends an organizer-facing event about a sale to the transactional outbox, inside the caller's transaction: the
 * event exists if and only if the sale change commits. The payload is read from the sale row in the same statement,
 * so it describes the committed state. A second insert for the same (event, sale) is a no-op.
 *
 * `sale.confirmed` carries exactly the contract's fields (part 6): saleId, organizationId (the workspace id),
 * reference and total (integer minor units, as every amount of the API). `sale.refunded` (shape left open by the
 * contract) adds currency, refundedAt and the organizer's reason.
 */
export async function appendSaleEvent(
  em: EntityManager,
  type: 'sale.confirmed' | 'sale.refunded',
  saleId: string,
  extra: { reason?: string | null } = {},
): Promise<void> {
  const payload =
    type === 'sale.confirmed'
      ? `jsonb_build_object('saleId', s.id, 'organizationId', s.workspace_id, 'reference', s.reference, 'total', s.total)`
      : `jsonb_build_object('saleId', s.id, 'organizationId', s.workspace_id, 'reference', s.reference, 'total', s.total,
           'currency', s.currency, 'refundedAt', to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'reason', ?::text)`;
  const params: unknown[] = [newId(), type];
  if (type === 'sale.refunded') params.push(extra.reason ?? null);
  params.push(`${type}:${saleId}`, saleId);
  await em.execute(
    `insert into outbox_events (id, workspace_id, type, payload, dedupe_key, created_at, dispatched_at)
     select ?, s.workspace_id, ?, ${payload}, ?, now(), null from sales s where s.id = ?
     on conflict (dedupe_key) do nothing`,
    params,
  );
}
