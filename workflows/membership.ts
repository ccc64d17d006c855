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
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  uuid4,
} from '@temporalio/workflow';
import type {
  MembershipActivities,
  MembershipMailKind,
  MembershipSnapshot,
  MembershipVerdict,
  OpenPayment,
} from '../activities/memberships.js';
import { DATABASE_STEP, GATEWAY_CALL, MONEY_BACK, rerunWhenEvicted } from './local-steps.js';
import {
  type CancelledBy,
  cancelMembershipUpdate,
  type MembershipCancelRequest,
  type MembershipInput,
  type MembershipPaymentNotification,
  type MembershipPhase,
  type MembershipView,
  membershipPaymentSignal,
  membershipStatusQuery,
  type SignupRequest,
  type SignupResult,
  signupUpdate,
} from './membership-definitions.js';

/** Database steps: short transactions in the workflow task, retried without a cap (a database restart only delays). */
const db = rerunWhenEvicted(proxyLocalActivities<MembershipActivities>(DATABASE_STEP));
/** Gateway reads and link creation: a few tries, then "ask again later" instead of a failure. */
const gateways = proxyActivities<MembershipActivities>(GATEWAY_CALL);
/** Money must go back: retried without a cap; the story then waits for the gateway to report it refunded. */
const refunds = proxyActivities<MembershipActivities>(MONEY_BACK);
/** Emails go beside the story, a bounded effort each: a mail outage never stands in front of money handling. */
const mail = proxyActivities<MembershipActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '2 minutes', maximumAttempts: 5 },
});

/** How long a fresh execution waits for the signup update that started it. */
const SIGNUP_WAIT_MS = 60_000;
const MAX_PULL_INTERVAL_MS = 5 * 60_000;
const REFUND_CHECK_MAX_MS = 10 * 60_000;

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
  private readonly mails: Array<Promise<void>> = [];

  constructor(private readonly input: MembershipInput) {
    this.pullIntervalMs = input.durations.paymentPollMs;
    // A continued run holds an active period from its first task: a cancel sent during the hand-over is accepted.
    if (input.continued) this.phase = 'active';
    this.registerHandlers();
  }

  // ------------------------------------------------------------------------------------------------ the story

  async run(): Promise<MembershipView> {
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
    await this.pull();
    if (this.now() !== 'pending' || !this.sub) return;
    this.sub = await db.closeSignup({
      subscriptionId: this.sub.subscriptionId,
      to,
      cancelledBy: to === 'CANCELLED' ? this.cancelRequest : null,
    });
    this.stopAsking();
    this.phase = 'ended';
    this.email(to === 'EXPIRED' ? 'expired' : 'cancelled', null);
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
      const wakeAtMs = earliestFuture([
        periodEnd(),
        renewalAsked || this.cancelApplied ? null : noticeAt,
        asking ? nextReminderAtMs : null,
        asking ? this.nextPullAtMs : null,
        this.deferredAtMs,
      ]);
      await waitUntil(
        () => this.inbox.length > 0 || (this.cancelRequest !== null && !this.cancelApplied),
        (wakeAtMs ?? periodEnd()) - Date.now(),
        wakeSummary(wakeAtMs ?? periodEnd(), [
          [periodEnd(), 'period ends'],
          [noticeAt, 'renewal due'],
          [nextReminderAtMs, 'remind the member to renew'],
          [this.nextPullAtMs, 'ask the gateway again'],
          [this.deferredAtMs, 'read a notified payment again'],
        ]),
      );
    }
    return this.periodEnds();
  }

  /** At the period end: renew when paid; otherwise access ends (CANCELLED after a cancel, else EXPIRED). */
  private async periodEnds(): Promise<boolean> {
    await this.processInbox();
    if (!this.cancelApplied && !this.renewalPaid && this.open) await this.pull();
    if (this.renewalPaid && !this.cancelApplied) return true;
    await this.endMembership(this.cancelApplied ? 'CANCELLED' : 'EXPIRED');
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
      continued: { subscriptionId: before.subscriptionId },
    });
  }

  /** Nothing received is dropped: late money is settled, emails and in-flight updates finish before the run ends. */
  private async finish(): Promise<void> {
    this.stopAsking();
    await this.drain();
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
      const { checkoutUrl } = await gateways.openPaymentLink({ paymentId: payment.paymentId });
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
  }

  // ------------------------------------------------------------------------------------------------ money in

  private async processInbox(): Promise<void> {
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
        await db.notePaymentRejected({
          reference: verdict.reference,
          providerPaymentId: verdict.providerPaymentId,
          statusDetail: verdict.statusDetail,
        });
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
    } else if (outcome === 'renewal_paid') {
      this.renewalPaid = true;
      this.stopAsking();
      this.email('renewal_paid', null);
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
    for (;;) {
      try {
        await refunds.refundMembershipGatewayPayment({ providerPaymentId });
      } catch (error) {
        // Refused for good (for example: already refunded). The gateway's own record decides below.
        if (!isGiveUp(error)) throw error;
      }
      if (await this.refunded(providerPaymentId)) break;
      await sleep(waitMs, { summary: 'check the refund again' });
      waitMs = Math.min(waitMs * 2, REFUND_CHECK_MAX_MS);
    }
    await db.markMembershipPaymentRefunded({ providerPaymentId });
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
  }

  private stopAsking(): void {
    this.open = null;
    this.nextPullAtMs = null;
  }

  private backOffPull(): void {
    if (!this.open) return;
    this.pullIntervalMs = Math.min(this.pullIntervalMs * 2, MAX_PULL_INTERVAL_MS);
    this.nextPullAtMs = Date.now() + this.pullIntervalMs;
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
