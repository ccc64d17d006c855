/**
 * A worker for one test's private task queue, wired for metrics as worker/main.ts is (the Runtime's Prometheus
 * exporter, the activity interceptor, the /metrics endpoint on WORKER_METRICS_PORT), so a test can count exactly the
 * events of its own purchases: the shared worker's counters also move with every other suite running at the time.
 * It runs no Schedules and no webhook dispatcher (those belong to the shared worker). Prints `ready` once polling.
 */
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { loadEnv } from '../../config/env.js';
import { temporalDataConverter } from '../../config/payload-codec.js';
import { createRedis } from '../../config/redis.js';
import { initOrm } from '../../entities/orm.js';
import { activityMetricsInterceptor } from '../../observability/activity-metrics.js';
import { installRuntimeWithMetrics, startWorkerMetricsServer } from '../../observability/worker-metrics.js';
import { createProviderWorker } from '../../worker/provider-worker.js';
import { createProviders } from '../../worker/providers.js';

const env = loadEnv();
const fail = (message: string, error: unknown) => {
  console.error(message, error);
  process.exit(1);
};
const sdkMetricsAddress = installRuntimeWithMetrics(env, {}, fail);
const metrics = await startWorkerMetricsServer({
  host: '127.0.0.1',
  port: env.WORKER_METRICS_PORT,
  sdkBindAddress: sdkMetricsAddress,
  onError: fail,
});

const providers = createProviders(env);
const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: 3 });
const redis = createRedis(env.REDIS_URL);
const dataConverter = temporalDataConverter(env);
const clientConnection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
const temporal = new Client({ connection: clientConnection, namespace: env.TEMPORAL_NAMESPACE, dataConverter });
const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS });
const activities = createActivities({ env, orm, redis, providers, temporal });
const worker = await Worker.create({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  dataConverter,
  workflowsPath: fileURLToPath(new URL('../../workflows/index.ts', import.meta.url)),
  activities,
  interceptors: { activity: [activityMetricsInterceptor] },
  shutdownGraceTime: '2 seconds',
});
const providerWorker = await createProviderWorker({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  dataConverter,
  activities,
  activityInterceptors: [activityMetricsInterceptor],
});
const running = Promise.all([worker.run(), providerWorker.run()]);
console.log('ready');
try {
  await running;
} finally {
  await metrics?.close();
  await connection.close();
  await clientConnection.close();
  providers.close();
  redis.disconnect();
  await orm.close(true);
}
