import type { Context as ActivityContext } from '@temporalio/activity';
import type { WorkflowSignalInput, WorkflowStartUpdateWithStartInput } from '@temporalio/client';
import type { ActivityExecuteInput } from '@temporalio/worker';
import Fastify from 'fastify';
import { requestContextPlugin } from '../../api/plugins/request-context.js';
import { currentRequestId, withRequestId } from '../../observability/request-context.js';
import { REQUEST_ID_HEADER, requestIdFromHeaders, withRequestIdHeader } from '../../observability/temporal-headers.js';
import { requestIdActivityInterceptor, requestIdClientInterceptor } from '../../observability/temporal-tracing.js';

describe('the request being handled is known wherever its work runs', () => {
  test("every hook and the handler of a request with a body run as that request (Fastify's request id)", async () => {
    const app = Fastify({ genReqId: () => `req-${Math.random().toString(36).slice(2, 10)}` });
    await app.register(requestContextPlugin);
    let seenByHook: string | undefined;
    app.addHook('preHandler', async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      seenByHook = currentRequestId();
    });
    app.post('/orders', async (request) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { id: request.id, seen: currentRequestId(), body: request.body };
    });
    await app.ready();
    try {
      const responses = await Promise.all(
        [1, 2, 3].map((n) => app.inject({ method: 'POST', url: '/orders', payload: { n } })),
      );
      for (const response of responses) {
        const body = response.json() as { id: string; seen: string };
        expect(body.seen).toBe(body.id);
      }
      expect(seenByHook).toMatch(/^req-/);
      expect(currentRequestId()).toBeUndefined();
    } finally {
      await app.close();
    }
  });

  test('work outside any request (or stepping out of one) has no request id', () => {
    expect(currentRequestId()).toBeUndefined();
    withRequestId('req-outer', () => {
      expect(currentRequestId()).toBe('req-outer');
      withRequestId(undefined, () => expect(currentRequestId()).toBeUndefined());
    });
  });
});

describe('the request id travels as a Temporal header', () => {
  const signalInput = (): WorkflowSignalInput => ({
    signalName: 'paymentNotification',
    args: [],
    workflowExecution: { workflowId: 'checkout/s1' },
    headers: {},
  });

  test('a signal sent while handling a request carries its id; one sent outside a request carries none', async () => {
    const sent: WorkflowSignalInput[] = [];
    const next = async (input: WorkflowSignalInput) => {
      sent.push(input);
    };
    await withRequestId('req-signal-1', () => requestIdClientInterceptor.signal?.(signalInput(), next));
    await requestIdClientInterceptor.signal?.(signalInput(), next);
    expect(sent.map((input) => requestIdFromHeaders(input.headers))).toEqual(['req-signal-1', undefined]);
    expect(sent[1]?.headers).toEqual({});
  });

  test('update-with-start carries it on both the start and the update', async () => {
    let seen: WorkflowStartUpdateWithStartInput | undefined;
    const input = {
      workflowType: 'checkout',
      workflowStartHeaders: {},
      updateName: 'reserve',
      updateArgs: [],
      updateHeaders: {},
    } as unknown as WorkflowStartUpdateWithStartInput;
    await withRequestId('req-reserve-1', () =>
      requestIdClientInterceptor.startUpdateWithStart?.(input, async (passed) => {
        seen = passed;
        return { workflowExecution: { workflowId: 'checkout/s1' }, updateId: 'u1' };
      }),
    );
    expect(requestIdFromHeaders(seen?.workflowStartHeaders ?? {})).toBe('req-reserve-1');
    expect(requestIdFromHeaders(seen?.updateHeaders ?? {})).toBe('req-reserve-1');
  });

  test('an activity runs as the request in its header: its log attributes and its own Temporal calls carry it', async () => {
    const interceptors = requestIdActivityInterceptor({} as ActivityContext);
    const input = { args: [], headers: withRequestIdHeader({}, 'req-card-1') } as unknown as ActivityExecuteInput;
    const seenInside = await interceptors.inbound?.execute?.(input, async () => currentRequestId());
    expect(seenInside).toBe('req-card-1');
    expect(
      interceptors.outbound?.getLogAttributes?.({ activityType: 'chargeCard' }, (attributes) => attributes),
    ).toEqual({ activityType: 'chargeCard', reqId: 'req-card-1' });
    expect(currentRequestId()).toBeUndefined();
  });

  test('a header that is not a request id is ignored, not a failure', () => {
    expect(requestIdFromHeaders({ [REQUEST_ID_HEADER]: { metadata: {}, data: new Uint8Array([1, 2]) } })).toBe(
      undefined,
    );
  });
});
