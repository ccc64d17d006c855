import { createHash } from 'node:crypto';
import { type Client, WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { soldOutWithoutCommit } from '../../activities/reservation.js';
import { checkoutStartOptions } from '../../config/worker-versioning.js';
import { workflowRefusal } from '../../config/workflow-refusals.js';
import { AppError, type ErrorCode } from '../../domain/errors.js';
import { newId } from '../../entities/ids.js';
import { Sale } from '../../entities/index.js';
import { firstSoldOutType } from '../../entities/stock.js';
import { apiSaleMetrics } from '../../observability/metrics.js';
import type { checkout } from '../../workflows/checkout.js';
import {
  checkoutWorkflowId,
  DATABASE_REJECTED_FAILURE,
  type ReservedSale,
  type ReserveRejection,
  type ReserveRequest,
  reservedSaleOf,
  reserveItemsOf,
  reserveUpdate,
} from '../../workflows/definitions.js';
import type { IdempotencyKey } from '../plugins/idempotency.js';
import { checkoutPriority } from '../services/task-fairness.js';
import type { ApiServices } from '../services.js';
import { lostUpdateError, refusalError } from './workflow-refusals.js';

const REJECTION_CODES: Record<ReserveRejection['code'], ErrorCode> = {
  NOT_FOUND: 'NOT_FOUND',
  NOT_AVAILABLE: 'NOT_AVAILABLE',
  SALE_CLOSED: 'SALE_CLOSED',
  EXTERNAL_SALE: 'EXTERNAL_SALE',
  MEMBERS_ONLY: 'MEMBERS_ONLY',
  ORDER_REJECTED: 'ORDER_REJECTED',
  VALIDATION_FAILED: 'VALIDATION_FAILED',
  SEAT_NOT_AVAILABLE: 'SEAT_NOT_AVAILABLE',
  HOLD_TOKEN_MISMATCH: 'HOLD_TOKEN_MISMATCH',
  PURCHASE_SESSION_EXPIRED: 'PURCHASE_SESSION_EXPIRED',
  QUEUE_REQUIRED: 'QUEUE_REQUIRED',
  MIXED_CURRENCY: 'MIXED_CURRENCY',
};

export function rejectionError(rejection: ReserveRejection, publicOrigin: string): AppError {
  const details: Record<string, unknown> = { reason: rejection.reason, ...rejection.details };
  if (rejection.code === 'QUEUE_REQUIRED') {
    // Contract: an absolute URL the client uses as is.
    details.waitingRoomUrl = `${publicOrigin.replace(/\/$/, '')}/api/public/queue/${String(details.eventDateId ?? '')}`;
  }
  return new AppError(REJECTION_CODES[rejection.code], rejection.message, { details });
}

/** Which endpoint makes the sale: the same key on two endpoints names two different sales. */
export type SaleOrigin = 'customer-order' | 'public-order' | 'organizer-sale';

/** How a sale is created: with the request's Idempotency-Key (when it carried one), a retry reaches the same sale. */
export interface SaleKey {
  origin: SaleOrigin;
  idempotencyKey: IdempotencyKey | null;
}

/**
 * The sale id of a request, so its checkout (`checkout/<saleId>`) is a business key: with an Idempotency-Key it is
 * derived from (endpoint, principal, key), so a retry after a lost response, a 5xx or a dead API process reaches the
 * same sale even when the stored response is gone. It is a UUID (version 8, RFC 9562: the bits are ours) as every
 * id column expects. Unlike fresh ids it does not sort by creation time.
 */
export function saleIdFor(key: SaleKey): string {
  if (!key.idempotencyKey) return newId();
  const bytes = createHash('sha256')
    .update(`sale\n${key.origin}\n${key.idempotencyKey.scope}\n${key.idempotencyKey.key}`)
    .digest()
    .subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The buyer and date a keyed request orders for: the sale a key already made must be theirs and for that date. */
export type SaleOwner = Pick<ReserveRequest, 'buyerId' | 'buyerEmail' | 'eventDateId'>;

/**
 * The sale an earlier request with the same key made, as the reservation answered it then; null when none exists
 * yet. A key that made a sale for another buyer or date (same principal, another body, after the stored response
 * expired or was lost) is refused like any reused key.
 */
export async function saleMadeWithKey(
  services: ApiServices,
  key: SaleKey,
  owner: SaleOwner,
): Promise<ReservedSale | null> {
  if (!key.idempotencyKey) return null;
  const sale = await services.orm.em.fork().findOne(Sale, { id: saleIdFor(key) }, { filters: { tenant: false } });
  if (!sale) return null;
  if (sale.buyer !== owner.buyerId || sale.buyerEmail !== owner.buyerEmail || sale.eventDate !== owner.eventDateId) {
    throw new AppError(
      'IDEMPOTENCY_KEY_REUSED',
      'This Idempotency-Key was already used with a different request; use a new key for a new request',
    );
  }
  return reservedSaleOf(sale);
}

/** How long a keyed request waits for the reservation another request with the same key has in flight. */
const JOIN_WAIT_MS = 60_000;
const JOIN_POLL_MS = 200;

function reservationFailure(error: WorkflowUpdateFailedError): AppError {
  const refusal = workflowRefusal(error);
  if (refusal?.code === DATABASE_REJECTED_FAILURE) {
    // The data itself is refused (the input validation should have caught it): a retry would fail the same way.
    return new AppError('VALIDATION_FAILED', 'The order contains characters or values that cannot be stored', {
      details: { reason: 'unstorable_input' },
    });
  }
  const refused = refusalError(error);
  if (refused && refused.status < 500) return refused;
  return new AppError('SERVICE_UNAVAILABLE', 'The reservation could not be completed; retry');
}

/**
 * A sold-out storm answered without starting a checkout per refused buyer. Only when an item is short of units (and
 * no lapsed hold has units of it to take back) does the reservation's own rule check run here
 * (activities/reservation.ts, always rolled back), and only its sold_out answer is given from here. Anything else goes
 * to the checkout as before: an order the reservation would accept, and a refusal 4.2 ranks before sold_out, which the
 * checkout answers the same way. Not for seated orders (the seat-map provider decides first, in the checkout) nor for
 * keyed requests (a retry joins the reservation its first request may have in flight).
 */
async function soldOutWithoutCheckout(
  services: ApiServices,
  request: ReserveRequest,
): Promise<ReserveRejection | null> {
  const items = reserveItemsOf(request);
  if (items.some((item) => (item.seats?.length ?? 0) > 0)) return null;
  const em = services.orm.em.fork();
  // The same stock check the rules end with, before them: an order it finds not sold out goes straight on.
  if (!(await firstSoldOutType(em, items))) return null;
  let refusal: ReserveRejection | null;
  try {
    refusal = await soldOutWithoutCommit(em, request);
  } catch {
    // The checkout is the authority: a rule check that failed (a lost connection, a timeout) leaves the order to it.
    return null;
  }
  if (refusal) apiSaleMetrics.reservations.inc({ outcome: 'sold_out', code: refusal.code });
  return refusal;
}

/**
 * Starts the checkout workflow of a sale and reserves in the same call (update-with-start): the sale row, its stock
 * and the timer that will release it are created together or not at all.
 *
 * Without an Idempotency-Key every call is a new sale. With one, the sale id is derived from it and the start joins
 * a running execution of that id (`USE_EXISTING`), so a retry lands on the checkout the first request started: the
 * sale that exists is answered as it is; while the first reservation is still in flight, the workflow refuses a
 * second one (INVALID_STATE) and this waits for the first to commit.
 */
export async function reserveThroughCheckout(
  services: ApiServices,
  request: Omit<ReserveRequest, 'paymentWindowMs'>,
  key: SaleKey = { origin: 'organizer-sale', idempotencyKey: null },
): Promise<ReservedSale> {
  const saleId = saleIdFor(key);
  const keyed = key.idempotencyKey !== null;
  const owner: SaleOwner = request;
  const client: Client = services.temporal;
  const deadline = Date.now() + JOIN_WAIT_MS;
  const fullRequest: ReserveRequest = { ...request, paymentWindowMs: services.env.PAYMENT_WINDOW_OVERRIDE_MS ?? null };
  if (!keyed) {
    const soldOut = await soldOutWithoutCheckout(services, fullRequest);
    if (soldOut) throw rejectionError(soldOut, services.env.PUBLIC_ORIGIN);
  }
  // What the version that will run it knows (config/worker-versioning.ts): never an option its worker does not.
  const startOptions = await checkoutStartOptions(client, services.env);
  for (;;) {
    const earlier = keyed ? await saleMadeWithKey(services, key, owner) : null;
    if (earlier) return earlier;
    const start = new WithStartWorkflowOperation<typeof checkout>('checkout', {
      workflowId: checkoutWorkflowId(saleId),
      taskQueue: services.env.TEMPORAL_TASK_QUEUE,
      args: [
        {
          saleId,
          latePaymentGraceMs: services.env.LATE_PAYMENT_GRACE_MS,
          ...startOptions,
          // A version that does not know the option charges on the task queue anyway: it only ever turns that on.
          ...(services.env.CARD_CHARGE_LOCAL ? {} : { cardChargeOnTaskQueue: true }),
        },
      ],
      workflowIdConflictPolicy: keyed ? 'USE_EXISTING' : 'FAIL',
      // Its tasks are dispatched in turn with those of checkouts begun earlier, never behind all of them.
      ...(services.env.CHECKOUT_FAIRNESS_KEYS ? { priority: checkoutPriority(Date.now()) } : {}),
    });
    try {
      const result = await client.workflow.executeUpdateWithStart(reserveUpdate, {
        args: [fullRequest],
        startWorkflowOperation: start,
      });
      if (!result.ok) throw rejectionError(result, services.env.PUBLIC_ORIGIN);
      return result;
    } catch (error) {
      const lost = lostUpdateError(
        error,
        'The reservation got no answer in time; retry with the same Idempotency-Key to get the sale it made, if any',
      );
      if (lost) throw lost;
      if (!(error instanceof WorkflowUpdateFailedError)) throw error;
      const joinedAnother = keyed && workflowRefusal(error)?.code === 'INVALID_STATE';
      if (!joinedAnother) throw reservationFailure(error);
      if (Date.now() >= deadline) {
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          'The first request with this Idempotency-Key is still reserving; retry',
        );
      }
      await new Promise((resolve) => setTimeout(resolve, JOIN_POLL_MS));
    }
  }
}
