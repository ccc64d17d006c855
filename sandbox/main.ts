/**
 * Sandbox entry: `npm run sandbox` (or `npx tsx sandbox/main.ts`). Everything comes from the environment with dev
 * defaults; see sandbox/README.md for the variables.
 */
import type { LoggerOptions } from 'pino';
import { createLogger } from '../config/logger.js';
import { secretsFromEnv } from './config.js';
import { startSandbox } from './server.js';

const env = process.env;

function port(name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    throw new Error(`${name} must be a port number (0-65535), got ${raw}`);
  }
  return value;
}

// The platform's one log format (config/logger.ts), plus the gateways' own signature headers.
const logger = createLogger({
  name: 'sandbox',
  level: (env.LOG_LEVEL as LoggerOptions['level']) ?? 'info',
  redact: ['req.headers["x-signature"]', 'req.headers["x-bold-signature"]'],
});

const sandbox = await startSandbox({
  httpPort: port('SANDBOX_PORT', 4010),
  smtpPort: port('SANDBOX_SMTP_PORT', 2525),
  host: env.SANDBOX_HOST ?? '127.0.0.1',
  publicUrl: env.SANDBOX_PUBLIC_URL || undefined,
  gatewayBWebhookUrl:
    env.GATEWAY_B_WEBHOOK_URL === undefined
      ? 'http://127.0.0.1:3000/api/v1/webhooks/gateway-b'
      : env.GATEWAY_B_WEBHOOK_URL || null,
  secrets: secretsFromEnv(env),
  slowDelayMs: env.SANDBOX_SLOW_MS ? Number(env.SANDBOX_SLOW_MS) : undefined,
  logger,
});

logger.info(
  {
    httpUrl: sandbox.httpUrl,
    smtpPort: sandbox.smtpPort,
    gatewayA: `${sandbox.httpUrl}/gateway-a`,
    gatewayB: `${sandbox.httpUrl}/gateway-b`,
    seatmap: `${sandbox.httpUrl}/seatmap`,
    control: `${sandbox.httpUrl}/control`,
  },
  'sandbox ready',
);

let stopping = false;
async function stop(signal: NodeJS.Signals): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'sandbox stopping');
  const force = setTimeout(() => process.exit(1), 10_000);
  force.unref();
  try {
    await sandbox.close();
    process.exit(0);
  } catch (error) {
    logger.error({ err: error }, 'sandbox did not stop cleanly');
    process.exit(1);
  }
}
process.on('SIGINT', (signal) => void stop(signal));
process.on('SIGTERM', (signal) => void stop(signal));
