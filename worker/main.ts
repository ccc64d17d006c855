/** Worker process: registers every workflow and activity on the task queue; drains running tasks on SIGINT/SIGTERM. */
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { loadEnv } from '../config/env.js';
import { createLogger } from '../config/logger.js';
import { createRedis } from '../config/redis.js';
import { initOrm } from '../entities/orm.js';
import { createProviders } from './providers.js';
import { ensureSearchAttributes } from './search-attributes.js';
import { startWebhookDispatcher } from './webhook-dispatcher.js';

const env = loadEnv();
const logger = createLogger({ name: 'worker', level: env.LOG_LEVEL });

Runtime.install({ shutdownSignals: ['SIGINT', 'SIGTERM'] });

const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: env.DATABASE_POOL_MAX });
const redis = createRedis(env.REDIS_URL);
const providers = createProviders(env);

const operator = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
await ensureSearchAttributes(operator, env.TEMPORAL_NAMESPACE);
await operator.close();

// A client for activities that drive other executions (organizer cancel → checkout update, webhook fan-out).
const clientConnection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
const temporal = new Client({ connection: clientConnection, namespace: env.TEMPORAL_NAMESPACE });

const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS });
const worker = await Worker.create({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  workflowsPath: fileURLToPath(new URL('../workflows/index.ts', import.meta.url)),
  activities: createActivities({ env, orm, redis, providers, temporal }),
  shutdownGraceTime: '10 seconds',
  maxCachedWorkflows: env.WORKER_MAX_CACHED_WORKFLOWS,
});

logger.info({ taskQueue: env.TEMPORAL_TASK_QUEUE, namespace: env.TEMPORAL_NAMESPACE }, 'worker started');
await startWebhookDispatcher(temporal, env);
try {
  await worker.run();
} finally {
  await connection.close();
  await clientConnection.close();
  providers.close();
  redis.disconnect();
  await orm.close(true);
  logger.info('worker stopped');
}
