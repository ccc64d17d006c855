/**
 * The worker's Prometheus endpoint: a tiny node:http server on WORKER_METRICS_PORT serving, in one scrape, the
 * business counters, the process metrics and the Temporal SDK's own metrics (slots, task latencies, sticky cache).
 * The SDK exports those from its native core on an address of its own (TEMPORAL_METRICS_BIND_ADDRESS, loopback by
 * default); the endpoint fetches them from there, so Prometheus scrapes one port per worker.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Runtime, type RuntimeOptions, type TelemetryOptions } from '@temporalio/worker';
import type { Env } from '../config/env.js';
import { METRICS_CONTENT_TYPE, METRICS_PATH, processRegistry, render, workerRegistry } from './metrics.js';

/** The worker's health path on the metrics port (docker-compose.yml's health check of the worker). */
export const WORKER_HEALTH_PATH = '/health';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** A scrape waits at most this long for the SDK's exporter; without it, it still serves the worker's own metrics. */
const SDK_SCRAPE_TIMEOUT_MS = 2_000;

/**
 * The Runtime's metrics option for the SDK's Prometheus exporter, in Prometheus' naming conventions (`_total`
 * counters, durations in seconds with the unit in the name). Undefined when TEMPORAL_METRICS_BIND_ADDRESS is empty.
 */
export function temporalTelemetryOptions(
  env: Pick<Env, 'TEMPORAL_METRICS_BIND_ADDRESS'>,
): TelemetryOptions | undefined {
  if (env.TEMPORAL_METRICS_BIND_ADDRESS === '') return undefined;
  return {
    metrics: {
      prometheus: {
        bindAddress: env.TEMPORAL_METRICS_BIND_ADDRESS,
        countersTotalSuffix: true,
        unitSuffix: true,
        useSecondsForDurations: true,
      },
    },
  };
}

/**
 * Runtime.install with the SDK's Prometheus exporter; when its address is taken, it logs and installs the Runtime
 * without it, since the worker's work does not depend on its metrics. Returns the address the exporter listens on,
 * empty when it does not (whatever answers on a taken address is not this worker's).
 */
export function installRuntimeWithMetrics(
  env: Pick<Env, 'TEMPORAL_METRICS_BIND_ADDRESS'>,
  options: RuntimeOptions,
  onError: (message: string, error: unknown) => void,
): string {
  const telemetry = temporalTelemetryOptions(env);
  if (telemetry) {
    try {
      Runtime.install({ ...options, telemetryOptions: { ...options.telemetryOptions, ...telemetry } });
      return env.TEMPORAL_METRICS_BIND_ADDRESS;
    } catch (error) {
      onError(
        `the Temporal SDK metrics exporter could not bind ${env.TEMPORAL_METRICS_BIND_ADDRESS}; SDK metrics are off`,
        error,
      );
    }
  }
  Runtime.install(options);
  return '';
}

/** Where to read the SDK exporter from this process (a wildcard bind address is read on loopback). */
export function sdkMetricsUrl(bindAddress: string): string | null {
  if (bindAddress === '') return null;
  const separator = bindAddress.lastIndexOf(':');
  const host = bindAddress.slice(0, separator).replace(/^\[|\]$/g, '');
  const port = bindAddress.slice(separator + 1);
  const reachable = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}/metrics`;
}

async function sdkMetrics(url: string | null): Promise<string> {
  if (!url) return '';
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(SDK_SCRAPE_TIMEOUT_MS) });
    return response.ok ? await response.text() : '';
  } catch {
    return '';
  }
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` on `port` (0 in tests picks a free one). Resolves null, after logging why, when the port is
 * taken: a worker without metrics still sells tickets, so it keeps running.
 */
export async function startWorkerMetricsServer(options: {
  host: string;
  port: number;
  sdkBindAddress: string;
  onError: (message: string, error: unknown) => void;
  /** METRICS_TOKEN: when set, scrapes must present it as a Bearer token (as the API's /metrics asks). */
  token?: string | undefined;
  /**
   * Answers `GET /health` (never behind the token: container health checks carry none): 200 while it says the worker
   * runs, 503 before its workers poll and once they stop. Unset, /health is not served.
   */
  healthy?: () => boolean;
}): Promise<MetricsServer | null> {
  const sdkUrl = sdkMetricsUrl(options.sdkBindAddress);
  const registries = [processRegistry(), workerRegistry];
  const expected = options.token ? digest(options.token) : null;
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method === 'GET' && path === WORKER_HEALTH_PATH && options.healthy) {
      const up = options.healthy();
      response.writeHead(up ? 200 : 503, { 'content-type': 'text/plain' }).end(up ? 'ok' : 'not running');
      return;
    }
    if (request.method !== 'GET' || path !== METRICS_PATH) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (expected) {
      const sent = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '';
      if (!timingSafeEqual(digest(sent), expected)) {
        response
          .writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' })
          .end('metrics need Authorization: Bearer <METRICS_TOKEN>');
        return;
      }
    }
    Promise.all([render(registries), sdkMetrics(sdkUrl)]).then(
      ([own, sdk]) => {
        response.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(sdk ? `${own}\n${sdk}` : own);
      },
      (error: unknown) => {
        options.onError('metrics could not be collected', error);
        response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable');
      },
    );
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => resolve());
    });
  } catch (error) {
    options.onError(`the metrics endpoint could not listen on ${options.host}:${options.port}; metrics are off`, error);
    return null;
  }
  // Scrapes are short; an idle keep-alive connection must not hold the worker's shutdown.
  server.keepAliveTimeout = 5_000;
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
