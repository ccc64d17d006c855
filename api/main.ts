/** API process: all three HTTP surfaces on one port. Stops accepting, drains in-flight requests, then closes clients. */
import { loadEnv, providerUrls } from '../config/env.js';
import { createLogger } from '../config/logger.js';
import { createRedis } from '../config/redis.js';
import { connectTemporalClient } from '../config/temporal.js';
import { initOrm } from '../entities/orm.js';
import { GatewayAClient } from '../integrations/gateway-a/client.js';
import { startTracing } from '../observability/tracing.js';
import { buildApp } from './app.js';
import { connectionCapacity } from './services/waiting-room-watch.js';

const env = loadEnv();
const logger = createLogger({ name: 'api', level: env.LOG_LEVEL });
// Before the Temporal client and the app are built: both add their trace instrumentation only when it runs.
const tracing = startTracing('ticketing-api');
if (tracing)
  logger.info({ service: tracing.settings.serviceName, protocol: tracing.settings.protocol }, 'exporting traces');

const orm = await initOrm({
  databaseUrl: env.DATABASE_URL,
  poolMax: env.DATABASE_POOL_MAX,
  connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
});
const redis = createRedis(env.REDIS_URL);
const { client: temporal, connection } = await connectTemporalClient(env);
const gatewayA = new GatewayAClient({ baseUrl: providerUrls(env).gatewayA, accessToken: env.GATEWAY_A_ACCESS_TOKEN });
const app = await buildApp({ env, orm, redis, temporal, gatewayA }, { loggerInstance: logger });

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  logger.info({ signal }, 'shutting down');
  const force = setTimeout(() => {
    logger.error('graceful shutdown timed out; exiting');
    process.exit(1);
  }, 10_000);
  force.unref();
  try {
    await app.close();
    await connection.close();
    redis.disconnect();
    await orm.close(true);
    // Last, so the spans of the requests drained above are exported too.
    await tracing?.shutdown();
    logger.info('stopped');
  } finally {
    clearTimeout(force);
  }
}
process.once('SIGINT', () => void shutdown('SIGINT'));
process.once('SIGTERM', () => void shutdown('SIGTERM'));

// A crowd's connections cost heap whether or not they carry a request: bounded, so the process never runs out of it.
app.server.maxConnections = env.API_MAX_CONNECTIONS ?? connectionCapacity();
await app.listen({ host: env.API_HOST, port: env.API_PORT });
logger.info({ url: `http://${env.API_HOST}:${env.API_PORT}` }, 'api listening');
