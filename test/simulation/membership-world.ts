/**
 * One buyer's membership world in memory, with faults: gateway A (payments of each payment request's reference, a
 * link that can be expired, refunds that lag or are refused), the membership's rows (subscription and payment
 * requests) with the decisions of activities/memberships.ts, and a gateway that goes down or fails a call. The
 * membership simulation's worker runs the real membership workflow against these activities; every fault is drawn
 * from the case's seeded generator.
 */
import { ApplicationFailure } from '@temporalio/common';
import type {
  ApprovedPaymentOutcome,
  MembershipSnapshot,
  MembershipVerdict,
  OpenPayment,
  SignupOutcome,
} from '../../activities/memberships.js';
import type { MembershipPaymentStatus } from '../../entities/membership-payment.js';
import type { RenewalState, SubscriptionStatus } from '../../entities/membership-subscription.js';

export type GatewayState = 'approved' | 'rejected' | 'pending' | 'refunded';

export interface GatewayPayment {
  id: string;
  reference: string;
  amount: number;
  currency: string;
  status: GatewayState;
  /** Refund calls that must still come back "in process" before the gateway shows it refunded. */
  refundLag: number;
}

interface Row {
  id: string;
  periodNumber: number;
  reference: string;
  status: MembershipPaymentStatus;
  providerPaymentId: string | null;
  amount: number;
  expiresAtMs: number;
  checkoutUrl: string | null;
  linkExpired: boolean;
}

interface Subscription {
  id: string;
  status: SubscriptionStatus;
  renewalState: RenewalState;
  periodNumber: number;
  currentPeriodEndMs: number | null;
  cancelled: boolean;
}

export interface MembershipFaultRates {
  /** Probability that one gateway call fails for good (its retries spent). */
  gateway: number;
  /** Probability that a refund needs a few more calls before the gateway shows it refunded. */
  slowRefund: number;
}

const PRICE = 20_000;
const CURRENCY = 'COP';

export class MembershipWorld {
  subscription: Subscription | null = null;
  readonly rows: Row[] = [];
  readonly gateway = new Map<string, GatewayPayment>();
  gatewayDownUntilMs = 0;
  /** While set, gateway A refuses every refund (as for an insufficient merchant balance). */
  refusingRefunds = false;
  refundsRefusedRecorded = 0;
  readonly log: string[] = [];
  #nextPayment = 1;
  #nextReference = 1;

  constructor(
    readonly seed: number,
    private readonly random: () => number,
    private readonly faults: MembershipFaultRates,
  ) {}

  note(line: string): void {
    this.log.push(line);
  }

  // ------------------------------------------------------------------------------ the buyer and the bank

  /** The request a buyer can pay now: open in our rows, its link created and not expired at the gateway. */
  payableRequest(): Row | null {
    return this.rows.find((row) => row.checkoutUrl !== null && !row.linkExpired && row.status === 'OPEN') ?? null;
  }

  /** A link the buyer still has in an old email: any request with a link the gateway has not expired. */
  oldLink(): Row | null {
    const links = this.rows.filter((row) => row.checkoutUrl !== null && !row.linkExpired);
    return links.length === 0 ? null : (links[Math.floor(this.random() * links.length)] ?? null);
  }

  /** The gateway takes a payment on a request's link. */
  pay(row: Row, status: GatewayState, amountOff = 0): GatewayPayment {
    const payment: GatewayPayment = {
      id: `mp-${this.seed}-${this.#nextPayment++}`,
      reference: row.reference,
      amount: row.amount - amountOff,
      currency: CURRENCY,
      status,
      refundLag: this.random() < this.faults.slowRefund ? 1 + Math.floor(this.random() * 3) : 0,
    };
    this.gateway.set(payment.id, payment);
    this.note(`gateway ${payment.id} ${status} on ${row.reference}${amountOff ? ' (wrong amount)' : ''}`);
    return payment;
  }

  pendingPayments(): GatewayPayment[] {
    return [...this.gateway.values()].filter((payment) => payment.status === 'pending');
  }

  settle(payment: GatewayPayment, outcome: 'approved' | 'rejected'): void {
    payment.status = outcome;
    this.note(`bank settled ${payment.id} ${outcome}`);
  }

  // ------------------------------------------------------------------------------ faults

  #gatewayCall(what: string): void {
    if (Date.now() < this.gatewayDownUntilMs || this.random() < this.faults.gateway) {
      this.note(`gateway fault on ${what}`);
      throw ApplicationFailure.nonRetryable(`gateway unavailable (${what})`, 'simulated:gateway_down');
    }
  }

  #verdict(payment: GatewayPayment): MembershipVerdict {
    return {
      outcome: payment.status,
      providerPaymentId: payment.id,
      reference: payment.reference,
      amount: payment.amount,
      currency: payment.currency,
      rawStatus: payment.status,
      statusDetail: null,
    };
  }

  #open(row: Row): OpenPayment {
    return {
      paymentId: row.id,
      reference: row.reference,
      periodNumber: row.periodNumber,
      amount: row.amount,
      currency: CURRENCY,
      expiresAtMs: row.expiresAtMs,
      checkoutUrl: row.checkoutUrl,
    };
  }

  #newRow(id: string, periodNumber: number, expiresAtMs: number): Row {
    const row: Row = {
      id,
      periodNumber,
      reference: `MB-${this.seed}-${this.#nextReference++}`,
      status: 'OPEN',
      providerPaymentId: null,
      amount: PRICE,
      expiresAtMs,
      checkoutUrl: null,
      linkExpired: false,
    };
    this.rows.push(row);
    return row;
  }

  #expireOpen(): void {
    for (const row of this.rows) if (row.status === 'OPEN') row.status = 'EXPIRED';
  }

  // ------------------------------------------------------------------------------ the activities

  readMembership(subscriptionId: string): MembershipSnapshot | null {
    const sub = this.subscription;
    if (!sub || sub.id !== subscriptionId) return null;
    const open = this.rows.filter((row) => row.status === 'OPEN').sort((a, b) => b.periodNumber - a.periodNumber)[0];
    return {
      subscriptionId: sub.id,
      planId: 'plan',
      status: sub.status,
      renewalState: sub.renewalState,
      periodNumber: sub.periodNumber,
      currentPeriodEndMs: sub.currentPeriodEndMs,
      cancelAtPeriodEnd: sub.renewalState === 'CANCEL_AT_PERIOD_END',
      openPayment: open ? this.#open(open) : null,
    };
  }

  /** One signup per case: the execution's first; a retried step finds what its first try wrote. */
  startSignup(input: {
    subscriptionId: string;
    paymentId: string;
    nowMs: number;
    signupWindowMs: number;
  }): SignupOutcome {
    if (!this.subscription) {
      this.subscription = {
        id: input.subscriptionId,
        status: 'PENDING',
        renewalState: 'AWAITING_SIGNUP_PAYMENT',
        periodNumber: 0,
        currentPeriodEndMs: null,
        cancelled: false,
      };
      this.#newRow(input.paymentId, 1, input.nowMs + input.signupWindowMs);
    }
    const sub = this.subscription;
    if (sub.status === 'ACTIVE') {
      return { ok: false, code: 'ALREADY_MEMBER', reason: 'already_member', message: 'already a member' };
    }
    const snapshot = this.readMembership(sub.id)!;
    if (sub.status !== 'PENDING' || !snapshot.openPayment) {
      return { ok: false, code: 'INVALID_STATE', reason: 'signup_closing', message: 'closing' };
    }
    return { ok: true, snapshot, payment: snapshot.openPayment };
  }

  openPaymentLink(input: { paymentId: string }): { checkoutUrl: string } {
    const row = this.rows.find((candidate) => candidate.id === input.paymentId);
    if (!row) throw ApplicationFailure.nonRetryable('unknown payment request');
    if (row.checkoutUrl) return { checkoutUrl: row.checkoutUrl };
    this.#gatewayCall('open link');
    row.checkoutUrl = `https://gateway.test/${row.reference}`;
    return { checkoutUrl: row.checkoutUrl };
  }

  expireMembershipPaymentLink(input: { reference: string }): void {
    this.#gatewayCall('expire link');
    const row = this.rows.find((candidate) => candidate.reference === input.reference);
    if (row) row.linkExpired = true;
  }

  readMembershipGatewayPayment(input: { providerPaymentId: string }): MembershipVerdict {
    this.#gatewayCall('read payment');
    const payment = this.gateway.get(input.providerPaymentId);
    if (!payment) throw ApplicationFailure.nonRetryable('unknown payment', 'simulated:unknown_payment');
    return this.#verdict(payment);
  }

  findMembershipGatewayPayments(input: { reference: string }): MembershipVerdict[] {
    this.#gatewayCall('search payments');
    return [...this.gateway.values()]
      .filter((payment) => payment.reference === input.reference)
      .map((payment) => this.#verdict(payment));
  }

  refundMembershipGatewayPayment(input: { providerPaymentId: string }): { status: string } {
    if (Date.now() < this.gatewayDownUntilMs) {
      // A 503: the activity retries it (MONEY_BACK), it is not a refusal.
      throw new Error('gateway unavailable (refund)');
    }
    const payment = this.gateway.get(input.providerPaymentId);
    if (!payment) throw ApplicationFailure.nonRetryable('unknown payment', 'simulated:unknown_payment');
    if (payment.status === 'refunded') return { status: 'approved' };
    if (this.refusingRefunds) {
      this.note(`gateway refused the refund of ${payment.id}`);
      throw ApplicationFailure.nonRetryable('insufficient balance to refund', 'simulated:refund_refused');
    }
    if (payment.refundLag > 0) {
      payment.refundLag -= 1;
      return { status: 'in_process' };
    }
    payment.status = 'refunded';
    this.note(`refunded ${payment.id}`);
    return { status: 'approved' };
  }

  /** The decision of activities/memberships.ts applyApprovedPayment, on the world's rows. */
  applyApprovedPayment(input: {
    currentSubscriptionId: string | null;
    verdict: MembershipVerdict;
    nowMs: number;
    periodMs: number | null;
  }): { outcome: ApprovedPaymentOutcome; snapshot: MembershipSnapshot | null } {
    const outcome = this.#decide(input);
    this.note(`apply ${input.verdict.providerPaymentId}: ${outcome}`);
    const snapshot = input.currentSubscriptionId ? this.readMembership(input.currentSubscriptionId) : null;
    return { outcome, snapshot };
  }

  #decide(input: {
    currentSubscriptionId: string | null;
    verdict: MembershipVerdict;
    nowMs: number;
    periodMs: number | null;
  }): ApprovedPaymentOutcome {
    const { verdict } = input;
    const seenIndex = this.rows.findIndex((row) => row.providerPaymentId === verdict.providerPaymentId);
    const seen = this.rows[seenIndex];
    if (seen?.status === 'REJECTED') this.rows.splice(seenIndex, 1);
    else if (seen) return seen.status === 'REFUND_REQUESTED' ? 'give_back' : 'already_applied';
    if (!verdict.reference) return 'not_ours';
    const row = this.rows.find((candidate) => candidate.reference === verdict.reference);
    const sub = this.subscription;
    if (!row || !sub) return 'not_ours';
    const payable =
      row.status === 'OPEN' &&
      sub.id === input.currentSubscriptionId &&
      verdict.amount === row.amount &&
      verdict.currency === CURRENCY;
    const markPaid = () => {
      row.status = 'APPROVED';
      row.providerPaymentId = verdict.providerPaymentId;
    };
    if (payable && row.periodNumber === 1 && sub.status === 'PENDING') {
      markPaid();
      sub.status = 'ACTIVE';
      sub.renewalState = 'SCHEDULED';
      sub.periodNumber = 1;
      sub.currentPeriodEndMs = input.nowMs + (input.periodMs ?? 0);
      return 'activated';
    }
    const renewalOpen =
      sub.status === 'ACTIVE' &&
      !sub.cancelled &&
      row.periodNumber === sub.periodNumber + 1 &&
      (sub.renewalState === 'DUE' || sub.renewalState === 'FAILED');
    if (payable && renewalOpen) {
      markPaid();
      sub.renewalState = 'PAID';
      return 'renewal_paid';
    }
    if (row.providerPaymentId === null && row.status !== 'OPEN' && row.status !== 'APPROVED') {
      row.status = 'REFUND_REQUESTED';
      row.providerPaymentId = verdict.providerPaymentId;
    } else {
      this.rows.push({
        id: `second-${verdict.providerPaymentId}`,
        periodNumber: row.periodNumber,
        reference: `MB-${this.seed}-${this.#nextReference++}`,
        status: 'REFUND_REQUESTED',
        providerPaymentId: verdict.providerPaymentId,
        amount: verdict.amount,
        expiresAtMs: 0,
        checkoutUrl: null,
        linkExpired: true,
      });
    }
    return 'give_back';
  }

  notePaymentRejected(input: { reference: string; providerPaymentId: string; noticeByWorkflow?: boolean }): {
    noticeOwedFor: string | null;
  } {
    const request = this.rows.find((row) => row.reference === input.reference && row.status === 'OPEN');
    if (!request) return { noticeOwedFor: null };
    const sub = this.subscription;
    if (request.periodNumber > 1 && sub?.renewalState === 'DUE') sub.renewalState = 'FAILED';
    if (this.rows.some((row) => row.providerPaymentId === input.providerPaymentId)) return { noticeOwedFor: null };
    this.rows.push({
      id: `rejected-${input.providerPaymentId}`,
      periodNumber: request.periodNumber,
      reference: `MB-${this.seed}-${this.#nextReference++}`,
      status: 'REJECTED',
      providerPaymentId: input.providerPaymentId,
      amount: request.amount,
      expiresAtMs: 0,
      checkoutUrl: null,
      linkExpired: true,
    });
    return { noticeOwedFor: input.noticeByWorkflow && request.periodNumber > 1 ? request.id : null };
  }

  closeSignup(input: { subscriptionId: string; to: 'EXPIRED' | 'CANCELLED' }): MembershipSnapshot {
    const sub = this.subscription!;
    if (sub.status === 'PENDING') {
      sub.status = input.to;
      sub.renewalState = 'ENDED';
      this.#expireOpen();
    }
    return this.readMembership(input.subscriptionId)!;
  }

  openRenewal(input: {
    subscriptionId: string;
    paymentId: string;
    expiresAtMs: number;
  }): { ok: true; payment: OpenPayment } | { ok: false; reason: 'plan_deleted' | 'not_renewable' } {
    const existing = this.rows.find((row) => row.id === input.paymentId);
    if (existing) return { ok: true, payment: this.#open(existing) };
    const sub = this.subscription;
    if (sub?.status !== 'ACTIVE' || sub.cancelled) return { ok: false, reason: 'not_renewable' };
    const row = this.#newRow(input.paymentId, sub.periodNumber + 1, input.expiresAtMs);
    if (sub.renewalState === 'SCHEDULED') sub.renewalState = 'DUE';
    return { ok: true, payment: this.#open(row) };
  }

  requestCancel(input: { subscriptionId: string }): { snapshot: MembershipSnapshot; refund: string[] } {
    const sub = this.subscription!;
    if (sub.status === 'ACTIVE') {
      sub.renewalState = 'CANCEL_AT_PERIOD_END';
      sub.cancelled = true;
      for (const row of this.rows) {
        if (row.status === 'OPEN' && row.periodNumber > sub.periodNumber) row.status = 'EXPIRED';
        if (row.status === 'APPROVED' && row.periodNumber > sub.periodNumber && row.providerPaymentId) {
          row.status = 'REFUND_REQUESTED';
        }
      }
    }
    const refund = this.rows
      .filter((row) => row.status === 'REFUND_REQUESTED' && row.providerPaymentId)
      .map((row) => row.providerPaymentId!);
    return { snapshot: this.readMembership(input.subscriptionId)!, refund: [...new Set(refund)] };
  }

  startNextPeriod(input: { subscriptionId: string; fromPeriod: number; periodMs: number | null }): MembershipSnapshot {
    const sub = this.subscription!;
    const paid = this.rows.find((row) => row.periodNumber === input.fromPeriod + 1 && row.status === 'APPROVED');
    if (
      sub.periodNumber === input.fromPeriod &&
      sub.status === 'ACTIVE' &&
      sub.renewalState === 'PAID' &&
      sub.currentPeriodEndMs !== null &&
      paid
    ) {
      sub.periodNumber += 1;
      sub.renewalState = 'SCHEDULED';
      sub.currentPeriodEndMs += input.periodMs ?? 0;
      this.note(`period ${sub.periodNumber} started`);
    }
    return this.readMembership(input.subscriptionId)!;
  }

  endMembership(input: { subscriptionId: string; to: 'CANCELLED' | 'EXPIRED' }): MembershipSnapshot {
    const sub = this.subscription!;
    if (sub.status === 'ACTIVE') {
      sub.status = input.to;
      sub.renewalState = 'ENDED';
      this.#expireOpen();
      this.note(`membership ${input.to}`);
    }
    return this.readMembership(input.subscriptionId)!;
  }

  markMembershipPaymentRefunded(input: { providerPaymentId: string }): void {
    for (const row of this.rows) {
      if (
        row.providerPaymentId === input.providerPaymentId &&
        (row.status === 'REFUND_REQUESTED' || row.status === 'REFUND_REFUSED')
      ) {
        row.status = 'REFUNDED';
      }
    }
  }

  recordRefundRefused(input: { providerPaymentId: string }): { membershipPaymentId: string | null } {
    const row = this.rows.find((candidate) => candidate.providerPaymentId === input.providerPaymentId);
    if (row?.status === 'REFUND_REQUESTED') {
      row.status = 'REFUND_REFUSED';
      this.refundsRefusedRecorded += 1;
      this.note(`refund of ${input.providerPaymentId} recorded refused`);
    }
    return { membershipPaymentId: row?.id ?? null };
  }

  releaseUnstartedRenewal(): { refund: string[] } {
    const sub = this.subscription!;
    const refund: string[] = [];
    for (const row of this.rows) {
      if (row.status === 'APPROVED' && row.periodNumber > sub.periodNumber && row.providerPaymentId) {
        row.status = 'REFUND_REQUESTED';
        refund.push(row.providerPaymentId);
      }
    }
    return { refund };
  }

  /**
   * Requests with a link that are no longer open (expired, paid, or turned into the record of a late payment), as the
   * reconciler's membership sweep selects them.
   */
  closedRequestsWithLinks(): Row[] {
    return this.rows.filter((row) => row.status !== 'OPEN' && row.checkoutUrl !== null);
  }

  isRecorded(providerPaymentId: string): boolean {
    return this.rows.some((row) => row.providerPaymentId === providerPaymentId);
  }

  refusedRefunds(): string[] {
    return this.rows.filter((row) => row.status === 'REFUND_REFUSED').map((row) => row.providerPaymentId ?? '');
  }

  // ------------------------------------------------------------------------------ the invariants

  /**
   * Every approved payment is exactly one paid period or one refund the gateway reports; no period is paid twice;
   * a refunded payment pays nothing; a paid renewal whose period never started is not kept.
   */
  violations(): string[] {
    const found: string[] = [];
    const sub = this.subscription;
    const paidPeriods = new Map<number, string>();
    for (const payment of this.gateway.values()) {
      if (payment.status === 'pending' || payment.status === 'rejected') continue;
      const paying = this.rows.filter((row) => row.providerPaymentId === payment.id && row.status === 'APPROVED');
      if (payment.status === 'refunded') {
        if (paying.length > 0)
          found.push(`${payment.id} was refunded but still pays period ${paying[0]!.periodNumber}`);
        continue;
      }
      // Approved and not refunded: it must pay exactly one period that the membership had.
      if (paying.length !== 1) {
        found.push(`${payment.id} approved at the gateway, neither paying a period nor refunded`);
        continue;
      }
      const period = paying[0]!.periodNumber;
      const other = paidPeriods.get(period);
      if (other) found.push(`period ${period} paid twice (${other} and ${payment.id}) without a refund`);
      paidPeriods.set(period, payment.id);
      if (!sub || period > sub.periodNumber) {
        found.push(`${payment.id} paid period ${period}, which never started (now ${sub?.periodNumber ?? 0})`);
      }
    }
    return found;
  }
}
