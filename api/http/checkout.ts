import { type Client, WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { AppError, type ErrorCode } from '../../domain/errors.js';
import { newId } from '../../entities/ids.js';
import type { checkout } from '../../workflows/checkout.js';
import {
  checkoutWorkflowId,
  type ReservedSale,
  type ReserveRejection,
  type ReserveRequest,
  reserveUpdate,
} from '../../workflows/definitions.js';
import type { ApiServices } from '../services.js';

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
};

export function rejectionError(rejection: ReserveRejection, publicOrigin: string): AppError {
  const details: Record<string, unknown> = { reason: rejection.reason, ...rejection.details };
  if (rejection.code === 'QUEUE_REQUIRED') {
    // Contract: an absolute URL the client uses as is.
    details.waitingRoomUrl = `${publicOrigin.replace(/\/$/, '')}/api/public/queue/${String(details.eventDateId ?? '')}`;
  }
  return new AppError(REJECTION_CODES[rejection.code], rejection.message, { details });
}

/**
 * Starts the checkout workflow of a new sale and reserves in the same call (update-with-start): the sale row, its
 * stock and the timer that will release it are created together or not at all.
 */
export async function reserveThroughCheckout(
  services: ApiServices,
  request: Omit<ReserveRequest, 'paymentWindowMs'>,
): Promise<ReservedSale> {
  const saleId = newId();
  const client: Client = services.temporal;
  const start = new WithStartWorkflowOperation<typeof checkout>('checkout', {
    workflowId: checkoutWorkflowId(saleId),
    taskQueue: services.env.TEMPORAL_TASK_QUEUE,
    args: [{ saleId, latePaymentGraceMs: services.env.LATE_PAYMENT_GRACE_MS }],
    workflowIdConflictPolicy: 'FAIL',
  });
  let result: Awaited<
    ReturnType<
      typeof client.workflow.executeUpdateWithStart<typeof checkout, ReservedSale | ReserveRejection, [ReserveRequest]>
    >
  >;
  try {
    result = await client.workflow.executeUpdateWithStart(reserveUpdate, {
      args: [{ ...request, paymentWindowMs: services.env.PAYMENT_WINDOW_OVERRIDE_MS ?? null }],
      startWorkflowOperation: start,
    });
  } catch (error) {
    if (error instanceof WorkflowUpdateFailedError) {
      throw new AppError('SERVICE_UNAVAILABLE', 'The reservation could not be completed; retry', {
        details: { cause: error.cause?.message ?? null },
      });
    }
    throw error;
  }
  if (!result.ok) throw rejectionError(result, services.env.PUBLIC_ORIGIN);
  return result;
}
