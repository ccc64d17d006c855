import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../entities/ids.js';
import { countSaleEvent } from '../observability/metrics.js';

/**
 * Appends an organizer-facing event about a sale to the transactional outbox, inside the caller's transaction: the
 * event exists if and only if the sale change commits. The payload is read from the sale row in the same statement,
 * so it describes the committed state. A second insert for the same (event, sale) is a no-op. This is the one place
 * every confirmation and refund of a sale passes, so it also counts them (ticketing_sales_*_total) after the commit.
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
  const params: unknown[] = [saleId, newId(), type];
  if (type === 'sale.refunded') params.push(extra.reason ?? null);
  params.push(`${type}:${saleId}`);
  // The sale's currency and total come back only when this call wrote the event, so a repeat is never counted.
  const appended = await em.execute<{ currency: string; total: string | number }[]>(
    `with s as (select id, workspace_id, reference, total, currency from sales where id = ?),
          inserted as (
            insert into outbox_events (id, workspace_id, type, payload, dedupe_key, created_at, dispatched_at)
            select ?, s.workspace_id, ?, ${payload}, ?, now(), null from s
            on conflict (dedupe_key) do nothing returning id)
     select s.currency, s.total from s where exists (select 1 from inserted)`,
    params,
  );
  const sale = appended[0];
  if (sale) afterCommit(em, () => countSaleEvent(type, sale.currency, Number(sale.total)));
}

/**
 * Runs `count` once the caller's transaction commits (never if it rolls back); at once when there is none. Inside a
 * nested transaction it runs when that savepoint is released, which no caller of this module does.
 */
function afterCommit(em: EntityManager, count: () => void): void {
  if (!em.isInTransaction()) {
    count();
    return;
  }
  em.getEventManager().registerSubscriber({ afterTransactionCommit: async () => count() });
}

/**
 * Appends an organizer-facing event about a membership to the outbox, inside the caller's transaction (the event
 * exists if and only if the subscription change commits), read from the subscription row in the same statement.
 * The payload carries no buyer contact data: subscriptionId, organizationId, planId, status, currentPeriodEnd and
 * periodNumber. One event per (event, subscription, period): a retried step adds nothing.
 */
export async function appendMembershipEvent(
  em: EntityManager,
  type: 'membership.activated' | 'membership.renewed' | 'membership.cancelled' | 'membership.expired',
  subscriptionId: string,
): Promise<void> {
  await em.execute(
    `insert into outbox_events (id, workspace_id, type, payload, dedupe_key, created_at, dispatched_at)
     select ?, s.workspace_id, ?, jsonb_build_object('subscriptionId', s.id, 'organizationId', s.workspace_id,
              'planId', s.plan_id, 'status', s.status, 'periodNumber', s.period_number,
              'currentPeriodEnd', to_char(s.current_period_end at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
            ?::text || ':' || s.period_number::text, now(), null
       from membership_subscriptions s where s.id = ?
     on conflict (dedupe_key) do nothing`,
    [newId(), type, `${type}:${subscriptionId}`, subscriptionId],
  );
}
