/**
 * Refund: the organizer's POST /sales/{id}/refund. Full refund through the gateway that took the money.
 *
 * prepare (lock the sale; CONFIRMED; tickets stop admitting, used ones included)
 *   ─▶ no gateway payment (complimentary, box office): REFUNDED at once, the money (if any) returned by hand
 *   ─▶ refund at the gateway, retried with backoff and no attempt cap until the gateway confirms
 *        (gateway A: refund with idempotency key refund-<saleId>; gateway B: void)
 *   ─▶ one transaction: REFUNDED, tickets INVALID, stock back, PaymentAttempt REFUND, outbox `sale.refunded`
 *
 * The workflow id is `refund/<saleId>`: a repeated request joins the running execution, and a request after it
 * finished finds the sale REFUNDED and sends nothing to the gateway. If the gateway refuses for good (a non-retryable
 * answer), the compensation makes the tickets valid again and the sale stays CONFIRMED.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { SalesOpsActivities } from '../activities/sales-ops.js';
import type { TicketOpsActivities } from '../activities/ticket-ops.js';
import type { SaleStatus } from '../domain/sale-state.js';
import { type RefundInput, type RefundPhase, type RefundResult, refundStatusQuery, SA } from './definitions.js';

const steps = proxyActivities<SalesOpsActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
/** Money must go back: retried without a cap (exponential backoff up to 10 minutes) until the gateway confirms. */
const gateway = proxyActivities<SalesOpsActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/** The sale's paymentStatus after an offline refund (values prefixed FT_ are the service's own, contract part 2). */
const OFFLINE_REFUND_STATUS = 'FT_REFUNDED_OFFLINE';

const mail = proxyActivities<TicketOpsActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/**
 * The API set SaleStatus to the status it saw at the start; the execution is found by the status it left. A refused
 * refund changed nothing, so the start value stands.
 */
function recordFinalStatus(status: SaleStatus): void {
  if (patched('refund-final-sale-status')) upsertSearchAttributes([{ key: SA.saleStatus, value: status }]);
}

/**
 * A complimentary or box-office sale: no gateway holds the money, so the sale is undone here (REFUNDED, tickets
 * INVALID, stock back, `sale.refunded`) and whatever was paid at the box office goes back by hand.
 */
async function refundOffline(input: RefundInput): Promise<RefundResult> {
  const completed = await steps.completeRefund({
    saleId: input.saleId,
    gateway: null,
    paymentRef: null,
    gatewayStatus: OFFLINE_REFUND_STATUS,
    refundId: null,
    reason: input.reason,
  });
  recordFinalStatus(completed.status);
  return {
    ok: true,
    saleStatus: completed.status,
    changed: completed.changed,
    gateway: null,
    refundId: null,
    gatewayStatus: OFFLINE_REFUND_STATUS,
  };
}

export async function refund(input: RefundInput): Promise<RefundResult> {
  let phase: RefundPhase = 'checking';
  setHandler(refundStatusQuery, () => ({ phase, gatewayAttempts: 0 }));

  const prepared = await steps.prepareRefund({ saleId: input.saleId, force: input.force, reason: input.reason });
  if (prepared.state === 'rejected') {
    phase = 'rejected';
    return { ok: false, code: prepared.code, message: prepared.message, details: prepared.details };
  }
  if (prepared.state === 'already_refunded') {
    phase = 'done';
    recordFinalStatus('REFUNDED');
    return {
      ok: true,
      saleStatus: 'REFUNDED',
      changed: false,
      gateway: prepared.gateway,
      refundId: null,
      gatewayStatus: null,
    };
  }

  if (prepared.state === 'offline') return refundOffline(input);

  phase = 'refunding_at_gateway';
  let refunded: { status: string; refundId: string | null };
  try {
    refunded = await gateway.refundAtGateway({
      saleId: input.saleId,
      gateway: prepared.gateway,
      paymentRef: prepared.paymentRef,
      reference: prepared.reference,
    });
  } catch (error) {
    const cause = error instanceof ActivityFailure && error.cause instanceof ApplicationFailure ? error.cause : null;
    const message = cause?.message ?? (error instanceof Error ? error.message : String(error));
    await steps.reinstateTicketsAfterFailedRefund({ saleId: input.saleId, message });
    phase = 'failed';
    recordFinalStatus('CONFIRMED');
    return {
      ok: false,
      code: 'SALE_NOT_REFUNDABLE',
      message: `The gateway refused the refund: ${message}`,
      details: { reason: 'gateway_refused', gateway: prepared.gateway },
    };
  }

  phase = 'recording';
  const completed = await steps.completeRefund({
    saleId: input.saleId,
    gateway: prepared.gateway,
    paymentRef: prepared.paymentRef,
    gatewayStatus: refunded.status,
    refundId: refunded.refundId,
    reason: input.reason,
  });
  phase = 'done';
  recordFinalStatus(completed.status);
  if (input.notifyBuyer && completed.changed) {
    try {
      await mail.emailRefundNotice(input.saleId);
    } catch {
      // The refund stands whether or not the courtesy email could be sent.
    }
  }
  return {
    ok: true,
    saleStatus: completed.status,
    changed: completed.changed,
    gateway: prepared.gateway,
    refundId: refunded.refundId,
    gatewayStatus: refunded.status,
  };
}
