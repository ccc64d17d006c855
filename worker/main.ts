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
import { loadEnv, providerTaskQueue, webhookTaskQueue } from '../config/env.js';
import { createLogger } from '../config/logger.js';
import { temporalDataConverter } from '../config/payload-codec.js';
import { createRedis } from '../config/redis.js';
import { temporalConnectionOptions } from '../config/temporal.js';
import { workerDeploymentOptionsOf } from '../config/worker-versioning.js';
import { initOrm } from '../entities/orm.js';
import { activityMetricsInterceptor } from '../observability/activity-metrics.js';
import { temporalRuntimeLogger } from '../observability/temporal-logger.js';
import { workerTracingOptions, workflowClientInterceptors } from '../observability/temporal-tracing.js';
import { startTracing } from '../observability/tracing.js';
import { installRuntimeWithMetrics, startWorkerMetricsServer } from '../observability/worker-metrics.js';
import { announceDeploymentVersion } from './deployment-version.js';
import { startLapsedHoldSweep } from './lapsed-hold-sweep.js';
import { createProviderWorker } from './provider-worker.js';
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
/** The workers, once created: the health path answers 200 only while both run. */
const running: { workers: Worker[] } = { workers: [] };
const metricsServer =
  env.WORKER_METRICS_PORT === 0
    ? null
    : await startWorkerMetricsServer({
        host: env.WORKER_METRICS_HOST,
        port: env.WORKER_METRICS_PORT,
        sdkBindAddress: sdkMetricsAddress,
        onError: metricsProblem,
        token: env.METRICS_TOKEN,
        healthy: () => running.workers.length > 0 && running.workers.every((each) => each.getState() === 'RUNNING'),
      });

const orm = await initOrm({
  databaseUrl: env.DATABASE_URL,
  poolMax: env.DATABASE_POOL_MAX,
  connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
});
const redis = createRedis(env.REDIS_URL);
const providers = createProviders(env);

const operator = await Connection.connect(temporalConnectionOptions(env));
await ensureSearchAttributes(operator, env.TEMPORAL_NAMESPACE);
await operator.close();

// A client for activities that drive other executions (organizer cancel → checkout update, webhook fan-out).
const clientConnection = await Connection.connect(temporalConnectionOptions(env));
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
  // From source it runs through tsx; compiled (dist/), it is plain JavaScript.
  const compiled = !import.meta.url.endsWith('.ts');
  const script = fileURLToPath(new URL(`./build-workflow-bundle.${compiled ? 'js' : 'ts'}`, import.meta.url));
  await promisify(execFile)(process.execPath, [...(compiled ? [] : ['--import', 'tsx']), script, target], {
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
const connection = await NativeConnection.connect(temporalConnectionOptions(env));
const activities = createActivities({ env, orm, redis, providers, temporal });
/** With WORKER_VERSIONING, every worker of the process polls as this release's deployment version. */
const workerDeploymentOptions = workerDeploymentOptionsOf(env);
const worker = await Worker.create({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  dataConverter,
  workflowBundle: { code: workflowCode },
  activities,
  // Counts reservations, expiries, late payments and refunds from the checkout's step results (observability/).
  interceptors: { activity: [...tracingOptions.activity, activityMetricsInterceptor] },
  sinks: tracingOptions.sinks,
  shutdownGraceTime: '10 seconds',
  maxCachedWorkflows: env.WORKER_MAX_CACHED_WORKFLOWS,
  workerDeploymentOptions,
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
  workerDeploymentOptions,
});

// Refunds, mass-refund pages and membership polls on their own rate-limited queue (workflows/local-steps.ts
// onProviderQueue): the server spaces their starts to the providers' limits across every replica. The main worker keeps
// these activities too, for the ones scheduled on its queue before they moved.
const providerWorker = await createProviderWorker({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  dataConverter,
  activities,
  activityInterceptors: [...tracingOptions.activity, activityMetricsInterceptor],
  activitiesPerSecond: env.PROVIDER_ACTIVITIES_PER_SECOND,
  maxConcurrentActivities: env.PROVIDER_WORKER_MAX_ACTIVITIES,
  workerDeploymentOptions,
});

/** The workers stop together: one that fails shuts the other down, so the process exits and is restarted whole. */
async function runWorkers(workers: Worker[]): Promise<void> {
  const runs = workers.map((each) => each.run());
  running.workers = workers;
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
    providerTaskQueue: providerTaskQueue(env),
    namespace: env.TEMPORAL_NAMESPACE,
    metricsPort: metricsServer?.port ?? null,
    deploymentVersion: workerDeploymentOptions ? workerDeploymentOptions.version : null,
  },
  'worker started',
);
await startWebhookDispatcher(temporal, env);
await startTicketMailer(temporal, env);
const lapsedHoldSweep = env.LAPSED_HOLD_SWEEP_ENABLED
  ? startLapsedHoldSweep({ orm, logger, intervalMs: env.LAPSED_HOLD_SWEEP_MS, batchSize: env.LAPSED_HOLD_SWEEP_BATCH })
  : null;
let workersStopped = false;
const workersRun = runWorkers([worker, webhookWorker, providerWorker]).finally(() => {
  workersStopped = true;
});
// Once polling: the version exists on the server only after its first polls.
announceDeploymentVersion({
  client: temporal,
  env,
  logger,
  stopped: () => workersStopped,
}).catch((error: unknown) => logger.error({ err: error }, 'could not announce the deployment version'));
try {
  await workersRun;
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
