/**
 * Checkout: the life of one sale, from the reservation to a confirmed purchase or to its stock back on sale, with
 * one promise kept under any fault: every approved payment ends as the payment of a CONFIRMED sale or as a refund
 * the gateway has confirmed, and stock held by an unpaid sale always comes back.
 *
 * reserve (update-with-start) ─▶ reserved ──payment approved──▶ confirmed ─▶ tickets emailed (off the money path)
 *                                   │
 *                                   ├─ payment window ends ─▶ ask the gateway ─▶ abandoned ─┐
 *                                   ├─ buyer releases ──────▶ ask the gateway ─▶ abandoned ─┼─▶ late money? confirm
 *                                   └─ organizer cancels ───▶ ask the gateway ─▶ cancelled ─┘   if stock, else refund
 *
 * Push is not trusted alone: while a payment attempt is open the checkout also pulls (asks the gateway for the
 * payments of the sale's reference), and always before closing a sale unpaid. A notification that arrives after
 * this execution finished starts a fresh run (`resumeAfterClose`, signal-with-start) that reads the sale and
 * resolves the money the same way; the reconciler schedule does the same for anything both paths missed.
 *
 * Nothing a provider does fails this execution: gateway calls are retried a few times and their failure becomes
 * "ask again later"; refunds are retried until the gateway reports the payment refunded.
 */

import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  TemporalFailure,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { CheckoutActivities, SaleSnapshot } from '../activities/checkout.js';
import type { PaymentActivities, PaymentVerdict } from '../activities/payments.js';
import type { SeatActivities } from '../activities/seats.js';
import type { SaleStatus } from '../domain/sale-state.js';
import {
  LOCAL_CARD_CHARGE,
  LOCAL_CHARGE_RECORDED_FIRST,
  REFUND_KEY_PER_ASK,
  REFUND_REFUSAL_PARKS,
  SECOND_PAYMENT_ASKED,
} from './checkout-patches.js';
import {
  type CheckoutInput,
  type CheckoutPhase,
  type CheckoutStatus,
  chargeCardUpdate,
  checkoutStatusQuery,
  checkPaymentSignal,
  type Gateway,
  type GatewayAPageMethods,
  openPaymentUpdate,
  openPseUpdate,
  type PaymentNotification,
  type PaymentUnavailable,
  paymentNotificationSignal,
  REFUND_REFUSALS_BEFORE_PARKING,
  type ReleaseReason,
  type ReleaseResult,
  type ReservedSale,
  releaseUpdate,
  reserveItemsOf,
  reserveUpdate,
  retryRefusedRefundSignal,
  SA,
  saleStatusChangedSignal,
} from './definitions.js';
import {
  DATABASE_STEP,
  GATEWAY_CALL,
  MONEY_BACK,
  onProviderQueue,
  rerunWhenEvicted,
  UNTIL_IT_WORKS,
} from './local-steps.js';

/**
 * Short, idempotent database transactions run inside the workflow task (local activities): no task-queue round
 * trip per step. Retried without a cap, so a database restart delays the sale instead of failing it; an error no
 * retry can fix is thrown non-retryable by the activity and ends the step at once.
 */
const db = rerunWhenEvicted(proxyLocalActivities<CheckoutActivities>(DATABASE_STEP));
/**
 * The reservation is bounded as a whole so it can never outlive the wait for it: when it gives up, the execution
 * compensates whatever a lost-answer attempt may have committed. With numbered seats it calls the seat-map
 * provider, so it runs on the task queue.
 */
const RESERVATION_LIMITS = { startToCloseTimeout: '15 seconds', scheduleToCloseTimeout: '30 seconds' } as const;
const reserveInWorkflowTask = rerunWhenEvicted(
  proxyLocalActivities<CheckoutActivities>({
    ...RESERVATION_LIMITS,
    localRetryThreshold: '5 seconds',
    retry: UNTIL_IT_WORKS,
  }),
);
const reserveOnTaskQueue = proxyActivities<CheckoutActivities>({ ...RESERVATION_LIMITS, retry: UNTIL_IT_WORKS });
/** Rail lookups only read the database; the buyer is waiting, so they are bounded. */
const rails = rerunWhenEvicted(
  proxyLocalActivities<PaymentActivities>({
    startToCloseTimeout: '10 seconds',
    scheduleToCloseTimeout: '30 seconds',
    retry: UNTIL_IT_WORKS,
  }),
);
/** Payment records read and written in the workflow task; money news waits on them, so no cap. */
const paymentRecords = rerunWhenEvicted(proxyLocalActivities<PaymentActivities>(DATABASE_STEP));
/** Gateway calls a buyer or the story waits on: a few tries, then "ask again later" instead of a failure. */
const gateways = proxyActivities<PaymentActivities>(GATEWAY_CALL);
/**
 * The card charge inside the pay update's workflow task (LOCAL_CARD_CHARGE): one quick retry within a short bound,
 * then the task-queue activity takes over with the same call. A run evicted meanwhile charges again: the same
 * idempotency key answers the same payment. 5 s: under the 8 s after which the SDK heartbeats a workflow task (a
 * task more) and under the gateway client's own 10 s timeout, which the task-queue activity keeps.
 */
const LOCAL_CARD_CHARGE_MS = 5000;
const localCardCharge = (scheduleToCloseMs: number) =>
  rerunWhenEvicted(
    proxyLocalActivities<PaymentActivities>({
      scheduleToCloseTimeout: scheduleToCloseMs,
      retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumAttempts: 2 },
    }),
  );
/** Money must go back: retried without a cap; the story then waits for the gateway to report it refunded. */
const refunds = onProviderQueue<PaymentActivities>(MONEY_BACK);
/** Seat-map calls leave the process, so they run on the task queue; compensation must happen, so no cap. */
const seatMap = proxyActivities<SeatActivities>({ startToCloseTimeout: '30 seconds', retry: UNTIL_IT_WORKS });

const DEFAULT_PAYMENT_POLL_MS = 30_000;
const MAX_PULL_INTERVAL_MS = 5 * 60_000;
/** A failed ask is retried soon after, then less often while it keeps failing (up to MAX_PULL_INTERVAL_MS). */
const OWED_ASK_FIRST_RETRY_MS = 5_000;
const REFUND_CHECK_FIRST_MS = 5_000;
const REFUND_CHECK_MAX_MS = 10 * 60_000;
/**
 * How long after the payment window a confirmed sale's other payments are first asked about: a PSE transfer the bank
 * settles late, or a card the gateway held in_process, can turn approved after the window (capped by the grace period).
 */
const SETTLEMENT_LAG_MS = 15 * 60_000;

const STATUS_TO_PHASE: Record<SaleStatus, CheckoutPhase> = {
  PENDING: 'reserved',
  CONFIRMED: 'confirmed',
  ABANDONED: 'abandoned',
  CANCELLED: 'cancelled',
  REFUNDED: 'refunded',
};
const PHASE_TO_STATUS: Partial<Record<CheckoutPhase, SaleStatus>> = {
  reserved: 'PENDING',
  confirmed: 'CONFIRMED',
  abandoned: 'ABANDONED',
  cancelled: 'CANCELLED',
  refunded: 'REFUNDED',
};

/** A refusal an update validator or handler answers with; the API maps `type` to the contract's error code. */
function refusal(code: string, message: string, details: Record<string, unknown> = {}, retryable = false) {
  return ApplicationFailure.create({ type: code, message, nonRetryable: !retryable, details: [details] });
}

const unavailable = (reason: string, message: string): PaymentUnavailable => ({
  ok: false,
  code: 'PAYMENT_UNAVAILABLE',
  reason,
  message,
});

const isGiveUp = (error: unknown): error is ActivityFailure => error instanceof ActivityFailure;

/**
 * Why the gateway refused a refund for good. The refund activity retries every answer worth retrying without a cap,
 * so an activity that gave up met a final answer (a 4xx such as an insufficient balance): its message says which.
 */
function refusalOf(error: ActivityFailure): string {
  const cause = error.cause instanceof ApplicationFailure ? error.cause : null;
  return (cause?.message ?? error.message ?? 'refused').slice(0, 200);
}

/** The earliest of these instants still ahead (workflow time), or null when none is. */
function earliestFuture(instantsMs: Array<number | null>): number | null {
  const ahead = instantsMs.filter((at): at is number => at !== null && at > Date.now());
  return ahead.length === 0 ? null : Math.min(...ahead);
}

/**
 * `condition` with a timeout, minus the timer when there is nothing to wait for: a timer is a history round trip.
 * The summary says in the Temporal UI what the timer waits for.
 */
async function waitUntil(ready: () => boolean, timeoutMs: number, summary: string): Promise<void> {
  if (ready() || timeoutMs <= 0) return;
  await condition(ready, timeoutMs, { summary });
}

/** Why a payment is given back; each reason has its own record and buyer-facing status. */
type GiveBackReason =
  | 'second_charge'
  | 'mismatch'
  | 'seats_lost'
  | 'late_no_stock'
  | 'late_cancelled'
  | 'late_seats_gone'
  | 'sale_refunded';
const GIVE_BACK: Record<GiveBackReason, { dedupe: string; note: string; paymentStatus: string | null }> = {
  second_charge: {
    dedupe: 'second-charge-refund',
    note: 'a second payment for a sale that was already paid; refunded',
    paymentStatus: null,
  },
  mismatch: {
    dedupe: 'mismatch-refund',
    note: "the payment's amount or currency does not match the sale; refunded",
    paymentStatus: 'FT_MISMATCH_REFUNDED',
  },
  seats_lost: {
    dedupe: 'seats-lost-refund',
    note: 'the seats were no longer held at the seat-map provider; refunded',
    paymentStatus: 'FT_SEATS_LOST_REFUNDED',
  },
  late_no_stock: {
    dedupe: 'late-refund',
    note: 'the payment arrived after the sale was ABANDONED and the stock was sold meanwhile; refunded',
    paymentStatus: 'FT_LATE_PAYMENT_REFUNDED',
  },
  late_cancelled: {
    dedupe: 'late-refund',
    note: 'the payment arrived after the sale was CANCELLED; the cancel stands, refunded',
    paymentStatus: 'FT_LATE_PAYMENT_REFUNDED',
  },
  late_seats_gone: {
    dedupe: 'late-refund',
    note: 'the payment arrived after the sale was ABANDONED and its seats were sold meanwhile; refunded',
    paymentStatus: 'FT_LATE_PAYMENT_REFUNDED',
  },
  sale_refunded: {
    dedupe: 'after-refund-refund',
    note: 'a payment for a sale that was already refunded; refunded',
    paymentStatus: null,
  },
};

/** Whether this execution takes patch `id`'s path: from its start when its input lists it, else as `patched` says. */
function hasPatch(input: CheckoutInput, id: string): boolean {
  return input.patchesInForce?.includes(id) === true || patched(id);
}

export async function checkout(input: CheckoutInput): Promise<CheckoutStatus> {
  return new SaleCheckout(input).run();
}

class SaleCheckout {
  private phase: CheckoutPhase = 'awaiting_reservation';
  private sale: ReservedSale | null = null;
  private gateway: Gateway | null = null;
  private seated = false;
  /** A payment was opened (card, PSE, button): money may exist at the gateway, so it is asked before closing. */
  private attemptOpened = false;
  /** The gateway payment that paid the sale: any other approved payment for it is a second charge. */
  private paidWith: string | null = null;
  private readonly inbox: PaymentNotification[] = [];
  private releaseRequest: ReleaseReason | null = null;
  private checkRequested = false;
  private reserving = false;
  private reserveFailed = false;
  /** Payments whose news was processed, so a card charge can answer with its outcome. */
  private readonly settledPayments = new Set<string>();
  /** Payments this execution gave back: they never buy anything afterwards. */
  private readonly givenBack = new Set<string>();
  /** Payments the gateway said were rejected: a rejection is final, so later news of one still pending is stale. */
  private readonly rejected = new Set<string>();
  /**
   * Payment routes opened that can bring money on their own: each card charge, each gateway B button, each gateway A
   * checkout page (a page can be paid more than once). More than the one that paid means a second payment may come.
   */
  private paymentRoutesOpened = 0;
  private pageOpened = false;
  /** The last ask of the gateway found a payment other than the one that paid the sale still pending. */
  private otherPaymentPending = false;
  /** Refunds the gateway kept refusing, parked (recorded `refund_refused`) until an operator retries them. */
  private readonly parkedRefunds = new Map<
    string,
    { verdict: PaymentVerdict; reason: GiveBackReason; dedupeKey: string }
  >();
  /**
   * Refusals met so far by each payment's refund, across operators' retries: the next ask uses a key of its own
   * (`-a<n>`), since the gateway replays a refused answer for a key it has seen.
   */
  private readonly refundRefusalsSeen = new Map<string, number>();
  /** Operators' retries not yet acted on: a payment id, or null for every parked refund. */
  private readonly refundRetries: Array<string | null> = [];
  /** Pull schedule: when to ask the gateway next, and whether an answer is owed (the last ask failed). */
  private nextPullAtMs: number | null = null;
  private pullIntervalMs: number;
  private pullOwed = false;
  /** Wait before asking again after a failed ask; null while the last ask succeeded. */
  private owedRetryMs: number | null = null;
  private lateListeningUntilMs: number | null = null;
  /** Who holds the turn (see takeTurn); null while nobody does. */
  private turnHolder: object | null = null;

  constructor(private readonly input: CheckoutInput) {
    this.pullIntervalMs = input.paymentPollMs ?? DEFAULT_PAYMENT_POLL_MS;
    this.registerHandlers();
  }

  // ------------------------------------------------------------------------------------------------ the story

  async run(): Promise<CheckoutStatus> {
    if (this.input.resumeAfterClose) {
      if (!(await this.resume())) return this.status();
    } else if (!(await this.awaitReservation())) {
      return this.status();
    }
    if (this.now() === 'reserved') await this.awaitPayment();
    await this.settle();
    return this.status();
  }

  /**
   * The reserve update creates the sale; a reservation that failed half-way, or whose update never arrived (a step
   * may have committed it on a worker that died), is compensated before ending: a sale that is not there changes
   * nothing.
   */
  private async awaitReservation(): Promise<boolean> {
    await condition(
      () => this.phase !== 'awaiting_reservation' || this.reserving,
      this.input.reserveTimeoutMs ?? 60_000,
      { summary: 'stop waiting for the reservation' },
    );
    // Once the update started, its step is bounded by its own schedule-to-close timeout: wait for its outcome.
    await condition(() => !this.reserving);
    const phase = this.now();
    if (phase === 'reserved' || phase === 'confirmed') return true;
    const neverReached = phase === 'awaiting_reservation';
    if (this.reserveFailed || neverReached) {
      const closed = await db.closeUnpaidSale({
        saleId: this.input.saleId,
        to: 'ABANDONED',
        reason: 'the reservation did not complete',
      });
      if (closed.status !== null) await seatMap.releaseSaleSeats({ saleId: this.input.saleId });
    }
    this.phase = 'rejected';
    return false;
  }

  /** A run started by late news (or the reconciler) picks the sale up where the database says it is. */
  private async resume(): Promise<boolean> {
    const snapshot: SaleSnapshot | null = await db.readSaleSnapshot(this.input.saleId);
    if (!snapshot) {
      this.phase = 'rejected';
      return false;
    }
    this.sale = snapshot;
    this.seated = snapshot.seated === true;
    this.attemptOpened = snapshot.attemptOpened === true;
    this.paidWith = snapshot.paymentRef ?? null;
    // What an earlier run learned: news that a payment the gateway rejected is still pending is stale here too.
    for (const payment of snapshot.rejectedPayments ?? []) this.rejected.add(payment);
    upsertSearchAttributes([
      { key: SA.saleReference, value: snapshot.reference },
      { key: SA.workspaceId, value: snapshot.workspaceId },
      { key: SA.eventDateId, value: snapshot.eventDateId },
    ]);
    if (snapshot.gateway) this.adoptGateway(snapshot.gateway);
    this.publish(snapshot.status);
    return true;
  }

  /** The payment window: its deadline races every way the sale can end, and the pull schedule. */
  private async awaitPayment(): Promise<void> {
    const deadline = this.sale?.expiresAtMs ?? 0;
    while (this.now() === 'reserved') {
      await waitUntil(
        () => this.inbox.length > 0 || this.releaseRequest !== null || this.checkRequested,
        this.msUntil(deadline, this.nextPullAtMs),
        this.nextPullAtMs !== null && this.nextPullAtMs < deadline ? 'ask the gateway again' : 'payment window ends',
      );
      const endTurn = await this.takeTurn();
      try {
        await this.processInbox();
        if (this.now() !== 'reserved') break;
        if (this.checkRequested || this.pullDue()) await this.pullFromGateway();
        if (this.now() !== 'reserved') break;
        const release = this.releaseRequest;
        if (release === 'organizer_cancel') await this.closeUnpaid('CANCELLED', 'cancelled by the organizer');
        else if (release === 'buyer_release') await this.closeUnpaid('ABANDONED', 'released by the buyer');
        else if (Date.now() >= deadline) await this.closeUnpaid('ABANDONED', 'payment window expired');
      } finally {
        endTurn();
      }
    }
  }

  /**
   * After the sale is settled: a confirmed sale mails its tickets and ends; a sale closed unpaid keeps listening
   * for late money for the grace period, and keeps asking the gateway while an answer is owed. Nothing received is
   * dropped: the inbox and every in-flight update are drained before the execution ends.
   */
  private async settle(): Promise<void> {
    const closedUnpaid = () => this.now() === 'abandoned' || this.now() === 'cancelled';
    // A resumed run exists to resolve what arrived after the first run's grace period; later news starts another.
    const graceMs = this.input.resumeAfterClose ? 0 : this.input.latePaymentGraceMs;
    this.lateListeningUntilMs = closedUnpaid() ? Date.now() + graceMs : Date.now();
    // A payment that settles after the close and whose notification is lost is found by one last ask at the end.
    let lastAskOwed = closedUnpaid() && this.attemptOpened;
    // A confirmed sale whose buyer opened another payment route: that route can still bring money, which is found by
    // asking the gateway once the window and the settlement lag are over (and again while a payment is pending).
    const secondPayments = this.watchForSecondPayments(graceMs);
    const news = () => this.inbox.length > 0 || this.checkRequested || this.refundRetries.length > 0;
    for (;;) {
      // An answer the gateway still owes keeps the execution asking, whatever the sale's status: money received at
      // any time is resolved.
      const owed = () => this.pullOwed;
      const secondAskAtMs = secondPayments?.nextAskAtMs ?? null;
      const wakeAtMs = earliestFuture([
        closedUnpaid() ? this.lateListeningUntilMs : null,
        owed() ? this.nextPullAtMs : null,
        secondAskAtMs,
      ]);
      if (wakeAtMs !== null) {
        const graceEnds = closedUnpaid() && wakeAtMs === this.lateListeningUntilMs;
        const secondAsk = !graceEnds && wakeAtMs === secondAskAtMs;
        await waitUntil(
          news,
          wakeAtMs - Date.now(),
          graceEnds
            ? 'late-payment grace ends'
            : secondAsk
              ? 'ask the gateway for a second payment'
              : 'ask the gateway again',
        );
      } else if (this.parkedRefunds.size > 0) {
        // A refused refund waits for an operator: no timer, so the history does not grow while it waits.
        await condition(news);
      }
      const endTurn = await this.takeTurn();
      try {
        await this.processInbox();
        await this.retryParkedRefunds();
        const graceOver = Date.now() >= (this.lateListeningUntilMs ?? 0);
        const secondAskDue = secondAskAtMs !== null && Date.now() >= secondAskAtMs;
        if (
          this.checkRequested ||
          (owed() && this.pullDue()) ||
          (graceOver && lastAskOwed && closedUnpaid()) ||
          secondAskDue
        ) {
          lastAskOwed = false;
          await this.pullFromGateway();
          if (secondPayments) this.scheduleNextSecondAsk(secondPayments);
        }
      } finally {
        endTurn();
      }
      const listening =
        (closedUnpaid() && Date.now() < (this.lateListeningUntilMs ?? 0)) ||
        owed() ||
        (secondPayments?.nextAskAtMs ?? null) !== null ||
        this.parkedRefunds.size > 0;
      if (!listening && this.inbox.length === 0 && !this.checkRequested) {
        // News (a notification, a request to ask the gateway) may arrive while an update finishes.
        await condition(() => allHandlersFinished() || news());
        if (!news()) break;
      }
    }
    this.lateListeningUntilMs = null;
  }

  /**
   * When a confirmed sale's other payment routes are asked about: after the window and the settlement lag (capped by
   * the grace period), then while one of its payments is still pending, for one more grace period. Null when the
   * sale was paid by the only route its buyer opened (no second payment can exist), or for executions recorded
   * before SECOND_PAYMENT_ASKED; `patched` is asked only when a second payment is possible, so a plain card purchase
   * carries no marker.
   */
  private watchForSecondPayments(
    graceMs: number,
  ): { nextAskAtMs: number | null; untilMs: number; intervalMs: number } | null {
    if (this.now() !== 'confirmed' || this.input.resumeAfterClose) return null;
    if (!this.pageOpened && this.paymentRoutesOpened < 2) return null;
    if (!hasPatch(this.input, SECOND_PAYMENT_ASKED)) return null;
    const firstAskAtMs = Math.max(Date.now(), this.sale?.expiresAtMs ?? 0) + Math.min(graceMs, SETTLEMENT_LAG_MS);
    return {
      nextAskAtMs: firstAskAtMs,
      untilMs: firstAskAtMs + graceMs,
      intervalMs: this.input.paymentPollMs ?? DEFAULT_PAYMENT_POLL_MS,
    };
  }

  /** After an ask: again later while another payment is still pending (backing off), else never. */
  private scheduleNextSecondAsk(watch: { nextAskAtMs: number | null; untilMs: number; intervalMs: number }): void {
    if (this.pullOwed) {
      // The ask failed: the owed retry asks again, and this is decided after it.
      watch.nextAskAtMs = null;
      return;
    }
    if (!this.otherPaymentPending || Date.now() >= watch.untilMs) {
      watch.nextAskAtMs = null;
      return;
    }
    watch.intervalMs = Math.min(watch.intervalMs * 2, MAX_PULL_INTERVAL_MS);
    watch.nextAskAtMs = Math.min(Date.now() + watch.intervalMs, watch.untilMs);
  }

  /** Refunds an operator asked to try again go back to `requested` and get another round of tries. */
  private async retryParkedRefunds(): Promise<void> {
    if (this.refundRetries.length === 0) return;
    const asked = this.refundRetries.splice(0);
    for (const [payment, parked] of [...this.parkedRefunds]) {
      if (!asked.some((id) => id === null || id === payment)) continue;
      this.parkedRefunds.delete(payment);
      log.info('an operator retries a refused refund', { saleId: this.input.saleId, providerPaymentId: payment });
      await db.markAttempt({ dedupeKey: parked.dedupeKey, status: 'requested' });
      await this.giveBack(parked.verdict, parked.reason);
    }
  }

  // ------------------------------------------------------------------------------------------------ money in

  private async processInbox(): Promise<void> {
    while (this.inbox.length > 0) {
      const notification = this.inbox.shift()!;
      const verdict = await this.readVerdict(notification);
      if (verdict) await this.judge(verdict, notification.eventType, `notification:${notification.dedupeKey}`);
      if (notification.providerPaymentId) this.settledPayments.add(notification.providerPaymentId);
    }
  }

  /** The gateway's own record of the payment a notification names; null when the gateway cannot be read now. */
  private async readVerdict(notification: PaymentNotification): Promise<PaymentVerdict | null> {
    const { verdict: alreadyRead, ...news } = notification;
    if (alreadyRead && notification.eventType === 'card_charge') {
      // The charge's answer, recorded as the CARD attempt when it came back.
      return alreadyRead;
    }
    if (this.alreadyPaidWith(notification)) {
      // News of the gateway A payment that paid this sale: judging it would change nothing (see judge).
      return null;
    }
    let verdict: PaymentVerdict;
    try {
      verdict = alreadyRead ?? (await gateways.readPayment({ saleId: this.input.saleId, notification: news }));
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      log.warn('the gateway could not be read for a notification; asking again later', { saleId: this.input.saleId });
      this.owePull();
      return null;
    }
    await db.recordAttempt({
      saleId: this.input.saleId,
      gateway: verdict.gateway,
      kind: 'NOTIFICATION',
      providerPaymentId: verdict.providerPaymentId,
      status: verdict.rawStatus,
      statusDetail: verdict.statusDetail,
      amount: null,
      dedupeKey: `notification:${notification.dedupeKey}`,
      note: verdict.foreign ? 'the payment names another sale; ignored' : null,
    });
    return verdict;
  }

  /**
   * Asks the gateway for every payment of the sale's reference (pull reconciliation) and judges each as if it had
   * been notified. Returns false when the gateway could not be read; the ask is then owed and retried with backoff.
   */
  private async pullFromGateway(): Promise<boolean> {
    this.checkRequested = false;
    const gateway = this.gateway !== null && this.attemptOpened ? this.gateway : await this.learnOpenedAttempt();
    if (!gateway) {
      // No payment was ever opened: nobody can have paid this sale.
      this.nextPullAtMs = null;
      this.pullOwed = false;
      return true;
    }
    let verdicts: PaymentVerdict[];
    try {
      verdicts = await gateways.findSalePayments({ saleId: this.input.saleId, gateway });
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      this.owePull();
      return false;
    }
    this.pullOwed = false;
    this.owedRetryMs = null;
    this.otherPaymentPending = verdicts.some(
      (verdict) => verdict.outcome === 'pending' && verdict.providerPaymentId !== this.paidWith,
    );
    this.pullIntervalMs = Math.min(this.pullIntervalMs * 2, MAX_PULL_INTERVAL_MS);
    this.nextPullAtMs = this.now() === 'reserved' ? Date.now() + this.pullIntervalMs : null;
    for (const verdict of verdicts) {
      if (verdict.outcome !== 'approved') continue;
      await db.recordAttempt({
        saleId: this.input.saleId,
        gateway: verdict.gateway,
        kind: 'STATUS_CHECK',
        providerPaymentId: verdict.providerPaymentId,
        status: verdict.rawStatus,
        statusDetail: verdict.statusDetail,
        amount: null,
        dedupeKey: `pull:${verdict.providerPaymentId ?? this.input.saleId}:${verdict.rawStatus}`,
        note: 'found by asking the gateway (pull reconciliation)',
      });
      await this.judge(verdict, 'pull');
    }
    return true;
  }

  /**
   * What a payment's verdict means for this sale, whatever its phase: one decision table for all money. `noticeKey`
   * is the recorded attempt of the notification being judged (null when found by asking the gateway).
   */
  private async judge(
    verdict: PaymentVerdict,
    eventType: string | null,
    noticeKey: string | null = null,
  ): Promise<void> {
    if (verdict.foreign) return;
    const payment = verdict.providerPaymentId;
    if (verdict.outcome !== 'approved') {
      if (this.now() === 'reserved' || (this.closedUnpaid() && !(payment && this.givenBack.has(payment)))) {
        if (verdict.outcome === 'unknown' || verdict.outcome === 'refunded') return;
        const stale = verdict.outcome === 'pending' && payment !== null && this.rejected.has(payment);
        if (stale) return;
        await db.recordPaymentStatus({
          saleId: this.input.saleId,
          paymentStatus: verdict.rawStatus,
          declineCode: verdict.outcome === 'rejected' ? verdict.statusDetail : null,
          provider: verdict.gateway,
        });
        if (verdict.outcome === 'rejected' && payment !== null) this.rejected.add(payment);
      }
      return;
    }
    if (payment && this.givenBack.has(payment)) return;
    if (verdict.mismatch) return this.giveBack(verdict, 'mismatch');
    const phase = this.now();
    if (phase === 'reserved') return this.confirmPaid(verdict);
    if (phase === 'abandoned' || phase === 'cancelled') return this.resolveLateMoney(verdict);
    if (payment === this.paidWith) {
      // Gateway B re-notifying a confirmed charge is how it reports refunds: recorded for the organizer.
      if (phase === 'confirmed' && verdict.gateway === 'GATEWAY_B' && eventType === 'SALE_APPROVED') {
        if (payment && noticeKey) {
          // The first approval of this charge is no re-notification, even when asking the gateway confirmed the
          // sale before it arrived (a buyer back on the page): only a repeat flags the sale.
          await paymentRecords.flagGatewayBRenotification({
            saleId: this.input.saleId,
            providerPaymentId: payment,
            noticeKey,
          });
          return;
        }
        await db.recordPaymentStatus({
          saleId: this.input.saleId,
          paymentStatus: 'FT_SALE_APPROVED_POST_CONFIRM',
          declineCode: null,
          provider: null,
        });
      }
      return;
    }
    return this.giveBack(verdict, phase === 'refunded' ? 'sale_refunded' : 'second_charge');
  }

  /** PENDING → CONFIRMED by this payment (numbered seats are booked first: lost seats mean the money goes back). */
  private async confirmPaid(verdict: PaymentVerdict): Promise<void> {
    if (this.seated) {
      const booked = await seatMap.bookSaleSeats({ saleId: this.input.saleId });
      if (!booked.ok) {
        await this.closeUnpaid('ABANDONED', 'seats lost at the seat-map provider', { askGatewayFirst: false });
        return this.giveBack(verdict, 'seats_lost');
      }
    }
    const result = await db.confirmSale({
      saleId: this.input.saleId,
      provider: verdict.gateway,
      paymentRef: verdict.providerPaymentId,
      paymentStatus: verdict.rawStatus,
      queueTicketEmail: true,
    });
    if (result.paymentRefunded) return;
    const closedMeanwhile = !result.confirmed && (result.status === 'ABANDONED' || result.status === 'CANCELLED');
    if (closedMeanwhile) {
      // The deadline passed and the lapsed-hold sweep (or another buyer short of stock) closed the sale before this
      // execution's timer did: the payment is late money, confirmed only if the stock can be taken again.
      this.publish(result.status);
      return this.resolveLateMoney(verdict, { seatsBooked: this.seated });
    }
    this.adoptGateway(verdict.gateway);
    this.paidWith = result.paymentRef ?? this.paidWith;
    this.publish(result.status);
  }

  /** Money for a sale that closed unpaid: confirm it if its stock (and seats) can be taken again, else refund. */
  private async resolveLateMoney(verdict: PaymentVerdict, options: { seatsBooked?: boolean } = {}): Promise<void> {
    let seatsBooked = options.seatsBooked === true;
    if (this.seated && !seatsBooked && this.now() === 'abandoned') {
      const booked = await seatMap.bookSaleSeats({ saleId: this.input.saleId });
      if (!booked.ok) return this.giveBack(verdict, 'late_seats_gone');
      seatsBooked = true;
    }
    const late = await db.confirmLatePayment({
      saleId: this.input.saleId,
      provider: verdict.gateway,
      paymentRef: verdict.providerPaymentId,
      paymentStatus: verdict.rawStatus,
      seatsBookedByCaller: true,
      queueTicketEmail: true,
    });
    if (late.outcome === 'confirmed') {
      this.paidWith = verdict.providerPaymentId;
      this.adoptGateway(verdict.gateway);
      this.publish('CONFIRMED');
      await db.recordAttempt({
        saleId: this.input.saleId,
        gateway: verdict.gateway,
        kind: 'LATE_PAYMENT',
        providerPaymentId: verdict.providerPaymentId,
        status: verdict.rawStatus,
        statusDetail: null,
        amount: null,
        dedupeKey: `late:${verdict.providerPaymentId ?? this.input.saleId}`,
        note: 'payment arrived after the reservation closed; stock was still available, sale confirmed',
      });
      return;
    }
    if (late.outcome === 'payment_refunded') {
      // Giving back is idempotent (the same attempt record, the same refund at the gateway): seeing it through costs
      // a read when it is done, and returns the money when its task was lost.
      if (seatsBooked) await seatMap.releaseBookedSeats({ saleId: this.input.saleId });
      return this.giveBack(verdict, late.status === 'CANCELLED' ? 'late_cancelled' : 'late_no_stock');
    }
    if (late.outcome === 'already_confirmed') {
      this.paidWith = late.paymentRef ?? this.paidWith;
      this.publish('CONFIRMED');
      // Confirmed by this very payment while this execution held the sale closed (by a lost task of its own): the
      // confirming transaction owed the ticket email to the ticket mailer.
      if (verdict.providerPaymentId !== this.paidWith) await this.giveBack(verdict, 'second_charge');
      return;
    }
    if (seatsBooked) await seatMap.releaseBookedSeats({ saleId: this.input.saleId });
    await this.giveBack(verdict, late.status === 'CANCELLED' ? 'late_cancelled' : 'late_no_stock');
  }

  // ------------------------------------------------------------------------------------------------ money out

  /**
   * Returns a payment to the buyer and waits until the gateway reports it refunded. The request is recorded first,
   * so a later run (or the reconciler) knows this payment is being given back and never confirms with it.
   */
  private async giveBack(verdict: PaymentVerdict, reason: GiveBackReason): Promise<void> {
    const payment = verdict.providerPaymentId;
    const why = GIVE_BACK[reason];
    if (!payment && verdict.gateway === 'GATEWAY_A') {
      log.error('an approved gateway A payment without an id cannot be refunded', { saleId: this.input.saleId });
      return;
    }
    this.givenBack.add(payment ?? `${verdict.gateway}:${this.input.saleId}`);
    const dedupeKey = `${why.dedupe}:${payment ?? this.input.saleId}`;
    await db.recordAttempt({
      saleId: this.input.saleId,
      gateway: verdict.gateway,
      providerPaymentId: payment,
      amount: null,
      kind: 'REFUND',
      status: 'requested',
      statusDetail: reason,
      dedupeKey,
      note: why.note,
    });
    let waitMs = this.input.refundCheckMs ?? REFUND_CHECK_FIRST_MS;
    let refusals = 0;
    const refundKey = payment ?? `${verdict.gateway}:${this.input.saleId}`;
    for (;;) {
      let refusal: string | null = null;
      // Asked only once the first answer was a refusal, so refunds that went through carry no marker.
      const ask = this.refundRefusalsSeen.get(refundKey) ?? 0;
      const keyPerAsk = ask > 0 && hasPatch(this.input, REFUND_KEY_PER_ASK);
      try {
        await refunds.refundPayment({
          saleId: this.input.saleId,
          gateway: verdict.gateway,
          providerPaymentId: payment,
          reason,
          ...(keyPerAsk ? { ask } : {}),
        });
      } catch (error) {
        // Refused for good (for example: already refunded). The gateway's own record decides below.
        if (!isGiveUp(error)) throw error;
        refusal = refusalOf(error);
        this.refundRefusalsSeen.set(refundKey, ask + 1);
      }
      const state = await this.refundState(verdict);
      if (state === 'refunded') break;
      if (refusal !== null && hasPatch(this.input, REFUND_REFUSAL_PARKS)) {
        refusals += 1;
        if (refusals >= REFUND_REFUSALS_BEFORE_PARKING) {
          // Retrying a final answer on a timer would loop for weeks in silence: an operator is told, and decides.
          await db.recordRefundRefused({
            saleId: this.input.saleId,
            dedupeKey,
            gateway: verdict.gateway,
            providerPaymentId: payment,
            refusals,
            reason: refusal,
          });
          this.parkedRefunds.set(payment ?? `${verdict.gateway}:${this.input.saleId}`, { verdict, reason, dedupeKey });
          return;
        }
      }
      await sleep(waitMs, { summary: 'check the refund again' });
      waitMs = Math.min(waitMs * 2, REFUND_CHECK_MAX_MS);
    }
    await db.markAttempt({ dedupeKey, status: 'refunded' });
    if (why.paymentStatus) {
      await db.recordPaymentStatus({
        saleId: this.input.saleId,
        paymentStatus: why.paymentStatus,
        declineCode: null,
        provider: verdict.gateway,
      });
    }
  }

  private async refundState(verdict: PaymentVerdict): Promise<'refunded' | 'not_yet'> {
    try {
      const now = await gateways.readPayment({
        saleId: this.input.saleId,
        notification: {
          gateway: verdict.gateway,
          providerPaymentId: verdict.providerPaymentId,
          eventType: 'refund_check',
          receivedAtMs: Date.now(),
          dedupeKey: `refund-check:${verdict.providerPaymentId ?? this.input.saleId}`,
        },
      });
      return now.outcome === 'refunded' ? 'refunded' : 'not_yet';
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      return 'not_yet';
    }
  }

  // ------------------------------------------------------------------------------------------------ stock back

  /**
   * The one compensation path: the gateway is asked first (a payment may exist that no notification announced),
   * then the status, stock, discount use and seats go back together. A repeat changes nothing but still frees seats.
   */
  private async closeUnpaid(
    to: 'ABANDONED' | 'CANCELLED',
    reason: string,
    options: { askGatewayFirst: boolean } = { askGatewayFirst: true },
  ): Promise<void> {
    if (options.askGatewayFirst && this.attemptOpened) {
      const answered = await this.pullFromGateway();
      if (this.now() !== 'reserved') return;
      // The gateway cannot say now: the stock goes back at the deadline anyway, and the question stays owed.
      if (!answered) this.pullOwed = true;
    }
    const closed = await db.closeUnpaidSale({ saleId: this.input.saleId, to, reason });
    if (this.seated && closed.status !== 'CONFIRMED') await seatMap.releaseSaleSeats({ saleId: this.input.saleId });
    // A sale row that no longer exists holds nothing: the story ends as if closed, never retries the close.
    this.publish(closed.status ?? to);
  }

  // ------------------------------------------------------------------------------------------------ handlers

  private registerHandlers(): void {
    setHandler(checkoutStatusQuery, () => this.status());
    setHandler(paymentNotificationSignal, (notification) => {
      this.inbox.push(notification);
    });
    setHandler(checkPaymentSignal, () => {
      this.checkRequested = true;
    });
    setHandler(retryRefusedRefundSignal, ({ providerPaymentId }) => {
      this.refundRetries.push(providerPaymentId);
    });
    setHandler(saleStatusChangedSignal, ({ status }) => {
      // Refunds and organizer cancels of settled sales run in their own workflows; this execution follows them.
      if (status === 'REFUNDED' || status === 'CANCELLED') this.publish(status);
    });

    setHandler(reserveUpdate, (request) => this.reserve(request), {
      validator: (_request) => {
        if (this.phase !== 'awaiting_reservation' || this.reserving) {
          throw refusal('INVALID_STATE', 'This checkout already has a reservation', { saleId: this.input.saleId });
        }
      },
    });
    setHandler(openPaymentUpdate, () => this.payInTurn(() => this.openPayment()), {
      validator: () => this.assertPayable(),
    });
    setHandler(openPseUpdate, (options) => this.payInTurn(() => this.openPse(options.methods ?? 'pse')), {
      validator: (_options) => this.assertPayable(),
    });
    setHandler(chargeCardUpdate, (request) => this.payInTurn((endTurn) => this.chargeCard(request, endTurn)), {
      validator: (_request) => this.assertPayable(),
    });
    setHandler(releaseUpdate, (request) => this.release(request.reason), {
      validator: (_request) => {
        if (this.phase !== 'reserved' || this.releaseRequest !== null) {
          throw refusal('INVALID_STATE', `The sale is ${PHASE_TO_STATUS[this.phase] ?? this.phase}, not PENDING`, {
            status: PHASE_TO_STATUS[this.phase] ?? null,
          });
        }
      },
    });
  }

  private async reserve(request: Parameters<CheckoutActivities['reserveSale']>[0]['request']) {
    this.reserving = true;
    try {
      // Any item with seats calls the seat-map provider; a one-item request reads as before, so histories replay.
      const seated = reserveItemsOf(request).some((item) => (item.seats?.length ?? 0) > 0);
      const step = seated ? reserveOnTaskQueue : reserveInWorkflowTask;
      const result = await step.reserveSale({
        saleId: this.input.saleId,
        request: { ...request, queueTicketEmail: true },
      });
      if (!result.ok) {
        this.phase = 'rejected';
        return result;
      }
      this.sale = result;
      this.seated = result.seated === true;
      const identity = [
        { key: SA.saleReference, value: result.reference },
        { key: SA.workspaceId, value: result.workspaceId },
        { key: SA.eventDateId, value: result.eventDateId },
      ];
      this.publish(result.status, identity);
      return result;
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      this.reserveFailed = true;
      const cause = error.cause instanceof ApplicationFailure ? error.cause : null;
      if (cause?.nonRetryable && cause.type) {
        throw refusal(cause.type, 'The reservation was refused: its data cannot be stored', {});
      }
      throw refusal('SERVICE_UNAVAILABLE', 'The reservation could not be completed; retry', {}, true);
    } finally {
      this.reserving = false;
    }
  }

  private assertPayable(): void {
    const expiresAtMs = this.sale?.expiresAtMs ?? null;
    if (this.phase === 'awaiting_reservation' && !this.reserveFailed) {
      // The order's reservation is still being made: its workflow task was delayed (a worker restarting, a busy box)
      // while the API already knew the sale. The request is early, not late: the buyer retries and pays. Only the
      // validator's answer changes, and a refused update is not in history, so executions replay as before.
      throw refusal(
        'SERVICE_UNAVAILABLE',
        'The reservation is still being made; retry in a moment',
        { reason: 'reservation_in_progress' },
        true,
      );
    }
    if (this.phase !== 'reserved' || expiresAtMs === null) {
      throw refusal('PAYMENT_UNAVAILABLE', `The sale is ${PHASE_TO_STATUS[this.phase] ?? this.phase}, not pending`, {
        reason: 'not_pending',
      });
    }
    if (Date.now() >= expiresAtMs || this.releaseRequest !== null) {
      throw refusal('PAYMENT_UNAVAILABLE', 'The reservation has expired; start the purchase again', {
        reason: 'reservation_expired',
      });
    }
  }

  /** Which rail pays this sale; refuses a second gateway while another one has a payment open. */
  private async railFor(requested: 'any' | 'pse'): Promise<Gateway | PaymentUnavailable> {
    let rail: Awaited<ReturnType<PaymentActivities['choosePaymentRail']>>;
    try {
      rail = await rails.choosePaymentRail(this.input.saleId);
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      throw refusal('SERVICE_UNAVAILABLE', 'The payment could not be prepared; retry', {}, true);
    }
    if (requested === 'pse' && rail.gateway === 'GATEWAY_B') {
      return unavailable('gateway_b_only', 'This event charges only through the embedded payment button (gateway B)');
    }
    if (rail.gateway === 'GATEWAY_B' && !rail.eligibleForB) {
      return unavailable(
        'gateway_b_not_enabled',
        'Gateway B needs the legend plan; this event cannot take payments now',
      );
    }
    if (this.gateway !== null && this.gateway !== rail.gateway) {
      return unavailable('other_gateway_in_flight', `A payment is already in flight with ${this.gateway}`);
    }
    return rail.gateway;
  }

  /**
   * The gateway of a payment the database records as opened for this sale while this execution does not know of it
   * (its open was committed by a workflow task that was lost); the execution takes it as its own. Null: none.
   */
  private async learnOpenedAttempt(): Promise<Gateway | null> {
    const snapshot = await db.readSaleSnapshot(this.input.saleId);
    if (!snapshot?.attemptOpened || !snapshot.gateway) return null;
    log.warn('a payment was opened by a workflow task this execution never saw; asking the gateway', {
      saleId: this.input.saleId,
    });
    this.openAttempt(snapshot.gateway);
    // Which route a lost task opened is unknown: it may bring a second payment.
    this.pageOpened = true;
    return snapshot.gateway;
  }

  /** From the first opened payment on, money may exist at the gateway: the pull schedule starts. */
  private openAttempt(gateway: Gateway): void {
    this.adoptGateway(gateway);
    this.attemptOpened = true;
    if (this.nextPullAtMs === null) this.nextPullAtMs = Date.now() + this.pullIntervalMs;
  }

  private async openPayment() {
    const rail = await this.railFor('any');
    if (typeof rail !== 'string') return rail;
    const expiresAtMs = this.sale?.expiresAtMs ?? 0;
    let configuration: Awaited<ReturnType<PaymentActivities['buildPaymentConfiguration']>>;
    try {
      configuration = await rails.buildPaymentConfiguration({ saleId: this.input.saleId, gateway: rail, expiresAtMs });
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      throw refusal('SERVICE_UNAVAILABLE', 'The payment could not be prepared; retry', {}, true);
    }
    this.openAttempt(rail);
    // A gateway B button charges on its own; gateway A's card form needs a charge (counted there).
    if (rail === 'GATEWAY_B') this.paymentRoutesOpened += 1;
    await db.recordAttempt({
      saleId: this.input.saleId,
      gateway: rail,
      kind: 'OPEN',
      providerPaymentId: null,
      status: 'opened',
      statusDetail: null,
      amount: this.sale?.total ?? null,
      dedupeKey: null,
      note: null,
    });
    return { ok: true as const, configuration };
  }

  /**
   * Sends the buyer to a gateway A checkout page: PSE only, or card or PSE (storefront orders). Either way the
   * payment it brings is re-read from the gateway like any other; only the attempt's record tells them apart.
   */
  private async openPse(methods: GatewayAPageMethods) {
    const rail = await this.railFor('pse');
    if (typeof rail !== 'string') return rail;
    this.openAttempt(rail);
    this.paymentRoutesOpened += 1;
    this.pageOpened = true;
    let preference: { preferenceId: string; redirectUrl: string };
    try {
      preference = await gateways.openPsePayment({
        saleId: this.input.saleId,
        expiresAtMs: this.sale?.expiresAtMs ?? 0,
        methods,
      });
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      throw refusal('PROVIDER_UNAVAILABLE', 'The payment gateway did not answer; retry', {}, true);
    }
    const pseOnly = methods === 'pse';
    await db.recordAttempt({
      saleId: this.input.saleId,
      gateway: 'GATEWAY_A',
      kind: pseOnly ? 'PSE' : 'OPEN',
      providerPaymentId: preference.preferenceId,
      status: 'redirected',
      statusDetail: null,
      amount: this.sale?.total ?? null,
      dedupeKey: `${pseOnly ? 'pse' : 'checkout'}-open:${preference.preferenceId}`,
      note: pseOnly ? null : "gateway A's checkout page: card or PSE",
    });
    return { ok: true as const, redirectUrl: preference.redirectUrl };
  }

  /**
   * Charges a card and answers with what the charge did to the sale. A charge that completes after the window
   * closed is late money like any other (confirmed if stock remains, else refunded), and the answer says so. The
   * charge's news is judged by the story, so the turn (if taken) ends before waiting for that judgement.
   */
  private async chargeCard(request: Parameters<PaymentActivities['chargeCard']>[0]['request'], endTurn: () => void) {
    const rail = await this.railFor('any');
    if (typeof rail !== 'string') return rail;
    if (rail !== 'GATEWAY_A') {
      return unavailable('gateway_b_only', 'This event pays through gateway B; card tokens are for gateway A');
    }
    this.openAttempt(rail);
    this.paymentRoutesOpened += 1;
    let payment: Awaited<ReturnType<PaymentActivities['chargeCard']>>;
    try {
      payment = await this.chargeAtGateway({
        saleId: this.input.saleId,
        request,
        recordAttempt: true,
      });
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      // The charge may have happened without an answer: the gateway is asked about this sale soon.
      this.owePull();
      const cause = error.cause instanceof ApplicationFailure ? error.cause : null;
      if (cause?.nonRetryable) {
        throw refusal('VALIDATION_FAILED', 'The gateway refused this card payment request', {
          reason: cause.type ?? 'refused',
        });
      }
      throw refusal('PROVIDER_UNAVAILABLE', 'The payment gateway did not answer; check the order status', {}, true);
    }
    // The charge's answer goes through the same path as a notification: there is one way to confirm.
    this.inbox.push({
      gateway: 'GATEWAY_A',
      providerPaymentId: payment.id,
      eventType: 'card_charge',
      receivedAtMs: Date.now(),
      dedupeKey: `charge:${payment.id}`,
      ...(payment.verdict ? { verdict: payment.verdict } : {}),
    });
    endTurn();
    await condition(() => this.settledPayments.has(payment.id));
    const refunded = this.givenBack.has(payment.id);
    return {
      ok: true as const,
      paymentId: payment.id,
      paymentStatus: refunded ? 'refunded' : payment.status,
      statusDetail: refunded ? 'refunded_by_merchant' : payment.statusDetail,
      declineCode: payment.status === 'rejected' ? payment.statusDetail : null,
      saleStatus: PHASE_TO_STATUS[this.phase] ?? 'PENDING',
    };
  }

  /**
   * The card charge at gateway A. Since LOCAL_CARD_CHARGE it runs first in this workflow task (a local activity: no
   * second workflow task for its answer); when that fails or outlives its short bound, the same call runs as the
   * task-queue activity. Both carry the same input, hence the same idempotency key: a charge the local attempt made
   * without hearing the answer is answered again by the gateway, never made twice.
   */
  private async chargeAtGateway(
    charge: Parameters<PaymentActivities['chargeCard']>[0],
  ): Promise<Awaited<ReturnType<PaymentActivities['chargeCard']>>> {
    let sent = charge;
    if (!this.input.cardChargeOnTaskQueue && hasPatch(this.input, LOCAL_CARD_CHARGE)) {
      // The activity records the charge as leaving before it calls the gateway: this task may be lost with the update.
      // The fallback carries the flag too, so its answer's record replaces that row (the same key: one row a charge).
      if (hasPatch(this.input, LOCAL_CHARGE_RECORDED_FIRST)) sent = { ...charge, recordBeforeCharging: true };
      try {
        return await localCardCharge(this.input.localCardChargeTimeoutMs ?? LOCAL_CARD_CHARGE_MS).chargeCard(sent);
      } catch (error) {
        // A local activity that gave up is an ActivityFailure when it happens, but its marker replays the bare cause
        // (a TimeoutFailure, an ApplicationFailure): both must take the same path, so any failure but a cancellation
        // goes on to the task queue, whose ActivityFailure the caller judges (a refusal there is the same refusal).
        if (!(error instanceof TemporalFailure) || isCancellation(error)) throw error;
        log.warn('the local card charge failed or timed out; charging on the task queue with the same key', {
          saleId: this.input.saleId,
          cause: error.cause?.message ?? error.message,
        });
      }
    }
    return gateways.chargeCard(sent);
  }

  private async release(reason: ReleaseReason): Promise<ReleaseResult> {
    this.releaseRequest = reason;
    await condition(() => this.phase !== 'reserved');
    return { ok: true, saleStatus: PHASE_TO_STATUS[this.phase] ?? 'ABANDONED' };
  }

  // ------------------------------------------------------------------------------------------------ turns

  /**
   * Waits for the turn and takes it; the end it returns may be called more than once. The payment handlers' steps and
   * the story's decisions take turns: a local step that outlives a workflow task lost on a starved worker can be
   * replayed as resolved before a timer it was resolved after, and while nothing else decides until it ends, both
   * orders give the same commands.
   */
  private async takeTurn(): Promise<() => void> {
    while (this.turnHolder !== null) await condition(() => this.turnHolder === null);
    const holder = {};
    this.turnHolder = holder;
    return () => {
      if (this.turnHolder === holder) this.turnHolder = null;
    };
  }

  /** A payment request that waited for the turn is refused if the story closed the sale meanwhile. */
  private async payInTurn<T>(request: (endTurn: () => void) => Promise<T>): Promise<T> {
    const endTurn = await this.takeTurn();
    try {
      this.assertPayable();
      return await request(endTurn);
    } finally {
      endTurn();
    }
  }

  // ------------------------------------------------------------------------------------------------ state

  /** Reads the phase through a call, so the compiler does not keep a narrowing across awaits. */
  private now(): CheckoutPhase {
    return this.phase;
  }

  /** Gateway A news of the payment that confirmed this sale; gateway B's repeats mean refunds, so they are read. */
  private alreadyPaidWith(notification: PaymentNotification): boolean {
    return (
      this.now() === 'confirmed' &&
      notification.gateway === 'GATEWAY_A' &&
      notification.providerPaymentId !== null &&
      notification.providerPaymentId === this.paidWith
    );
  }

  private closedUnpaid(): boolean {
    return this.phase === 'abandoned' || this.phase === 'cancelled';
  }

  /**
   * The phase, the query and the SaleStatus search attribute follow the sale's status together; `alongside` are other
   * search attributes set in the same upsert.
   */
  private publish(status: SaleStatus, alongside: SearchAttributeUpdatePair[] = []): void {
    this.phase = STATUS_TO_PHASE[status];
    upsertSearchAttributes([...alongside, { key: SA.saleStatus, value: status }]);
  }

  private adoptGateway(chosen: Gateway): void {
    if (this.gateway !== null) return;
    this.gateway = chosen;
    upsertSearchAttributes([{ key: SA.gateway, value: chosen }]);
  }

  /**
   * The last ask of the gateway failed (or a notification could not be read): an answer is owed. It is a retry, not
   * a poll: it comes back within seconds and backs off on its own schedule, so money whose notifications were lost
   * during an outage is resolved soon after the outage, not one grown poll interval later.
   */
  private owePull(): void {
    this.pullOwed = true;
    const first = Math.min(OWED_ASK_FIRST_RETRY_MS, this.input.paymentPollMs ?? DEFAULT_PAYMENT_POLL_MS);
    this.owedRetryMs = this.owedRetryMs === null ? first : Math.min(this.owedRetryMs * 2, MAX_PULL_INTERVAL_MS);
    this.nextPullAtMs = Date.now() + this.owedRetryMs;
  }

  private pullDue(): boolean {
    return this.nextPullAtMs !== null && Date.now() >= this.nextPullAtMs;
  }

  private msUntil(deadlineMs: number, nextPullAtMs: number | null): number {
    const until = nextPullAtMs === null ? deadlineMs : Math.min(deadlineMs, nextPullAtMs);
    return Math.max(0, until - Date.now());
  }

  private status(): CheckoutStatus {
    return {
      phase: this.phase,
      saleId: this.input.saleId,
      reference: this.sale?.reference ?? null,
      expiresAtMs: this.phase === 'reserved' ? (this.sale?.expiresAtMs ?? null) : null,
      gateway: this.gateway,
      lateListeningUntilMs: this.lateListeningUntilMs,
    };
  }
}
