/**
 * Operators follow one buyer's purchase across processes: with OTEL_EXPORTER_OTLP_ENDPOINT set, the API (in this
 * test process) and a worker (its own process, wired as worker/main.ts) export spans to one OTLP collector, and the
 * card payment request, the workflow update it causes, the activity that charges gateway A and that HTTP call are
 * one trace. The request's id travels as a Temporal header and is in the workflow's and the activity's log lines.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { REQUEST_ID_HEADER } from '../../observability/temporal-headers.js';
import { startTracing, type Tracing } from '../../observability/tracing.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { type LoggedWorker, type LogLine, startLoggedWorker } from '../support/logged-worker.js';
import { type CollectedSpan, type OtlpCollector, SPAN_KIND, startOtlpCollector } from '../support/otlp-collector.js';
import { privateTaskQueue } from '../support/private-stack.js';
import {
  cardToken,
  eventually,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const CARD_ROUTE = '/api/v1/customer/orders/:id/payment/card';

let collector: OtlpCollector;
let worker: LoggedWorker | undefined;
let tracing: Tracing | null = null;
let api: TestApi | undefined;
let organizer: Organizer;

beforeAll(async () => {
  collector = await startOtlpCollector();
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
  const taskQueue = privateTaskQueue('tracing');
  worker = await startLoggedWorker('test/support/tracing-worker.ts', taskQueue, {
    ...otel,
    // Debug: the SDK's own activity lines ("Activity completed") are debug; they must carry the request id too.
    LOG_LEVEL: 'debug',
    OTEL_BSP_SCHEDULE_DELAY: '200',
  });
  // Before the API is built, as api/main.ts does: the Temporal client and the app instrument themselves only then.
  tracing = startTracing('ticketing-api', otel);
  api = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue });
  organizer = await createOrganizer(api.orm.em.fork());
}, 150_000);

afterAll(async () => {
  await api?.close();
  await tracing?.shutdown();
  await worker?.close();
  await collector?.close();
});

/** The span and its ancestors, nearest first, as far as the collected spans reach. */
function ancestry(span: CollectedSpan, spans: CollectedSpan[]): CollectedSpan[] {
  const byId = new Map(spans.map((each) => [each.spanId, each]));
  const chain = [span];
  for (let parent = span.parentSpanId; parent !== null; ) {
    const next = byId.get(parent);
    if (!next) break;
    chain.push(next);
    parent = next.parentSpanId;
  }
  return chain;
}

async function buyWithCard(target: TestApi) {
  const event = await publishEvent(target, organizer, { price: 40_000, capacity: 5 });
  const token = await signInBuyer(target, `traced-${Math.random().toString(36).slice(2, 10)}@buyers.test`);
  const created = await reserveOrder(target, token, orderBody(event, 1));
  expect(created.statusCode).toBe(201);
  const { saleId } = created.json().data as { saleId: string };
  const opened = await target.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment`,
    headers: session(token),
  });
  expect(opened.statusCode).toBe(200);
  const charged = await target.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment/card`,
    headers: session(token),
    payload: { token: await cardToken(target, 'APRO') },
  });
  expect(charged.statusCode).toBe(200);
  expect(charged.json().data).toMatchObject({ saleStatus: 'CONFIRMED' });
  return { saleId, requestId: String(charged.headers['x-request-id']) };
}

test('one trace holds the card payment request, the workflow update, the gateway A activity and its HTTP call', async () => {
  if (!api || !tracing) throw new Error('the traced stack did not start');
  const { saleId, requestId } = await buyWithCard(api);
  await tracing.flush();

  const workflowId = checkoutWorkflowId(saleId);
  // The worker exports on its own schedule (every 200 ms here), each span when it ends: wait until the chain from the
  // gateway call of this sale reaches a root.
  const chainOfGatewayCall = () => {
    const spans = collector.spans();
    const call = spans.find(
      (span) =>
        span.name === 'POST gateway-a' &&
        ancestry(span, spans).some((each) => each.attributes.temporalWorkflowId === workflowId),
    );
    return call ? ancestry(call, spans) : [];
  };
  const chain = await eventually(
    async () => chainOfGatewayCall(),
    (spans) => spans.at(-1)?.parentSpanId === null,
    30_000,
  );
  const [gatewaySpan] = chain;
  const server = chain.at(-1);

  // The HTTP call to gateway A: a client span with method, host, status, in the worker.
  expect(gatewaySpan).toMatchObject({
    service: 'ticketing-worker',
    kind: SPAN_KIND.CLIENT,
    attributes: expect.objectContaining({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'http.response.status_code': expect.any(Number),
      'ticketing.provider': 'gateway-a',
    }),
  });
  // Up the chain, in order: the activity that called it, the workflow's update handler, and — in the API — the
  // server span of the card payment request, which is the root of the trace.
  const names = chain.map((span) => `${span.service} ${span.name}`);
  const at = (name: string) => names.indexOf(name);
  expect(at('ticketing-worker RunActivity:chargeCard')).toBeGreaterThan(0);
  expect(at('ticketing-worker HandleUpdate:chargeCard')).toBeGreaterThan(at('ticketing-worker RunActivity:chargeCard'));
  expect(at('ticketing-api StartWorkflowUpdate:chargeCard')).toBeGreaterThan(
    at('ticketing-worker HandleUpdate:chargeCard'),
  );
  // The workflow's span of the update names the request it handled, as the server span does.
  expect(chain.find((span) => span.name === 'HandleUpdate:chargeCard')?.attributes['ticketing.request_id']).toBe(
    requestId,
  );
  expect(server).toMatchObject({
    service: 'ticketing-api',
    name: 'request',
    kind: SPAN_KIND.SERVER,
    parentSpanId: null,
    attributes: expect.objectContaining({
      'http.route': CARD_ROUTE,
      // The route template, never the concrete URL (which carries the sale id here, tokens elsewhere).
      'url.path': CARD_ROUTE,
      'ticketing.request_id': requestId,
      'http.request.method': 'POST',
      'http.response.status_code': 200,
    }),
  });
  // One trace: every span of the chain carries the server span's trace id.
  expect(new Set(chain.map((span) => span.traceId))).toEqual(new Set([server?.traceId]));
}, 120_000);

test("the card payment request's id is a Temporal header of the update and in the workflow's and activity's logs", async () => {
  if (!api || !worker) throw new Error('the traced stack did not start');
  const { saleId, requestId } = await buyWithCard(api);
  const workflowId = checkoutWorkflowId(saleId);
  const ofThisRequest = (line: LogLine) => line.reqId === requestId && line.workflowId === workflowId;

  // The workflow logs the update it received, with the request id among its attributes.
  const workflowLine = await eventually(
    async () => worker?.lines().find((line) => ofThisRequest(line) && line.msg === 'update received from a request'),
    (line) => line !== undefined,
  );
  expect(workflowLine).toMatchObject({ sdkComponent: 'workflow', update: 'chargeCard', workflowType: 'checkout' });
  // The activity that charged the card logged under the same request id (the SDK's own line, at its end).
  const activityLine = await eventually(
    async () =>
      worker
        ?.lines()
        .find((line) => ofThisRequest(line) && line.activityType === 'chargeCard' && line.msg === 'Activity completed'),
    (line) => line !== undefined,
  );
  expect(activityLine).toBeDefined();
  // Lines of the same execution caused by other requests carry theirs, not this one.
  const reserveLine = worker
    .lines()
    .find(
      (line) =>
        line.workflowId === workflowId && line.msg === 'update received from a request' && line.update === 'reserve',
    );
  expect(reserveLine?.reqId).toEqual(expect.any(String));
  expect(reserveLine?.reqId).not.toBe(requestId);

  // The header itself, as the history records it on the accepted update.
  const history = await api.services.temporal.workflow.getHandle(workflowId).fetchHistory();
  const accepted = (history.events ?? [])
    .filter(
      (event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    )
    .map((event) => event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input)
    .find((input) => input?.name === 'chargeCard');
  const header = accepted?.header?.fields?.[REQUEST_ID_HEADER];
  expect(header).toBeDefined();
  expect(defaultPayloadConverter.fromPayload(header as temporal.api.common.v1.IPayload)).toBe(requestId);
}, 120_000);
