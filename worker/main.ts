/** Worker process: registers every workflow and activity on the task queue; drains running tasks on SIGINT/SIGTERM. */
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { createWebhookActivities } from '../activities/webhooks.js';
import { loadEnv, webhookTaskQueue } from '../config/env.js';
import { createLogger } from '../config/logger.js';
import { temporalDataConverter } from '../config/payload-codec.js';
import { createRedis } from '../config/redis.js';
import { initOrm } from '../entities/orm.js';
import { activityMetricsInterceptor } from '../observability/activity-metrics.js';
import { temporalRuntimeLogger } from '../observability/temporal-logger.js';
import { workerTracingOptions, workflowClientInterceptors } from '../observability/temporal-tracing.js';
import { startTracing } from '../observability/tracing.js';
import { installRuntimeWithMetrics, startWorkerMetricsServer } from '../observability/worker-metrics.js';
import { startLapsedHoldSweep } from './lapsed-hold-sweep.js';
import { createProviders } from './providers.js';
import { ensureReconcilerSchedule, ensureSettlementSweepSchedule } from './schedules.js';
import { ensureSearchAttributes } from './search-attributes.js';
import { startTicketMailer } from './ticket-mailer.js';
import { startWebhookDispatcher } from './webhook-dispatcher.js';

const env = loadEnv();
const logger = createLogger({ name: 'worker', level: env.LOG_LEVEL });
// Before the clients and workers are built: they add their trace interceptors only when it runs.
const tracing = startTracing('ticketing-worker');
if (tracing)
  logger.info({ service: tracing.settings.serviceName, protocol: tracing.settings.protocol }, 'exporting traces');
/** Request ids into activity logs always; spans (activities, and workflow spans through the sink) when tracing. */
const tracingOptions = workerTracingOptions(tracing);
/** Encrypts buyer data in workflow histories; every Client and Worker of this process uses it. */
const dataConverter = temporalDataConverter(env);

const metricsProblem = (message: string, error: unknown) => logger.error({ err: error }, message);
const sdkMetricsAddress = installRuntimeWithMetrics(
  env,
  {
    shutdownSignals: ['SIGINT', 'SIGTERM'],
    // One log format: the SDK's and the native core's warnings go through pino like everything else.
    logger: temporalRuntimeLogger(logger),
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'WARN' }, forward: {} } },
  },
  metricsProblem,
);
const metricsServer =
  env.WORKER_METRICS_PORT === 0
    ? null
    : await startWorkerMetricsServer({
        host: env.WORKER_METRICS_HOST,
        port: env.WORKER_METRICS_PORT,
        sdkBindAddress: sdkMetricsAddress,
        onError: metricsProblem,
      });

const orm = await initOrm({
  databaseUrl: env.DATABASE_URL,
  poolMax: env.DATABASE_POOL_MAX,
  connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
});
const redis = createRedis(env.REDIS_URL);
const providers = createProviders(env);

const operator = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
await ensureSearchAttributes(operator, env.TEMPORAL_NAMESPACE);
await operator.close();

// A client for activities that drive other executions (organizer cancel → checkout update, webhook fan-out).
const clientConnection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
const temporal = new Client({
  connection: clientConnection,
  namespace: env.TEMPORAL_NAMESPACE,
  dataConverter,
  // An activity's calls to other executions carry its request id (and trace) on.
  interceptors: { workflow: workflowClientInterceptors(tracing) },
});
await ensureReconcilerSchedule(temporal, env);
await ensureSettlementSweepSchedule(temporal, env);

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

const workflowCode = env.WORKFLOW_BUNDLE_PATH
  ? await readFile(env.WORKFLOW_BUNDLE_PATH, 'utf8')
  : await buildWorkflowBundle();
const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS });
const worker = await Worker.create({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  dataConverter,
  workflowBundle: { code: workflowCode },
  activities: createActivities({ env, orm, redis, providers, temporal }),
  // Counts reservations, expiries, late payments and refunds from the checkout's step results (observability/).
  interceptors: { activity: [...tracingOptions.activity, activityMetricsInterceptor] },
  sinks: tracingOptions.sinks,
  shutdownGraceTime: '10 seconds',
  maxCachedWorkflows: env.WORKER_MAX_CACHED_WORKFLOWS,
});
// Webhook deliveries and the dispatcher on their own queue and slots: however slow third-party receivers are, they
// fill these slots, never the checkouts'. The main worker keeps the webhook activities for deliveries started on its
// queue before they had their own.
const webhookWorker = await Worker.create({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: webhookTaskQueue(env),
  dataConverter,
  workflowBundle: { code: workflowCode },
  activities: createWebhookActivities({ env, orm, redis, providers, temporal }),
  interceptors: { activity: tracingOptions.activity },
  sinks: tracingOptions.sinks,
  shutdownGraceTime: '10 seconds',
  maxConcurrentActivityTaskExecutions: env.WEBHOOK_WORKER_MAX_ACTIVITIES,
  maxConcurrentWorkflowTaskExecutions: env.WEBHOOK_WORKER_MAX_WORKFLOW_TASKS,
  maxCachedWorkflows: Math.max(env.WORKER_MAX_CACHED_WORKFLOWS, env.WEBHOOK_WORKER_MAX_WORKFLOW_TASKS),
});

/** The workers stop together: one that fails shuts the other down, so the process exits and is restarted whole. */
async function runWorkers(workers: Worker[]): Promise<void> {
  const runs = workers.map((each) => each.run());
  try {
    await Promise.all(runs);
  } catch (error) {
    for (const each of workers) if (each.getState() === 'RUNNING') each.shutdown();
    await Promise.allSettled(runs);
    throw error;
  }
}

logger.info(
  {
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    webhookTaskQueue: webhookTaskQueue(env),
    namespace: env.TEMPORAL_NAMESPACE,
    metricsPort: metricsServer?.port ?? null,
  },
  'worker started',
);
await startWebhookDispatcher(temporal, env);
await startTicketMailer(temporal, env);
const lapsedHoldSweep = env.LAPSED_HOLD_SWEEP_ENABLED
  ? startLapsedHoldSweep({ orm, logger, intervalMs: env.LAPSED_HOLD_SWEEP_MS, batchSize: env.LAPSED_HOLD_SWEEP_BATCH })
  : null;
try {
  await runWorkers([worker, webhookWorker]);
} finally {
  await lapsedHoldSweep?.stop();
  await metricsServer?.close();
  await connection.close();
  await clientConnection.close();
  providers.close();
  redis.disconnect();
  await orm.close(true);
  // Last, so the spans of the tasks drained above are exported too.
  await tracing?.shutdown();
  logger.info('worker stopped');
}
