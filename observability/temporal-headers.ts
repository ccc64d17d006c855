/**
 * Names and shapes shared by the Node side (Temporal client, activity interceptors, the worker's span sink) and the
 * workflow sandbox (the workflow interceptors are bundled with the workflows), so it imports nothing with I/O.
 */
import { defaultPayloadConverter, type Headers } from '@temporalio/common';
import type { Sink, Sinks } from '@temporalio/workflow';

/** The Temporal header carrying the id of the HTTP request that caused a start, signal, update or activity. */
export const REQUEST_ID_HEADER = 'ticketing-request-id';

/** The log attribute holding it: the same key as the API's own lines (Fastify's `reqId`), so one query finds all. */
export const REQUEST_ID_LOG_KEY = 'reqId';

/** The request id a call carries, if any; a malformed header counts as none rather than failing the call. */
export function requestIdFromHeaders(headers: Headers): string | undefined {
  const payload = headers[REQUEST_ID_HEADER];
  if (payload === undefined) return undefined;
  try {
    const value: unknown = defaultPayloadConverter.fromPayload(payload);
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  } catch {
    return undefined;
  }
}

export function withRequestIdHeader(headers: Headers, requestId: string | undefined): Headers {
  return requestId === undefined
    ? headers
    : { ...headers, [REQUEST_ID_HEADER]: defaultPayloadConverter.toPayload(requestId) };
}

/**
 * The header holding the W3C trace context (`{ traceparent, tracestate }` as a JSON payload): the one
 * @temporalio/interceptors-opentelemetry's client and activity interceptors write and read.
 */
export const TRACE_HEADER = '_tracer-data';

/** A span a workflow built, as it crosses the sandbox boundary to the worker's span processor. */
export interface WorkflowSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  /** The W3C `sampled` flag it inherited; unsampled spans are propagated, never exported. */
  sampled: boolean;
  /** Workflow time (epoch ms) of the activation that opened and closed it. */
  startMs: number;
  endMs: number;
  /** Why the traced operation failed, or null. */
  failure: string | null;
  attributes: Record<string, string>;
}

export interface WorkflowSpanExporter extends Sink {
  export(span: WorkflowSpan): void;
}

export interface WorkflowSpanSinks extends Sinks {
  workflowSpans: WorkflowSpanExporter;
}
