import proto from '@temporalio/proto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { withDeadline } from '../http/deadline.js';
import { publicAccess } from '../http/route-access.js';
import type { ApiServices } from '../services.js';

const HealthSchema = z.object({
  status: z.enum(['ok', 'degraded']),
  checks: z.record(z.string(), z.enum(['ok', 'down'])),
});

async function probe(check: () => Promise<unknown>, timeoutMs = 2000): Promise<'ok' | 'down'> {
  try {
    await withDeadline(check(), timeoutMs, 'timeout');
    return 'ok';
  } catch {
    return 'down';
  }
}

/**
 * A worker polls the task queue: without one, every checkout the API starts waits (Temporal keeps the task, so
 * nothing is lost, but no purchase completes). Temporal lists pollers seen in the last few minutes.
 */
async function workerPolls(services: ApiServices): Promise<void> {
  const { enums } = proto.temporal.api;
  // The SDK's pollers announce a build id, so only the enhanced mode (all versions) lists them.
  const described = await services.temporal.workflowService.describeTaskQueue({
    namespace: services.env.TEMPORAL_NAMESPACE,
    taskQueue: { name: services.env.TEMPORAL_TASK_QUEUE },
    apiMode: enums.v1.DescribeTaskQueueMode.DESCRIBE_TASK_QUEUE_MODE_ENHANCED,
    versions: { allActive: true, unversioned: true },
    taskQueueTypes: [enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW],
    reportPollers: true,
  });
  const pollers = Object.values(described.versionsInfo ?? {}).flatMap((version) =>
    Object.values(version.typesInfo ?? {}).flatMap((info) => info.pollers ?? []),
  );
  if (pollers.length === 0) throw new Error('no worker polls the task queue');
}

/**
 * Liveness (the process answers) and readiness (its dependencies answer and a worker polls its task queue), for
 * orchestrators and the dev runner.
 */
export const healthRoutes: FastifyPluginAsyncZod<ApiServices> = async (app, services) => {
  app.get('/health/live', { config: { ...publicAccess(), neverShed: true }, schema: { hide: true } }, async () => ({
    status: 'ok',
  }));

  app.get(
    '/health/ready',
    {
      config: { ...publicAccess(), neverShed: true },
      schema: { hide: true, response: { 200: HealthSchema, 503: HealthSchema } },
    },
    async (_request, reply) => {
      const checks = {
        postgres: await probe(() => services.orm.em.getConnection().execute('select 1')),
        redis: await probe(() => services.redis.ping()),
        temporal: await probe(() => services.temporal.workflowService.getSystemInfo({})),
        worker: await probe(() => workerPolls(services)),
      };
      const healthy = Object.values(checks).every((state) => state === 'ok');
      return reply.status(healthy ? 200 : 503).send({ status: healthy ? 'ok' : 'degraded', checks });
    },
  );
};
