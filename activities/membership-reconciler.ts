/**
 * The reconciler's membership sweep (called by workflows/reconciler.ts): money paid on a membership payment request
 * after its execution stopped asking is found and handed to the buyer's membership execution, which owns the one
 * apply-or-refund decision (signal-with-start, as a gateway notification would: a closed execution starts a run that
 * settles that money).
 *
 *   1. closed requests ─── a request with a gateway link, no longer OPEN ────────▶ gateway A is searched by reference;
 *                          (expired, paid, or the row of a late payment it got),  an approved payment we have no row of
 *                          closed in the lookback                                 (late, or a second charge) goes to
 *                                                                                 the execution
 *   2. stuck refunds ───── REFUND_REQUESTED for over an hour ───────────────────▶ the execution is told again (it
 *                                                                                 resumes the refund if none runs it)
 *
 * Nothing is changed here: the sweep only reads and signals. Redis dedupes the asks between runs; if Redis is down the
 * dedupe degrades (everything is asked again), the sweep does not fail.
 */
import { Context } from '@temporalio/activity';
import { reconcilerMetrics } from '../observability/metrics.js';
import { SA } from '../workflows/definitions.js';
import type { membership } from '../workflows/membership.js';
import {
  type MembershipPaymentNotification,
  membershipDurations,
  membershipPaymentSignal,
  membershipWorkflowId,
} from '../workflows/membership-definitions.js';
import type { ActivityDeps } from './deps.js';
import { createMembershipActivities, type MembershipVerdict } from './memberships.js';
import { errorText, forEachLimited } from './reconciler.js';
import { cursorName, FIRST_ITEM, LAST_ITEM, walkFromCursor } from './reconciler-walk.js';

export interface MembershipSweepScope {
  marginMs: number;
  limit: number;
  workspaceId: string | null;
  lookbackMs: number;
}

export interface MembershipMoneySweep {
  /** Closed (expired or paid) payment requests whose gateway answered. */
  checked: number;
  /** Approved payments of closed requests we had no record of, handed to their membership execution. */
  lateMoneyFound: number;
  /** Refunds requested over an hour ago and still not refunded, handed to their execution again. */
  refundsResumed: number;
  errors: number;
}

/** A request whose gateway says a payment is still pending (a PSE transfer at the bank) is asked again this soon. */
const PENDING_RECHECK_MS = 30 * 60_000;
/** A refund requested this long ago and still not REFUNDED is handed to its execution again. */
const REFUND_STUCK_AFTER_MS = 60 * 60_000;
/** ... at most this often per payment. */
const REFUND_RESIGNAL_MS = 15 * 60_000;
/**
 * Rows read per page, and pages per run, by each of the sweep's two walks: both go on from where the previous run
 * stopped (a `reconciler_cursors` row each) and start over from the oldest at the end, so every closed request of the
 * lookback and every stuck refund is visited however many there are, and no run reads more than this.
 */
const SCAN_PAGE = 2_000;
const SCAN_PAGES_PER_RUN = 5;
const GATEWAY_CONCURRENCY = 4;

const checkedKey = (paymentId: string) => `reconciler:membership-checked:${paymentId}`;
const refundSignalledKey = (paymentId: string) => `reconciler:membership-refund:${paymentId}`;

interface ClosedRequestRow {
  id: string;
  reference: string;
  updated_at: string;
  workspace_id: string;
  buyer_id: string;
}

interface StuckRefundRow {
  id: string;
  reference: string;
  provider_payment_id: string;
  updated_at: string;
  workspace_id: string;
  buyer_id: string;
}

export function createMembershipReconcilerActivities(deps: ActivityDeps) {
  // The membership's own gateway read, so the sweep sees a payment exactly as the execution will.
  const memberships = createMembershipActivities(deps);

  async function handOver(
    ids: { workspaceId: string; buyerId: string },
    notification: MembershipPaymentNotification,
  ): Promise<void> {
    await deps.temporal.workflow.signalWithStart<typeof membership, [MembershipPaymentNotification]>('membership', {
      workflowId: membershipWorkflowId(ids.workspaceId, ids.buyerId),
      taskQueue: deps.env.TEMPORAL_TASK_QUEUE,
      args: [{ ...ids, durations: membershipDurations(deps.env), settleLateMoney: true }],
      typedSearchAttributes: [{ key: SA.workspaceId, value: ids.workspaceId }],
      signal: membershipPaymentSignal,
      signalArgs: [notification],
    });
  }

  const notificationOf = (verdict: {
    providerPaymentId: string;
    reference: string;
  }): MembershipPaymentNotification => ({
    providerPaymentId: verdict.providerPaymentId,
    reference: verdict.reference,
    eventType: 'reconciler',
    receivedAtMs: Date.now(),
    dedupeKey: `reconciler:${verdict.providerPaymentId}`,
  });

  /** Redis marks, or none when Redis cannot answer (everything is then asked again: only the dedupe degrades). */
  async function marks(keys: string[]): Promise<Array<string | null>> {
    if (keys.length === 0) return [];
    try {
      return await deps.redis.mget(keys);
    } catch (error) {
      Context.current().log.warn('reconciler marks unreadable; asking about every candidate', {
        error: errorText(error),
      });
      return keys.map(() => null);
    }
  }

  async function mark(key: string, value: string, ttlMs: number): Promise<void> {
    try {
      await deps.redis.set(key, value, 'PX', Math.max(1, Math.round(ttlMs)));
    } catch {
      // Without the mark the next run asks again: harmless.
    }
  }

  async function recorded(providerPaymentId: string): Promise<boolean> {
    const rows = await deps.orm.em
      .fork()
      .execute<{ one: number }[]>('select 1 as one from membership_payments where provider_payment_id = ?', [
        providerPaymentId,
      ]);
    return rows.length > 0;
  }

  return {
    async sweepMembershipMoney(scope: MembershipSweepScope): Promise<MembershipMoneySweep> {
      const context = Context.current();
      const result: MembershipMoneySweep = { checked: 0, lateMoneyFound: 0, refundsResumed: 0, errors: 0 };
      const workspace = scope.workspaceId
        ? { sql: 'and p.workspace_id = ?', params: [scope.workspaceId] }
        : { sql: '', params: [] as string[] };
      const now = Date.now();
      const em = deps.orm.em.fork();

      // Closed requests in (updated_at, id) order from the saved cursor (membership_payments_closed_walk_index); each
      // one's subscription by its key (a lateral `limit 1`: never a hash of every subscription).
      const unchecked: ClosedRequestRow[] = [];
      const cutoff = new Date(now - scope.marginMs);
      const closedWalk = await walkFromCursor<ClosedRequestRow>(deps.orm, {
        name: cursorName('membership-check', scope.workspaceId),
        pageSize: SCAN_PAGE,
        pages: SCAN_PAGES_PER_RUN,
        page: (after, upTo, size) =>
          em.execute<ClosedRequestRow[]>(
            `select p.id, p.reference, p.updated_at, s.workspace_id, s.buyer_id
               from membership_payments p
               join lateral (select s.workspace_id, s.buyer_id from membership_subscriptions s
                              where s.id = p.subscription_id limit 1) s on true
              where p.status <> 'OPEN' and p.checkout_url is not null and p.updated_at < ? and p.updated_at > ?
                and (p.updated_at, p.id) > (?::timestamptz, ?::uuid)
                and (p.updated_at, p.id) <= (?::timestamptz, ?::uuid)
                ${workspace.sql}
              order by p.updated_at, p.id limit ?`,
            [
              cutoff,
              new Date(now - scope.lookbackMs),
              after?.dueAt ?? new Date(0),
              after?.itemId ?? FIRST_ITEM,
              upTo?.dueAt ?? cutoff,
              upTo?.itemId ?? LAST_ITEM,
              ...workspace.params,
              size,
            ],
          ),
        positionOf: (row) => ({ dueAt: row.updated_at, itemId: row.id }),
        visit: async (page) => {
          const seen = await marks(page.map((row) => checkedKey(row.id)));
          for (const [index, row] of page.entries()) {
            if (seen[index] === String(new Date(row.updated_at).getTime())) continue;
            if (unchecked.length >= scope.limit) return index;
            unchecked.push(row);
          }
          return page.length;
        },
        onPage: () => context.heartbeat(),
      });

      await forEachLimited(unchecked, GATEWAY_CONCURRENCY, async (request) => {
        context.heartbeat();
        let recheckAfterMs = scope.lookbackMs + scope.marginMs;
        try {
          const verdicts: MembershipVerdict[] = await memberships.findMembershipGatewayPayments({
            reference: request.reference,
          });
          for (const verdict of verdicts) {
            if (verdict.outcome === 'pending') recheckAfterMs = Math.min(recheckAfterMs, PENDING_RECHECK_MS);
            if (verdict.outcome !== 'approved' || (await recorded(verdict.providerPaymentId))) continue;
            await handOver(
              { workspaceId: request.workspace_id, buyerId: request.buyer_id },
              notificationOf({ providerPaymentId: verdict.providerPaymentId, reference: request.reference }),
            );
            result.lateMoneyFound += 1;
            context.log.warn('approved payment found at the gateway for a closed membership payment request', {
              what: 'membership_late_money_found',
              membershipPaymentId: request.id,
              reference: request.reference,
              providerPaymentId: verdict.providerPaymentId,
            });
          }
          result.checked += 1;
          await mark(checkedKey(request.id), String(new Date(request.updated_at).getTime()), recheckAfterMs);
        } catch (error) {
          result.errors += 1;
          context.log.warn('a closed membership payment request could not be checked; the next run retries', {
            membershipPaymentId: request.id,
            error: errorText(error),
          });
        }
      });

      await closedWalk.saveCursor();

      // Refunds requested over an hour ago, in (updated_at, id) order from their own cursor
      // (membership_payments_refund_requested_index): one handed over lately is passed, not counted against the batch.
      const stuck: StuckRefundRow[] = [];
      const stuckBefore = new Date(now - REFUND_STUCK_AFTER_MS);
      const refundWalk = await walkFromCursor<StuckRefundRow>(deps.orm, {
        name: cursorName('membership-refunds', scope.workspaceId),
        pageSize: SCAN_PAGE,
        pages: SCAN_PAGES_PER_RUN,
        page: (after, upTo, size) =>
          em.execute<StuckRefundRow[]>(
            `select p.id, p.reference, p.provider_payment_id, p.updated_at, s.workspace_id, s.buyer_id
               from membership_payments p
               join lateral (select s.workspace_id, s.buyer_id from membership_subscriptions s
                              where s.id = p.subscription_id limit 1) s on true
              where p.status = 'REFUND_REQUESTED' and p.provider_payment_id is not null and p.updated_at < ?
                and (p.updated_at, p.id) > (?::timestamptz, ?::uuid)
                and (p.updated_at, p.id) <= (?::timestamptz, ?::uuid)
                ${workspace.sql}
              order by p.updated_at, p.id limit ?`,
            [
              stuckBefore,
              after?.dueAt ?? new Date(0),
              after?.itemId ?? FIRST_ITEM,
              upTo?.dueAt ?? stuckBefore,
              upTo?.itemId ?? LAST_ITEM,
              ...workspace.params,
              size,
            ],
          ),
        positionOf: (row) => ({ dueAt: row.updated_at, itemId: row.id }),
        visit: async (page) => {
          const signalled = await marks(page.map((row) => refundSignalledKey(row.id)));
          for (const [index, row] of page.entries()) {
            if (signalled[index]) continue;
            if (stuck.length >= scope.limit) return index;
            stuck.push(row);
          }
          return page.length;
        },
        onPage: () => context.heartbeat(),
      });
      for (const refund of stuck) {
        context.heartbeat();
        try {
          await handOver(
            { workspaceId: refund.workspace_id, buyerId: refund.buyer_id },
            notificationOf({ providerPaymentId: refund.provider_payment_id, reference: refund.reference }),
          );
          result.refundsResumed += 1;
          await mark(refundSignalledKey(refund.id), '1', REFUND_RESIGNAL_MS);
        } catch (error) {
          result.errors += 1;
          context.log.warn('a stuck membership refund could not be handed over; the next run retries', {
            membershipPaymentId: refund.id,
            error: errorText(error),
          });
        }
      }

      await refundWalk.saveCursor();

      if (result.lateMoneyFound > 0)
        reconcilerMetrics.fixes.inc({ kind: 'membership_late_money' }, result.lateMoneyFound);
      if (result.refundsResumed > 0) {
        reconcilerMetrics.fixes.inc({ kind: 'membership_refund_resumed' }, result.refundsResumed);
      }
      return result;
    },
  };
}

export type MembershipReconcilerActivities = ReturnType<typeof createMembershipReconcilerActivities>;
