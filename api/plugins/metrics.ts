/**
 * `GET /metrics` of the API (Prometheus text) and the HTTP metrics behind it: requests and latency by method, route
 * template and status. The route label is the template Fastify matched (`/api/v1/sales/:saleId`), `unmatched` for
 * unknown paths: never the raw URL, which would carry ids and grow without bound. Scrapes of /metrics are not counted.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../../domain/errors.js';
import {
  type ApiMetrics,
  apiBusinessRegistry,
  createApiMetrics,
  labelMethod,
  METRICS_CONTENT_TYPE,
  METRICS_PATH,
  processRegistry,
  render,
} from '../../observability/metrics.js';
import { publicAccess } from '../http/route-access.js';

declare module 'fastify' {
  interface FastifyInstance {
    apiMetrics: ApiMetrics;
  }
}

export interface MetricsPluginOptions {
  /** Feeds the stock gauge (units left per ticket type on sale). */
  orm: MikroORM;
  /** METRICS_TOKEN: when set, scrapes must present it as a Bearer token. */
  token?: string | undefined;
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

export const metricsPlugin = fp(
  async (app: FastifyInstance, options: MetricsPluginOptions) => {
    const metrics = createApiMetrics({
      orm: options.orm,
      onStockError: (error) => app.log.warn({ err: error }, 'stock gauge query failed'),
    });
    app.decorate('apiMetrics', metrics);
    // Created now, not at the first scrape, so event-loop lag and GC are measured from the start.
    const processMetrics = processRegistry();

    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url;
      if (route === METRICS_PATH) return;
      const labels = {
        method: labelMethod(request.method),
        route: route ?? 'unmatched',
        status_code: String(reply.statusCode),
      };
      metrics.requests.inc(labels);
      metrics.duration.observe(labels, reply.elapsedTime / 1000);
    });

    const expected = options.token ? digest(options.token) : null;
    app.get(
      METRICS_PATH,
      { config: { ...publicAccess(), neverShed: true }, schema: { hide: true } },
      async (request, reply) => {
        if (expected) {
          const sent = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '';
          if (!timingSafeEqual(digest(sent), expected)) {
            throw new AppError('UNAUTHENTICATED', 'Metrics need Authorization: Bearer <METRICS_TOKEN>');
          }
        }
        const text = await render([processMetrics, metrics.registry, apiBusinessRegistry]);
        return reply.header('content-type', METRICS_CONTENT_TYPE).header('cache-control', 'no-store').send(text);
      },
    );
  },
  { name: 'metrics' },
);
