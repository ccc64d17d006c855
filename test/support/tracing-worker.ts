/**
 * A worker for one test's private task queue, wired for traces and request ids as worker/main.ts is: tracing started
 * from the environment (OTEL_EXPORTER_OTLP_ENDPOINT), the workflow interceptor modules, the activity interceptors,
 * the span sink, the client interceptors of the activities' Temporal client, and the SDK's logs through pino on
 * stdout (JSON lines the test reads). It runs no Schedules and no webhook dispatcher (those belong to the shared
 * worker). Prints a `ready` line once polling; flushes its spans when it stops.
 */
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { loadEnv } from '../../config/env.js';
import { createLogger } from '../../config/logger.js';
import { temporalDataConverter } from '../../config/payload-codec.js';
import { createRedis } from '../../config/redis.js';
import { initOrm } from '../../entities/orm.js';
import { temporalRuntimeLogger } from '../../observability/temporal-logger.js';
import {
  WORKFLOW_INTERCEPTOR_MODULES,
  workerTracingOptions,
  workflowClientInterceptors,
} from '../../observability/temporal-tracing.js';
import { startTracing } from '../../observability/tracing.js';
import { createProviderWorker } from '../../worker/provider-worker.js';
import { createProviders } from '../../worker/providers.js';

const env = loadEnv();
const logger = createLogger({ name: 'worker', level: env.LOG_LEVEL });
const tracing = startTracing('ticketing-worker');
const tracingOptions = workerTracingOptions(tracing);
Runtime.install({
  logger: temporalRuntimeLogger(logger),
  telemetryOptions: { logging: { filter: { core: 'WARN', other: 'WARN' }, forward: {} } },
});

const providers = createProviders(env);
const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: 3 });
const redis = createRedis(env.REDIS_URL);
const dataConverter = temporalDataConverter(env);
const clientConnection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
const temporal = new Client({
  connection: clientConnection,
  namespace: env.TEMPORAL_NAMESPACE,
  dataConverter,
  interceptors: { workflow: workflowClientInterceptors(tracing) },
});
const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS });
const activities = createActivities({ env, orm, redis, providers, temporal });
const worker = await Worker.create({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  dataConverter,
  workflowsPath: fileURLToPath(new URL('../../workflows/index.ts', import.meta.url)),
  interceptors: { activity: tracingOptions.activity, workflowModules: WORKFLOW_INTERCEPTOR_MODULES },
  sinks: tracingOptions.sinks,
  activities,
  shutdownGraceTime: '2 seconds',
});
const providerWorker = await createProviderWorker({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  dataConverter,
  activities,
  activityInterceptors: tracingOptions.activity,
});
const running = Promise.all([worker.run(), providerWorker.run()]);
logger.info({ tracing: tracing !== null }, 'ready');
try {
  await running;
} finally {
  await connection.close();
  await clientConnection.close();
  providers.close();
  redis.disconnect();
  await orm.close(true);
  await tracing?.shutdown();
}
