/**
 * The reconciler's I/O (story in `workflows/reconciler.ts`). Each sweep reads the database, asks Temporal or a gateway,
 * and hands what it finds to the sale's own checkout by signal-with-start: the reconciler never moves a sale or money
 * itself, so every fix goes through the one confirm / compensate / refund path the checkout already has.
 *
 * Each sweep reads a bounded number of rows a run, in key order through its own index, from where the previous run
 * stopped (`reconciler_cursors`, activities/reconciler-walk.ts): a run costs the same however many sales and payments
 * the database holds, and no plan can rescan a table per row (bench/reconciler.ts measures it).
 *
 * Each item is handled on its own: a gateway or Temporal failure for one sale is logged, counted in `errors` and left
 * for the next run, and never stops the sweep. Each fix is logged with `what`, `saleId` and `reference`, and counted in
 * the Redis hash `reconciler:fixes` for a metrics endpoint.
 */
import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import { checkoutStartOptions } from '../config/worker-versioning.js';
import { reconcilerAlertMetrics, reconcilerMetrics } from '../observability/metrics.js';
import {
  type CheckoutInput,
  type CheckoutStatus,
  checkoutWorkflowId,
  checkPaymentSignal,
  type Gateway,
  type PaymentNotification,
  paymentNotificationSignal,
  refundWorkflowId,
  saleSearchAttributes,
} from '../workflows/definitions.js';
import type { refund } from '../workflows/refund.js';
import type { ActivityDeps } from './deps.js';
import { createPaymentActivities, type PaymentVerdict } from './payments.js';
import {
  listOverdueRefunds,
  listUnappliedAdjustments,
  REFUND_DONE_SQL,
  REFUND_OVERDUE_AFTER_MS,
} from './reconciler-listings.js';
import { type CursorPosition, cursorName, FIRST_ITEM, LAST_ITEM, walkFromCursor } from './reconciler-walk.js';

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
  /** Sales closed unpaid whose gateway answered. */
  checked: number;
  /**
   * CONFIRMED or REFUNDED sales with another payment opened whose gateway answered. Absent from results before it
   * existed.
   */
  confirmedChecked?: number;
  /** Approved payments at the gateway we had no record of, handed to their sale's checkout. */
  lateMoneyFound: number;
  errors: number;
}

/** What the gateway sweep takes beyond the common scope; fields added later are optional for runs started before. */
export interface GatewaySweepScope extends SweepScope {
  lookbackMs: number;
  /**
   * How long after a CONFIRMED sale's payment window a payment opened beside the one that paid can still settle (a
   * PSE transfer the bank confirms late): such sales are asked about once this has passed. Absent: confirmed sales
   * are not asked about (runs started before they were).
   */
  settlementLagMs?: number;
}

export interface OverdueRefundSweep {
  /** Refunds asked for over an hour ago and not confirmed by their gateway (up to the listing's limit). */
  overdue: number;
  /** Age of the oldest one, 0 when there is none. */
  oldestAgeMs: number;
}

export interface StalledRefundSweep {
  /** Organizer refunds still owed whose refund execution had ended (terminated, failed): started again. */
  redriven: number;
  /** Still owed, and their refund execution is running: it owns them. */
  stillRunning: number;
  errors: number;
}

export interface UnappliedAdjustmentSweep {
  /** Refunds after a sent settlement that no later settlement carries yet (up to the listing's limit). */
  unapplied: number;
  /** Workspaces that owe them. */
  workspaces: number;
}

/** An organizer refund still owed, with what its refund execution is started again with. */
interface StalledRefundRow {
  /** The request row's key and time: the walk's position. */
  id: string;
  created_at: string;
  sale_id: string;
  note: string | null;
  /** The organizer's choice of the courtesy email; null on requests recorded before it was kept. */
  notify_buyer: boolean | null;
  reference: string;
  workspace_id: string;
  event_date_id: string;
}

/** Redis hash of fix counters by kind, for a metrics endpoint. */
export const RECONCILER_FIXES_KEY = 'reconciler:fixes';
/** Marks a sale asked about at its gateway, holding the due time it was asked for (exported for tests). */
export const checkedKey = (saleId: string) => `reconciler:checked:${saleId}`;
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
/**
 * Sales scanned per page to find the unchecked ones (most of them were checked by earlier runs). The scan goes on
 * from where the last run stopped (the `reconciler_cursors` row), so a burst of more sales than this is still walked
 * through to its end, run after run, and then starts over from the oldest.
 */
const GATEWAY_SCAN_PAGE = 5_000;
/** Pages one run reads at most: a long lookback is walked over several runs instead of rereading it every minute. */
const GATEWAY_SCAN_PAGES_PER_RUN = 4;
/**
 * Approved payment records the stranded-payment sweep reads per page. It walks them twice over, a bounded number of
 * pages each per run: a head that follows new records as they pass the margin (fresh money is handed over within a
 * run or two, as before), and a full walk over every record ever made that starts over at the end (a payment stays
 * stranded whatever its age, and is handed over again each time the walk passes it). Each record costs three index
 * probes, so a run reads at most 20,000 records in a few hundred milliseconds, and a million are all passed within
 * the hour.
 */
const STRANDED_SCAN_PAGE = 5_000;
const STRANDED_HEAD_PAGES_PER_RUN = 2;
const STRANDED_FULL_PAGES_PER_RUN = 2;
/** Where the head starts the first time it runs; older records are the full walk's. */
const STRANDED_HEAD_START_MS = 60 * 60_000;
/** A Redis that does not answer within this is treated as down for this call: dedupe degrades, the sweep goes on. */
const REDIS_SOFT_TIMEOUT_MS = 2_000;
/**
 * Pages of stalled refunds one run reads at most (each the run's batch size): the rest of the walk from the cursor,
 * then, when that reached the newest, one from the oldest. A single page would never start over: every run after the
 * end would read the empty page past the cursor and stop.
 */
const STALLED_REFUND_PAGES_PER_RUN = 2;
/** Rows an operator-facing listing reads per run: the gauge says "at least this many" beyond it. */
const LISTING_LIMIT = 1_000;

/** Gateway A and B spell "approved" differently in what the checkout records. */
const APPROVED_STATUS_SQL = `((a.gateway = 'GATEWAY_A' and a.status = 'approved')
  or (a.gateway = 'GATEWAY_B' and a.status in ('APPROVED', 'SALE_APPROVED')))`;

/** Attempts that opened a way to pay (a card charge, a PSE transfer, a gateway page or widget). */
const OPENED_KINDS_SQL = `('OPEN', 'PSE', 'CARD')`;

/**
 * An opened attempt of the paid (CONFIRMED or REFUNDED) sale `s` that could have taken money besides the payment that
 * confirmed it: anything but the card charge that paid, and but gateway A's card form (it takes money only through a
 * card charge, which has its own CARD attempt). A PSE or checkout page, or gateway B's widget, counts even when it
 * paid: a second tab on the same page is a second payment of the same reference.
 */
const OTHER_OPENED_SQL = `a.kind in ${OPENED_KINDS_SQL}
  and not (a.kind = 'CARD' and a.provider_payment_id is not distinct from s.payment_ref)
  and not (a.kind = 'OPEN' and a.gateway = 'GATEWAY_A' and a.provider_payment_id is null)`;

type CheckoutWorkflow = (input: CheckoutInput) => Promise<CheckoutStatus>;
type CheckPaymentArgs = typeof checkPaymentSignal extends SignalDefinition<infer A> ? A : never;

/** Raw rows; timestamps come back as Postgres text (`2026-11-23 16:27:22.43+00`). */
interface OverdueRow {
  id: string;
  reference: string;
  expires_at: string;
}

/** One approved payment record of the stranded-payment walk, and whether its payment is still unsettled. */
interface ApprovedRecordRow {
  id: string;
  created_at: string;
  sale_id: string;
  reference: string;
  sale_status: string;
  gateway: Gateway;
  provider_payment_id: string;
  stranded: boolean;
}

interface StrandedPayment {
  sale_id: string;
  reference: string;
  sale_status: string;
  gateway: Gateway;
  provider_payment_id: string;
  first_seen: string;
}

interface GatewayCheckRow {
  id: string;
  reference: string;
  status: string;
  /** When the sale is due to be asked about: its close, or a paid sale's window end plus the settlement lag. */
  due_at: string;
  /** Gateways a payment was opened with (usually one). */
  gateways: string[];
}

export async function forEachLimited<T>(
  items: T[],
  concurrency: number,
  run: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await run(item);
    }
  });
  await Promise.all(lanes);
}

export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const workspaceFilter = (scope: SweepScope, column: string): { sql: string; params: string[] } =>
  scope.workspaceId ? { sql: `and ${column} = ?`, params: [scope.workspaceId] } : { sql: '', params: [] };

export function createReconcilerActivities(deps: ActivityDeps) {
  // The checkout's own gateway read, so the reconciler judges a payment exactly as the checkout will.
  const payments = createPaymentActivities(deps);

  /** The checkout a late payment resumes runs on the current version: only the options that version knows. */
  const resumeInput = async (saleId: string): Promise<CheckoutInput> => ({
    saleId,
    latePaymentGraceMs: deps.env.LATE_PAYMENT_GRACE_MS,
    resumeAfterClose: true,
    ...(await checkoutStartOptions(deps.temporal, deps.env)),
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
      args: [await resumeInput(saleId)],
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

  /**
   * A Redis call whose failure degrades the sweep instead of failing it: Redis only dedupes (what was asked or handed
   * over lately) and counts, and a sweep without it asks or hands over again, which every checkout absorbs.
   */
  async function softly<T>(what: string, call: () => Promise<T>, fallback: T): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        call(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${REDIS_SOFT_TIMEOUT_MS} ms`)),
            REDIS_SOFT_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (error) {
      Context.current().log.warn('Redis unavailable to the reconciler; going on without its dedupe', {
        what: 'reconciler_redis_unavailable',
        call: what,
        error: errorText(error),
      });
      return fallback;
    } finally {
      clearTimeout(timer);
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
    if (any) await softly('count fixes', () => pipeline.exec(), null);
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
            args: [await resumeInput(sale.id)],
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
      // Every approved record is walked (keyset pages from the saved cursor, a bounded number a run) and each checked
      // by index probes; the first `limit` stranded payments found are handed over, and the next run goes on after
      // the last record this one went through. A payment recorded twice (card answer, then notification) is handed
      // over once a run.
      const rows: StrandedPayment[] = [];
      const taken = new Set<string>();
      const cutoff = new Date(Date.now() - scope.marginMs);
      const walk = {
        pageSize: STRANDED_SCAN_PAGE,
        page: (after: CursorPosition | null, upTo: CursorPosition | null, size: number) =>
          approvedRecordsPage(scope, cutoff, after, upTo, size),
        positionOf: (row: ApprovedRecordRow) => ({ dueAt: row.created_at, itemId: row.id }),
        visit: async (page: ApprovedRecordRow[]) => {
          for (const [index, row] of page.entries()) {
            const key = `${row.sale_id}:${row.provider_payment_id}`;
            if (!row.stranded || taken.has(key)) continue;
            if (rows.length >= scope.limit) return index;
            taken.add(key);
            rows.push({ ...row, first_seen: row.created_at });
          }
          return page.length;
        },
        onPage: () => context.heartbeat(),
      };
      const head = await walkFromCursor<ApprovedRecordRow>(deps.orm, {
        ...walk,
        name: cursorName('stranded-payments-head', scope.workspaceId),
        pages: STRANDED_HEAD_PAGES_PER_RUN,
        wrap: false,
        startAt: { dueAt: new Date(cutoff.getTime() - STRANDED_HEAD_START_MS).toISOString(), itemId: FIRST_ITEM },
      });
      const full = await walkFromCursor<ApprovedRecordRow>(deps.orm, {
        ...walk,
        name: cursorName('stranded-payments', scope.workspaceId),
        pages: STRANDED_FULL_PAGES_PER_RUN,
      });
      const result: StrandedPaymentSweep = { signalled: 0, recentlySignalled: 0, errors: 0 };
      for (const row of rows) {
        context.heartbeat();
        const key = signalledKey(row.provider_payment_id);
        // Without Redis every stranded payment counts as fresh: handed over again, which its checkout absorbs.
        const fresh = await softly(
          'resignal dedupe',
          () => deps.redis.set(key, String(Date.now()), 'PX', RESIGNAL_AFTER_MS, 'NX'),
          'OK' as const,
        );
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
          await softly('resignal dedupe', () => deps.redis.del(key), 0);
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
      await head.saveCursor();
      await full.saveCursor();
      await countFixes({ unresolved_payments_resolved: result.signalled, errors: result.errors });
      return result;
    },

    /**
     * Sales whose gateway may hold money we have no record of, each asked about once it is due and not since:
     * - closed unpaid (ABANDONED, CANCELLED) after a payment had been opened for them, due when they closed;
     * - CONFIRMED with another payment opened beside the one that paid (a first card left in process, a PSE tab),
     *   due when their payment window ended plus the gateway's settlement lag; REFUNDED ones too, since refunding
     *   the payment that confirmed the sale (an event cancelled, say) gives back nothing of the other one.
     * The gateway is searched for every payment of their reference, and an approved one we have no record of (its
     * notification was lost) goes to the sale's checkout, which confirms an unpaid sale with it if the stock is still
     * there, or refunds it (always, for a sale another payment already confirmed).
     *
     * The walk goes on from where the previous run stopped (a `reconciler_cursors` row per scope), oldest due first,
     * and starts over from the oldest once it reaches the newest: every sale of the lookback is visited, however many
     * closed at once. What a run asked about is marked in Redis; without Redis, marks are not read and the walk still
     * moves on, so the sweep asks again rather than stops.
     */
    async checkClosedSalesAtGateway(scope: GatewaySweepScope): Promise<ClosedSaleSweep> {
      const context = Context.current();
      const due: GatewayCheckRow[] = [];
      const now = Date.now();
      const walked = await walkFromCursor<GatewayCheckRow>(deps.orm, {
        name: cursorName('gateway-check', scope.workspaceId),
        pageSize: GATEWAY_SCAN_PAGE,
        pages: GATEWAY_SCAN_PAGES_PER_RUN,
        page: (after, upTo, size) => gatewayCheckPage(scope, now, after, upTo, size),
        positionOf: (sale) => ({ dueAt: sale.due_at, itemId: sale.id }),
        visit: async (page) => {
          const marks = await checkedMarks(page);
          for (const [index, sale] of page.entries()) {
            const unchecked = marks[index] !== String(new Date(sale.due_at).getTime());
            if (unchecked && due.length >= scope.limit) return index;
            if (unchecked) due.push(sale);
          }
          return page.length;
        },
        onPage: () => context.heartbeat(),
      });

      const result: ClosedSaleSweep = { checked: 0, confirmedChecked: 0, lateMoneyFound: 0, errors: 0 };
      const checkedTtlMs = scope.lookbackMs + scope.marginMs;
      await forEachLimited(due, GATEWAY_CONCURRENCY, async (sale) => {
        context.heartbeat();
        const dueAtMs = String(new Date(sale.due_at).getTime());
        const gateways = sale.gateways.filter((g): g is Gateway => g === 'GATEWAY_A' || g === 'GATEWAY_B');
        // Paid once already: any approved payment found beside the one that paid is a second charge to give back.
        const paidAlready = sale.status === 'CONFIRMED' || sale.status === 'REFUNDED';
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
                paidAlready
                  ? 'second approved payment found at the gateway for a sale paid already; handed to its checkout to refund'
                  : 'approved payment found at the gateway for a sale closed unpaid; handed to its checkout',
                {
                  what: paidAlready ? 'second_payment_found' : 'late_money_found',
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
          if (paidAlready) result.confirmedChecked = (result.confirmedChecked ?? 0) + 1;
          else result.checked += 1;
          await softly('checked mark', () => deps.redis.set(checkedKey(sale.id), dueAtMs, 'PX', recheckAfterMs), null);
        } catch (error) {
          // Left unmarked: the walk's next pass (or the next run, when this run started over) asks again.
          result.errors += 1;
          context.log.warn('could not ask the gateway about a sale; a later run retries', {
            what: 'closed_sale_check_failed',
            saleId: sale.id,
            reference: sale.reference,
            saleStatus: sale.status,
            error: errorText(error),
          });
        }
      });
      await walked.saveCursor();
      await countFixes({
        closed_sales_checked: result.checked,
        confirmed_sales_checked: result.confirmedChecked ?? 0,
        late_money_found: result.lateMoneyFound,
        errors: result.errors,
      });
      return result;
    },

    /**
     * Refunds asked for more than an hour ago that their gateway has not confirmed (still requested, refused for
     * good, or in between): counted, logged at error level one by one, and in the gauge `ticketing_refunds_overdue`
     * (runs over every workspace only). The reconciler does not retry them itself: a requested one is its checkout's
     * (the stranded-payment sweep hands it over again), a refused one an operator's (`operator refunds-refused`).
     */
    async reportOverdueRefunds(scope: SweepScope): Promise<OverdueRefundSweep> {
      const context = Context.current();
      const overdue = await listOverdueRefunds(deps.orm.em.fork(), {
        workspaceId: scope.workspaceId,
        olderThanMs: REFUND_OVERDUE_AFTER_MS,
        limit: LISTING_LIMIT,
      });
      const now = Date.now();
      for (const refund of overdue) {
        context.log.error('refund asked for over an hour ago and not confirmed by the gateway', {
          what: 'refund_overdue',
          saleId: refund.saleId,
          reference: refund.reference,
          workspaceId: refund.workspaceId,
          gateway: refund.gateway,
          providerPaymentId: refund.providerPaymentId,
          refundStatus: refund.refundStatus,
          reason: refund.reason,
          amount: refund.amount,
          currency: refund.currency,
          overdueForMs: now - Date.parse(refund.requestedAt),
        });
      }
      const oldestAgeMs = overdue[0] ? now - Date.parse(overdue[0].requestedAt) : 0;
      if (scope.workspaceId === null) {
        reconcilerAlertMetrics.refundsOverdue.set(overdue.length);
        reconcilerAlertMetrics.oldestRefundOverdueSeconds.set(Math.floor(oldestAgeMs / 1000));
      }
      return { overdue: overdue.length, oldestAgeMs };
    },

    /**
     * Organizer refunds (the `refund-request:` row, still `requested`) of sales still CONFIRMED, asked for over the
     * margin ago, whose refund execution is not running: one terminated or failed between the gateway's refund and
     * the database write left the money given back and the sale CONFIRMED. Each is started again under its own id: the
     * new execution reads the gateway first (already refunded → not asked again) and records the refund once (REFUND
     * record, REFUNDED, `sale.refunded`). One refused for good is `refund_refused`, not `requested`: an operator's.
     * The organizer's notifyBuyer choice recorded with the request is passed on (a request recorded before it was
     * kept gets none: no courtesy email); the notice is recorded either way.
     * Sales of a cancelled event are left to its cancellation (which refunds them in batches and is itself resumed by
     * the reconciler): a refund execution per sale during a long outage would only double its gateway calls.
     *
     * The requests are walked in (created_at, id) order from where the last run stopped (`reconciler_cursors`,
     * `stalled-refunds:<scope>`), at most the batch size a run, starting over from the oldest at the end: those whose
     * execution still runs are passed over, not read again every run, so however many of them there are the ones
     * behind them are reached.
     */
    async redriveStalledRefunds(scope: SweepScope): Promise<StalledRefundSweep> {
      const context = Context.current();
      const stalled: StalledRefundRow[] = [];
      const walked = await walkFromCursor<StalledRefundRow>(deps.orm, {
        name: cursorName('stalled-refunds', scope.workspaceId),
        pageSize: scope.limit,
        pages: STALLED_REFUND_PAGES_PER_RUN,
        page: (after, upTo, size) => stalledRefundsPage(scope, after, upTo, size),
        positionOf: (row) => ({ dueAt: row.created_at, itemId: row.id }),
        visit: async (page) => {
          for (const [index, row] of page.entries()) {
            if (stalled.length >= scope.limit) return index;
            stalled.push(row);
          }
          return page.length;
        },
        onPage: () => context.heartbeat(),
      });
      const result: StalledRefundSweep = { redriven: 0, stillRunning: 0, errors: 0 };
      for (const row of stalled) {
        context.heartbeat();
        try {
          const handle = deps.temporal.workflow.getHandle(refundWorkflowId(row.sale_id));
          const running = await handle.describe().then(
            (description) => description.status.name === 'RUNNING',
            (error: unknown) => {
              if (error instanceof WorkflowNotFoundError) return false;
              throw error;
            },
          );
          if (running) {
            result.stillRunning += 1;
            continue;
          }
          const reason = row.note?.replace(/^refund requested by the organizer: /, '') ?? 'refund re-driven';
          await deps.temporal.workflow
            .start<typeof refund>('refund', {
              workflowId: refundWorkflowId(row.sale_id),
              taskQueue: deps.env.TEMPORAL_TASK_QUEUE,
              args: [{ saleId: row.sale_id, reason, notifyBuyer: row.notify_buyer === true }],
              typedSearchAttributes: saleSearchAttributes({
                reference: row.reference,
                workspace: row.workspace_id,
                eventDate: row.event_date_id,
                status: 'CONFIRMED',
              }),
              workflowIdConflictPolicy: 'USE_EXISTING',
            })
            .catch((error: unknown) => {
              if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
            });
          result.redriven += 1;
          context.log.warn('refund owed with no refund execution running; started again', {
            what: 'refund_redriven',
            saleId: row.sale_id,
            reference: row.reference,
          });
        } catch (error) {
          result.errors += 1;
          // The cursor moves on past it: the walk's next pass (the next run, unless more are stalled) retries.
          context.log.warn('could not re-drive a stalled refund; the next pass retries', {
            saleId: row.sale_id,
            error: errorText(error),
          });
        }
      }
      // Saved once each request taken was handled: a run that fails before goes over the same ones again.
      await walked.saveCursor();
      await countFixes({ refund_redriven: result.redriven });
      return result;
    },

    /**
     * Refunds of sales a sent settlement already paid out that no later settlement carries yet: the organizer owes
     * them back and only the workspace's next settlement would apply them. Counted, logged (warn) per workspace with
     * the sum owed, and in the gauges `ticketing_settlement_adjustments_unapplied*` (runs over every workspace only).
     */
    async reportUnappliedAdjustments(scope: SweepScope): Promise<UnappliedAdjustmentSweep> {
      const context = Context.current();
      const unapplied = await listUnappliedAdjustments(deps.orm.em.fork(), {
        workspaceId: scope.workspaceId,
        limit: LISTING_LIMIT,
      });
      const byWorkspace = new Map<string, { count: number; amount: number; currency: string; oldest: string | null }>();
      const byCurrency = new Map<string, number>();
      for (const adjustment of unapplied) {
        const entry = byWorkspace.get(adjustment.workspaceId) ?? {
          count: 0,
          amount: 0,
          currency: adjustment.currency,
          oldest: adjustment.refundedAt,
        };
        entry.count += 1;
        entry.amount += adjustment.amount;
        byWorkspace.set(adjustment.workspaceId, entry);
        byCurrency.set(adjustment.currency, (byCurrency.get(adjustment.currency) ?? 0) + adjustment.amount);
      }
      for (const [workspaceId, entry] of byWorkspace) {
        context.log.warn('refunds after a sent settlement wait for a later settlement of the workspace', {
          what: 'settlement_adjustments_unapplied',
          workspaceId,
          adjustments: entry.count,
          amount: entry.amount,
          currency: entry.currency,
          oldestRefundAt: entry.oldest,
        });
      }
      if (scope.workspaceId === null) {
        reconcilerAlertMetrics.adjustmentsUnapplied.set(unapplied.length);
        reconcilerAlertMetrics.adjustmentsUnappliedAmount.reset();
        for (const [currency, amount] of byCurrency)
          reconcilerAlertMetrics.adjustmentsUnappliedAmount.set({ currency }, amount);
      }
      return { unapplied: unapplied.length, workspaces: byWorkspace.size };
    },
  };

  /**
   * One page of the stalled-refund walk: organizer refund requests still `requested`, asked for over the margin ago,
   * of sales still CONFIRMED and of events not cancelled, after `after` and up to `upTo` in (created_at, id) order.
   * Reads through `payment_attempts_refund_open_index` (refunds not done, by created_at).
   */
  async function stalledRefundsPage(
    scope: SweepScope,
    after: CursorPosition | null,
    upTo: CursorPosition | null,
    size: number,
  ): Promise<StalledRefundRow[]> {
    const cutoff = new Date(Date.now() - scope.marginMs);
    return deps.orm.em.fork().execute<StalledRefundRow[]>(
      `select a.id, a.created_at, a.sale_id, a.note, a.notify_buyer, s.reference, s.workspace_id, s.event_date_id
         from payment_attempts a join sales s on s.id = a.sale_id
        where a.kind = 'REFUND' and (a.status is null or a.status not in ${REFUND_DONE_SQL})
          and a.status = 'requested' and a.dedupe_key like 'refund-request:%'
          and a.created_at < ?
          and (a.created_at, a.id) > (?::timestamptz, ?::uuid)
          and (a.created_at, a.id) <= (?::timestamptz, ?::uuid)
          and s.status = 'CONFIRMED' and (?::uuid is null or s.workspace_id = ?::uuid)
          and not exists (select 1 from events e where e.id = s.event_id and e.cancelled_at is not null)
        order by a.created_at, a.id limit ?`,
      [
        cutoff,
        after?.dueAt ?? new Date(0),
        after?.itemId ?? FIRST_ITEM,
        upTo?.dueAt ?? cutoff,
        upTo?.itemId ?? LAST_ITEM,
        scope.workspaceId,
        scope.workspaceId,
        size,
      ],
    );
  }

  /**
   * Settled (a sale is paid by it, or its gateway confirmed it refunded), or already recorded as approved for this
   * very sale (a refund only requested is there too), which
   * makes it the stranded-payment sweep's (or the live checkout's) to settle. Recorded only under another sale does
   * not count: that sale's checkout ignores a payment naming this reference, this one's does not.
   */
  /**
   * One page of the stranded-payment walk: approved payment records (the kinds that record money taken) made before
   * `cutoff`, after `after` and up to `upTo` in (created_at, id) order, each with whether its payment is still
   * unsettled. Settled means some sale is paid by it (CONFIRMED), or was and gave it back (REFUNDED: the organizer's
   * refund records the gateway's refund id, not the payment's), or its gateway confirmed a refund of it. A refund
   * only requested is money still out: its checkout is handed the payment again and sees its refund through. One the
   * gateway refused for good is parked for an operator (listed by the overdue-refunds sweep), not re-sent here.
   * Approved payments found by asking the gateway (STATUS_CHECK) count like notified ones. The page reads
   * `payment_attempts_approved_walk_index`; each probe is one index lookup per record (sales_payment_ref_index,
   * payment_attempts_refund_payment_index; the sale by its key), each written as a lateral `limit 1` so that the
   * planner cannot hash the whole of `sales` instead: a page costs the same however large the tables grow, and a planner without statistics (a
   * table filled since its last analyze) still probes rather than rescanning a table per record, which is how the
   * unbounded statement of before ran for minutes.
   */
  async function approvedRecordsPage(
    scope: SweepScope,
    cutoff: Date,
    after: CursorPosition | null,
    upTo: CursorPosition | null,
    size: number,
  ): Promise<ApprovedRecordRow[]> {
    const workspace = scope.workspaceId
      ? {
          sql: 'and exists (select 1 from sales w where w.id = a.sale_id and w.workspace_id = ?)',
          params: [scope.workspaceId],
        }
      : { sql: '', params: [] };
    return deps.orm.em.fork().execute<ApprovedRecordRow[]>(
      `with page as (
         select a.id, a.created_at, a.sale_id, a.gateway, a.provider_payment_id
           from payment_attempts a
          where a.kind in ('CARD', 'NOTIFICATION', 'STATUS_CHECK', 'LATE_PAYMENT') and a.provider_payment_id is not null
            and ${APPROVED_STATUS_SQL}
            and a.created_at < ?
            and (a.created_at, a.id) > (?::timestamptz, ?::uuid)
            and (a.created_at, a.id) <= (?::timestamptz, ?::uuid)
            ${workspace.sql}
          order by a.created_at, a.id limit ?)
       select page.id, page.created_at, page.sale_id, s.reference, s.status as sale_status, page.gateway,
              page.provider_payment_id, paid.one is null and given_back.one is null as stranded
         from page
         join lateral (select s.reference, s.status from sales s where s.id = page.sale_id limit 1) s on true
         left join lateral (select 1 as one from sales p
                             where p.payment_ref = page.provider_payment_id and p.status in ('CONFIRMED', 'REFUNDED')
                             limit 1) paid on true
         left join lateral (select 1 as one from payment_attempts r
                             where r.kind = 'REFUND' and r.provider_payment_id = page.provider_payment_id
                               and (r.status in ${REFUND_DONE_SQL} or r.status = 'refund_refused')
                             limit 1) given_back on true
        order by page.created_at, page.id`,
      [
        cutoff,
        after?.dueAt ?? new Date(0),
        after?.itemId ?? FIRST_ITEM,
        upTo?.dueAt ?? cutoff,
        upTo?.itemId ?? LAST_ITEM,
        ...workspace.params,
        size,
      ],
    );
  }

  /**
   * One page of the gateway sweep's walk, oldest due first: sales due after `after` (exclusive) and up to `upTo`
   * (inclusive), due more than the margin ago and less than the lookback ago. Each kind of sale is read in key order
   * from its own index (sales_closed_unpaid_walk_index: closed_at; sales_confirmed_due_walk_index: the end of the
   * payment window, the due time less the settlement lag) and stops at the page size, so a page costs the same however
   * many sales the lookback holds; the two are then merged.
   */
  async function gatewayCheckPage(
    scope: GatewaySweepScope,
    now: number,
    after: CursorPosition | null,
    upTo: CursorPosition | null,
    size: number,
  ): Promise<GatewayCheckRow[]> {
    const filter = workspaceFilter(scope, 's.workspace_id');
    const lookbackStart = new Date(now - scope.lookbackMs);
    const cutoff = new Date(now - scope.marginMs);
    const from = [after?.dueAt ?? new Date(0), after?.itemId ?? FIRST_ITEM] as const;
    const to = [upTo?.dueAt ?? cutoff, upTo?.itemId ?? LAST_ITEM] as const;
    const gateways = `array(select distinct a.gateway from payment_attempts a
                             where a.sale_id = s.id and a.kind in ${OPENED_KINDS_SQL}) as gateways`;
    const closed = {
      sql: `(select s.id, s.reference, s.status, s.closed_at as due_at, ${gateways}
               from sales s
              where s.status in ('ABANDONED', 'CANCELLED') and s.closed_at > ? and s.closed_at < ?
                and (s.closed_at, s.id) > (?::timestamptz, ?::uuid)
                and (s.closed_at, s.id) <= (?::timestamptz, ?::uuid)
                and exists (select 1 from payment_attempts a where a.sale_id = s.id and a.kind in ${OPENED_KINDS_SQL})
                ${filter.sql}
              order by s.closed_at, s.id limit ?)`,
      params: [lookbackStart, cutoff, ...from, ...to, ...filter.params, size],
    };
    const lagMs = scope.settlementLagMs;
    // Due = the window's end + the lag: the keys are compared less the lag, so the index order is the due order.
    const windowEnd = 'greatest(s.expires_at, s.confirmed_at)';
    const lessLag = `?::timestamptz - ? * interval '1 millisecond'`;
    const confirmed =
      lagMs === undefined
        ? null
        : {
            sql: `(select s.id, s.reference, s.status, ${windowEnd} + ? * interval '1 millisecond' as due_at, ${gateways}
                     from sales s
                    where s.status in ('CONFIRMED', 'REFUNDED') and s.confirmed_at > ?
                      and ${windowEnd} > ${lessLag} and ${windowEnd} < ${lessLag}
                      and (${windowEnd}, s.id) > (${lessLag}, ?::uuid)
                      and (${windowEnd}, s.id) <= (${lessLag}, ?::uuid)
                      and exists (select 1 from payment_attempts a where a.sale_id = s.id and ${OTHER_OPENED_SQL})
                      ${filter.sql}
                    order by ${windowEnd}, s.id limit ?)`,
            params: [
              lagMs,
              new Date(lookbackStart.getTime() - lagMs),
              lookbackStart,
              lagMs,
              cutoff,
              lagMs,
              from[0],
              lagMs,
              from[1],
              to[0],
              lagMs,
              to[1],
              ...filter.params,
              size,
            ],
          };
    return deps.orm.em.fork().execute<GatewayCheckRow[]>(
      `select id, reference, status, due_at, gateways from (
         ${closed.sql}
         ${confirmed ? `union all ${confirmed.sql}` : ''}
       ) due
        order by due.due_at, due.id limit ?`,
      [...closed.params, ...(confirmed?.params ?? []), size],
    );
  }

  /**
   * The close (or due) time each sale was last asked about for, as marked in Redis: a sale closed again later (after
   * a late confirmation and a cancel, say) is asked about again. Without Redis, none is marked.
   */
  async function checkedMarks(sales: GatewayCheckRow[]): Promise<(string | null)[]> {
    const marks: (string | null)[] = [];
    for (let start = 0; start < sales.length; start += 500) {
      const keys = sales.slice(start, start + 500).map((sale) => checkedKey(sale.id));
      marks.push(
        ...(await softly(
          'checked marks',
          () => deps.redis.mget(keys),
          keys.map(() => null),
        )),
      );
    }
    return marks;
  }

  async function alreadyAccountedFor(saleId: string, verdict: PaymentVerdict): Promise<boolean> {
    if (verdict.providerPaymentId === null) return false;
    const rows = await deps.orm.em.fork().execute<{ one: number }[]>(
      `select 1 as one from payment_attempts a
        where a.kind = 'REFUND' and a.provider_payment_id = ? and a.status in ${REFUND_DONE_SQL}
       union all
       select 1 from payment_attempts a where a.sale_id = ? and a.provider_payment_id = ? and ${APPROVED_STATUS_SQL}
       union all
       select 1 from sales s where s.payment_ref = ? and s.status in ('CONFIRMED', 'REFUNDED')
       limit 1`,
      [verdict.providerPaymentId, saleId, verdict.providerPaymentId, verdict.providerPaymentId],
    );
    return rows.length > 0;
  }
}

export type ReconcilerActivities = ReturnType<typeof createReconcilerActivities>;
