/**
 * The first version of the checkout, frozen: executions started before `checkout-v2` (see checkout.ts) replay
 * through this story exactly as they ran. Nothing starts it any more; delete it once no such execution is open
 * (their grace period is 24 hours) and their recorded histories have been retired from test/replay/histories.
 */
import {
  condition,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { CheckoutActivities } from '../activities/checkout.js';
import type { PaymentActivities, PaymentVerdict } from '../activities/payments.js';
import type { SeatActivities } from '../activities/seats.js';
import type { TicketActivities } from '../activities/tickets.js';
import type { SaleStatus } from '../domain/sale-state.js';
import {
  type CheckoutInput,
  type CheckoutPhase,
  type CheckoutStatus,
  cardChargeAttempt,
  chargeCardUpdate,
  checkoutStatusQuery,
  type Gateway,
  openPaymentUpdate,
  openPseUpdate,
  type PaymentNotification,
  type PaymentUnavailable,
  paymentNotificationSignal,
  type ReleaseResult,
  type ReservedSale,
  releaseUpdate,
  reserveUpdate,
  SA,
} from './definitions.js';

const sales = proxyActivities<CheckoutActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
/**
 * The same database steps (and the payment-rail lookups, which only read the database) as local activities: each is
 * a short, idempotent transaction (a repeated reservation returns the sale it made), and running it inside the
 * workflow task saves a task-queue round trip and a workflow task per step; Temporal work per sale is what bounds a
 * flash sale on one box. Retried without a cap like the task-queue version, so a database restart delays steps
 * instead of failing them. Calls that leave for the gateways stay on the task queue.
 */
const localSales = proxyLocalActivities<CheckoutActivities>({
  startToCloseTimeout: '15 seconds',
  localRetryThreshold: '5 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
const localRails = proxyLocalActivities<PaymentActivities>({
  startToCloseTimeout: '15 seconds',
  localRetryThreshold: '5 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 8 },
});
const gateways = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 8 },
});
/** Refunds must eventually happen: retried without a cap until the gateway confirms. */
const refunds = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});
/** Seat-map calls run only for sales with numbered seats, a path recorded histories never took. */
const seats = proxyActivities<SeatActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
const tickets = proxyActivities<TicketActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

const PHASE_TO_STATUS: Partial<Record<CheckoutPhase, SaleStatus>> = {
  reserved: 'PENDING',
  confirmed: 'CONFIRMED',
  abandoned: 'ABANDONED',
  cancelled: 'CANCELLED',
  refunded: 'REFUNDED',
};

const SALE_STATUS_TO_PHASE: Record<SaleStatus, CheckoutPhase> = {
  PENDING: 'reserved',
  CONFIRMED: 'confirmed',
  ABANDONED: 'abandoned',
  CANCELLED: 'cancelled',
  REFUNDED: 'refunded',
};

const unavailable = (reason: string, message: string): PaymentUnavailable => ({
  ok: false,
  code: 'PAYMENT_UNAVAILABLE',
  reason,
  message,
});

export async function legacyCheckout(input: CheckoutInput): Promise<CheckoutStatus> {
  // Executions started while these steps went through the task queue replay them that way.
  const localSteps = patched('database-steps-local');
  const db = localSteps ? localSales : sales;
  const rails = localSteps ? localRails : gateways;
  let phase: CheckoutPhase = 'awaiting_reservation';
  let sale: ReservedSale | null = null;
  let gateway: Gateway | null = null;
  let lateListeningUntilMs: number | null = null;
  const inbox: PaymentNotification[] = [];
  let releaseRequest: { reason: 'buyer_release' | 'organizer_cancel' } | null = null;
  /** Card charges waiting for the main loop to settle their payment, so the charge call can answer with the outcome. */
  const settledPayments = new Set<string>();
  /** Payments this workflow refunded (late money for a closed sale). */
  const refundedByUs = new Set<string>();
  /** The gateway payment that paid the sale: any other approved payment for it is a second charge to give back. */
  let paidWith: string | null = null;

  const status = (): CheckoutStatus => ({
    phase,
    saleId: input.saleId,
    reference: sale?.reference ?? null,
    expiresAtMs: phase === 'reserved' ? (sale?.expiresAtMs ?? null) : null,
    gateway,
    lateListeningUntilMs,
  });
  const publishPhase = (next: CheckoutPhase) => {
    phase = next;
    const saleStatus = PHASE_TO_STATUS[next];
    if (saleStatus) upsertSearchAttributes([{ key: SA.saleStatus, value: saleStatus }]);
  };
  const windowOpen = () =>
    phase === 'reserved' && sale?.expiresAtMs !== null && sale !== null && Date.now() < (sale.expiresAtMs ?? 0);

  setHandler(checkoutStatusQuery, status);
  // Handlers change these while the main story awaits; reading through functions keeps the compiler from
  // assuming they stay as last checked.
  const currentPhase = (): CheckoutPhase => phase;
  const pendingReleaseRequest = (): { reason: 'buyer_release' | 'organizer_cancel' } | null => releaseRequest;

  setHandler(
    reserveUpdate,
    async (request) => {
      // Executions that reserved through the task queue before this change replay that way.
      const result = patched('reserve-as-local-activity')
        ? await localSales.reserveSale({ saleId: input.saleId, request })
        : await sales.reserveSale({ saleId: input.saleId, request });
      if (!result.ok) {
        phase = 'rejected';
        return result;
      }
      sale = result;
      upsertSearchAttributes([
        { key: SA.saleReference, value: result.reference },
        { key: SA.workspaceId, value: result.workspaceId },
        { key: SA.eventDateId, value: result.eventDateId },
      ]);
      publishPhase(result.status === 'CONFIRMED' ? 'confirmed' : 'reserved');
      return result;
    },
    {
      validator: (_request) => {
        if (phase !== 'awaiting_reservation') throw new Error('this checkout already has a reservation');
      },
    },
  );

  /** Which rail pays this sale; refuses a second gateway while another one has a payment open. */
  async function railFor(requested: 'any' | 'pse'): Promise<Gateway | PaymentUnavailable> {
    if (!windowOpen())
      return unavailable('reservation_expired', 'The reservation has expired or the sale is no longer pending');
    const rail = await rails.choosePaymentRail(input.saleId);
    if (requested === 'pse' && rail.gateway === 'GATEWAY_B') {
      return unavailable('gateway_b_only', 'This event charges only through the embedded payment button (gateway B)');
    }
    if (rail.gateway === 'GATEWAY_B' && !rail.eligibleForB) {
      return unavailable(
        'gateway_b_not_enabled',
        'Gateway B needs the legend plan; this event cannot take payments now',
      );
    }
    if (gateway !== null && gateway !== rail.gateway) {
      return unavailable('other_gateway_in_flight', `A payment is already in flight with ${gateway}`);
    }
    return rail.gateway;
  }

  const adoptGateway = (chosen: Gateway) => {
    if (gateway === null) {
      gateway = chosen;
      upsertSearchAttributes([{ key: SA.gateway, value: chosen }]);
    }
  };

  setHandler(openPaymentUpdate, async () => {
    const rail = await railFor('any');
    if (typeof rail !== 'string') return rail;
    adoptGateway(rail);
    const current = sale;
    if (!current || current.expiresAtMs === null) return unavailable('not_pending', 'The sale is no longer pending');
    const configuration = await rails.buildPaymentConfiguration({
      saleId: input.saleId,
      gateway: rail,
      expiresAtMs: current.expiresAtMs,
    });
    await db.recordAttempt({
      saleId: input.saleId,
      gateway: rail,
      kind: 'OPEN',
      providerPaymentId: null,
      status: 'opened',
      statusDetail: null,
      amount: current.total,
      dedupeKey: null,
      note: null,
    });
    return { ok: true as const, configuration };
  });

  setHandler(openPseUpdate, async () => {
    const rail = await railFor('pse');
    if (typeof rail !== 'string') return rail;
    adoptGateway(rail);
    const current = sale;
    if (!current || current.expiresAtMs === null) return unavailable('not_pending', 'The sale is no longer pending');
    const preference = await gateways.openPsePayment({ saleId: input.saleId, expiresAtMs: current.expiresAtMs });
    await db.recordAttempt({
      saleId: input.saleId,
      gateway: 'GATEWAY_A',
      kind: 'PSE',
      providerPaymentId: preference.preferenceId,
      status: 'redirected',
      statusDetail: null,
      amount: current.total,
      dedupeKey: `pse-open:${preference.preferenceId}`,
      note: null,
    });
    return { ok: true as const, redirectUrl: preference.redirectUrl };
  });

  setHandler(chargeCardUpdate, async (request) => {
    const rail = await railFor('any');
    if (typeof rail !== 'string') return rail;
    if (rail !== 'GATEWAY_A')
      return unavailable('gateway_b_only', 'This event pays through gateway B; card tokens are for gateway A');
    adoptGateway(rail);
    const payment = await gateways.chargeCard({ saleId: input.saleId, request });
    await db.recordAttempt(cardChargeAttempt(input.saleId, payment));
    // The charge answer goes through the same path as a gateway notification, so there is one way to confirm.
    inbox.push({
      gateway: 'GATEWAY_A',
      providerPaymentId: payment.id,
      eventType: 'card_charge',
      receivedAtMs: Date.now(),
      dedupeKey: `charge:${payment.id}`,
    });
    await condition(() => settledPayments.has(payment.id) || phase !== 'reserved');
    const declined = payment.status === 'rejected';
    return {
      ok: true as const,
      paymentId: payment.id,
      paymentStatus: payment.status,
      statusDetail: payment.statusDetail,
      declineCode: declined ? payment.statusDetail : null,
      saleStatus: PHASE_TO_STATUS[phase] ?? 'PENDING',
    };
  });

  setHandler(paymentNotificationSignal, (notification) => {
    inbox.push(notification);
  });

  setHandler(releaseUpdate, async (request): Promise<ReleaseResult> => {
    if (phase !== 'reserved') {
      return {
        ok: false,
        code: 'INVALID_STATE',
        message: `The sale is ${PHASE_TO_STATUS[phase] ?? phase}, not PENDING`,
      };
    }
    releaseRequest = { reason: request.reason };
    await condition(() => phase !== 'reserved');
    return { ok: true, saleStatus: PHASE_TO_STATUS[phase] ?? 'ABANDONED' };
  });

  // ---------------------------------------------------------------- the story

  if (input.resumeAfterClose) {
    const snapshot = await db.loadSaleSnapshot(input.saleId);
    sale = snapshot;
    phase = SALE_STATUS_TO_PHASE[snapshot.status];
    paidWith = snapshot.paymentRef ?? null;
  } else {
    const reserved = await condition(() => currentPhase() !== 'awaiting_reservation', input.reserveTimeoutMs ?? 60_000);
    if (!reserved || currentPhase() === 'rejected' || !sale) {
      if (currentPhase() === 'awaiting_reservation') phase = 'rejected';
      return status();
    }
    if (currentPhase() === 'confirmed') {
      await tickets.emailTickets(input.saleId);
      return status();
    }
  }
  const reservation: ReservedSale = sale;

  async function closeUnpaid(to: 'ABANDONED' | 'CANCELLED', reason: string): Promise<void> {
    const closed = await db.closeUnpaidSale({ saleId: input.saleId, to, reason });
    // The one compensation path frees the sale's seats at the provider too.
    if (reservation.seated && closed.closed) await seats.releaseSaleSeats({ saleId: input.saleId });
    publishPhase(
      closed.status === 'CANCELLED' ? 'cancelled' : closed.status === 'CONFIRMED' ? 'confirmed' : 'abandoned',
    );
  }

  /** PENDING → CONFIRMED by this approved payment, which from then on is the one that paid the sale. */
  async function confirmWith(verdict: PaymentVerdict): Promise<void> {
    const result = await db.confirmSale({
      saleId: input.saleId,
      provider: verdict.gateway,
      paymentRef: verdict.providerPaymentId,
      paymentStatus: verdict.rawStatus,
    });
    adoptGateway(verdict.gateway);
    paidWith = result.paymentRef ?? paidWith;
    if (result.confirmed) publishPhase('confirmed');
  }

  /** An approved payment other than the one that paid the sale: the buyer was charged twice. */
  const isSecondCharge = (verdict: PaymentVerdict): boolean =>
    verdict.providerPaymentId !== null &&
    paidWith !== null &&
    verdict.providerPaymentId !== paidWith &&
    !refundedByUs.has(verdict.providerPaymentId);

  /**
   * Gives an approved payment back and records why. The set keeps the gateway's confirmation of this refund from
   * being read as news about the sale.
   */
  async function refundAndRecord(
    verdict: PaymentVerdict,
    notification: PaymentNotification,
    refund: { reason: string; dedupePrefix: string; note: string },
  ): Promise<void> {
    const payment = verdict.providerPaymentId ?? notification.dedupeKey;
    refundedByUs.add(payment);
    const refunded = await refunds.refundPayment({
      saleId: input.saleId,
      gateway: verdict.gateway,
      providerPaymentId: verdict.providerPaymentId,
      reason: refund.reason,
    });
    await db.recordAttempt({
      saleId: input.saleId,
      gateway: verdict.gateway,
      kind: 'REFUND',
      providerPaymentId: verdict.providerPaymentId,
      status: refunded.status,
      statusDetail: null,
      amount: null,
      dedupeKey: `${refund.dedupePrefix}:${payment}`,
      note: refund.note,
    });
  }

  const refundSecondCharge = (verdict: PaymentVerdict, notification: PaymentNotification): Promise<void> =>
    refundAndRecord(verdict, notification, {
      reason: 'second payment for a sale that was already paid',
      dedupePrefix: 'second-charge-refund',
      note: `payment ${verdict.providerPaymentId ?? notification.dedupeKey} arrived for a sale already paid by payment ${paidWith}; refunded`,
    });

  async function verdictFor(notification: PaymentNotification): Promise<PaymentVerdict | null> {
    const verdict = await gateways.readPayment({ saleId: input.saleId, notification });
    const recorded = await db.recordAttempt({
      saleId: input.saleId,
      gateway: verdict.gateway,
      kind: 'NOTIFICATION',
      providerPaymentId: verdict.providerPaymentId,
      status: verdict.rawStatus,
      statusDetail: verdict.statusDetail,
      amount: null,
      dedupeKey: `notification:${notification.dedupeKey}`,
      note: verdict.mismatch ? 'payment does not match the sale (reference, amount or currency); ignored' : null,
    });
    if (recorded.duplicate && notification.eventType !== 'card_charge')
      log.info('duplicate notification; re-evaluated', { saleId: input.saleId });
    if (verdict.mismatch) return null;
    return verdict;
  }

  // Payment window: the deadline races every way the sale can end.
  while (currentPhase() === 'reserved') {
    const remainingMs = Math.max(0, (reservation.expiresAtMs ?? 0) - Date.now());
    await condition(() => inbox.length > 0 || releaseRequest !== null, remainingMs);
    while (inbox.length > 0 && currentPhase() === 'reserved') {
      const notification = inbox.shift()!;
      const verdict = await verdictFor(notification);
      if (verdict?.outcome === 'approved' && reservation.seated) {
        // Seats are booked before the sale is confirmed: a hold lost at the provider to another buyer means this
        // sale cannot have them, so it closes and the payment goes back.
        const booked = await seats.bookSaleSeats({ saleId: input.saleId });
        if (!booked.ok) {
          await closeUnpaid('ABANDONED', 'seats lost at the seat-map provider');
          await refundAndRecord(verdict, notification, {
            reason: 'the seats of this sale were no longer held',
            dedupePrefix: 'seats-lost-refund',
            note: `seats were no longer held at the seat-map provider (${booked.reason ?? 'refused'}); refunded`,
          });
          await db.recordPaymentStatus({
            saleId: input.saleId,
            paymentStatus: 'FT_SEATS_LOST_REFUNDED',
            declineCode: null,
            provider: verdict.gateway,
          });
        } else {
          await confirmWith(verdict);
        }
      } else if (verdict?.outcome === 'approved') {
        await confirmWith(verdict);
      } else if (verdict && verdict.outcome === 'rejected') {
        await db.recordPaymentStatus({
          saleId: input.saleId,
          paymentStatus: verdict.rawStatus,
          declineCode: verdict.statusDetail,
          provider: verdict.gateway,
        });
      } else if (verdict) {
        await db.recordPaymentStatus({
          saleId: input.saleId,
          paymentStatus: verdict.rawStatus,
          declineCode: null,
          provider: verdict.gateway,
        });
      }
      if (notification.providerPaymentId) settledPayments.add(notification.providerPaymentId);
    }
    if (currentPhase() !== 'reserved') break;
    const pendingRelease = pendingReleaseRequest();
    if (pendingRelease !== null) {
      await closeUnpaid(
        pendingRelease.reason === 'organizer_cancel' ? 'CANCELLED' : 'ABANDONED',
        pendingRelease.reason === 'organizer_cancel' ? 'cancelled by the organizer' : 'released by the buyer',
      );
    } else if (Date.now() >= (reservation.expiresAtMs ?? 0)) {
      await closeUnpaid('ABANDONED', 'payment window expired');
    }
  }

  if (currentPhase() === 'confirmed' && !input.resumeAfterClose) {
    await tickets.emailTickets(input.saleId);
    // A confirmed sale keeps hearing from its gateway for the grace period: a re-notification of the charge is
    // how gateway B reports refunds, so it is recorded for the organizer to reconcile.
  }

  // Late payments: the money may arrive after the sale was closed. Never lose it: confirm or refund.
  lateListeningUntilMs = Date.now() + input.latePaymentGraceMs;
  while (Date.now() < lateListeningUntilMs) {
    const heard = await condition(() => inbox.length > 0, Math.max(0, lateListeningUntilMs - Date.now()));
    if (!heard) break;
    const notification = inbox.shift()!;
    const verdict = await verdictFor(notification);
    if (notification.providerPaymentId) settledPayments.add(notification.providerPaymentId);
    if (verdict?.outcome !== 'approved') {
      // The gateway confirming a refund we issued ourselves must not hide why we issued it.
      const ourRefund = verdict?.providerPaymentId ? refundedByUs.has(verdict.providerPaymentId) : false;
      if (verdict && currentPhase() !== 'confirmed' && !ourRefund) {
        await db.recordPaymentStatus({
          saleId: input.saleId,
          paymentStatus: verdict.rawStatus,
          declineCode: verdict.outcome === 'rejected' ? verdict.statusDetail : null,
          provider: verdict.gateway,
        });
      }
      continue;
    }
    if (currentPhase() === 'confirmed') {
      // The marker keeps histories recorded before second charges were refunded replaying as they ran.
      if (isSecondCharge(verdict) && patched('refund-second-charge')) {
        await refundSecondCharge(verdict, notification);
        continue;
      }
      if (verdict.gateway === 'GATEWAY_B' && notification.eventType === 'SALE_APPROVED') {
        await db.recordPaymentStatus({
          saleId: input.saleId,
          paymentStatus: 'FT_SALE_APPROVED_POST_CONFIRM',
          declineCode: null,
          provider: null,
        });
      }
      continue;
    }
    const late = await db.confirmLatePayment({
      saleId: input.saleId,
      provider: verdict.gateway,
      paymentRef: verdict.providerPaymentId,
      paymentStatus: verdict.rawStatus,
    });
    if (late.outcome === 'already_confirmed') {
      paidWith = late.paymentRef ?? paidWith;
      if (isSecondCharge(verdict) && patched('refund-second-charge')) await refundSecondCharge(verdict, notification);
    } else if (late.outcome === 'confirmed') {
      paidWith = verdict.providerPaymentId;
      adoptGateway(verdict.gateway);
      publishPhase('confirmed');
      await db.recordAttempt({
        saleId: input.saleId,
        gateway: verdict.gateway,
        kind: 'LATE_PAYMENT',
        providerPaymentId: verdict.providerPaymentId,
        status: verdict.rawStatus,
        statusDetail: null,
        amount: null,
        dedupeKey: `late:${verdict.providerPaymentId ?? notification.dedupeKey}`,
        note: 'payment arrived after the reservation closed; stock was still available, sale confirmed',
      });
      await tickets.emailTickets(input.saleId);
    } else if (late.outcome === 'needs_refund') {
      await refundAndRecord(verdict, notification, {
        reason: 'late payment for a closed sale with no stock left',
        dedupePrefix: 'late-refund',
        note: `payment arrived after the sale was ${late.status}; ${late.status === 'CANCELLED' ? 'the sale was cancelled' : 'the stock was sold meanwhile'}, refunded`,
      });
      await db.recordPaymentStatus({
        saleId: input.saleId,
        paymentStatus: 'FT_LATE_PAYMENT_REFUNDED',
        declineCode: null,
        provider: verdict.gateway,
      });
    }
  }
  lateListeningUntilMs = null;
  return status();
}
