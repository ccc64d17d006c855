/**
 * A worker for one test's private task queue whose providers fail on purpose, so a test can prove behaviour under a
 * provider outage without touching the shared sandbox (its fault switch is global and would take the gateway down for
 * every other test running against the same stack). Run as a child process by `startFlakyWorker`:
 *
 * - FLAKY_GATEWAY_A_FAILURES=n: the first n gateway A calls fail like an unavailable gateway (503), then all succeed;
 * - FLAKY_GATEWAY_B_DOWN=true: every gateway B status read fails.
 *
 * Prints `ready` once polling.
 */
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import type { Providers } from '../../activities/ports.js';
import { loadEnv } from '../../config/env.js';
import { temporalDataConverter } from '../../config/payload-codec.js';
import { createRedis } from '../../config/redis.js';
import { initOrm } from '../../entities/orm.js';
import { ProviderError } from '../../integrations/errors.js';
import { createProviderWorker } from '../../worker/provider-worker.js';
import { createProviders } from '../../worker/providers.js';

const env = loadEnv();
let gatewayAFailures = Number(process.env.FLAKY_GATEWAY_A_FAILURES ?? 0);
const gatewayBDown = process.env.FLAKY_GATEWAY_B_DOWN === 'true';

const outage = (provider: 'gateway-a' | 'gateway-b') =>
  new ProviderError({
    provider,
    status: 503,
    retryable: true,
    message: `${provider} is unavailable (simulated outage)`,
  });

const real = createProviders(env);
const failingA =
  <T extends unknown[], R>(call: (...args: T) => Promise<R>) =>
  async (...args: T): Promise<R> => {
    if (gatewayAFailures > 0) {
      gatewayAFailures -= 1;
      console.log('gateway-a call failed on purpose');
      throw outage('gateway-a');
    }
    return call(...args);
  };
const providers: Providers = {
  ...real,
  gatewayA: {
    ...real.gatewayA,
    getPayment: failingA(real.gatewayA.getPayment),
    refund: failingA(real.gatewayA.refund),
  },
  gatewayB: {
    ...real.gatewayB,
    paymentStatus: gatewayBDown ? async () => Promise.reject(outage('gateway-b')) : real.gatewayB.paymentStatus,
  },
};

const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: 3 });
const redis = createRedis(env.REDIS_URL);
const clientConnection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
const dataConverter = temporalDataConverter(env);
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
  shutdownGraceTime: '2 seconds',
});
const providerWorker = await createProviderWorker({
  connection,
  namespace: env.TEMPORAL_NAMESPACE,
  taskQueue: env.TEMPORAL_TASK_QUEUE,
  dataConverter,
  activities,
});
process.once('SIGTERM', () => {
  worker.shutdown();
  providerWorker.shutdown();
});
const running = Promise.all([worker.run(), providerWorker.run()]);
console.log('ready');
try {
  await running;
} finally {
  await connection.close();
  await clientConnection.close();
  real.close();
  redis.disconnect();
  await orm.close(true);
}
