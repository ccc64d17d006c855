/**
 * Membership: one buyer's membership in one workspace, from the signup payment to the period its access ends, with
 * the checkout's promise about money: every approved payment ends as exactly one paid period or as a refund the
 * gateway reports done.
 *
 * signup (update) ─▶ pending ──paid──▶ active (period n) ──renewal paid──▶ period end ─▶ continue as new (n + 1)
 *                      │                  │   └─ renewal asked before the end, reminders, final notice; a declined
 *                      │                  │      renewal payment shows FAILED and is told to the buyer with the link
 *                      │                  ├─ renewal unpaid at period end ──────────────────▶ EXPIRED
 *                      │                  └─ cancel: access until period end (paid renewal refunded) ▶ CANCELLED
 *                      ├─ signup window passes unpaid ─▶ EXPIRED
 *                      └─ cancel ─▶ CANCELLED at once
 *
 * Push is not trusted alone: while a payment link is open the execution also asks gateway A for the payments of its
 * reference, and always before ending a payment request unpaid. Money that can pay nothing (late, second, wrong
 * amount, after a cancel) is refunded and re-read until the gateway reports it refunded. A notification after this
 * execution closed starts a run that only settles that money (`settleLateMoney`, signal-with-start). Gateway calls
 * get a few tries, then "ask again later": nothing a provider does fails the execution.
 *
 * Since MEMBERSHIP_MONEY_NEVER_STRANDED a payment request that closes unpaid (signup window, period end, cancel) has
 * its gateway link expired and is asked about once more after `lateAskDelayMs`, again and again while the gateway
 * cannot answer; the reconciler's membership sweep covers what settles later still. A refund the gateway refuses
 * MAX_REFUND_REFUSALS times is recorded REFUND_REFUSED and parks until an operator retries it.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  MembershipActivities,
  MembershipMailKind,
  MembershipSnapshot,
  MembershipVerdict,
  OpenPayment,
} from '../activities/memberships.js';
import { DATABASE_STEP, GATEWAY_CALL, MONEY_BACK, onProviderQueue, rerunWhenEvicted } from './local-steps.js';
import {
  type CancelledBy,
  cancelMembershipUpdate,
  type MembershipCancelRequest,
  type MembershipInput,
  type MembershipOwed,
  type MembershipPaymentNotification,
  type MembershipPhase,
  type MembershipView,
  membershipPaymentSignal,
  membershipStatusQuery,
  nextPullIntervalMs,
  type RetryRefusedRefundRequest,
  retryRefusedRefundSignal,
  type SignupRequest,
  type SignupResult,
  SLOW_PULL_AFTER_MS,
  SLOW_PULL_MAX_MS,
  SLOW_PULL_MIN_MS,
  signupUpdate,
} from './membership-definitions.js';

/** Database steps: short transactions in the workflow task, retried without a cap (a database restart only delays). */
const db = rerunWhenEvicted(proxyLocalActivities<MembershipActivities>(DATABASE_STEP));
/** The payment link a buyer waits on: a few tries, then "ask again later" instead of a failure. */
const links = proxyActivities<MembershipActivities>(GATEWAY_CALL);
/** Gateway reads, polls and link expiry no buyer waits on: the rate-limited provider queue, a few tries each. */
const gateways = onProviderQueue<MembershipActivities>(GATEWAY_CALL);
/** Money must go back: retried without a cap; the story then waits for the gateway to report it refunded. */
const refunds = onProviderQueue<MembershipActivities>(MONEY_BACK);
/** Emails go beside the story, a bounded effort each: a mail outage never stands in front of money handling. */
const mail = proxyActivities<MembershipActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '2 minutes', maximumAttempts: 5 },
});

/**
 * Executions recorded before it ignored a failed ask at a request's close, stopped asking at a cancel, had no last ask
 * after a request closed, kept an expired request's gateway link payable, retried a refused refund forever, polled an
 * unpaid renewal every 5 minutes for its whole window, mailed the declined-renewal notice from a local step and kept
 * the payment of a renewal whose period could not start. They replay that way.
 */
export const MEMBERSHIP_MONEY_NEVER_STRANDED = 'membership-money-never-stranded';
/**
 * Executions recorded before it asked the gateway again, after a refusal, under the refund's first idempotency key,
 * which a gateway replaying its answer per key declines every time (an operator's retry included). Since, each ask
 * after a refusal has a key of its own. They replay that way.
 */
const MEMBERSHIP_REFUND_KEY_PER_ASK = 'membership-refund-key-per-ask';

/** How long a fresh execution waits for the signup update that started it. */
const SIGNUP_WAIT_MS = 60_000;
const MAX_PULL_INTERVAL_MS = 5 * 60_000;
const REFUND_CHECK_MAX_MS = 10 * 60_000;
/** First retry of an ask the gateway could not answer: a retry, not a poll (doubling up to MAX_PULL_INTERVAL_MS). */
const OWED_ASK_FIRST_RETRY_MS = 5_000;
/** An ended execution retries an unanswered last ask this long, then leaves it to the reconciler's sweep. */
const OWED_ASK_GIVE_UP_MS = 6 * 60 * 60_000;
/**
 * An ended execution keeps asking about a closed request whose payment is still pending (a PSE transfer at the bank)
 * this long, then leaves it to the reconciler's sweep: the buyer's next signup waits for the ended execution meanwhile,
 * which is right while their previous payment may still settle, but not for ever.
 */
const PENDING_LINGER_MS = 15 * 60_000;
/** Refusals of one refund (the gateway says no, and the payment is not refunded) before it is REFUND_REFUSED. */
const MAX_REFUND_REFUSALS = 3;
/**
 * Short on purpose: a buyer's next signup waits for the ended execution, and the reconciler's membership sweep asks
 * again about every closed request for days after.
 */
const DEFAULT_LATE_ASK_DELAY_MS = 10_000;

function refusal(code: string, message: string, details: Record<string, unknown> = {}, retryable = false) {
  return ApplicationFailure.create({ type: code, message, nonRetryable: !retryable, details: [details] });
}

const isGiveUp = (error: unknown): error is ActivityFailure => error instanceof ActivityFailure;

/** The earliest of these instants still ahead (workflow time), or null when none is. */
function earliestFuture(instantsMs: Array<number | null>): number | null {
  const ahead = instantsMs.filter((at): at is number => at !== null && at > Date.now());
  return ahead.length === 0 ? null : Math.min(...ahead);
}

/** `condition` with a timeout, minus the timer when there is nothing to wait for; the summary shows in the UI. */
async function waitUntil(ready: () => boolean, timeoutMs: number, summary: string): Promise<void> {
  if (ready() || timeoutMs <= 0) return;
  await condition(ready, timeoutMs, { summary });
}

/** What a wake-up at `atMs` is for: the label of the first of the instants it was chosen from that equals it. */
function wakeSummary(atMs: number | null, labelled: Array<[number | null, string]>): string {
  return labelled.find(([instant]) => instant !== null && instant === atMs)?.[1] ?? 'wake up';
}

export async function membership(input: MembershipInput): Promise<MembershipView> {
  return new Membership(input).run();
}

class Membership {
  private phase: MembershipPhase = 'idle';
  private sub: MembershipSnapshot | null = null;
  /** The payment the buyer is asked for now (signup or renewal), while it is unpaid. */
  private open: OpenPayment | null = null;
  private renewalPaid = false;
  private signingUp = false;
  private cancelRequest: CancelledBy | null = null;
  private cancelApplied = false;
  private cancelRecorded = false;
  private readonly inbox: MembershipPaymentNotification[] = [];
  /** Notifications whose payment the gateway could not be asked about yet: asked again at `deferredAtMs`. */
  private deferred: MembershipPaymentNotification[] = [];
  private deferredAtMs: number | null = null;
  /** Approved payments already decided by this execution. */
  private readonly settled = new Set<string>();
  private nextPullAtMs: number | null = null;
  private pullIntervalMs: number;
  /** When asking about the open payment started (the slow schedule starts an hour later). */
  private pullingSinceMs: number | null = null;
  private readonly mails: Array<Promise<void>> = [];
  /** Whether this execution takes MEMBERSHIP_MONEY_NEVER_STRANDED's path (set first thing in `run`). */
  private fix = false;
  /** References of payment requests closed unpaid that the gateway must still be asked about (the last ask). */
  private closedReferences: string[] = [];
  private closedAskAtMs: number | null = null;
  /** Wait before retrying a last ask the gateway could not answer; null while the last one was answered. */
  private closedRetryMs: number | null = null;
  private closedOwedSinceMs: number | null = null;
  /** Wait before asking again about a closed request whose payment is still pending (doubling to an hour). */
  private closedPendingMs: number | null = null;
  private closedPendingSinceMs: number | null = null;
  /** Refunds the gateway refused for good: provider payment id → membership payment id. Parked until retried. */
  private readonly refused = new Map<string, string | null>();
  /**
   * Refusals met by each payment's refund in this run, across operators' retries: the next ask uses a key of its own.
   * A continued run starts again from the first key; a key the gateway declined before is declined again and counted.
   */
  private readonly refundRefusalsSeen = new Map<string, number>();
  private readonly retryRequests: RetryRefusedRefundRequest[] = [];

  constructor(private readonly input: MembershipInput) {
    this.pullIntervalMs = input.durations.paymentPollMs;
    // A continued run holds an active period from its first task: a cancel sent during the hand-over is accepted.
    if (input.continued) this.phase = 'active';
    this.registerHandlers();
  }

  // ------------------------------------------------------------------------------------------------ the story

  async run(): Promise<MembershipView> {
    this.fix = patched(MEMBERSHIP_MONEY_NEVER_STRANDED);
    if (this.fix && this.input.continued?.owed) this.takeOver(this.input.continued.owed);
    if (this.input.continued) await this.resumePeriod(this.input.continued.subscriptionId);
    else if (this.input.settleLateMoney) this.phase = 'settling';
    else await this.awaitSignup();
    if (this.now() === 'pending') await this.awaitSignupPayment();
    if (this.now() === 'active' && (await this.livePeriod())) return this.continueIntoNextPeriod();
    await this.finish();
    return this.view();
  }

  /** The signup update that started the execution creates the subscription and its payment link. */
  private async awaitSignup(): Promise<void> {
    await condition(() => this.phase !== 'idle' || this.signingUp || this.inbox.length > 0, SIGNUP_WAIT_MS, {
      summary: 'stop waiting for the signup',
    });
    await condition(() => !this.signingUp);
  }

  /** A run continued as new picks the period up from the database. */
  private async resumePeriod(subscriptionId: string): Promise<void> {
    this.sub = await db.readMembership(subscriptionId);
    if (this.sub?.status !== 'ACTIVE') {
      this.phase = 'ended';
      return;
    }
    this.phase = 'active';
    this.cancelApplied = this.sub.cancelAtPeriodEnd;
    this.renewalPaid = this.sub.renewalState === 'PAID';
    this.open = this.renewalPaid ? null : this.sub.openPayment;
    if (this.open) this.startPulling();
    const carriedInterval = this.input.continued?.owed?.pullIntervalMs ?? null;
    if (this.fix && this.open && carriedInterval !== null) {
      // The schedule goes on where the previous run left it (a long-open renewal stays on the slow schedule).
      this.pullIntervalMs = carriedInterval;
      this.nextPullAtMs = Date.now() + carriedInterval;
      if (carriedInterval >= SLOW_PULL_MIN_MS) this.pullingSinceMs = Date.now() - SLOW_PULL_AFTER_MS;
    }
  }

  /** What the previous run owed becomes this run's: nothing is dropped at a continue-as-new. */
  private takeOver(owed: MembershipOwed): void {
    this.inbox.push(...owed.notifications);
    this.closedReferences = [...owed.closedReferences];
    if (this.closedReferences.length > 0) this.closedAskAtMs = Date.now();
    for (const { providerPaymentId, membershipPaymentId } of owed.refusedRefunds) {
      this.refused.set(providerPaymentId, membershipPaymentId);
    }
  }

  /** What this run hands over when it continues as new. */
  private owed(): MembershipOwed {
    return {
      notifications: [...this.deferred, ...this.inbox],
      closedReferences: [...this.closedReferences],
      refusedRefunds: [...this.refused].map(([providerPaymentId, membershipPaymentId]) => ({
        providerPaymentId,
        membershipPaymentId,
      })),
      pullIntervalMs: this.open ? this.pullIntervalMs : null,
    };
  }

  /** The signup window races the payment, the pull schedule and a cancel. */
  private async awaitSignupPayment(): Promise<void> {
    const deadline = this.open?.expiresAtMs ?? Date.now();
    while (this.now() === 'pending') {
      const wakeAtMs = earliestFuture([deadline, this.nextPullAtMs, this.deferredAtMs]);
      await waitUntil(
        () => this.inbox.length > 0 || this.cancelRequest !== null,
        (wakeAtMs ?? Date.now()) - Date.now(),
        wakeSummary(wakeAtMs, [
          [deadline, 'signup payment window ends'],
          [this.nextPullAtMs, 'ask the gateway again'],
          [this.deferredAtMs, 'read a notified payment again'],
        ]),
      );
      await this.processInbox();
      if (this.now() !== 'pending') break;
      if (this.pullDue()) await this.pull();
      if (this.now() !== 'pending') break;
      if (this.cancelRequest !== null) await this.closeSignup('CANCELLED');
      else if (Date.now() >= deadline) await this.closeSignup('EXPIRED');
    }
  }

  /** An unpaid signup ends; the gateway is asked first, since a payment may exist that no notification announced. */
  private async closeSignup(to: 'EXPIRED' | 'CANCELLED'): Promise<void> {
    const answered = await this.pull();
    if (this.now() !== 'pending' || !this.sub) return;
    const closing = this.open;
    this.sub = await db.closeSignup({
      subscriptionId: this.sub.subscriptionId,
      to,
      cancelledBy: to === 'CANCELLED' ? this.cancelRequest : null,
    });
    this.stopAsking();
    this.phase = 'ended';
    this.email(to === 'EXPIRED' ? 'expired' : 'cancelled', null);
    if (this.fix && closing) await this.requestClosed(closing.reference, answered);
  }

  /**
   * One paid period: before it ends the renewal is asked for (at the plan's current price), reminded and finally
   * noticed; a cancel keeps access until the end. Returns true when the next period is paid.
   */
  private async livePeriod(): Promise<boolean> {
    const { renewalNoticeMs, reminderIntervalMs } = this.input.durations;
    const periodEnd = () => this.sub?.currentPeriodEndMs ?? Date.now();
    const noticeAt = periodEnd() - renewalNoticeMs;
    let renewalAsked = this.open !== null || this.renewalPaid;
    let nextReminderAtMs: number | null = this.open ? Date.now() + reminderIntervalMs : null;
    for (;;) {
      await this.processInbox();
      if (this.cancelRequest !== null && !this.cancelApplied) await this.applyCancel();
      if (Date.now() >= periodEnd()) break;
      if (!renewalAsked && !this.cancelApplied && Date.now() >= noticeAt) {
        renewalAsked = true;
        await this.askForRenewal(periodEnd());
        nextReminderAtMs = this.open ? Date.now() + reminderIntervalMs : null;
      }
      const asking = this.open !== null && !this.renewalPaid && !this.cancelApplied;
      if (asking && nextReminderAtMs !== null && Date.now() >= nextReminderAtMs) {
        const final = periodEnd() - Date.now() <= reminderIntervalMs;
        await this.remind(final);
        nextReminderAtMs = final ? null : Date.now() + reminderIntervalMs;
      }
      if (asking && this.pullDue()) await this.pull();
      if (this.fix && this.closedAskDue()) await this.askClosedRequests();
      if (this.fix && workflowInfo().continueAsNewSuggested) await this.continueThisPeriod();
      const wakeAtMs = earliestFuture([
        periodEnd(),
        renewalAsked || this.cancelApplied ? null : noticeAt,
        asking ? nextReminderAtMs : null,
        asking ? this.nextPullAtMs : null,
        this.deferredAtMs,
        this.fix ? this.closedAskAtMs : null,
      ]);
      await waitUntil(
        () =>
          this.inbox.length > 0 ||
          (this.cancelRequest !== null && !this.cancelApplied) ||
          this.retryRequests.length > 0,
        (wakeAtMs ?? periodEnd()) - Date.now(),
        wakeSummary(wakeAtMs ?? periodEnd(), [
          [periodEnd(), 'period ends'],
          [noticeAt, 'renewal due'],
          [nextReminderAtMs, 'remind the member to renew'],
          [this.nextPullAtMs, 'ask the gateway again'],
          [this.deferredAtMs, 'read a notified payment again'],
          [this.closedAskAtMs, 'ask the gateway about a closed payment request'],
        ]),
      );
    }
    return this.periodEnds();
  }

  /**
   * The server suggests a fresh history (a long period with a long-unpaid renewal): the same period goes on in a new
   * run, with the open payment (read back from the database) and everything owed carried over.
   */
  private async continueThisPeriod(): Promise<never> {
    await this.drain();
    return continueAsNew<typeof membership>({
      workspaceId: this.input.workspaceId,
      buyerId: this.input.buyerId,
      durations: this.input.durations,
      continued: { subscriptionId: this.sub!.subscriptionId, owed: this.owed() },
    });
  }

  /** At the period end: renew when paid; otherwise access ends (CANCELLED after a cancel, else EXPIRED). */
  private async periodEnds(): Promise<boolean> {
    await this.processInbox();
    const closing = !this.cancelApplied && !this.renewalPaid ? this.open : null;
    const answered = closing ? await this.pull() : true;
    if (this.renewalPaid && !this.cancelApplied) return true;
    await this.endMembership(this.cancelApplied ? 'CANCELLED' : 'EXPIRED');
    // A renewal approved while the gateway could not be asked (its notification lost) is found by the last ask.
    if (this.fix && closing) await this.requestClosed(closing.reference, answered);
    return false;
  }

  private async endMembership(to: 'CANCELLED' | 'EXPIRED'): Promise<void> {
    if (!this.sub) return;
    this.sub = await db.endMembership({ subscriptionId: this.sub.subscriptionId, to });
    this.stopAsking();
    this.phase = 'ended';
    this.email(to === 'CANCELLED' ? 'cancelled' : 'expired', null);
  }

  /** The paid renewal becomes the current period, with the plan's terms as they are now; then a fresh run holds it. */
  private async continueIntoNextPeriod(): Promise<MembershipView> {
    const before = this.sub!;
    this.sub = await db.startNextPeriod({
      subscriptionId: before.subscriptionId,
      fromPeriod: before.periodNumber,
      periodMs: this.input.durations.periodMs,
    });
    if (this.sub.periodNumber === before.periodNumber) {
      log.error('the paid renewal could not start the next period; access ends', {
        subscriptionId: before.subscriptionId,
      });
      if (this.fix) {
        // The renewal's money paid nothing: it goes back.
        const { refund } = await db.releaseUnstartedRenewal({ subscriptionId: before.subscriptionId });
        this.renewalPaid = false;
        for (const providerPaymentId of refund) await this.giveBack(providerPaymentId);
      }
      await this.endMembership('EXPIRED');
      await this.finish();
      return this.view();
    }
    this.email('renewed', null);
    await this.drain();
    return continueAsNew<typeof membership>({
      workspaceId: this.input.workspaceId,
      buyerId: this.input.buyerId,
      durations: this.input.durations,
      continued: this.fix
        ? { subscriptionId: before.subscriptionId, owed: this.owed() }
        : { subscriptionId: before.subscriptionId },
    });
  }

  /** Nothing received is dropped: late money is settled, emails and in-flight updates finish before the run ends. */
  private async finish(): Promise<void> {
    this.stopAsking();
    if (this.fix) await this.settleWhatIsOwed();
    await this.drain();
  }

  /**
   * Before an execution ends: the last ask about each closed request (after `lateAskDelayMs`, retried while the
   * gateway cannot answer), and refunds the gateway refused wait here, parked, for an operator's retry.
   */
  private async settleWhatIsOwed(): Promise<void> {
    if (this.closedReferences.length > 0) {
      // Asked soon once the membership has ended, whatever a pending payment's slower schedule said.
      const lastAskAtMs = Date.now() + (this.input.durations.lateAskDelayMs ?? DEFAULT_LATE_ASK_DELAY_MS);
      this.closedAskAtMs = Math.min(this.closedAskAtMs ?? lastAskAtMs, lastAskAtMs);
    }
    for (;;) {
      await this.processInbox();
      if (this.closedAskDue()) {
        await this.askClosedRequests();
        continue;
      }
      if (this.closedReferences.length === 0 && this.refused.size === 0 && this.inbox.length === 0) return;
      const news = () => this.inbox.length > 0 || this.retryRequests.length > 0;
      if (this.closedAskAtMs !== null) {
        await waitUntil(news, this.closedAskAtMs - Date.now(), 'ask the gateway about a closed payment request');
      } else if (this.refused.size > 0) {
        await condition(news, { summary: 'refund refused by the gateway: waiting for an operator to retry' });
      }
    }
  }

  private async drain(): Promise<void> {
    // A cancel that arrives while a renewed run hands over is applied to the new period before the hand-over.
    const cancelWaiting = () => this.cancelRequest !== null && !this.cancelApplied && this.phase === 'active';
    for (;;) {
      await this.processInbox();
      if (cancelWaiting()) await this.applyCancel();
      if (this.deferred.length > 0) {
        await waitUntil(
          () => this.inbox.length > 0,
          (this.deferredAtMs ?? Date.now()) - Date.now(),
          'read a notified payment again',
        );
        this.retryDeferredWhenDue();
        continue;
      }
      await Promise.all(this.mails);
      await condition(() => allHandlersFinished() || this.inbox.length > 0 || cancelWaiting());
      if (this.inbox.length === 0 && !cancelWaiting()) return;
    }
  }

  // ------------------------------------------------------------------------------------------------ asking for money

  private async askForRenewal(periodEndMs: number): Promise<void> {
    if (!this.sub) return;
    const opened = await db.openRenewal({
      subscriptionId: this.sub.subscriptionId,
      paymentId: uuid4(),
      expiresAtMs: periodEndMs,
    });
    this.sub = (await db.readMembership(this.sub.subscriptionId)) ?? this.sub;
    if (!opened.ok) {
      log.info('the membership cannot renew', { reason: opened.reason, subscriptionId: this.sub.subscriptionId });
      return;
    }
    this.open = opened.payment;
    this.startPulling();
    await this.ensureLink('renewal_due');
  }

  /** A reminder carries the link; a link the gateway could not create yet is tried again first. */
  private async remind(final: boolean): Promise<void> {
    if (!this.open) return;
    if (!this.open.checkoutUrl) {
      await this.ensureLink('renewal_due');
      return;
    }
    this.email(final ? 'renewal_final_notice' : 'renewal_reminder', this.open.paymentId);
  }

  /** Creates the open payment's gateway link once and mails it; false when the gateway could not be reached. */
  private async ensureLink(mailKind: MembershipMailKind): Promise<boolean> {
    const payment = this.open;
    if (!payment) return false;
    if (payment.checkoutUrl) return true;
    try {
      const { checkoutUrl } = await links.openPaymentLink({ paymentId: payment.paymentId });
      if (this.open?.paymentId === payment.paymentId) this.open = { ...payment, checkoutUrl };
      this.email(mailKind, payment.paymentId);
      return true;
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      log.warn('the gateway could not create the payment link; trying again later', { paymentId: payment.paymentId });
      return false;
    }
  }

  // ------------------------------------------------------------------------------------------------ cancel

  /** Access stays until the period ends; an open renewal link closes and a renewal already paid goes back. */
  private async applyCancel(): Promise<void> {
    if (!this.sub || this.cancelRequest === null) return;
    this.cancelApplied = true;
    const closing = this.renewalPaid ? null : this.open;
    const { snapshot, refund } = await db.requestCancel({
      subscriptionId: this.sub.subscriptionId,
      by: this.cancelRequest,
    });
    this.sub = snapshot;
    this.stopAsking();
    this.renewalPaid = false;
    this.cancelRecorded = true;
    this.email('cancel_scheduled', null);
    for (const providerPaymentId of refund) await this.giveBack(providerPaymentId);
    // The renewal link stays payable at the gateway until the period end otherwise; a transfer already started on
    // it settles anyway and is found by the last ask.
    if (this.fix && closing) await this.requestClosed(closing.reference, true);
  }

  // ------------------------------------------------------------------------------------------------ closed requests

  /**
   * A payment request closed unpaid: its gateway link is expired and the gateway is asked about it once more after
   * `lateAskDelayMs` (at once again and again when the ask at the close could not be answered).
   */
  private async requestClosed(reference: string, answered: boolean): Promise<void> {
    if (!this.closedReferences.includes(reference)) this.closedReferences.push(reference);
    const askAtMs = answered
      ? Date.now() + (this.input.durations.lateAskDelayMs ?? DEFAULT_LATE_ASK_DELAY_MS)
      : Date.now() + this.owedRetry();
    this.closedAskAtMs = this.closedAskAtMs === null ? askAtMs : Math.min(this.closedAskAtMs, askAtMs);
    try {
      await gateways.expireMembershipPaymentLink({ reference });
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      log.warn('the gateway link of a closed payment request could not be expired', { reference });
    }
  }

  private closedAskDue(): boolean {
    return this.closedAskAtMs !== null && Date.now() >= this.closedAskAtMs;
  }

  /** The next wait of an ask the gateway owes an answer to: seconds first, doubling up to MAX_PULL_INTERVAL_MS. */
  private owedRetry(): number {
    this.closedOwedSinceMs ??= Date.now();
    this.closedRetryMs =
      this.closedRetryMs === null
        ? Math.min(OWED_ASK_FIRST_RETRY_MS, this.input.durations.paymentPollMs)
        : Math.min(this.closedRetryMs * 2, MAX_PULL_INTERVAL_MS);
    return this.closedRetryMs;
  }

  /**
   * Asks gateway A for every payment of each closed request and judges the approved ones (they pay nothing now: they
   * are refunded). A request with a payment still pending is asked again while the membership lives, and for
   * PENDING_LINGER_MS once it has ended; then the reconciler's sweep takes it over.
   */
  private async askClosedRequests(): Promise<void> {
    this.closedAskAtMs = null;
    let unanswered = false;
    const stillPending: string[] = [];
    for (const reference of [...this.closedReferences]) {
      let verdicts: MembershipVerdict[];
      try {
        verdicts = await gateways.findMembershipGatewayPayments({ reference });
      } catch (error) {
        if (!isGiveUp(error)) throw error;
        unanswered = true;
        continue;
      }
      for (const verdict of verdicts) if (verdict.outcome === 'approved') await this.judge(verdict);
      this.closedReferences = this.closedReferences.filter((closed) => closed !== reference);
      if (verdicts.some((verdict) => verdict.outcome === 'pending')) stillPending.push(reference);
    }
    const live = this.phase === 'pending' || this.phase === 'active';
    if (unanswered) {
      if (live || Date.now() - (this.closedOwedSinceMs ?? Date.now()) < OWED_ASK_GIVE_UP_MS) {
        this.closedReferences.push(...stillPending);
        this.closedAskAtMs = Date.now() + this.owedRetry();
        return;
      }
      log.warn('the gateway did not answer the last ask about closed payment requests; left to the reconciler', {
        references: this.closedReferences,
      });
      this.closedReferences = [];
    }
    this.closedRetryMs = null;
    this.closedOwedSinceMs = null;
    if (stillPending.length > 0) this.closedPendingSinceMs ??= Date.now();
    const lingering = live || Date.now() - (this.closedPendingSinceMs ?? Date.now()) < PENDING_LINGER_MS;
    if (stillPending.length > 0 && lingering) {
      this.closedReferences.push(...stillPending);
      this.closedPendingMs =
        this.closedPendingMs === null
          ? this.input.durations.paymentPollMs
          : Math.min(this.closedPendingMs * 2, SLOW_PULL_MAX_MS);
      this.closedAskAtMs = Date.now() + this.closedPendingMs;
    } else if (stillPending.length > 0) {
      log.info('a closed payment request still has a pending payment; the reconciler asks again', {
        references: stillPending,
      });
    }
    if (stillPending.length === 0) {
      this.closedPendingMs = null;
      this.closedPendingSinceMs = null;
    }
  }

  // ------------------------------------------------------------------------------------------------ money in

  private async processInbox(): Promise<void> {
    if (this.fix) await this.retryRefusedWhenAsked();
    this.retryDeferredWhenDue();
    while (this.inbox.length > 0) {
      const notification = this.inbox.shift()!;
      if (this.settled.has(notification.providerPaymentId)) continue;
      let verdict: MembershipVerdict;
      try {
        verdict = await gateways.readMembershipGatewayPayment({ providerPaymentId: notification.providerPaymentId });
      } catch (error) {
        if (!isGiveUp(error)) throw error;
        log.warn('the gateway could not be read for a notification; asking again later', {
          providerPaymentId: notification.providerPaymentId,
        });
        this.deferred.push(notification);
        this.deferredAtMs = Date.now() + this.input.durations.paymentPollMs;
        continue;
      }
      await this.judge(verdict);
    }
  }

  private retryDeferredWhenDue(): void {
    if (this.deferred.length === 0 || Date.now() < (this.deferredAtMs ?? 0)) return;
    this.inbox.push(...this.deferred);
    this.deferred = [];
    this.deferredAtMs = null;
  }

  /**
   * Asks gateway A for every payment of the open request's reference and judges each approved one as if notified.
   * Returns false when the gateway could not be read (asked again on the backoff schedule).
   */
  private async pull(): Promise<boolean> {
    const payment = this.open;
    if (!payment) return true;
    let verdicts: MembershipVerdict[];
    try {
      verdicts = await gateways.findMembershipGatewayPayments({ reference: payment.reference });
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      this.backOffPull();
      return false;
    }
    this.backOffPull();
    for (const verdict of verdicts) if (verdict.outcome === 'approved') await this.judge(verdict);
    return true;
  }

  /** What a payment means for this membership: one decision for all money, taken in the database (see the activity). */
  private async judge(verdict: MembershipVerdict): Promise<void> {
    if (verdict.outcome === 'rejected') {
      if (this.open && verdict.reference === this.open.reference) {
        // The provider payment id lets the step tell the buyer once per declined payment. Local activity inputs are
        // not part of the history, so adding it changes no command and older histories replay as before.
        const noted = await db.notePaymentRejected({
          reference: verdict.reference,
          providerPaymentId: verdict.providerPaymentId,
          statusDetail: verdict.statusDetail,
          ...(this.fix ? { noticeByWorkflow: true } : {}),
        });
        if (this.fix && noted?.noticeOwedFor) this.email('renewal_declined', noted.noticeOwedFor);
      }
      return;
    }
    if (verdict.outcome !== 'approved' || this.settled.has(verdict.providerPaymentId)) return;
    const live = this.phase === 'pending' || this.phase === 'active';
    const { outcome, snapshot } = await db.applyApprovedPayment({
      currentSubscriptionId: live ? (this.sub?.subscriptionId ?? null) : null,
      verdict,
      nowMs: Date.now(),
      periodMs: this.input.durations.periodMs,
    });
    this.settled.add(verdict.providerPaymentId);
    if (snapshot) this.sub = snapshot;
    if (outcome === 'activated') {
      this.phase = 'active';
      this.stopAsking();
      this.email('activated', null);
      if (this.fix && verdict.reference) await this.requestClosed(verdict.reference, true);
    } else if (outcome === 'renewal_paid') {
      this.renewalPaid = true;
      this.stopAsking();
      this.email('renewal_paid', null);
      // A second tab's transfer, or a card "in process", may still settle on the paid request: it is asked about
      // again (and its link closed) like any request that closed, so a second charge is found and refunded.
      if (this.fix && verdict.reference) await this.requestClosed(verdict.reference, true);
    } else if (outcome === 'give_back') {
      await this.giveBack(verdict.providerPaymentId);
    } else if (outcome === 'not_ours') {
      log.warn('a payment names no membership payment of ours; ignored', {
        providerPaymentId: verdict.providerPaymentId,
      });
    }
  }

  // ------------------------------------------------------------------------------------------------ money out

  /** Refunds a payment that paid nothing and waits until the gateway reports it refunded (REFUNDED). */
  private async giveBack(providerPaymentId: string): Promise<void> {
    let waitMs = this.input.durations.refundCheckMs;
    let refusals = 0;
    for (;;) {
      let refusedBecause: string | null = null;
      // Asked only once the first answer was a refusal, so refunds that went through carry no marker.
      const ask = this.refundRefusalsSeen.get(providerPaymentId) ?? 0;
      const keyPerAsk = ask > 0 && patched(MEMBERSHIP_REFUND_KEY_PER_ASK);
      try {
        await refunds.refundMembershipGatewayPayment({ providerPaymentId, ...(keyPerAsk ? { ask } : {}) });
      } catch (error) {
        // Refused for good (for example: already refunded). The gateway's own record decides below.
        if (!isGiveUp(error)) throw error;
        refusedBecause = error.cause?.message ?? 'refused';
        this.refundRefusalsSeen.set(providerPaymentId, ask + 1);
      }
      if (await this.refunded(providerPaymentId)) break;
      if (this.fix && refusedBecause !== null && ++refusals >= MAX_REFUND_REFUSALS) {
        // Retrying forever would only grow the history: recorded, raised, and parked until an operator retries.
        const { membershipPaymentId } = await db.recordRefundRefused({ providerPaymentId, reason: refusedBecause });
        this.refused.set(providerPaymentId, membershipPaymentId);
        return;
      }
      await sleep(waitMs, { summary: 'check the refund again' });
      waitMs = Math.min(waitMs * 2, REFUND_CHECK_MAX_MS);
    }
    await db.markMembershipPaymentRefunded({ providerPaymentId });
  }

  /** An operator asked to retry refused refunds: each one named (or all, when none is named) is tried again. */
  private async retryRefusedWhenAsked(): Promise<void> {
    while (this.retryRequests.length > 0) {
      const request = this.retryRequests.shift()!;
      const named = [...this.refused].filter(
        ([providerPaymentId, membershipPaymentId]) =>
          (request.providerPaymentId === undefined && request.membershipPaymentId === undefined) ||
          request.providerPaymentId === providerPaymentId ||
          (request.membershipPaymentId !== undefined && request.membershipPaymentId === membershipPaymentId),
      );
      for (const [providerPaymentId] of named) {
        this.refused.delete(providerPaymentId);
        await this.giveBack(providerPaymentId);
      }
    }
  }

  private async refunded(providerPaymentId: string): Promise<boolean> {
    try {
      return (await gateways.readMembershipGatewayPayment({ providerPaymentId })).outcome === 'refunded';
    } catch (error) {
      if (!isGiveUp(error)) throw error;
      return false;
    }
  }

  // ------------------------------------------------------------------------------------------------ handlers

  private registerHandlers(): void {
    setHandler(membershipStatusQuery, () => this.view());
    setHandler(membershipPaymentSignal, (notification) => {
      this.inbox.push(notification);
    });
    setHandler(retryRefusedRefundSignal, (request) => {
      this.retryRequests.push(request);
    });
    setHandler(signupUpdate, (request) => this.signup(request), {
      validator: (request) => this.assertCanSignUp(request),
    });
    setHandler(cancelMembershipUpdate, (request) => this.cancel(request), {
      validator: (request) => this.assertCancellable(request),
    });
  }

  private assertCanSignUp(request: SignupRequest): void {
    if (this.signingUp) throw refusal('SERVICE_UNAVAILABLE', 'A signup is being created; retry', {}, true);
    if (this.phase === 'active') {
      throw refusal('ALREADY_MEMBER', 'You are already a member of this workspace', { reason: 'already_member' });
    }
    if (this.phase === 'pending' && this.sub && this.sub.planId !== request.planId) {
      throw refusal('INVALID_STATE', 'A signup for another plan is waiting for its payment; cancel it first', {
        reason: 'signup_pending_other_plan',
        subscriptionId: this.sub.subscriptionId,
      });
    }
    if (this.phase === 'ended' || this.phase === 'settling') {
      throw refusal('SERVICE_UNAVAILABLE', 'The previous membership is closing; retry in a moment', {}, true);
    }
  }

  /** A new signup, or the pending one for the same plan with the same link (idempotent). */
  private async signup(request: SignupRequest): Promise<SignupResult> {
    if (this.phase === 'idle') {
      this.signingUp = true;
      try {
        const outcome = await db.startSignup({
          subscriptionId: uuid4(),
          paymentId: uuid4(),
          workspaceId: this.input.workspaceId,
          buyerId: this.input.buyerId,
          planId: request.planId,
          nowMs: Date.now(),
          signupWindowMs: this.input.durations.signupWindowMs,
        });
        if (!outcome.ok) throw refusal(outcome.code, outcome.message, { reason: outcome.reason });
        this.sub = outcome.snapshot;
        this.open = outcome.payment;
        this.phase = 'pending';
        this.startPulling();
      } finally {
        this.signingUp = false;
      }
    }
    if (this.phase === 'pending' && !(await this.ensureLink('signup_link'))) {
      throw refusal('PROVIDER_UNAVAILABLE', 'The payment gateway did not answer; retry', {}, true);
    }
    return this.signupResult();
  }

  private signupResult(): SignupResult {
    const payment = this.open;
    return {
      subscriptionId: this.sub?.subscriptionId ?? '',
      planId: this.sub?.planId ?? '',
      status: this.phase === 'pending' ? 'PENDING' : 'ACTIVE',
      checkoutUrl: payment?.checkoutUrl ?? null,
      expiresAtMs: this.phase === 'pending' ? (payment?.expiresAtMs ?? null) : null,
      amount: payment?.amount ?? this.sub?.openPayment?.amount ?? 0,
      currency: payment?.currency ?? this.sub?.openPayment?.currency ?? '',
    };
  }

  private assertCancellable(request: MembershipCancelRequest): void {
    if (this.signingUp) throw refusal('SERVICE_UNAVAILABLE', 'A signup is being created; retry', {}, true);
    if (this.phase !== 'pending' && this.phase !== 'active') {
      throw refusal('NOT_FOUND', 'There is no membership to cancel', { reason: 'not_a_member' });
    }
    const current = this.sub?.subscriptionId ?? this.input.continued?.subscriptionId;
    if (request.subscriptionId !== null && request.subscriptionId !== current) {
      throw refusal('NOT_FOUND', 'Subscription not found', { reason: 'not_current_subscription' });
    }
  }

  private async cancel(request: MembershipCancelRequest): Promise<MembershipView> {
    if (this.cancelRequest === null) this.cancelRequest = request.by;
    if (this.phase === 'pending') await condition(() => this.phase !== 'pending');
    if (this.phase === 'active') await condition(() => this.cancelRecorded || this.phase !== 'active');
    return this.view();
  }

  // ------------------------------------------------------------------------------------------------ state

  /** Reads the phase through a call, so the compiler does not keep a narrowing across awaits. */
  private now(): MembershipPhase {
    return this.phase;
  }

  private startPulling(): void {
    this.pullIntervalMs = this.input.durations.paymentPollMs;
    this.nextPullAtMs = Date.now() + this.pullIntervalMs;
    this.pullingSinceMs = Date.now();
  }

  private stopAsking(): void {
    this.open = null;
    this.nextPullAtMs = null;
  }

  private backOffPull(): void {
    if (!this.open) return;
    this.pullIntervalMs = this.nextPullInterval();
    this.nextPullAtMs = Date.now() + this.pullIntervalMs;
  }

  /**
   * Doubling up to five minutes; once the request has been open an hour (a renewal asked days before the period
   * end), every 30 to 60 minutes: about 180 asks over a 7-day window instead of 2,000.
   */
  private nextPullInterval(): number {
    if (!this.fix) return Math.min(this.pullIntervalMs * 2, MAX_PULL_INTERVAL_MS);
    return nextPullIntervalMs(this.pullIntervalMs, Date.now() - (this.pullingSinceMs ?? Date.now()));
  }

  private pullDue(): boolean {
    return this.nextPullAtMs !== null && Date.now() >= this.nextPullAtMs;
  }

  private email(kind: MembershipMailKind, paymentId: string | null): void {
    const subscriptionId = this.sub?.subscriptionId;
    if (!subscriptionId) return;
    this.mails.push(
      mail.emailMembership({ subscriptionId, kind, paymentId }).then(
        () => undefined,
        (error: unknown) => {
          if (!isGiveUp(error)) throw error;
          log.warn('a membership email could not be sent', { subscriptionId, kind });
        },
      ),
    );
  }

  private view(): MembershipView {
    return {
      subscriptionId: this.sub?.subscriptionId ?? null,
      phase: this.phase,
      periodNumber: this.sub?.periodNumber ?? 0,
      currentPeriodEndMs: this.sub?.currentPeriodEndMs ?? null,
      cancelAtPeriodEnd: this.cancelApplied,
    };
  }
}
