/**
 * Reconciler: the safety net that makes sure money is never stranded and stock never stays held, whatever a lost
 * notification, a failed execution or an outage left behind. A Temporal Schedule (`reconciler`, worker/schedules.ts)
 * runs it every minute; an operator runs it now with `temporal schedule trigger --schedule-id reconciler`.
 *
 *   1. overdue reservations ── PENDING past their deadline, no checkout running ──▶ the checkout starts again and
 *                                                                                   closes them (stock and seats back)
 *   2. stranded payments ───── approved, recorded, neither paying a confirmed sale ─▶ the checkout re-reads each and
 *                               nor refunded                                          confirms or refunds it
 *   3. gateway check ───────── closed unpaid after a payment was opened, or ─────────▶ the gateway is searched; money we
 *                               CONFIRMED with another payment opened, not asked       had no record of goes to the
 *                               about since; walked from a persistent cursor           checkout (confirmed or refunded)
 *   3b. stalled refunds ────── an organizer refund owed, its execution not running ─▶ the refund starts again (reads the
 *                                                                                   gateway first, records it once)
 *   4. overdue refunds ─────── asked for over an hour ago, not confirmed refunded ───▶ reported: error log per refund,
 *                                                                                      gauge, operator listing
 *   5. unapplied adjustments ─ refunded after a sent settlement, carried by none ────▶ reported: warn log per workspace,
 *                                                                                      gauges, operator listing
 *
 * The reconciler never changes a sale itself: each fix is a signal-with-start to the sale's checkout, which owns the
 * one confirm / compensate / refund path, or (3b) a start of the organizer's refund workflow the sale already had.
 * Margins keep it off what a live checkout is still doing. Nothing a gateway,
 * Temporal or the database does fails a run: a sweep that cannot run is counted in `errors` and the next run retries.
 */
import { ActivityFailure, log, proxyActivities } from '@temporalio/workflow';
import type { EventCancellationActivities } from '../activities/event-cancellation.js';
import type { MembershipReconcilerActivities } from '../activities/membership-reconciler.js';
import type { ReconcilerActivities } from '../activities/reconciler.js';
import {
  DEFAULT_RECONCILER_SETTINGS,
  type ReconcilerRunCounts,
  type ReconcilerSettings,
} from './reconciler-definitions.js';

/**
 * A few attempts, then the sweep is left to the next run (a minute later) rather than holding this one: with the
 * Schedule's SKIP overlap policy, a run that retried for long would hold back every run after it.
 */
const sweeps = proxyActivities<ReconcilerActivities & MembershipReconcilerActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '20 seconds', maximumAttempts: 3 },
});

const eventCancellations = proxyActivities<EventCancellationActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '20 seconds', maximumAttempts: 3 },
});

export async function reconciler(input: Partial<ReconcilerSettings> = {}): Promise<ReconcilerRunCounts> {
  const settings: ReconcilerSettings = { ...DEFAULT_RECONCILER_SETTINGS, ...input };
  const scope = { marginMs: settings.marginMs, limit: settings.batchSize, workspaceId: settings.workspaceId };
  const counts: ReconcilerRunCounts = {
    expiredPendingClosed: 0,
    unresolvedPaymentsResolved: 0,
    closedSalesChecked: 0,
    confirmedSalesChecked: 0,
    lateMoneyFound: 0,
    refundsOverdue: 0,
    adjustmentsUnapplied: 0,
    errors: 0,
  };

  const overdue = await sweep('overdue reservations', () => sweeps.resumeOverdueCheckouts(scope));
  counts.expiredPendingClosed = overdue?.handedOver ?? 0;
  counts.errors += overdue?.errors ?? 1;

  const stranded = await sweep('stranded payments', () => sweeps.resolveStrandedPayments(scope));
  counts.unresolvedPaymentsResolved = stranded?.signalled ?? 0;
  counts.errors += stranded?.errors ?? 1;

  const gatewayScope = {
    ...scope,
    lookbackMs: settings.closedLookbackMs,
    settlementLagMs: settings.settlementLagMs,
  };
  const closed = await sweep('gateway check', () => sweeps.checkClosedSalesAtGateway(gatewayScope));
  counts.closedSalesChecked = closed?.checked ?? 0;
  counts.confirmedSalesChecked = closed?.confirmedChecked ?? 0;
  counts.lateMoneyFound = closed?.lateMoneyFound ?? 0;
  counts.errors += closed?.errors ?? 1;

  // Cancelled events with sales still to undo whose cancellation is not running (terminated at the history limit,
  // failed, finished before a late payment): started again (activities/event-cancellation.ts).
  const cancelled = await sweep('cancelled events', () => eventCancellations.resumeEventCancellations(scope));
  counts.errors += cancelled?.errors ?? 1;
  if (cancelled?.resumed) log.warn('reconciler resumed event cancellations', { resumed: cancelled.resumed });

  // Organizer refunds owed whose refund execution ended between the gateway's refund and the database write: started
  // again within minutes instead of waiting for the overdue listing's hour (activities/reconciler.ts).
  const stalled = await sweep('stalled refunds', () => sweeps.redriveStalledRefunds(scope));
  counts.errors += stalled?.errors ?? 1;
  if (stalled?.redriven) log.warn('reconciler started stalled refunds again', { redriven: stalled.redriven });

  const refunds = await sweep('overdue refunds', () => sweeps.reportOverdueRefunds(scope));
  counts.refundsOverdue = refunds?.overdue ?? 0;
  counts.errors += refunds ? 0 : 1;

  const adjustments = await sweep('unapplied adjustments', () => sweeps.reportUnappliedAdjustments(scope));
  counts.adjustmentsUnapplied = adjustments?.unapplied ?? 0;
  counts.errors += adjustments ? 0 : 1;

  // Membership money paid after its execution stopped asking (activities/membership-reconciler.ts).
  const members = await sweep('membership money', () =>
    sweeps.sweepMembershipMoney({ ...scope, lookbackMs: settings.closedLookbackMs }),
  );
  counts.lateMoneyFound += members?.lateMoneyFound ?? 0;
  counts.errors += members?.errors ?? 1;

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
