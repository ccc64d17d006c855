/**
 * A buyer's card payment whose update gets no outcome from Temporal (its workflow task lost on a starved worker and the
 * update dropped with it, the registry cleared, the call past its deadline) is answered with the contract's retryable
 * 503, never a 500: under load the pay endpoint answered 500 twice that way. The charge may have been made, so the
 * sale's checkout is asked to check the gateway, and the buyer is told to look at the order before paying again. A
 * reservation's update-with-start that gets no outcome is answered the same way.
 */
import { ServiceError, type WorkflowHandle } from '@temporalio/client';
import { checkoutWorkflowId, checkPaymentSignal } from '../../workflows/definitions.js';
import { createOrganizer } from '../support/fixtures.js';
import { orderBody, publishEvent, reserveOrder, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
});

test('a card payment whose update Temporal dropped answers 503 SERVICE_UNAVAILABLE and asks the checkout to check the gateway', async () => {
  const organizer = await createOrganizer(api.orm.em.fork());
  const event = await publishEvent(api, organizer);
  const buyer = await signInBuyer(api, `unanswered-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
  const reserved = await reserveOrder(api, buyer, orderBody(event));
  expect(reserved.statusCode).toBe(201);
  const saleId = reserved.json().data.saleId as string;
  // The opened card form (an OPEN attempt): money may exist at the gateway, so a check of the sale is worth asking.
  const opened = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment`,
    headers: session(buyer),
  });
  expect(opened.statusCode).toBe(200);

  const workflows = api.services.temporal.workflow;
  const realHandle = workflows.getHandle.bind(workflows);
  const signals: string[] = [];
  // What the server answers when the update went down with its workflow task (sdk: a ServiceError).
  const dropped = new ServiceError('Workflow Update failed', {
    cause: Object.assign(new Error('Workflow Update was aborted.'), {
      code: 9,
      details: 'Workflow Update was aborted.',
    }),
  });
  workflows.getHandle = ((workflowId: string, ...rest: []) => {
    const handle = realHandle(workflowId, ...rest);
    if (workflowId !== checkoutWorkflowId(saleId)) return handle;
    return {
      ...handle,
      executeUpdate: async () => {
        throw dropped;
      },
      signal: async (definition: { name: string }, ...args: unknown[]) => {
        signals.push(definition.name);
        return handle.signal(definition as never, ...(args as []));
      },
    } as unknown as WorkflowHandle;
  }) as typeof workflows.getHandle;
  try {
    const charged = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${saleId}/payment/card`,
      headers: session(buyer),
      payload: { token: 'card-token-never-charged', installments: 1 },
    });
    expect(charged.statusCode).toBe(503);
    expect(charged.headers['retry-after']).toBe('2');
    expect(charged.json()).toEqual({
      error: {
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining("check the order's status"),
        retryable: true,
        details: { reason: 'request_unanswered' },
      },
    });
    // Beside the answer, and rate limited per sale: the checkout asks the gateway now, not at its next pull.
    const deadline = Date.now() + 10_000;
    while (!signals.includes(checkPaymentSignal.name) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(signals).toContain(checkPaymentSignal.name);
  } finally {
    workflows.getHandle = realHandle as typeof workflows.getHandle;
  }
}, 60_000);

test('a reservation whose update-with-start Temporal refused (its workflow task failing) answers 503, never a 500', async () => {
  const organizer = await createOrganizer(api.orm.em.fork());
  const event = await publishEvent(api, organizer);
  const buyer = await signInBuyer(api, `unanswered-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
  const workflows = api.services.temporal.workflow;
  const realStart = workflows.executeUpdateWithStart.bind(workflows);
  // What the server answered the simulation's reservation on a starved box (seed 2081).
  workflows.executeUpdateWithStart = (async () => {
    throw new ServiceError('Update-With-Start failed', {
      cause: Object.assign(
        new Error('Unable to perform workflow execution update due to Workflow Task in failed state.'),
        { code: 9, details: 'Unable to perform workflow execution update due to Workflow Task in failed state.' },
      ),
    });
  }) as typeof workflows.executeUpdateWithStart;
  try {
    const reserved = await reserveOrder(api, buyer, orderBody(event));
    expect(reserved.statusCode).toBe(503);
    expect(reserved.headers['retry-after']).toBe('2');
    expect(reserved.json().error).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      message: expect.stringContaining('Idempotency-Key'),
      retryable: true,
      details: { reason: 'request_unanswered' },
    });
  } finally {
    workflows.executeUpdateWithStart = realStart as typeof workflows.executeUpdateWithStart;
  }
}, 60_000);
