import { context, propagation, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
} from '@opentelemetry/semantic-conventions';
import type { z } from 'zod';
import { isProviderError, isRetryableStatus, ProviderError, type ProviderName, retryAfterMs } from './errors.js';

/**
 * A small JSON-over-HTTP caller shared by the provider clients: base URL + default headers injected once, a
 * deadline on every call (AbortSignal.timeout), the response validated by a zod schema so nothing untyped leaves
 * a client, and every failure turned into a ProviderError.
 */
export type QueryValue = string | number | boolean | readonly string[] | undefined | null;

export interface JsonHttpOptions {
  provider: ProviderName;
  baseUrl: string;
  timeoutMs: number;
  headers: Record<string, string>;
  /** Reads the provider's error body into a code and message; each provider shapes errors differently. */
  describeError: (body: unknown) => { code: string | null; message: string | null };
  fetch?: typeof fetch;
}

export interface JsonRequest<S extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
  headers?: Record<string, string>;
  schema: S;
  /** Per-call deadline; defaults to the client's. */
  timeoutMs?: number;
}

export interface JsonResponse<T> {
  status: number;
  data: T;
}

export function joinUrl(baseUrl: string, path: string, query: Record<string, QueryValue> = {}): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`);
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const item of value) url.searchParams.append(key, item);
    else url.searchParams.set(key, String(value));
  }
  return url.toString();
}

/** A no-op until the process starts tracing (observability/tracing.ts); then every provider call is a client span. */
const tracer = trace.getTracer('ticketing-integrations');

export class JsonHttp {
  readonly #options: JsonHttpOptions;
  readonly #fetch: typeof fetch;

  constructor(options: JsonHttpOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /**
   * One call as a client span (`POST gateway-a`: method, host, port, status), whose trace context goes to the
   * provider in `traceparent`. No path or query: hold tokens and payment ids travel there.
   */
  async request<S extends z.ZodType>(request: JsonRequest<S>): Promise<JsonResponse<z.output<S>>> {
    const { provider } = this.#options;
    const url = joinUrl(this.#options.baseUrl, request.path, request.query);
    const target = new URL(url);
    const attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: request.method,
      [ATTR_SERVER_ADDRESS]: target.hostname,
      [ATTR_SERVER_PORT]: Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
      'ticketing.provider': provider,
    };
    return tracer.startActiveSpan(
      `${request.method} ${provider}`,
      { kind: SpanKind.CLIENT, attributes },
      async (span) => {
        try {
          return await this.#send(request, url, span);
        } catch (error) {
          const kind = isProviderError(error) ? (error.code ?? String(error.status ?? 'error')) : 'error';
          span.setAttribute(ATTR_ERROR_TYPE, kind);
          // The kind, not the message: messages quote the path.
          span.setStatus({ code: SpanStatusCode.ERROR, message: kind });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }

  async #send<S extends z.ZodType>(
    request: JsonRequest<S>,
    url: string,
    span: Span,
  ): Promise<JsonResponse<z.output<S>>> {
    const { provider } = this.#options;
    const timeoutMs = request.timeoutMs ?? this.#options.timeoutMs;
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...this.#options.headers,
      ...request.headers,
    };
    propagation.inject(context.active(), headers);
    let body: string | undefined;
    if (request.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(request.body);
    }

    let response: Response;
    try {
      response = await this.#fetch(url, {
        method: request.method,
        headers,
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const name = errorProperty(error, 'name');
      const timedOut = name === 'TimeoutError' || name === 'AbortError';
      throw new ProviderError({
        provider,
        status: null,
        retryable: true,
        code: timedOut ? 'TIMEOUT' : 'NETWORK',
        message: timedOut
          ? `${provider}: no answer within ${timeoutMs} ms (${request.method} ${request.path})`
          : `${provider}: request failed (${request.method} ${request.path}): ${errorProperty(error, 'message') ?? String(error)}`,
        cause: error,
      });
    }
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, response.status);

    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw new ProviderError({
        provider,
        status: response.status,
        retryable: true,
        code: 'NETWORK',
        message: `${provider}: response body could not be read (${request.method} ${request.path})`,
        cause: error,
      });
    }
    const json = parseJson(text);

    if (!response.ok) {
      const described = json === undefined ? { code: null, message: null } : this.#options.describeError(json);
      throw new ProviderError({
        provider,
        status: response.status,
        retryable: isRetryableStatus(response.status),
        code: described.code,
        message: `${provider}: ${request.method} ${request.path} answered ${response.status}${described.message ? `: ${described.message}` : ''}`,
        details: json ?? null,
        retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
      });
    }

    const parsed = request.schema.safeParse(json ?? null);
    if (!parsed.success) {
      throw new ProviderError({
        provider,
        status: response.status,
        retryable: false,
        code: 'INVALID_RESPONSE',
        message: `${provider}: unexpected response to ${request.method} ${request.path}: ${parsed.error.issues
          .slice(0, 3)
          .map((issue) => `${issue.path.join('.') || '(root)'} ${issue.message}`)
          .join('; ')}`,
      });
    }
    return { status: response.status, data: parsed.data };
  }
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A string property of a thrown value. Duck-typed on purpose: errors raised by fetch may come from another realm
 * (a VM context, a worker), where `instanceof Error` is false.
 */
export function errorProperty(error: unknown, key: 'name' | 'message' | 'code'): string | undefined {
  const value = field(error, key);
  return typeof value === 'string' ? value : undefined;
}

/** A record-like reader for error bodies of unknown shape. */
export function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
