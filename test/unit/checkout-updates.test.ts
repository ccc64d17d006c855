import {
  ServiceError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { runCheckoutUpdate } from '../../api/services/checkout-updates.js';
import { AppError } from '../../domain/errors.js';

/** The API's Temporal client: the update itself is the `run` each case passes. */
const services = { temporal: { workflow: { getHandle: () => ({}) } } } as unknown as Parameters<
  typeof runCheckoutUpdate
>[0];

async function answerTo(error: Error): Promise<{ thrown: unknown; nudged: number }> {
  let nudged = 0;
  const thrown = await runCheckoutUpdate(
    services,
    'sale-1',
    async () => {
      throw error;
    },
    () => {
      nudged += 1;
    },
  ).catch((caught: unknown) => caught);
  return { thrown, nudged };
}

/** gRPC status codes (as @grpc/grpc-js numbers them). */
const FAILED_PRECONDITION = 9;
const RESOURCE_EXHAUSTED = 8;
const grpcError = (code: number, details: string) => Object.assign(new Error(details), { code, details, metadata: {} });

describe('a payment update that gets no outcome of its own', () => {
  test.each([
    [
      'Temporal dropped the update with its lost workflow task',
      new ServiceError('Workflow Update failed', {
        cause: grpcError(FAILED_PRECONDITION, 'Workflow Update was aborted'),
      }),
    ],
    [
      'the update call outlived its deadline',
      new WorkflowUpdateRPCTimeoutOrCancelledError('Workflow update call timeout'),
    ],
    [
      'too many updates in flight',
      new ServiceError('Workflow Update failed', { cause: grpcError(RESOURCE_EXHAUSTED, 'too many') }),
    ],
  ])('%s: a retryable 503 with Retry-After, and the checkout is asked to check the gateway', async (_case, error) => {
    const { thrown, nudged } = await answerTo(error);
    expect(thrown).toBeInstanceOf(AppError);
    const appError = thrown as AppError;
    expect(appError.status).toBe(503);
    expect(appError.toBody()).toEqual({
      error: {
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining("check the order's status"),
        retryable: true,
        details: { reason: 'request_unanswered' },
      },
    });
    expect(appError.headers).toEqual({ 'Retry-After': '2' });
    expect(nudged).toBe(1);
  });
});

describe('the answers that were already the contract stay as they were', () => {
  test("the workflow's refusal is answered as the workflow said it, without asking the gateway", async () => {
    const refusal = new WorkflowUpdateFailedError(
      'Workflow Update failed',
      ApplicationFailure.create({
        type: 'PAYMENT_UNAVAILABLE',
        message: 'The reservation has expired; start the purchase again',
        nonRetryable: true,
        details: [{ reason: 'reservation_expired' }],
      }),
    );
    const { thrown, nudged } = await answerTo(refusal);
    expect((thrown as AppError).status).toBe(409);
    expect((thrown as AppError).details).toEqual({ reason: 'reservation_expired' });
    expect(nudged).toBe(0);
  });

  test('a finished checkout means the sale is no longer pending', async () => {
    const { thrown } = await answerTo(new WorkflowNotFoundError('not found', 'checkout/sale-1', undefined));
    expect((thrown as AppError).status).toBe(409);
    expect((thrown as AppError).details).toEqual({ reason: 'not_pending' });
  });
});
