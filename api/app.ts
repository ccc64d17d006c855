import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { createLogger } from '../config/logger.js';
import { type RateLimitOverrides, rateLimitsFrom } from '../config/rate-limits.js';
import { activeTracing } from '../observability/tracing.js';
import { authPlugin } from './plugins/auth.js';
import { controlCharactersPlugin } from './plugins/control-characters.js';
import { customerAuthPlugin } from './plugins/customer-auth.js';
import { errorsPlugin } from './plugins/errors.js';
import { idempotencyPlugin } from './plugins/idempotency.js';
import { loadSheddingPlugin } from './plugins/load-shedding.js';
import { metricsPlugin } from './plugins/metrics.js';
import { registerOpenApi } from './plugins/openapi.js';
import { organizerRateLimitPlugin, publicRateLimitPlugin, rateLimitersPlugin } from './plugins/rate-limit.js';
import { requestContextPlugin } from './plugins/request-context.js';
import { fastifyTracingPlugin } from './plugins/tracing.js';
import { waitingRoomPlugin } from './plugins/waiting-room.js';
import { codecRoutes } from './routes/codec.js';
import { enterpriseExchangeRoutes } from './routes/customer/enterprise-exchange.js';
import { devicePageRoutes } from './routes/device-page.js';
import { healthRoutes } from './routes/health.js';
import { invitationPageRoutes } from './routes/invitation-page.js';
import { publicRoutes } from './routes/public/index.js';
import { signUpPageRoutes } from './routes/sign-up-page.js';
import { organizerRoutes } from './routes/v1/index.js';
import { wellKnownRoutes } from './routes/well-known.js';
import type { ApiServices } from './services.js';

export const API_V1_PREFIX = '/api/v1';
export const PUBLIC_PREFIX = '/api/public';
export const B2B_API_VERSION = '1.16.1';
export const PUBLIC_API_VERSION = '0.9.0';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{8,128}$/;

/** Builds the whole HTTP application. Tests build it too and drive it with `inject` or a real port. */
export async function buildApp(
  services: ApiServices,
  options: {
    /** Fastify's own logger settings (tests: `false`, or a level); unset, the process's one format (createLogger). */
    logger?: FastifyServerOptions['logger'];
    /** The process's logger (api/main.ts passes its own); its request lines then share every other line's format. */
    loggerInstance?: Logger;
    /** Limits other than the configured ones (config/rate-limits.ts), e.g. small ones in tests. */
    rateLimits?: RateLimitOverrides;
    /** Longest wait for Redis on a limit check before counting in memory (default RATE_LIMIT_REDIS_TIMEOUT_MS). */
    rateLimitRedisTimeoutMs?: number;
  } = {},
): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.logger !== undefined
      ? { logger: options.logger }
      : {
          loggerInstance: (options.loggerInstance ??
            createLogger({ name: 'api', level: services.env.LOG_LEVEL })) as FastifyBaseLogger,
        }),
    bodyLimit: services.env.MAX_BODY_BYTES,
    trustProxy: services.env.TRUST_PROXY,
    requestIdHeader: false,
    // A caller's own request id is kept (so logs correlate across systems) when it looks like one.
    genReqId: (request) => {
      const sent = request.headers['x-request-id'];
      return typeof sent === 'string' && REQUEST_ID_PATTERN.test(sent) ? sent : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true },
    forceCloseConnections: 'idle',
    // Fastify's default of 10 s per plugin failed a start on a box with no CPU to spare (the docs plugin loading its
    // modules while both simulations ran, in CI): a slow start is better than a failed one, and a plugin that truly
    // hangs still fails it.
    pluginTimeout: 60_000,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  // First, so every later hook and handler runs inside the request's context and, when tracing, its server span.
  await app.register(requestContextPlugin);
  const tracing = activeTracing();
  if (tracing) await app.register(fastifyTracingPlugin, { tracing });
  await app.register(errorsPlugin);
  // No route takes text: without Fastify's default text/plain parser such a body is 415 UNSUPPORTED_MEDIA_TYPE
  // (send application/json) instead of a string that fails validation as 422.
  app.removeContentTypeParser('text/plain');
  // Counts every answer, shed ones included; then shedding, before any other hook spends work on a request.
  await app.register(metricsPlugin, { orm: services.orm, token: services.env.METRICS_TOKEN });
  await app.register(loadSheddingPlugin, {
    maxEventLoopDelayMs: services.env.LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS,
    maxEventLoopUtilization: services.env.LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION,
    sampleIntervalMs: services.env.LOAD_SHED_SAMPLE_INTERVAL_MS,
    retryAfterSeconds: services.env.LOAD_SHED_RETRY_AFTER_SECONDS,
  });
  await app.register(waitingRoomPlugin, {
    redis: services.redis,
    orm: services.orm,
    turnWindowMs: services.env.WAITING_ROOM_TURN_MS,
    ...(services.env.WAITING_ROOM_REQUESTS_PER_PROCESS === undefined
      ? {}
      : { roomRequests: services.env.WAITING_ROOM_REQUESTS_PER_PROCESS }),
    shedEventLoopUtilization: services.env.LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION,
    shedEventLoopDelayMs: services.env.LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS,
    temporal: { client: services.temporal, taskQueue: services.env.TEMPORAL_TASK_QUEUE },
  });
  await app.register(controlCharactersPlugin);
  await app.register(cookie);
  await app.register(authPlugin, services);
  await app.register(customerAuthPlugin);
  await app.register(rateLimitersPlugin, {
    redis: services.redis,
    limits: rateLimitsFrom(services.env, options.rateLimits),
    ...(options.rateLimitRedisTimeoutMs === undefined ? {} : { redisTimeoutMs: options.rateLimitRedisTimeoutMs }),
  });
  // After both authentication hooks (they resolve the key), before idempotency replays and every route.
  await app.register(organizerRateLimitPlugin);
  await app.register(idempotencyPlugin, services);

  await app.register(healthRoutes, services);
  await app.register(wellKnownRoutes, services);
  // Outside /api and the OpenAPI documents: the Temporal codec endpoint for operators (buyer data in histories).
  await app.register(codecRoutes, services);
  // Outside /api: the browser pages of organizer sign-up and device login (HTML, cookies, CSRF), in no API document.
  await app.register(devicePageRoutes, { services });
  await app.register(signUpPageRoutes, { services });
  await app.register(invitationPageRoutes, { services });

  await app.register(async (v1) => {
    await registerOpenApi(v1, {
      prefix: API_V1_PREFIX,
      title: 'Ticketing organizer API',
      version: B2B_API_VERSION,
      description: 'Organizer (B2B) API and headless customer purchase endpoints.',
      securitySchemes: true,
      surface: 'organizer',
    });
    await v1.register(organizerRoutes, { prefix: API_V1_PREFIX, services });
    // Contract 4.1 puts the enterprise exchange at /api/customer-auth, outside /api/v1; it is documented here, with
    // the other customer operations, under a server of its own.
    await v1.register(enterpriseExchangeRoutes, { services });
  });

  await app.register(async (publicApi) => {
    // First in the scope, so every public route (docs included) is behind the per-IP limit (contract 4.18, 8).
    await publicApi.register(publicRateLimitPlugin);
    await registerOpenApi(publicApi, {
      prefix: PUBLIC_PREFIX,
      title: 'Ticketing public storefront API',
      version: PUBLIC_API_VERSION,
      description: 'Public catalog, availability and anonymous orders. No API key; strict per-IP rate limit.',
      securitySchemes: false,
      surface: 'public',
    });
    await publicApi.register(publicRoutes, { prefix: PUBLIC_PREFIX, services });
  });

  return app;
}
