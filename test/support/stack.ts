/**
 * Access to the real stack scripts/test.ts started (Postgres, Redis, Temporal, worker, sandbox) and an API built
 * in this test process against it. Tests drive the API over HTTP (`inject`) exactly as clients do.
 */
import { randomInt } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Connection } from '@temporalio/client';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../api/app.js';
import type { ApiServices } from '../../api/services.js';
import { type Env, loadEnv, providerUrls } from '../../config/env.js';
import { createRedis } from '../../config/redis.js';
import { connectTemporalClient } from '../../config/temporal.js';
import { initOrm } from '../../entities/orm.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { watchDocumentedResponses } from './openapi-responses.js';

export interface TestApi {
  app: FastifyInstance;
  services: ApiServices;
  orm: MikroORM;
  env: Env;
  request(options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export function testEnv(overrides: Partial<Record<string, string>> = {}): Env {
  if (process.env.NODE_ENV !== 'test') {
    throw new Error('Integration tests run through `npm test`, which starts the stack they need');
  }
  return loadEnv({ ...process.env, ...overrides });
}

export async function startTestApi(overrides: Partial<Record<string, string>> = {}): Promise<TestApi> {
  const env = testEnv(overrides);
  const orm = await initOrm({
    databaseUrl: env.DATABASE_URL,
    poolMax: 5,
    connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
  });
  const redis = createRedis(env.REDIS_URL);
  const { client: temporal, connection } = await connectTemporalClient(env);
  const gatewayA = new GatewayAClient({ baseUrl: providerUrls(env).gatewayA, accessToken: env.GATEWAY_A_ACCESS_TOKEN });
  const services: ApiServices = { env, orm, redis, temporal, gatewayA };
  // TEST_API_LOG=debug shows the in-process API's logs while debugging a test.
  const app = await buildApp(services, {
    logger: process.env.TEST_API_LOG ? { level: process.env.TEST_API_LOG } : false,
    // The limits' counts are what tests assert: a jest worker's event loop starved past the production 250 ms must
    // not judge a hit in memory (a sixth sign-in request got 202 that way on a slow box). The fallback itself has
    // its own tests (rate-limit-slow-redis, public-rate-limit).
    rateLimitRedisTimeoutMs: 5_000,
  });
  // Every response a test gets through `request` must be one the API's OpenAPI documents describe.
  const checkDocumented = watchDocumentedResponses(app);
  // The public limit counts per client address in the run's one Redis, and every test file injects from 127.0.0.1: a
  // file that lifts the limit to send hundreds of public requests (a waiting-room crowd) would spend the budget every
  // other file shares and get them 429. Such a file's requests come from an address of its own instead.
  const liftsPublicLimit = Number(overrides.PUBLIC_RATE_LIMIT_PER_MINUTE ?? 0) >= 1_000;
  const ownAddress = liftsPublicLimit ? `198.18.${randomInt(256)}.${1 + randomInt(254)}` : undefined;
  await app.ready();
  return {
    app,
    services,
    orm,
    env,
    async request(options) {
      const response = await app.inject(
        ownAddress && typeof options === 'object' ? { remoteAddress: ownAddress, ...options } : options,
      );
      checkDocumented(response);
      return response;
    },
    async close() {
      await app.close();
      await (connection as Connection).close();
      redis.disconnect();
      await orm.close(true);
    },
  };
}
