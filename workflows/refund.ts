/**
 * Refund: the organizer's POST /sales/{id}/refund. Full refund through the gateway that took the money.
 *
 * prepare (lock the sale; CONFIRMED; tickets stop admitting, used ones included)
 *   ─▶ no gateway payment (complimentary, box office): REFUNDED at once, the money (if any) returned by hand
 *   ─▶ refund at the gateway, retried with backoff and no attempt cap until the gateway confirms
 *        (gateway A: refund with idempotency key refund-<saleId>; gateway B: void; a retry after a refusal, or an
 *        operator's retry of a parked refund, under a key of its own: refund-<saleId>-r<retry>-a<ask>)
 *   ─▶ one transaction: REFUNDED, tickets INVALID, stock back, PaymentAttempt REFUND, outbox `sale.refunded`
 *
 * The workflow id is `refund/<saleId>`: a repeated request joins the running execution, and a request after it
 * finished finds the sale REFUNDED and sends nothing to the gateway. If the gateway refuses for good (a non-retryable
 * answer, such as a merchant balance too low to cover the refund) it is asked again a few times with backoff; after
 * REFUND_REFUSALS_BEFORE_PARKING refusals in a row the refund is recorded `refund_refused` (metric, alert log,
 * operator listing), the tickets are valid again, the sale stays CONFIRMED and the execution ends with the outcome
 * `refund_refused`, which an event cancellation counts. An operator retries it (`operator refunds-refused retry`).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { SalesOpsActivities } from '../activities/sales-ops.js';
import type { TicketOpsActivities } from '../activities/ticket-ops.js';
import type { SaleStatus } from '../domain/sale-state.js';
import {
  REFUND_REFUSALS_BEFORE_PARKING,
  type RefundInput,
  type RefundPhase,
  type RefundResult,
  refundStatusQuery,
  SA,
} from './definitions.js';
import { onProviderQueue } from './local-steps.js';

const steps = proxyActivities<SalesOpsActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
/** Money must go back: retried without a cap (exponential backoff up to 10 minutes) until the gateway confirms. */
const gateway = onProviderQueue<SalesOpsActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/** Wait before asking a refusing gateway again, doubling: four waits of 5, 10, 20 and 40 s before parking. */
const REFUSAL_RETRY_FIRST_MS = 5_000;

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
  upsertSearchAttributes([{ key: SA.saleStatus, value: status }]);
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
  /** Calls to the gateway so far: every try of the refund activity, retries after an error included. */
  let gatewayAttempts = 0;
  setHandler(refundStatusQuery, () => ({ phase, gatewayAttempts }));

  // notifyBuyer is recorded with the request, so a refund the reconciler starts again after this execution ended keeps
  // the organizer's choice. Only the activity's input changed, not the commands: a replay of an execution recorded
  // without it matches.
  const prepared = await steps.prepareRefund({
    saleId: input.saleId,
    force: input.force,
    reason: input.reason,
    notifyBuyer: input.notifyBuyer,
  });
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
  let refunded: { status: string; refundId: string | null; attempt?: number };
  let refusals = 0;
  let waitMs = REFUSAL_RETRY_FIRST_MS;
  for (;;) {
    try {
      refunded = await gateway.refundAtGateway({
        saleId: input.saleId,
        gateway: prepared.gateway,
        paymentRef: prepared.paymentRef,
        reference: prepared.reference,
        // A gateway replays a refused answer for a key it has seen: each ask, and each operator retry, has its own.
        retry: prepared.retry ?? 0,
        ask: refusals,
      });
      // Results recorded before the activity reported its try count were one call at least.
      gatewayAttempts += refunded.attempt ?? 1;
      break;
    } catch (error) {
      // A refusal ends the activity at its first answer: one call.
      gatewayAttempts += 1;
      const cause = error instanceof ActivityFailure && error.cause instanceof ApplicationFailure ? error.cause : null;
      const message = cause?.message ?? (error instanceof Error ? error.message : String(error));
      refusals += 1;
      if (refusals < REFUND_REFUSALS_BEFORE_PARKING) {
        // A refusal can lift (the merchant's balance is topped up): asked again a few times before an operator is.
        await sleep(waitMs, { summary: 'ask the refusing gateway again' });
        waitMs *= 2;
        continue;
      }
      await steps.recordOrganizerRefundRefused({ saleId: input.saleId, message, refusals });
      phase = 'failed';
      recordFinalStatus('CONFIRMED');
      return {
        ok: false,
        code: 'SALE_NOT_REFUNDABLE',
        message: `The gateway refused the refund ${refusals} times: ${message}`,
        details: { reason: 'refund_refused', gateway: prepared.gateway, refusals, gatewayAttempts },
      };
    }
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
