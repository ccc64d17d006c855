/**
 * Reconciler: the safety net that makes sure money is never stranded and stock never stays held, whatever a lost
 * notification, a failed execution or an outage left behind. A Temporal Schedule (`reconciler`, worker/schedules.ts)
 * runs it every minute; an operator runs it now with `temporal schedule trigger --schedule-id reconciler`.
 *
 *   1. overdue reservations ── PENDING past their deadline, no checkout running ──▶ the checkout starts again and
 *                                                                                   closes them (stock and seats back)
 *   2. stranded payments ───── approved, recorded, neither paying a confirmed sale ─▶ the checkout re-reads each and
 *                               nor refunded                                          confirms or refunds it
 *   3. closed sales ────────── closed unpaid after a payment was opened, not asked ─▶ the gateway is searched; money we
 *                               about since they closed                               had no record of goes to the checkout
 *
 * The reconciler never changes a sale itself: each fix is a signal-with-start to the sale's checkout, which owns the
 * one confirm / compensate / refund path. Margins keep it off what a live checkout is still doing. Nothing a gateway,
 * Temporal or the database does fails a run: a sweep that cannot run is counted in `errors` and the next run retries.
 */
import { ActivityFailure, log, proxyActivities } from '@temporalio/workflow';
import type { ReconcilerActivities } from '../activities/reconciler.js';
import { DEFAULT_RECONCILER_INPUT, type ReconcilerCounts, type ReconcilerInput } from './definitions.js';

/**
 * A few attempts, then the sweep is left to the next run (a minute later) rather than holding this one: with the
 * Schedule's SKIP overlap policy, a run that retried for long would hold back every run after it.
 */
const sweeps = proxyActivities<ReconcilerActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '20 seconds', maximumAttempts: 3 },
});

export async function reconciler(input: Partial<ReconcilerInput> = {}): Promise<ReconcilerCounts> {
  const settings: ReconcilerInput = { ...DEFAULT_RECONCILER_INPUT, ...input };
  const scope = { marginMs: settings.marginMs, limit: settings.batchSize, workspaceId: settings.workspaceId };
  const counts: ReconcilerCounts = {
    expiredPendingClosed: 0,
    unresolvedPaymentsResolved: 0,
    closedSalesChecked: 0,
    lateMoneyFound: 0,
    errors: 0,
  };

  const overdue = await sweep('overdue reservations', () => sweeps.resumeOverdueCheckouts(scope));
  counts.expiredPendingClosed = overdue?.handedOver ?? 0;
  counts.errors += overdue?.errors ?? 1;

  const stranded = await sweep('stranded payments', () => sweeps.resolveStrandedPayments(scope));
  counts.unresolvedPaymentsResolved = stranded?.signalled ?? 0;
  counts.errors += stranded?.errors ?? 1;

  const closed = await sweep('closed sales', () =>
    sweeps.checkClosedSalesAtGateway({ ...scope, lookbackMs: settings.closedLookbackMs }),
  );
  counts.closedSalesChecked = closed?.checked ?? 0;
  counts.lateMoneyFound = closed?.lateMoneyFound ?? 0;
  counts.errors += closed?.errors ?? 1;

  log.info('reconciler run finished', { ...counts });
  return counts;
}

/** A sweep whose activity failed through its retries is one error of this run (null), never the run's failure. */
async function sweep<T>(name: string, run: () => Promise<T>): Promise<T | null> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    log.warn('reconciler sweep failed; the next run retries it', { sweep: name, error: error.cause?.message });
    return null;
  }
}
