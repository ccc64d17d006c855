/**
 * Starts the whole local stack: database migrations, Temporal dev server + UI, sandbox providers, worker and API;
 * seeds the demo workspace, writes .dev/demo.json and prints the URLs and the demo key. Ctrl-C stops it all.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadEnv } from '../config/env.js';
import { nativeEnvFor, nodeFlagsFor } from '../config/node-flags.js';
import { initOrm } from '../entities/orm.js';
import { ensureDatabase } from './support/database.js';
import { httpOk, isPortOpen, type ManagedProcess, startProcess, waitFor } from './support/processes.js';
import { seedDemo } from './support/seed.js';
import { startTemporalDevServer } from './support/temporal.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// DEV_STATE_DIR lets a second stack (the smoke test) run beside a developer's own without sharing state.
const DEV_DIR = process.env.DEV_STATE_DIR ?? join(ROOT, '.dev');
const LOG_DIR = join(DEV_DIR, 'logs');
const LOCK_FILE = join(DEV_DIR, 'stack.pid');

const ports = {
  api: Number(process.env.API_PORT ?? 3000),
  temporal: Number(process.env.TEMPORAL_PORT ?? 7233),
  temporalUi: Number(process.env.TEMPORAL_UI_PORT ?? 8233),
  sandbox: Number(process.env.SANDBOX_PORT ?? 4010),
  smtp: Number(process.env.SANDBOX_SMTP_PORT ?? 2525),
};

const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

mkdirSync(LOG_DIR, { recursive: true });
if (existsSync(LOCK_FILE)) {
  const pid = Number(readFileSync(LOCK_FILE, 'utf8'));
  if (pid && running(pid)) {
    console.log(
      `The stack is already running (pid ${pid}). Its URLs and demo key are in .dev/demo.json; stop it with Ctrl-C in its terminal or: kill ${pid}`,
    );
    process.exit(0);
  }
}
const busy = [];
for (const [name, port] of Object.entries(ports)) if (await isPortOpen(port)) busy.push(`${name} port ${port}`);
if (busy.length > 0) {
  console.error(
    `Cannot start: ${busy.join(', ')} already in use by another program. Stop it, or choose other ports with API_PORT, TEMPORAL_PORT, TEMPORAL_UI_PORT, SANDBOX_PORT, SANDBOX_SMTP_PORT.`,
  );
  process.exit(1);
}
writeFileSync(LOCK_FILE, String(process.pid));

const baseUrl = `http://127.0.0.1:${ports.api}`;
const childEnv: NodeJS.ProcessEnv = {
  API_PORT: String(ports.api),
  PUBLIC_ORIGIN: process.env.PUBLIC_ORIGIN ?? baseUrl,
  TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal}`,
  SANDBOX_URL: `http://127.0.0.1:${ports.sandbox}`,
  SANDBOX_PORT: String(ports.sandbox),
  SANDBOX_SMTP_PORT: String(ports.smtp),
  SMTP_PORT: String(ports.smtp),
  GATEWAY_B_WEBHOOK_URL: `${baseUrl}/api/v1/webhooks/gateway-b`,
  // The Temporal UI decodes buyer data through the API's codec endpoint: its origin may call it, with this token.
  CODEC_OPERATOR_TOKEN: process.env.CODEC_OPERATOR_TOKEN || randomBytes(32).toString('base64url'),
  CODEC_CORS_ORIGINS:
    process.env.CODEC_CORS_ORIGINS ?? `http://127.0.0.1:${ports.temporalUi},http://localhost:${ports.temporalUi}`,
};
Object.assign(process.env, childEnv);
const env = loadEnv();

const started: ManagedProcess[] = [];
let stopping = false;
async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    console.log('\nStopping…');
    for (const child of [...started].reverse()) {
      await child.stop('SIGTERM', 15_000);
      console.log(`  stopped ${child.name}`);
    }
    rmSync(LOCK_FILE, { force: true });
  }
  process.exit(code);
}
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

const tsx = (name: string, entry: string): ManagedProcess =>
  startProcess({
    name,
    command: process.execPath,
    args: [...nodeFlagsFor(entry), '--import', 'tsx', entry],
    env: { ...childEnv, ...nativeEnvFor(entry) },
    cwd: ROOT,
    logFile: join(LOG_DIR, `${name}.log`),
  });

try {
  console.log('» database: migrating');
  await ensureDatabase(env.DATABASE_URL);
  const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: 2 });
  const applied = await orm.migrator.up();
  console.log(`  ${applied.length ? `applied ${applied.length} migration(s)` : 'up to date'}`);

  console.log('» temporal: starting dev server and UI');
  started.push(
    await startTemporalDevServer({
      port: ports.temporal,
      uiPort: ports.temporalUi,
      dbFile: join(DEV_DIR, 'temporal.sqlite'),
      logFile: join(LOG_DIR, 'temporal.log'),
      uiCodecEndpoint: `${baseUrl}/codec`,
    }),
  );

  if (existsSync(join(ROOT, 'sandbox', 'main.ts'))) {
    console.log('» sandbox: gateways, seat map and mail inbox');
    const sandbox = tsx('sandbox', 'sandbox/main.ts');
    started.push(sandbox);
    await waitFor('sandbox', () => httpOk(`http://127.0.0.1:${ports.sandbox}/control/health`), { process: sandbox });
  }

  console.log('» worker');
  const worker = tsx('worker', 'worker/main.ts');
  started.push(worker);

  console.log('» api');
  const api = tsx('api', 'api/main.ts');
  started.push(api);
  await waitFor('API readiness', () => httpOk(`${baseUrl}/health/ready`), { process: api, timeoutMs: 90_000 });

  const seed = await seedDemo(orm.em.fork(), { keyPrefix: env.API_KEY_PREFIX });
  await orm.close(true);
  const demo = {
    baseUrl: `${baseUrl}/api/v1`,
    publicBaseUrl: `${baseUrl}/api/public`,
    apiKey: seed.apiKey,
    readApiKey: seed.readApiKey,
    workspaceId: seed.workspaceId,
    sandboxUrl: `http://127.0.0.1:${ports.sandbox}`,
    temporalUiUrl: `http://127.0.0.1:${ports.temporalUi}`,
    codec: { endpoint: `${baseUrl}/codec`, operatorToken: childEnv.CODEC_OPERATOR_TOKEN },
    demoEvent: seed.demoEvent,
    docs: { organizer: `${baseUrl}/api/v1/docs`, public: `${baseUrl}/api/public/docs` },
  };
  writeFileSync(join(DEV_DIR, 'demo.json'), `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });

  console.log(`
Ticketing stack is up.
  Organizer API   ${demo.baseUrl}        (docs ${demo.docs.organizer})
  Public API      ${demo.publicBaseUrl}    (docs ${demo.docs.public})
  Temporal UI     ${demo.temporalUiUrl}
  Codec endpoint  ${demo.codec.endpoint}   (decodes buyer data in the UI; docs/operations.md "Buyer data in workflow histories")
  Codec token     ${demo.codec.operatorToken}
  Sandbox         ${demo.sandboxUrl}   (gateways, seat map, mail inbox: /control/mail)
  Demo write key  ${demo.apiKey}
  Demo read key   ${demo.readApiKey}
  Demo event      ${demo.publicBaseUrl}/events/${demo.demoEvent.slug}/availability

Try: curl -H "Authorization: Bearer ${demo.apiKey}" ${demo.baseUrl}/me
Everything above is also in .dev/demo.json; logs are in .dev/logs/. Ctrl-C stops the stack.`);

  // Supervise: a child that dies takes the stack down with a pointer to its log, rather than leaving a half stack.
  const firstExit = await Promise.race(started.map((child) => child.exited.then((code) => ({ child, code }))));
  if (!stopping) {
    console.error(`${firstExit.child.name} exited (code ${firstExit.code}); see ${firstExit.child.logFile}`);
    await stopAll(1);
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  await stopAll(1);
}
