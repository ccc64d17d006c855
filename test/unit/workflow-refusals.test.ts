/**
 * The contract's answer to an update whose outcome the API cannot read (api/http/workflow-refusals.ts,
 * lostUpdateError), for the reservation's update-with-start as for the payment updates (test/unit/checkout-updates).
 */
import { ServiceError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { lostUpdateError } from '../../api/http/workflow-refusals.js';
import { openPurchaseSession } from '../../api/services/purchase-sessions.js';
import { AppError } from '../../domain/errors.js';

/** gRPC status code (as @grpc/grpc-js numbers them). */
const FAILED_PRECONDITION = 9;

/**
 * What the Temporal client throws when the server refuses an update-with-start as a whole: the bare gRPC error, its
 * code and message replaced by those of the refused operation (MultiOperationExecutionFailure).
 */
const refusedUpdateWithStart = () =>
  Object.assign(new Error('9 FAILED_PRECONDITION: Update-with-Start could not be executed.'), {
    code: FAILED_PRECONDITION,
    details: 'Unable to perform workflow execution update due to Workflow Task in failed state.',
    metadata: {},
  });

const MESSAGE = 'The reservation got no answer in time; retry with the same Idempotency-Key';

test("an update-with-start the server refused while the worker's task failed: a retryable 503, not a 500", () => {
  const answer = lostUpdateError(refusedUpdateWithStart(), MESSAGE);
  expect(answer?.status).toBe(503);
  expect(answer?.toBody()).toEqual({
    error: {
      code: 'SERVICE_UNAVAILABLE',
      message: MESSAGE,
      retryable: true,
      details: { reason: 'request_unanswered' },
    },
  });
  expect(answer?.headers).toEqual({ 'Retry-After': '2' });
});

test('the same for a gRPC error the client wrapped', () => {
  expect(
    lostUpdateError(new ServiceError('Workflow Update failed', { cause: refusedUpdateWithStart() }), MESSAGE)?.status,
  ).toBe(503);
});

test("anything else is not this answer's to give: the workflow's own refusal, a programming error", () => {
  const refusal = new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.create({ message: 'no' }));
  expect(lostUpdateError(refusal, MESSAGE)).toBeNull();
  expect(lostUpdateError(new TypeError('undefined is not a function'), MESSAGE)).toBeNull();
});

test('opening a purchase session while the server refuses its update-with-start: the same retryable 503', async () => {
  const services = {
    env: { TEMPORAL_TASK_QUEUE: 'ticketing' },
    temporal: {
      workflow: {
        executeUpdateWithStart: async () => {
          throw refusedUpdateWithStart();
        },
      },
    },
  } as unknown as Parameters<typeof openPurchaseSession>[0];
  const date = { id: 'date-1', workspace: 'workspace-1' } as Parameters<typeof openPurchaseSession>[2];
  const thrown = await openPurchaseSession(services, 'buyer-1', date).catch((error: unknown) => error);
  expect(thrown).toBeInstanceOf(AppError);
  expect((thrown as AppError).toBody().error).toMatchObject({
    code: 'SERVICE_UNAVAILABLE',
    retryable: true,
    details: { reason: 'request_unanswered' },
  });
});
