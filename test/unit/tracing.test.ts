import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import type { WorkflowInfo } from '@temporalio/workflow';
import { z } from 'zod';
import { ProviderError } from '../../integrations/errors.js';
import { JsonHttp } from '../../integrations/http.js';
import type { WorkflowSpan } from '../../observability/temporal-headers.js';
import { workerTracingOptions, workflowClientInterceptors } from '../../observability/temporal-tracing.js';
import { activeTracing, startTracing, tracingSettingsFrom } from '../../observability/tracing.js';
import { type OtlpCollector, SPAN_KIND, startOtlpCollector } from '../support/otlp-collector.js';

/** A stand-in provider that answers `status` and remembers the headers of every call. */
async function provider(status: number): Promise<{ url: string; seen: IncomingHttpHeaders[]; server: Server }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    seen.push(request.headers);
    response.writeHead(status, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const seatMap = (baseUrl: string) =>
  new JsonHttp({
    provider: 'seatmap',
    baseUrl,
    timeoutMs: 2_000,
    headers: { authorization: 'Bearer secret' },
    describeError: () => ({ code: null, message: null }),
  });
const ok = z.object({ ok: z.boolean() });

describe('tracing settings from the OTEL_* variables', () => {
  test('no endpoint means no tracing', () => {
    expect(tracingSettingsFrom('ticketing-api', {})).toBeNull();
    expect(
      tracingSettingsFrom('ticketing-api', { OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_ENDPOINT: '' }),
    ).toBeNull();
  });

  test('an endpoint exports to its /v1/traces, as the service unless OTEL_SERVICE_NAME renames it', () => {
    expect(tracingSettingsFrom('ticketing-worker', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toEqual({
      tracesUrl: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: 'ticketing-worker',
      resourceAttributes: {},
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
    });
    const named = tracingSettingsFrom('ticketing-api', {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/custom',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'tickets-eu',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=on%20sale',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    expect(named).toEqual({
      tracesUrl: 'http://traces:4318/custom',
      protocol: 'http/json',
      serviceName: 'tickets-eu',
      resourceAttributes: { 'deployment.environment': 'prod', team: 'on sale' },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
    });
  });

  test('the SDK switch and the `none` exporter turn tracing off even with an endpoint', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(tracingSettingsFrom('ticketing-api', { ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(tracingSettingsFrom('ticketing-api', { ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
  });

  test('a malformed variable is an error naming it, not tracing silently off', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(() => tracingSettingsFrom('ticketing-api', { ...endpoint, OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(
      /OTEL_TRACES_SAMPLER/,
    );
    expect(() => tracingSettingsFrom('ticketing-api', { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
  });
});

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let collector: OtlpCollector;
  beforeAll(async () => {
    collector = await startOtlpCollector();
  });
  afterAll(() => collector.close());

  test('no provider starts, the tracer is a no-op and nothing is exported or propagated', async () => {
    // Everything but the endpoint: the collector is there, nobody is told to send to it.
    expect(
      startTracing('ticketing-api', { OTEL_SERVICE_NAME: 'ticketing-api', OTEL_TRACES_SAMPLER: 'always_on' }),
    ).toBe(null);
    expect(activeTracing()).toBeNull();
    const span = trace.getTracer('anything').startSpan('work');
    expect(span.isRecording()).toBe(false);
    span.end();

    const target = await provider(200);
    try {
      await seatMap(target.url).request({ method: 'GET', path: '/maps/1', schema: ok });
      expect(target.seen[0]?.traceparent).toBeUndefined();
    } finally {
      target.server.close();
    }
    // Temporal gets only the request-id interceptors; the workflow span sink drops what it is given.
    expect(workflowClientInterceptors(null)).toHaveLength(1);
    const worker = workerTracingOptions(null);
    expect(worker.activity).toHaveLength(1);
    worker.sinks.workflowSpans.export.fn({} as WorkflowInfo, {} as WorkflowSpan);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(collector.requests()).toBe(0);
  });
});

describe('with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let collector: OtlpCollector;
  beforeAll(async () => {
    collector = await startOtlpCollector();
  });
  afterAll(async () => {
    await activeTracing()?.shutdown();
    await collector.close();
  });

  test('a provider call is a client span (method, host, port, status) whose context reaches the provider', async () => {
    const tracing = startTracing('ticketing-worker', {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    if (!tracing) throw new Error('tracing did not start');
    expect(activeTracing()).toBe(tracing);
    const target = await provider(200);
    const failing = await provider(503);
    try {
      await seatMap(target.url).request({ method: 'GET', path: '/maps/7', query: { hold: 'h1' }, schema: ok });
      await expect(seatMap(failing.url).request({ method: 'POST', path: '/holds', schema: ok })).rejects.toBeInstanceOf(
        ProviderError,
      );
      await tracing.flush();
    } finally {
      target.server.close();
      failing.server.close();
    }

    const [read, refused] = collector.spans().filter((span) => span.service === 'ticketing-worker');
    expect(read).toMatchObject({
      name: 'GET seatmap',
      kind: SPAN_KIND.CLIENT,
      attributes: {
        'http.request.method': 'GET',
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(target.url).port),
        'http.response.status_code': 200,
        'ticketing.provider': 'seatmap',
      },
    });
    expect(target.seen[0]?.traceparent).toBe(`00-${read?.traceId}-${read?.spanId}-01`);
    // Neither the credentials sent to the provider nor what its URL carries (ids, tokens) are span attributes.
    expect(JSON.stringify(collector.spans())).not.toContain('secret');
    expect(JSON.stringify(collector.spans())).not.toContain('/maps/7');
    expect(JSON.stringify(collector.spans())).not.toContain('/holds');
    expect(refused).toMatchObject({
      name: 'POST seatmap',
      status: { code: 2, message: '503' },
      attributes: expect.objectContaining({ 'http.response.status_code': 503, 'error.type': '503' }),
    });
  });

  test("a workflow's span handed to the worker's sink is exported as the worker's, under its parent", async () => {
    const tracing = activeTracing();
    if (!tracing) throw new Error('tracing is not running');
    const span: WorkflowSpan = {
      name: 'HandleUpdate:chargeCard',
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      parentSpanId: '00f067aa0ba902b7',
      sampled: true,
      startMs: Date.parse('2026-03-01T10:00:00.000Z'),
      endMs: Date.parse('2026-03-01T10:00:01.250Z'),
      failure: null,
      attributes: { temporalWorkflowId: 'checkout/s1' },
    };
    workerTracingOptions(tracing).sinks.workflowSpans.export.fn({} as WorkflowInfo, span);
    await tracing.flush();
    expect(collector.spans().find((each) => each.spanId === span.spanId)).toEqual({
      service: 'ticketing-worker',
      traceId: span.traceId,
      spanId: span.spanId,
      parentSpanId: span.parentSpanId,
      name: span.name,
      kind: SPAN_KIND.INTERNAL,
      attributes: { temporalWorkflowId: 'checkout/s1' },
      status: { code: 1, message: '' },
    });
  });

  test('shutting down returns the process to no-op tracing', async () => {
    await activeTracing()?.shutdown();
    expect(activeTracing()).toBeNull();
    expect(trace.getTracer('anything').startSpan('later').isRecording()).toBe(false);
  });
});
