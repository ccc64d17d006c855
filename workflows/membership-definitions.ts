/**
 * Names, ids, inputs and payload types of the membership workflow (workflows/membership.ts), shared by the API (which
 * starts, updates and signals it) and the workflow itself. Free of I/O; the period arithmetic is here too, so the
 * workflow, its activities and the API compute the same period ends.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

// ---------------------------------------------------------------- ids

const PREFIX = 'membership/';

/** One execution per buyer and workspace holds that buyer's membership there, period after period. */
export const membershipWorkflowId = (workspaceId: string, buyerId: string): string =>
  `${PREFIX}${workspaceId}/${buyerId}`;

export const idsFromMembershipWorkflowId = (workflowId: string): { workspaceId: string; buyerId: string } | null => {
  const match = /^membership\/([^/]+)\/([^/]+)$/.exec(workflowId);
  return match?.[1] && match[2] ? { workspaceId: match[1], buyerId: match[2] } : null;
};

// ---------------------------------------------------------------- durations and periods

export type MembershipPeriod = 'MONTHLY' | 'QUARTERLY' | 'YEARLY';

export const PERIOD_MONTHS: Record<MembershipPeriod, number> = { MONTHLY: 1, QUARTERLY: 3, YEARLY: 12 };

/** Durations are inputs so tests run whole membership lives in seconds; production uses the defaults below. */
export interface MembershipDurations {
  /** Overrides the plan's calendar period (tests); null in production. */
  periodMs: number | null;
  /** How long the signup payment link stays open; an unpaid signup then expires. */
  signupWindowMs: number;
  /** How long before the period ends the renewal payment is asked for. */
  renewalNoticeMs: number;
  /** Time between renewal reminders; the last one before the period end is the final notice. */
  reminderIntervalMs: number;
  /** First interval of the pull schedule while a payment is open (doubling up to five minutes). */
  paymentPollMs: number;
  /** First wait before re-reading a payment being refunded (doubling up to ten minutes). */
  refundCheckMs: number;
  /**
   * How long after a payment request closes unpaid the gateway is asked about it once more (a PSE transfer that
   * settles just after the window, a notification lost). Absent in inputs of executions started before it existed.
   */
  lateAskDelayMs?: number;
}

export const DEFAULT_MEMBERSHIP_DURATIONS: MembershipDurations = {
  periodMs: null,
  signupWindowMs: 30 * 60_000,
  renewalNoticeMs: 7 * 24 * 60 * 60_000,
  reminderIntervalMs: 2 * 24 * 60 * 60_000,
  paymentPollMs: 30_000,
  refundCheckMs: 5_000,
  lateAskDelayMs: 10_000,
};

/** The MEMBERSHIP_* settings of config/env.ts that tests and demos use to run whole membership lives in seconds. */
export interface MembershipDurationSettings {
  NODE_ENV: string;
  MEMBERSHIP_PERIOD_MS?: number | undefined;
  MEMBERSHIP_SIGNUP_WINDOW_MS?: number | undefined;
  MEMBERSHIP_RENEWAL_NOTICE_MS?: number | undefined;
  MEMBERSHIP_REMINDER_INTERVAL_MS?: number | undefined;
  MEMBERSHIP_PAYMENT_POLL_MS?: number | undefined;
  MEMBERSHIP_LATE_ASK_MS?: number | undefined;
}

/**
 * The production durations, with the MEMBERSHIP_* overrides applied outside production (tests and demos). The API
 * and the reconciler start executions with the same durations.
 */
export function membershipDurations(env: MembershipDurationSettings): MembershipDurations {
  const defaults = DEFAULT_MEMBERSHIP_DURATIONS;
  if (env.NODE_ENV === 'production') return defaults;
  return {
    periodMs: env.MEMBERSHIP_PERIOD_MS ?? defaults.periodMs,
    signupWindowMs: env.MEMBERSHIP_SIGNUP_WINDOW_MS ?? defaults.signupWindowMs,
    renewalNoticeMs: env.MEMBERSHIP_RENEWAL_NOTICE_MS ?? defaults.renewalNoticeMs,
    reminderIntervalMs: env.MEMBERSHIP_REMINDER_INTERVAL_MS ?? defaults.reminderIntervalMs,
    paymentPollMs: env.MEMBERSHIP_PAYMENT_POLL_MS ?? defaults.paymentPollMs,
    refundCheckMs: defaults.refundCheckMs,
    // A test that shortens the poll shortens the last ask after a request closes with it.
    lateAskDelayMs: env.MEMBERSHIP_LATE_ASK_MS ?? env.MEMBERSHIP_PAYMENT_POLL_MS ?? defaults.lateAskDelayMs,
  };
}

/** The pull schedule of an open payment request doubles up to five minutes... */
const FAST_PULL_MAX_MS = 5 * 60_000;
/** ...and after it has been open this long, it is asked about every 30 to 60 minutes (a 7-day renewal window). */
export const SLOW_PULL_AFTER_MS = 60 * 60_000;
export const SLOW_PULL_MIN_MS = 30 * 60_000;
export const SLOW_PULL_MAX_MS = 60 * 60_000;

/**
 * The wait before the next ask about an open payment request, `openForMs` after asking began: about 180 asks over a
 * 7-day renewal window instead of the 2,000 a five-minute cap made.
 */
export function nextPullIntervalMs(currentMs: number, openForMs: number): number {
  const doubled = currentMs * 2;
  if (openForMs < SLOW_PULL_AFTER_MS) return Math.min(doubled, FAST_PULL_MAX_MS);
  return Math.min(Math.max(doubled, SLOW_PULL_MIN_MS), SLOW_PULL_MAX_MS);
}

/**
 * `months` calendar months after `startMs`, in UTC; a day the target month lacks becomes its last day (31 January
 * + 1 month = 28 or 29 February), and the time of day is kept.
 */
export function addCalendarMonths(startMs: number, months: number): number {
  const start = new Date(startMs);
  const year = start.getUTCFullYear();
  const month = start.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(
    year,
    month,
    Math.min(start.getUTCDate(), lastDay),
    start.getUTCHours(),
    start.getUTCMinutes(),
    start.getUTCSeconds(),
    start.getUTCMilliseconds(),
  );
}

/** When a period that starts at `startMs` ends: the plan's calendar period, or the test override. */
export function periodEndMs(startMs: number, period: MembershipPeriod, periodMs: number | null): number {
  return periodMs !== null ? startMs + periodMs : addCalendarMonths(startMs, PERIOD_MONTHS[period]);
}

// ---------------------------------------------------------------- input

export interface MembershipInput {
  workspaceId: string;
  buyerId: string;
  durations: MembershipDurations;
  /** Set when a run continues as new into the next period of this (ACTIVE) subscription. */
  continued?: { subscriptionId: string; owed?: MembershipOwed };
  /**
   * Started by a gateway notification after this buyer's execution had closed (signal-with-start): the run settles
   * the money it is told about (a payment that can pay nothing now is refunded) and ends.
   */
  settleLateMoney?: boolean;
}

/**
 * What a run hands to the run it continues as new into, so nothing it owes is dropped: notifications whose payment
 * could not be read yet, closed payment requests the gateway must still be asked about, refunds the gateway refused
 * (parked until an operator retries them), and where the pull schedule of the open payment stands.
 */
export interface MembershipOwed {
  notifications: MembershipPaymentNotification[];
  closedReferences: string[];
  refusedRefunds: Array<{ providerPaymentId: string; membershipPaymentId: string | null }>;
  pullIntervalMs: number | null;
}

// ---------------------------------------------------------------- messages

/** A gateway said something about a membership payment; the workflow re-reads the payment before believing it. */
export interface MembershipPaymentNotification {
  providerPaymentId: string;
  /** The payment's MB- reference as the gateway reports it. */
  reference: string;
  eventType: string;
  receivedAtMs: number;
  dedupeKey: string;
}

export const membershipPaymentSignal = defineSignal<[MembershipPaymentNotification]>('membershipPayment');

export interface SignupRequest {
  planId: string;
}

export interface SignupResult {
  subscriptionId: string;
  planId: string;
  status: 'PENDING' | 'ACTIVE';
  checkoutUrl: string | null;
  /** Epoch ms when the signup link closes; null once active. */
  expiresAtMs: number | null;
  amount: number;
  currency: string;
}

/** Starts (or returns the pending) signup; refused with ALREADY_MEMBER, INVALID_STATE or NOT_FOUND. */
export const signupUpdate = defineUpdate<SignupResult, [SignupRequest]>('signup');

export type CancelledBy = 'buyer' | 'organizer';

export interface MembershipCancelRequest {
  by: CancelledBy;
  /** The organizer names the subscription; the buyer cancels whatever membership they hold. */
  subscriptionId: string | null;
}

export interface MembershipView {
  subscriptionId: string | null;
  phase: MembershipPhase;
  periodNumber: number;
  /** Epoch ms; null while the signup is unpaid. */
  currentPeriodEndMs: number | null;
  cancelAtPeriodEnd: boolean;
}

/** Cancels: a pending signup ends at once; an active membership keeps its access until the period ends. */
export const cancelMembershipUpdate = defineUpdate<MembershipView, [MembershipCancelRequest]>('cancel');

/**
 * An operator asks again for refunds the gateway refused (`operator refunds-refused retry`): the parked execution
 * tries each named one again (by membership payment id or provider payment id; neither = all it holds).
 */
export interface RetryRefusedRefundRequest {
  membershipPaymentId?: string;
  providerPaymentId?: string;
}

export const retryRefusedRefundSignal = defineSignal<[RetryRefusedRefundRequest]>('retryRefusedRefund');

export type MembershipPhase = 'idle' | 'pending' | 'active' | 'ended' | 'settling';

export const membershipStatusQuery = defineQuery<MembershipView>('membershipStatus');

/** Outbox events of the membership's life (organizer webhooks). */
export type MembershipEventName =
  | 'membership.activated'
  | 'membership.renewed'
  | 'membership.cancelled'
  | 'membership.expired';
