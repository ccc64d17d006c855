/**
 * Cancellation: the organizer's POST /sales/{id}/cancel, applying the contract's cancel rules (part 3, rules 1–4).
 *
 * inspect the sale ─┬─ a ticket was used at the door ───────────────▶ SALE_ALREADY_CHECKED_IN (rule 1)
 *                   ├─ PENDING ─┬─ payment started with gateway B ─▶ re-read the live status at gateway B
 *                   │           │     approved ──────────────────────▶ SALE_PAID_AT_GATEWAY (rule 2)
 *                   │           │     open / unreadable, no ack ─────▶ OPEN_PAYMENT_CONFIRMATION_REQUIRED (rule 3)
 *                   │           └─ otherwise (rule 4) ─▶ release through the sale's checkout (reason organizer_cancel)
 *                   │                 the checkout serializes it with payment notifications: CANCELLED, or
 *                   │                 CONFIRMED when the payment got there first (→ 409 INVALID_STATE)
 *                   └─ CONFIRMED ─┬─ paid through a gateway ──────▶ REFUND_REQUIRED (use POST /sales/{id}/refund)
 *                                 └─ complimentary / box office ──▶ CANCELLED, tickets INVALID, stock back
 *
 * Rules 1–4 are decided by `transition()` of domain/sale-state.ts; REFUND_REQUIRED (a gateway-paid sale is refunded,
 * not cancelled) is this workflow's own rule, which the state table does not know.
 */
import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { SalesOpsActivities } from '../activities/sales-ops.js';
import { isSaleStatus, type LivePaymentStatus, transition } from '../domain/sale-state.js';
import { type CancellationInput, type CancellationResult, SA } from './definitions.js';

/**
 * Retried without a cap: a step that gave up would fail the execution between the rule checks and their effects (a
 * sale cancelled in the database whose seats were never freed at the provider). The steps are idempotent.
 */
const steps = proxyActivities<SalesOpsActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
  },
});
/** The live read answers quickly or says "unreadable" itself; one retry covers a lost answer. */
const liveStatus = proxyActivities<SalesOpsActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { maximumAttempts: 2 },
});

export async function cancellation(input: CancellationInput): Promise<CancellationResult> {
  const result = await decideAndCancel(input);
  // The API set SaleStatus to the status it saw at the start; the execution is found by the status it left.
  const status = result.ok ? result.saleStatus : result.details.status;
  if (typeof status === 'string' && isSaleStatus(status)) {
    upsertSearchAttributes([{ key: SA.saleStatus, value: status }]);
  }
  return result;
}

async function decideAndCancel(input: CancellationInput): Promise<CancellationResult> {
  const sale = await steps.inspectSaleForCancel(input.saleId);
  if (!sale.found || sale.status === null) {
    return { ok: false, code: 'NOT_FOUND', message: 'Sale not found', details: {} };
  }

  let livePayment: LivePaymentStatus = 'not_applicable';
  let gatewayStatus: string | null = null;
  if (sale.status === 'PENDING' && sale.paymentGateway === 'GATEWAY_B') {
    const read = await liveStatus.readLivePaymentStatus(input.saleId);
    livePayment = read.live;
    gatewayStatus = read.rawStatus;
  }

  const verdict = transition(sale.status, {
    type: 'cancel',
    ticketsCheckedIn: sale.ticketsUsed > 0,
    livePayment,
    acknowledgeOpenPayment: input.acknowledgeOpenPayment,
  });
  if (!verdict.ok) {
    return {
      ok: false,
      code: verdict.code,
      message: verdict.message,
      details: {
        status: sale.status,
        ...(verdict.code === 'SALE_ALREADY_CHECKED_IN'
          ? { usedTickets: sale.ticketsUsed, checkedInAt: sale.lastCheckedInAt }
          : {}),
        ...(sale.paymentGateway === 'GATEWAY_B' && sale.status === 'PENDING' ? { livePayment, gatewayStatus } : {}),
      },
    };
  }
  if (!verdict.changed) return { ok: true, saleStatus: verdict.to, changed: false };

  if (sale.status === 'PENDING') {
    const released = await steps.cancelPendingThroughCheckout({
      saleId: input.saleId,
      acknowledgeOpenPayment: input.acknowledgeOpenPayment,
    });
    if (released.ok && released.saleStatus === 'CANCELLED') return { ok: true, saleStatus: 'CANCELLED', changed: true };
    // The payment won the race (CONFIRMED), or the sale had already left PENDING: say what it is now.
    const now = await steps.inspectSaleForCancel(input.saleId);
    if (now.status === 'CANCELLED') return { ok: true, saleStatus: 'CANCELLED', changed: false };
    return {
      ok: false,
      code: 'INVALID_STATE',
      message:
        now.status === 'CONFIRMED'
          ? 'The payment was confirmed before the cancel could apply; the sale is CONFIRMED (refund it instead)'
          : `The sale is ${now.status ?? 'gone'}, not PENDING`,
      details: { status: now.status, reason: now.status === 'CONFIRMED' ? 'payment_confirmed_first' : 'not_pending' },
    };
  }

  // CONFIRMED with no ticket used.
  if (sale.paidThroughGateway) {
    return {
      ok: false,
      code: 'REFUND_REQUIRED',
      message:
        'This sale was paid through a gateway; refund it with POST /sales/{id}/refund, which also cancels its tickets',
      details: { status: sale.status, refundPath: `/sales/${input.saleId}/refund` },
    };
  }
  const cancelled = await steps.cancelConfirmedSale({ saleId: input.saleId, reason: input.reason });
  if (cancelled.ok) return { ok: true, saleStatus: cancelled.status, changed: cancelled.changed };
  if (cancelled.code === 'SALE_ALREADY_CHECKED_IN') {
    return {
      ok: false,
      code: 'SALE_ALREADY_CHECKED_IN',
      message: 'A ticket of this sale was used at the door; refund it instead',
      details: { status: cancelled.status },
    };
  }
  if (cancelled.code === 'REFUND_REQUIRED') {
    return {
      ok: false,
      code: 'REFUND_REQUIRED',
      message: 'This sale was paid through a gateway; refund it with POST /sales/{id}/refund',
      details: { status: cancelled.status, refundPath: `/sales/${input.saleId}/refund` },
    };
  }
  return {
    ok: false,
    code: 'INVALID_STATE',
    message: `The sale is ${cancelled.status ?? 'gone'}; it cannot be cancelled`,
    details: { status: cancelled.status },
  };
}
