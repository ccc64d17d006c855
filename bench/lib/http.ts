/**
 * Load-generator plumbing: a keep-alive HTTP client with a bounded socket pool, a bounded worker pool that stops on
 * a count and a deadline, and latency percentiles. node:http rather than fetch: fewer allocations per request, so
 * the load generator takes less of the 2 cores it shares with the system under test.
 */
import { Agent, request as httpRequest } from 'node:http';

export interface HttpResult {
  status: number;
  /** Parsed JSON body, or null when the body was empty or not JSON. */
  body: unknown;
  ms: number;
  /** Set when the request failed before an HTTP status (connection refused or reset, timeout). */
  networkError: string | null;
  /** The response's `Retry-After`, when it sent one. */
  retryAfter?: string;
}

export class HttpClient {
  readonly agent: Agent;
  readonly #url: URL;

  constructor(baseUrl: string, maxSockets: number) {
    this.#url = new URL(baseUrl);
    this.agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  request(
    method: string,
    path: string,
    options: { headers?: Record<string, string>; body?: unknown; timeoutMs?: number } = {},
  ): Promise<HttpResult> {
    const started = performance.now();
    const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
    return new Promise((resolve) => {
      const finish = (status: number, raw: string, networkError: string | null, retryAfter?: string) => {
        let body: unknown = null;
        if (raw !== '') {
          try {
            body = JSON.parse(raw);
          } catch {
            body = raw;
          }
        }
        resolve({ status, body, ms: performance.now() - started, networkError, ...(retryAfter ? { retryAfter } : {}) });
      };
      const req = httpRequest(
        {
          agent: this.agent,
          host: this.#url.hostname,
          port: this.#url.port,
          method,
          path,
          headers: {
            ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
            ...options.headers,
          },
          timeout: options.timeoutMs ?? 60_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          const retryAfter = res.headers['retry-after'];
          res.on('end', () =>
            finish(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), null, retryAfter ?? undefined),
          );
          res.on('error', (error) => finish(0, '', error.message));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (error: NodeJS.ErrnoException) => finish(0, '', error.code ?? error.message));
      if (payload) req.write(payload);
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The error code / reason of an API error envelope (`{ error: { code, details: { reason } } }`), if any. */
export function errorOf(result: HttpResult): { code: string; reason: string | null } {
  if (result.networkError) return { code: `network:${result.networkError}`, reason: null };
  const body = result.body as { error?: { code?: string; details?: { reason?: string } } } | null;
  return {
    code: body?.error?.code ?? `http_${result.status}`,
    reason: body?.error?.details?.reason ?? null,
  };
}

/** A 503 the API's load shedding sent: nothing was done, and the client is told when to come back. */
export function wasShed(result: HttpResult): boolean {
  return result.status === 503 && errorOf(result).reason === 'overloaded';
}

/**
 * Sends a request as a front end does under load shedding: a shed answer is retried after its Retry-After, until
 * `deadline`. Returns the last answer, how many times it was shed, and the time of the answer that counted.
 */
export async function requestHonouringRetryAfter(
  send: () => Promise<HttpResult>,
  deadline: number,
): Promise<HttpResult & { shed: number }> {
  let shed = 0;
  for (;;) {
    const result = await send();
    const waitMs = Number(result.retryAfter ?? 1) * 1000;
    if (!wasShed(result) || Date.now() + waitMs >= deadline) return { ...result, shed };
    shed += 1;
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

/**
 * Runs `task(i)` for i in [0, count) with at most `concurrency` in flight, never starting one after `deadline`
 * (epoch ms). Returns the results in index order (undefined for tasks never started).
 */
export async function runPool<T>(
  count: number,
  concurrency: number,
  deadline: number,
  task: (index: number) => Promise<T>,
): Promise<Array<T | undefined>> {
  const results: Array<T | undefined> = new Array(count);
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count && Date.now() < deadline) {
      const index = next;
      next += 1;
      results[index] = await task(index);
    }
  });
  await Promise.all(lanes);
  return results;
}

export interface LatencySummary {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? 0;
}

export function summarize(values: number[]): LatencySummary {
  const sorted = [...values].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    count: sorted.length,
    p50: round(percentile(sorted, 50)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted[sorted.length - 1] ?? 0),
    mean: round(sorted.reduce((sum, v) => sum + v, 0) / Math.max(1, sorted.length)),
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every `everyMs` until it returns true or `timeoutMs` passes; returns whether it became true. */
export async function pollUntil(check: () => Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await sleep(everyMs);
  }
  return check().catch(() => false);
}
