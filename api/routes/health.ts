import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { publicAccess } from '../http/route-access.js';
import type { ApiServices } from '../services.js';

const HealthSchema = z.object({
  status: z.enum(['ok', 'degraded']),
  checks: z.record(z.string(), z.enum(['ok', 'down'])),
});

async function probe(check: () => Promise<unknown>): Promise<'ok' | 'down'> {
  try {
    await Promise.race([check(), new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000))]);
    return 'ok';
  } catch {
    return 'down';
  }
}

/** Liveness (the process answers) and readiness (its dependencies answer), for orchestrators and the dev runner. */
export const healthRoutes: FastifyPluginAsyncZod<ApiServices> = async (app, services) => {
  app.get('/health/live', { config: publicAccess(), schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get(
    '/health/ready',
    { config: publicAccess(), schema: { hide: true, response: { 200: HealthSchema, 503: HealthSchema } } },
    async (_request, reply) => {
      const checks = {
        postgres: await probe(() => services.orm.em.getConnection().execute('select 1')),
        redis: await probe(() => services.redis.ping()),
        temporal: await probe(() => services.temporal.workflowService.getSystemInfo({})),
      };
      const healthy = Object.values(checks).every((state) => state === 'ok');
      return reply.status(healthy ? 200 : 503).send({ status: healthy ? 'ok' : 'degraded', checks });
    },
  );
};
