/**
 * Temporal's side of tracing and request ids, for every Client and Worker of the service:
 *
 * - the client interceptors put the current request id (observability/request-context.ts) and, when tracing is on,
 *   the current trace context into the headers of every start, signal and update;
 * - the workflow interceptor modules (bundled with the workflows, in every bundle, traced or not, so the code that
 *   replays an execution never depends on configuration) open workflow spans and carry the request id on;
 * - the activity interceptors open an activity span under the workflow's, and make the request id part of the
 *   activity's log lines and of the Temporal calls the activity makes;
 * - the `workflowSpans` sink hands the spans built inside the workflow sandbox to the process's span processor (a no-op
 *   when tracing is off).
 */
import { fileURLToPath } from 'node:url';
import { SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Context as ActivityContext } from '@temporalio/activity';
import type {
  WorkflowClientInterceptor,
  WorkflowSignalInput,
  WorkflowSignalWithStartInput,
  WorkflowStartInput,
  WorkflowStartUpdateInput,
  WorkflowStartUpdateWithStartInput,
} from '@temporalio/client';
import type { Headers, Next } from '@temporalio/common';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptors, ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import { currentRequestId, withRequestId } from './request-context.js';
import {
  REQUEST_ID_LOG_KEY,
  requestIdFromHeaders,
  type WorkflowSpan,
  type WorkflowSpanSinks,
  withRequestIdHeader as withRequestIdIn,
} from './temporal-headers.js';
import { activeTracing, type Tracing } from './tracing.js';

/**
 * Workflow interceptor modules, for `bundleWorkflowCode({ workflowInterceptorModules })` and for workers that bundle
 * from `workflowsPath` (`interceptors.workflowModules`) alike, so replay and production run the same code.
 */
export const WORKFLOW_INTERCEPTOR_MODULES: string[] = ['./workflow-tracing', './workflow-request-id'].map((name) =>
  // `.ts` from source, `.js` from the compiled output (dist/).
  fileURLToPath(new URL(`${name}${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url)),
);

const withRequestIdHeader = (headers: Headers): Headers => withRequestIdIn(headers, currentRequestId());

/** Adds the current request's id to every call that reaches a workflow. */
export const requestIdClientInterceptor: WorkflowClientInterceptor = {
  startWithDetails: (input: WorkflowStartInput, next: Next<WorkflowClientInterceptor, 'startWithDetails'>) =>
    next({ ...input, headers: withRequestIdHeader(input.headers) }),
  signal: (input: WorkflowSignalInput, next: Next<WorkflowClientInterceptor, 'signal'>) =>
    next({ ...input, headers: withRequestIdHeader(input.headers) }),
  signalWithStart: (input: WorkflowSignalWithStartInput, next: Next<WorkflowClientInterceptor, 'signalWithStart'>) =>
    next({ ...input, headers: withRequestIdHeader(input.headers) }),
  startUpdate: (input: WorkflowStartUpdateInput, next: Next<WorkflowClientInterceptor, 'startUpdate'>) =>
    next({ ...input, headers: withRequestIdHeader(input.headers) }),
  startUpdateWithStart: (
    input: WorkflowStartUpdateWithStartInput,
    next: Next<WorkflowClientInterceptor, 'startUpdateWithStart'>,
  ) =>
    next({
      ...input,
      workflowStartHeaders: withRequestIdHeader(input.workflowStartHeaders),
      updateHeaders: withRequestIdHeader(input.updateHeaders),
    }),
};

/** The interceptors of a Temporal Client: request ids always, trace context when this process traces. */
export function workflowClientInterceptors(tracing: Tracing | null = activeTracing()): WorkflowClientInterceptor[] {
  if (!tracing) return [requestIdClientInterceptor];
  return [
    new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer('@temporalio/interceptor-client') }),
    requestIdClientInterceptor,
  ];
}

/** An activity runs as part of the request its workflow was handling; its log lines say which. */
export function requestIdActivityInterceptor(_context: ActivityContext): ActivityInterceptors {
  let requestId: string | undefined;
  return {
    inbound: {
      execute(input, next) {
        requestId = requestIdFromHeaders(input.headers);
        return withRequestId(requestId, () => next(input));
      },
    },
    outbound: {
      getLogAttributes(input, next) {
        return next(requestId === undefined ? input : { ...input, [REQUEST_ID_LOG_KEY]: requestId });
      },
    },
  };
}

export interface WorkerTracingOptions {
  /** Outermost first: they must wrap the service's own activity interceptors, whose log lines they annotate. */
  activity: ActivityInterceptorsFactory[];
  sinks: InjectedSinks<WorkflowSpanSinks>;
}

const hrTime = (epochMs: number): [number, number] => [Math.floor(epochMs / 1000), (epochMs % 1000) * 1_000_000];

/** A span the workflow sandbox built (observability/workflow-tracing.ts), as the span processor takes it. */
function readableSpan(span: WorkflowSpan, tracing: Tracing): ReadableSpan {
  const context = { traceId: span.traceId, spanId: span.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: false };
  return {
    name: span.name,
    kind: SpanKind.INTERNAL,
    spanContext: () => context,
    ...(span.parentSpanId === null ? {} : { parentSpanId: span.parentSpanId }),
    startTime: hrTime(span.startMs),
    endTime: hrTime(span.endMs),
    duration: hrTime(span.endMs - span.startMs),
    status: span.failure === null ? { code: SpanStatusCode.OK } : { code: SpanStatusCode.ERROR, message: span.failure },
    attributes: span.attributes,
    links: [],
    events: [],
    ended: true,
    resource: tracing.resource,
    instrumentationLibrary: { name: 'ticketing-workflow' },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** What `Worker.create` adds for request ids and, when this process traces, spans. */
export function workerTracingOptions(tracing: Tracing | null = activeTracing()): WorkerTracingOptions {
  if (!tracing) {
    // The bundled workflow interceptors always call the sink; without tracing their spans go nowhere.
    return { activity: [requestIdActivityInterceptor], sinks: { workflowSpans: { export: { fn: () => undefined } } } };
  }
  const tracer = tracing.tracer('@temporalio/interceptor-activity');
  return {
    activity: [
      (context) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(context, { tracer }),
        outbound: new OpenTelemetryActivityOutboundInterceptor(context),
      }),
      requestIdActivityInterceptor,
    ],
    sinks: {
      workflowSpans: {
        export: { fn: (_info, span) => tracing.spanProcessor.onEnd(readableSpan(span, tracing)) },
      },
    },
  };
}
