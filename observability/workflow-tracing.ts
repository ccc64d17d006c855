/**
 * Workflow spans, built inside the workflow sandbox (bundled with the workflows), always under a caller's trace (the
 * context the Temporal client interceptor put in the TRACE_HEADER): `RunWorkflow:<type>` for a run started within a
 * trace, `HandleUpdate:<name>` and `HandleSignal:<name>` for calls made within one, and under those
 * `StartActivity:<type>`, `StartChildWorkflow:<type>`, `SignalWorkflow:<name>`, whose context goes on in the same
 * header to the worker's activity interceptor (@temporalio/interceptors-opentelemetry's), which continues the trace.
 *
 * Why not that package's workflow interceptors: they add awaits around every handler and activity result, which
 * reorders commands, so histories recorded without them no longer replay (checkout-card-approved.json did not), and
 * they draw span ids from the workflow's random sequence, which shifts every later `uuid4()` of a replayed run. These
 * interceptors return the very promises they are given (a span ends in a reaction that schedules nothing) and derive
 * ids from the run id and a counter, so adding, removing or configuring tracing never changes what a workflow does.
 */
import { defaultPayloadConverter, type Headers } from '@temporalio/common';
import {
  type ActivityInput,
  AsyncLocalStorage,
  ContinueAsNew,
  type LocalActivityInput,
  type Next,
  proxySinks,
  type SignalInput,
  type SignalWorkflowInput,
  type StartChildWorkflowExecutionInput,
  type UpdateInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
  workflowInfo,
} from '@temporalio/workflow';
import { requestIdFromHeaders, TRACE_HEADER, type WorkflowSpan, type WorkflowSpanSinks } from './temporal-headers.js';

interface SpanContext {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const { workflowSpans } = proxySinks<WorkflowSpanSinks>();
/** The span the current coroutine works under: the run's, or the handler's it belongs to. */
const current = new AsyncLocalStorage<SpanContext>();
let spansOpened = 0;

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** FNV-1a: ids that are the same on every replay of a run, without touching the workflow's random sequence. */
function hashHex(text: string, seed: number): string {
  let hash = (0x811c9dc5 ^ seed) >>> 0;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

function deterministicId(text: string, words: number): string {
  const id = Array.from({ length: words }, (_, word) => hashHex(text, Math.imul(word + 1, 0x9e3779b9))).join('');
  return /^0+$/.test(id) ? `${id.slice(0, -1)}1` : id;
}

function parentIn(headers: Headers): SpanContext | undefined {
  const payload = headers[TRACE_HEADER];
  if (payload === undefined) return undefined;
  try {
    const carrier: unknown = defaultPayloadConverter.fromPayload(payload);
    const traceparent = typeof carrier === 'object' && carrier !== null ? Reflect.get(carrier, 'traceparent') : null;
    const match = typeof traceparent === 'string' ? TRACEPARENT.exec(traceparent) : null;
    if (!match?.[1] || !match[2] || !match[3]) return undefined;
    return { traceId: match[1], spanId: match[2], sampled: (Number.parseInt(match[3], 16) & 1) === 1 };
  } catch {
    return undefined;
  }
}

function withContext(headers: Headers, span: SpanContext | undefined): Headers {
  if (!span) return headers;
  const traceparent = `00-${span.traceId}-${span.spanId}-${span.sampled ? '01' : '00'}`;
  return { ...headers, [TRACE_HEADER]: defaultPayloadConverter.toPayload({ traceparent }) };
}

function describeFailure(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const message = Reflect.get(error, 'message');
    if (typeof message === 'string') return message;
  }
  return String(error);
}

/**
 * Opens a span under `parent`, runs `work` inside it and closes it when the promise `work` returns settles, returning
 * that same promise. Without a parent there is no span: a workflow never starts a trace, so whether one exists is
 * decided where the sampler is, by the API's request or the worker's activity; and a workflow nobody traces does
 * nothing here.
 */
function traced<T>(
  name: string,
  parent: SpanContext | undefined,
  attributes: Record<string, string>,
  work: (span: SpanContext | undefined) => Promise<T>,
): Promise<T> {
  if (!parent) return work(undefined);
  const info = workflowInfo();
  spansOpened += 1;
  const span: SpanContext = {
    traceId: parent.traceId,
    spanId: deterministicId(`${info.runId}/${spansOpened}`, 2),
    sampled: parent.sampled,
  };
  const startMs = Date.now();
  const close = (failure: string | null) => {
    if (!span.sampled) return;
    const exported: WorkflowSpan = {
      name,
      traceId: span.traceId,
      spanId: span.spanId,
      parentSpanId: parent.spanId,
      sampled: span.sampled,
      startMs,
      endMs: Date.now(),
      failure,
      attributes: {
        temporalWorkflowId: info.workflowId,
        run_id: info.runId,
        'temporal.workflow_type': info.workflowType,
        ...attributes,
      },
    };
    workflowSpans.export(exported);
  };
  const result = current.run(span, () => work(span));
  result.then(
    () => close(null),
    // Continuing as new is how a long story (a membership, a session) goes on, not a failure of its run.
    (error: unknown) => close(error instanceof ContinueAsNew ? null : describeFailure(error)),
  );
  return result;
}

/** The request id as a span attribute, so a trace leads to the log lines of the same request. */
const requestIdIn = (headers: Headers): Record<string, string> => {
  const requestId = requestIdFromHeaders(headers);
  return requestId === undefined ? {} : { 'ticketing.request_id': requestId };
};

class TracingInbound implements WorkflowInboundCallsInterceptor {
  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    return traced(
      `RunWorkflow:${workflowInfo().workflowType}`,
      parentIn(input.headers),
      requestIdIn(input.headers),
      () => next(input),
    );
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    const parent = parentIn(input.headers) ?? current.getStore();
    return traced(`HandleSignal:${input.signalName}`, parent, requestIdIn(input.headers), () => next(input));
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>): Promise<unknown> {
    const attributes = { temporalUpdateId: input.updateId, ...requestIdIn(input.headers) };
    const parent = parentIn(input.headers) ?? current.getStore();
    return traced(`HandleUpdate:${input.name}`, parent, attributes, () => next(input));
  }
}

class TracingOutbound implements WorkflowOutboundCallsInterceptor {
  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return traced(`StartActivity:${input.activityType}`, current.getStore(), {}, (span) =>
      next({ ...input, headers: withContext(input.headers, span) }),
    );
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ) {
    return traced(`StartActivity:${input.activityType}`, current.getStore(), {}, (span) =>
      next({ ...input, headers: withContext(input.headers, span) }),
    );
  }

  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ) {
    // Only the start is a span: the child's own run is the `RunWorkflow` span under it.
    return traced(`StartChildWorkflow:${input.workflowType}`, current.getStore(), {}, (span) =>
      next({ ...input, headers: withContext(input.headers, span) }),
    );
  }

  signalWorkflow(input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) {
    return traced(`SignalWorkflow:${input.signalName}`, current.getStore(), {}, (span) =>
      next({ ...input, headers: withContext(input.headers, span) }),
    );
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new TracingInbound()],
  outbound: [new TracingOutbound()],
});
