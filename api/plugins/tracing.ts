import { FastifyOtelInstrumentation } from '@fastify/otel';
import { ATTR_URL_PATH } from '@opentelemetry/semantic-conventions';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Tracing } from '../../observability/tracing.js';

/** Probes and scrapes arrive every few seconds and say nothing about a buyer's request. */
const UNTRACED_PATHS = /^\/(health|metrics)(\/|\?|$)/;

/**
 * A server span per request (`request`, with the route template, method, status and request id, never the concrete
 * URL) and child spans for its hooks and handler, under the caller's `traceparent` when it sends one. Registered only
 * when the process traces.
 */
async function tracingPlugin(app: FastifyInstance, options: { tracing: Tracing }): Promise<void> {
  const instrumentation = new FastifyOtelInstrumentation({
    ignorePaths: (route) => UNTRACED_PATHS.test(route.url ?? ''),
    requestHook: (span, request) => {
      // Tokens and codes travel in paths and query strings (`/tickets/:code/resend`, `?token=`): the span keeps the
      // route template in place of the concrete URL.
      span.setAttribute(ATTR_URL_PATH, request.routeOptions.url ?? 'unmatched');
      // The request id leads from a trace to the request's log lines (`reqId`), and back.
      span.setAttribute('ticketing.request_id', request.id);
    },
  });
  instrumentation.setTracerProvider(options.tracing.provider);
  await app.register(instrumentation.plugin());
}

export const fastifyTracingPlugin = fp(tracingPlugin, { name: 'tracing' });
