/**
 * The reconciler's I/O (story in `workflows/reconciler.ts`). Each sweep reads the database, asks Temporal or a gateway,
 * and hands what it finds to the sale's own checkout by signal-with-start: the reconciler never moves a sale or money
 * itself, so every fix goes through the one confirm / compensate / refund path the checkout already has.
 *
 * Each item is handled on its own: a gateway or Temporal failure for one sale is logged, counted in `errors` and left
 * for the next run, and never stops the sweep. Each fix is logged with `what`, `saleId` and `reference`, and counted in
 * the Redis hash `reconciler:fixes` for a metrics endpoint.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import { reconcilerMetrics } from '../observability/metrics.js';
import {
  CHECKOUTS_STARTED_NOW,
  type CheckoutInput,
  type CheckoutStatus,
  checkoutWorkflowId,
  checkPaymentSignal,
  type Gateway,
  type PaymentNotification,
  paymentNotificationSignal,
} from '../workflows/definitions.js';
import type { ActivityDeps } from './deps.js';
import { createPaymentActivities, type PaymentVerdict } from './payments.js';

/** Which items a sweep looks at. */
export interface SweepScope {
  marginMs: number;
  limit: number;
  workspaceId: string | null;
}

export interface OverdueSweep {
  /** Overdue PENDING sales whose checkout had ended, started again to close them. */
  handedOver: number;
  /** Overdue PENDING sales whose checkout still runs: it owns them, nothing to do. */
  stillRunning: number;
  errors: number;
}

export interface StrandedPaymentSweep {
  /** Stranded approved payments handed to their sale's checkout. */
  signalled: number;
  /** Handed over by an earlier run less than RESIGNAL_AFTER_MS ago: their checkout is still on them. */
  recentlySignalled: number;
  errors: number;
}

export interface ClosedSaleSweep {
  /** Sales whose gateway answered. */
  checked: number;
  /** Approved payments at the gateway we had no record of, handed to their sale's checkout. */
  lateMoneyFound: number;
  errors: number;
}

/** Redis hash of fix counters by kind, for a metrics endpoint. */
export const RECONCILER_FIXES_KEY = 'reconciler:fixes';
const checkedKey = (saleId: string) => `reconciler:checked:${saleId}`;
const signalledKey = (providerPaymentId: string) => `reconciler:signalled:${providerPaymentId}`;

/**
 * A payment handed to its checkout is not handed again for this long: the checkout needs a moment to settle it, and a
 * payment it cannot settle (mismatched amount, say) would otherwise be re-sent every minute.
 */
const RESIGNAL_AFTER_MS = 15 * 60_000;
/** A gateway that says "pending" (a PSE transfer the bank has not settled) is asked again after this long. */
const PENDING_RECHECK_MS = 30 * 60_000;
/** Gateway reads in flight at once: enough to get through a batch in seconds, few enough not to look like a burst. */
const GATEWAY_CONCURRENCY = 4;
/** Closed sales scanned per run to find the unchecked ones (most of them were checked by earlier runs). */
const CLOSED_SCAN_LIMIT = 5_000;

/** Gateway A and B spell "approved" differently in what the checkout records. */
const APPROVED_STATUS_SQL = `((a.gateway = 'GATEWAY_A' and a.status = 'approved')
  or (a.gateway = 'GATEWAY_B' and a.status in ('APPROVED', 'SALE_APPROVED')))`;

type CheckoutWorkflow = (input: CheckoutInput) => Promise<CheckoutStatus>;
type CheckPaymentArgs = typeof checkPaymentSignal extends SignalDefinition<infer A> ? A : never;

/** Raw rows; timestamps come back as Postgres text (`2026-11-23 16:27:22.43+00`). */
interface OverdueRow {
  id: string;
  reference: string;
  expires_at: string;
}

interface StrandedRow {
  sale_id: string;
  reference: string;
  sale_status: string;
  gateway: Gateway;
  provider_payment_id: string;
  first_seen: string;
}

interface ClosedRow {
  id: string;
  reference: string;
  status: string;
  closed_at: string;
  /** Gateways a payment was opened with (usually one). */
  gateways: string[];
}

async function forEachLimited<T>(items: T[], concurrency: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await run(item);
    }
  });
  await Promise.all(lanes);
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const workspaceFilter = (scope: SweepScope, column: string): { sql: string; params: string[] } =>
  scope.workspaceId ? { sql: `and ${column} = ?`, params: [scope.workspaceId] } : { sql: '', params: [] };

export function createReconcilerActivities(deps: ActivityDeps) {
  // The checkout's own gateway read, so the reconciler judges a payment exactly as the checkout will.
  const payments = createPaymentActivities(deps);

  const resumeInput = (saleId: string): CheckoutInput => ({
    saleId,
    latePaymentGraceMs: deps.env.LATE_PAYMENT_GRACE_MS,
    resumeAfterClose: true,
    ...CHECKOUTS_STARTED_NOW,
  });

  const notification = (gateway: Gateway, providerPaymentId: string | null, key: string): PaymentNotification => {
    const receivedAtMs = Date.now();
    return {
      gateway,
      providerPaymentId,
      eventType: 'reconciler',
      receivedAtMs,
      // One key per payment and minute: a retried activity is one notification, a later run is a new look.
      dedupeKey: `reconcile:${key}:${Math.floor(receivedAtMs / 60_000)}`,
    };
  };

  async function sendNotification(saleId: string, payment: PaymentNotification): Promise<void> {
    await deps.temporal.workflow.signalWithStart<CheckoutWorkflow, [PaymentNotification]>('checkout', {
      workflowId: checkoutWorkflowId(saleId),
      taskQueue: deps.env.TEMPORAL_TASK_QUEUE,
      args: [resumeInput(saleId)],
      signal: paymentNotificationSignal,
      signalArgs: [payment],
    });
  }

  async function checkoutRunning(saleId: string): Promise<boolean> {
    try {
      const description = await deps.temporal.workflow.getHandle(checkoutWorkflowId(saleId)).describe();
      return description.status.name === 'RUNNING';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  }

  async function countFixes(counts: Record<string, number>): Promise<void> {
    const pipeline = deps.redis.multi();
    let any = false;
    for (const [kind, n] of Object.entries(counts)) {
      if (n <= 0) continue;
      reconcilerMetrics.fixes.inc({ kind }, n);
      pipeline.hincrby(RECONCILER_FIXES_KEY, kind, n);
      any = true;
    }
    if (any) await pipeline.exec();
  }

  return {
    /**
     * PENDING sales whose deadline passed more than the margin ago and whose checkout is not running (it failed, was
     * terminated, or never existed): their checkout starts again, asks the gateway and closes them through its own
     * compensation, so stock and seats go back exactly as on a normal expiry.
     */
    async resumeOverdueCheckouts(scope: SweepScope): Promise<OverdueSweep> {
      const context = Context.current();
      const filter = workspaceFilter(scope, 's.workspace_id');
      const rows = await deps.orm.em.fork().execute<OverdueRow[]>(
        `select s.id, s.reference, s.expires_at from sales s
          where s.status = 'PENDING' and s.expires_at < ? ${filter.sql}
          order by s.expires_at limit ?`,
        [new Date(Date.now() - scope.marginMs), ...filter.params, scope.limit],
      );
      const result: OverdueSweep = { handedOver: 0, stillRunning: 0, errors: 0 };
      for (const sale of rows) {
        context.heartbeat();
        try {
          if (await checkoutRunning(sale.id)) {
            result.stillRunning += 1;
            continue;
          }
          await deps.temporal.workflow.signalWithStart<CheckoutWorkflow, CheckPaymentArgs>('checkout', {
            workflowId: checkoutWorkflowId(sale.id),
            taskQueue: deps.env.TEMPORAL_TASK_QUEUE,
            args: [resumeInput(sale.id)],
            signal: checkPaymentSignal,
            signalArgs: [{ source: 'reconciler' }],
          });
          result.handedOver += 1;
          context.log.info('overdue reservation handed back to its checkout to close', {
            what: 'expired_pending_resumed',
            saleId: sale.id,
            reference: sale.reference,
            expiredAt: new Date(sale.expires_at).toISOString(),
          });
        } catch (error) {
          result.errors += 1;
          context.log.warn('could not resume the checkout of an overdue reservation; next run retries', {
            what: 'expired_pending_failed',
            saleId: sale.id,
            reference: sale.reference,
            error: errorText(error),
          });
        }
      }
      await countFixes({ expired_pending_closed: result.handedOver, errors: result.errors });
      return result;
    },

    /**
     * Approved payments we recorded (card answers, notifications, late payments) that neither paid a confirmed (or
     * since refunded) sale nor were refunded: the sale's checkout re-reads each from the gateway and confirms or
     * refunds it, as for any notification.
     */
    async resolveStrandedPayments(scope: SweepScope): Promise<StrandedPaymentSweep> {
      const context = Context.current();
      const filter = workspaceFilter(scope, 's.workspace_id');
      // Settled means some sale is paid by it (CONFIRMED), or was and gave it back (REFUNDED: the organizer's refund
      // records the gateway's refund id, not the payment's), or a refund of it is recorded.
      const rows = await deps.orm.em.fork().execute<StrandedRow[]>(
        `select a.sale_id, s.reference, s.status as sale_status, a.gateway, a.provider_payment_id,
                min(a.created_at) as first_seen
           from payment_attempts a join sales s on s.id = a.sale_id
          where a.kind in ('CARD', 'NOTIFICATION', 'LATE_PAYMENT') and a.provider_payment_id is not null
            and ${APPROVED_STATUS_SQL}
            and not exists (select 1 from sales p
                             where p.payment_ref = a.provider_payment_id and p.status in ('CONFIRMED', 'REFUNDED'))
            and not exists (select 1 from payment_attempts r
                             where r.kind = 'REFUND' and r.provider_payment_id = a.provider_payment_id)
            ${filter.sql}
          group by a.sale_id, s.reference, s.status, a.gateway, a.provider_payment_id
         having min(a.created_at) < ?
          order by first_seen limit ?`,
        [...filter.params, new Date(Date.now() - scope.marginMs), scope.limit],
      );
      const result: StrandedPaymentSweep = { signalled: 0, recentlySignalled: 0, errors: 0 };
      for (const row of rows) {
        context.heartbeat();
        const key = signalledKey(row.provider_payment_id);
        const fresh = await deps.redis.set(key, String(Date.now()), 'PX', RESIGNAL_AFTER_MS, 'NX');
        if (fresh === null) {
          result.recentlySignalled += 1;
          continue;
        }
        try {
          await sendNotification(
            row.sale_id,
            notification(row.gateway, row.provider_payment_id, row.provider_payment_id),
          );
          result.signalled += 1;
          const ageMs = Date.now() - new Date(row.first_seen).getTime();
          // A payment still stranded an hour on is one its checkout cannot settle by itself: an operator should look.
          const level = ageMs > 60 * 60_000 ? 'warn' : 'info';
          context.log[level]('approved payment with neither a confirmed sale nor a refund handed to its checkout', {
            what: 'unresolved_payment_signalled',
            saleId: row.sale_id,
            reference: row.reference,
            saleStatus: row.sale_status,
            gateway: row.gateway,
            providerPaymentId: row.provider_payment_id,
            strandedForMs: ageMs,
          });
        } catch (error) {
          // Not handed over after all: the next run may try again at once.
          await deps.redis.del(key).catch(() => undefined);
          result.errors += 1;
          context.log.warn('could not hand a stranded payment to its checkout; next run retries', {
            what: 'unresolved_payment_failed',
            saleId: row.sale_id,
            reference: row.reference,
            providerPaymentId: row.provider_payment_id,
            error: errorText(error),
          });
        }
      }
      await countFixes({ unresolved_payments_resolved: result.signalled, errors: result.errors });
      return result;
    },

    /**
     * Sales closed unpaid (ABANDONED, CANCELLED) within the lookback, after a payment had been opened for them, that
     * no run has asked about since they closed: the gateway is searched for payments of their reference, and an
     * approved one we have no record of (its notification was lost) goes to the sale's checkout, which confirms it if
     * the stock is still there or refunds it.
     */
    async checkClosedSalesAtGateway(scope: SweepScope & { lookbackMs: number }): Promise<ClosedSaleSweep> {
      const context = Context.current();
      const filter = workspaceFilter(scope, 's.workspace_id');
      const now = Date.now();
      const candidates = await deps.orm.em.fork().execute<ClosedRow[]>(
        `select s.id, s.reference, s.status, s.closed_at,
                array(select distinct a.gateway from payment_attempts a
                       where a.sale_id = s.id and a.kind in ('OPEN', 'PSE', 'CARD')) as gateways
           from sales s
          where s.status in ('ABANDONED', 'CANCELLED') and s.closed_at < ? and s.closed_at > ?
            and exists (select 1 from payment_attempts a where a.sale_id = s.id and a.kind in ('OPEN', 'PSE', 'CARD'))
            ${filter.sql}
          order by s.closed_at desc limit ?`,
        [new Date(now - scope.marginMs), new Date(now - scope.lookbackMs), ...filter.params, CLOSED_SCAN_LIMIT],
      );
      // The key holds the close time it was checked for: a sale closed again later (after a late confirmation and a
      // cancel, say) is asked about again.
      const unchecked: ClosedRow[] = [];
      for (let start = 0; start < candidates.length && unchecked.length < scope.limit; start += 500) {
        const page = candidates.slice(start, start + 500);
        const marks = await deps.redis.mget(page.map((sale) => checkedKey(sale.id)));
        page.forEach((sale, index) => {
          if (unchecked.length < scope.limit && marks[index] !== String(new Date(sale.closed_at).getTime()))
            unchecked.push(sale);
        });
      }

      const result: ClosedSaleSweep = { checked: 0, lateMoneyFound: 0, errors: 0 };
      const checkedTtlMs = scope.lookbackMs + scope.marginMs;
      await forEachLimited(unchecked, GATEWAY_CONCURRENCY, async (sale) => {
        context.heartbeat();
        const closedAtMs = String(new Date(sale.closed_at).getTime());
        const gateways = sale.gateways.filter((g): g is Gateway => g === 'GATEWAY_A' || g === 'GATEWAY_B');
        let recheckAfterMs = checkedTtlMs;
        try {
          for (const gateway of gateways) {
            // Every payment of the sale's reference, not just the first approved one: a second, unrecorded charge
            // beside a known one is money to give back too.
            const verdicts = await payments.findSalePayments({ saleId: sale.id, gateway });
            for (const verdict of verdicts) {
              if (verdict.outcome === 'pending') recheckAfterMs = Math.min(recheckAfterMs, PENDING_RECHECK_MS);
              if (verdict.outcome !== 'approved' || (await alreadyAccountedFor(sale.id, verdict))) continue;
              await sendNotification(
                sale.id,
                notification(gateway, verdict.providerPaymentId, verdict.providerPaymentId ?? sale.id),
              );
              result.lateMoneyFound += 1;
              context.log.warn(
                'approved payment found at the gateway for a sale closed unpaid; handed to its checkout',
                {
                  what: 'late_money_found',
                  saleId: sale.id,
                  reference: sale.reference,
                  saleStatus: sale.status,
                  gateway,
                  providerPaymentId: verdict.providerPaymentId,
                  mismatch: verdict.mismatch,
                },
              );
            }
          }
          result.checked += 1;
          await deps.redis.set(checkedKey(sale.id), closedAtMs, 'PX', recheckAfterMs);
        } catch (error) {
          result.errors += 1;
          context.log.warn('could not ask the gateway about a sale closed unpaid; next run retries', {
            what: 'closed_sale_check_failed',
            saleId: sale.id,
            reference: sale.reference,
            error: errorText(error),
          });
        }
      });
      await countFixes({
        closed_sales_checked: result.checked,
        late_money_found: result.lateMoneyFound,
        errors: result.errors,
      });
      return result;
    },
  };

  /**
   * Settled (a sale is paid by it, or it was refunded), or already recorded as approved for this very sale, which
   * makes it the stranded-payment sweep's (or the live checkout's) to settle. Recorded only under another sale does
   * not count: that sale's checkout ignores a payment naming this reference, this one's does not.
   */
  async function alreadyAccountedFor(saleId: string, verdict: PaymentVerdict): Promise<boolean> {
    if (verdict.providerPaymentId === null) return false;
    const rows = await deps.orm.em.fork().execute<{ one: number }[]>(
      `select 1 as one from payment_attempts a
        where a.provider_payment_id = ? and (a.kind = 'REFUND' or (a.sale_id = ? and ${APPROVED_STATUS_SQL}))
       union all
       select 1 from sales s where s.payment_ref = ? and s.status in ('CONFIRMED', 'REFUNDED')
       limit 1`,
      [verdict.providerPaymentId, saleId, verdict.providerPaymentId],
    );
    return rows.length > 0;
  }
}

export type ReconcilerActivities = ReturnType<typeof createReconcilerActivities>;
