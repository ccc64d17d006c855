/**
 * Business counters read from the results of the checkout's steps, at one place: the worker's activity interceptor.
 * A step's result says what its transaction did once it committed (`closed: true` only when this call closed the
 * sale, `duplicate: false` only for the first record of a refund), so nothing is counted for a rolled-back or repeated
 * step. Confirmations and organizer refunds are counted in activities/outbox.ts instead, where their events are written.
 */
import type { Context } from '@temporalio/activity';
import type { ActivityInterceptors } from '@temporalio/worker';
import type { Activities } from '../activities/index.js';
import type { ReserveResult } from '../workflows/definitions.js';
import { type CloseReason, GIVE_BACK_REASONS, type GiveBackReasonLabel, saleMetrics } from './metrics.js';

type Step<K extends keyof Activities> = {
  args: Parameters<Activities[K]>[0];
  result: Awaited<ReturnType<Activities[K]>>;
};

/** The checkout's close reasons (workflows/checkout.ts), mapped to the metric's fixed list. */
const CLOSE_REASON_OF: Record<string, CloseReason> = {
  'payment window expired': 'expired',
  'released by the buyer': 'released',
  'cancelled by the organizer': 'cancelled',
  'the reservation did not complete': 'reservation_failed',
  'seats lost at the seat-map provider': 'seats_lost',
};

/**
 * Sale ids whose reservation was counted lately. A local step that an eviction cancels runs again (workflows/
 * local-steps.ts) and finds the sale it created; without this, a cache-full flash sale would count it twice.
 */
const recentReservations = new Set<string>();
const RECENT_RESERVATIONS_LIMIT = 20_000;

function firstTime(saleId: string): boolean {
  if (recentReservations.has(saleId)) return false;
  recentReservations.add(saleId);
  if (recentReservations.size > RECENT_RESERVATIONS_LIMIT) {
    const oldest = recentReservations.values().next().value;
    if (oldest !== undefined) recentReservations.delete(oldest);
  }
  return true;
}

function countReservation({ args, result }: Step<'reserveSale'>): void {
  if (!firstTime(args.saleId)) return;
  saleMetrics.reservations.inc(reservationLabels(result));
}

export function reservationLabels(result: ReserveResult): { outcome: string; code: string } {
  if (result.ok) return { outcome: result.status === 'CONFIRMED' ? 'confirmed_at_once' : 'reserved', code: 'none' };
  return { outcome: result.reason === 'sold_out' ? 'sold_out' : 'rejected', code: result.code };
}

export const closeReasonOf = (reason: string): CloseReason => CLOSE_REASON_OF[reason] ?? 'other';

function countClose({ args, result }: Step<'closeUnpaidSale'>): void {
  if (!result.closed) return;
  saleMetrics.closedUnpaid.inc({ status: args.to, reason: closeReasonOf(args.reason) });
}

function countLatePayment({ result }: Step<'confirmLatePayment'>): void {
  if (result.outcome === 'confirmed') saleMetrics.latePayments.inc({ outcome: 'confirmed' });
}

function countRefundRecord({ args, result }: Step<'recordAttempt'>): void {
  if (args.kind !== 'REFUND' || result.duplicate) return;
  const detail = args.statusDetail ?? '';
  const reason: GiveBackReasonLabel = (GIVE_BACK_REASONS as readonly string[]).includes(detail)
    ? (detail as GiveBackReasonLabel)
    : 'other';
  saleMetrics.paymentsReturned.inc({ reason });
  if (reason.startsWith('late_')) saleMetrics.latePayments.inc({ outcome: 'refunded' });
}

const OBSERVED: { [K in keyof Activities]?: (step: Step<K>) => void } = {
  reserveSale: countReservation,
  closeUnpaidSale: countClose,
  confirmLatePayment: countLatePayment,
  recordAttempt: countRefundRecord,
};

/** Counts what a finished step did; a failed step counts nothing (its transaction did not commit, or is retried). */
export function observeActivity(activityType: string, args: readonly unknown[], result: unknown): void {
  const observe = OBSERVED[activityType as keyof Activities] as ((step: Step<keyof Activities>) => void) | undefined;
  if (!observe) return;
  observe({ args: args[0], result } as Step<keyof Activities>);
}

/** For `Worker.create({ interceptors: { activity: [activityMetricsInterceptor] } })`. */
export function activityMetricsInterceptor(context: Context): ActivityInterceptors {
  return {
    inbound: {
      async execute(input, next) {
        const result = await next(input);
        try {
          observeActivity(context.info.activityType, input.args, result);
        } catch (error) {
          // Counting must never fail a step whose work is done.
          context.log.warn('could not count an activity result', { error: String(error) });
        }
        return result;
      },
    },
  };
}
