/** Worker process: registers every workflow and activity on the task queue; drains running tasks on SIGINT/SIGTERM. */
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
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

/** The workflow bundle, built in a child process so that webpack's peak memory is not the worker's (see the script). */
async function buildWorkflowBundle(): Promise<string> {
  const target = join(tmpdir(), `ticketing-workflows-${process.pid}.js`);
  const script = fileURLToPath(new URL('./build-workflow-bundle.ts', import.meta.url));
  await promisify(execFile)(process.execPath, ['--import', 'tsx', script, target], {
    env: { ...process.env, NODE_OPTIONS: '' },
    maxBuffer: 16 * 1024 * 1024,
  });
  try {
    return await readFile(target, 'utf8');
  } finally {
    await rm(target, { force: true });
  }
}

const workflowCode = await buildWorkflowBundle();
const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS });
const worker = await Worker.create({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  workflowBundle: { code: workflowCode },
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
