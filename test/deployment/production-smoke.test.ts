/**
 * The production profile of docker-compose.yml, run here as processes since this machine has no Docker engine: the
 * image's build steps (compile with tsc, prebuild the workflow bundle), then each service with the compose file's own
 * command and environment (read from the file, with only host names and ports mapped to this machine), in the order
 * its readiness gates impose: Redis with a password and the Temporal server on PostgreSQL → migrations → the worker
 * replicas (healthy by their compose health check) → the API (healthy by its own, /health/ready). The providers are the
 * sandbox, allowed on purpose as a rehearsal would (ALLOW_SANDBOX_PROVIDERS=true); secrets are files, as `secrets:`
 * mounts them.
 *
 * Then the smoke test of issue 33: a purchase, the codec decode with the operator token, metrics scraped with the
 * token. Differences from the containers, on purpose: one PostgreSQL server holds the three databases (the profile
 * gives the app and Temporal a server each), and the Temporal server is started by scripts/support/temporal-server.ts
 * (the same server binary and schema steps as ops/temporal/entrypoint.sh).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Connection } from '@temporalio/client';
import { loadEnv } from '../../config/env.js';
import { initOrm } from '../../entities/orm.js';
import { dropDatabase, recreateDatabase } from '../../scripts/support/database.js';
import { freePorts, httpOk, type ManagedProcess, startProcess, waitFor } from '../../scripts/support/processes.js';
import { startTemporalServer } from '../../scripts/support/temporal-server.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { cardToken, orderBody, publishEvent, reserveOrder, session, signInBuyer } from '../support/purchase.js';
import type { TestApi } from '../support/stack.js';
import { type ComposeService, ROOT, readCompose, readEnvFile } from './compose-file.js';

/**
 * The first run on a machine builds the Temporal server and UI from source (scripts/support/temporal-server.ts), beside
 * the fault tests: on 2026-11-30 that build alone took about 8 minutes on a loaded 2-core box, and a 9-minute boot
 * timed out. Later runs reuse the cached binaries and boot in 1–3 minutes.
 */
const BOOT_TIMEOUT_MS = 15 * 60_000;
const suffix = `prod${process.pid}`;
const databases = {
  app: `ticketing_test_${suffix}`,
  temporal: `temporal_test_${suffix}`,
  visibility: `temporal_visibility_test_${suffix}`,
};
const serverUrl = (database: string) => `postgres://postgres@127.0.0.1:5432/${database}`;

let work: string;
let logDir: string;
const started: ManagedProcess[] = [];
let ports: { api: number; temporal: number; ui: number; redis: number; sandbox: number; smtp: number };
let workerMetricsPorts: number[] = [];
const secrets: Record<string, string> = {};
let apiOrigin: string;
let api: TestApi;
let orm: MikroORM;
let organizer: Organizer;
let production: Record<string, ComposeService>;

/** What each secret file holds: generated values, the sandbox's credentials for the providers' (it checks them). */
function writeSecrets(names: string[]): void {
  const providers: Record<string, string> = {
    gateway_a_access_token: `APP_USR-${randomBytes(8).toString('hex')}`,
    gateway_a_webhook_secret: randomBytes(16).toString('hex'),
    gateway_b_api_key: `live-${randomBytes(8).toString('hex')}`,
    gateway_b_secret_key: randomBytes(16).toString('hex'),
    seatmap_secret_key: randomBytes(16).toString('hex'),
    video_signing_private_key: generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString(),
    payload_codec_keys: `prod-1:${randomBytes(32).toString('base64')}`,
    secrets_encryption_key: randomBytes(32).toString('hex'),
    smtp_password: '',
  };
  mkdirSync(join(work, 'secrets'), { recursive: true });
  for (const name of names) {
    secrets[name] = providers[name] ?? randomBytes(24).toString('hex');
    writeFileSync(join(work, 'secrets', name), `${secrets[name]}\n`);
  }
}

/**
 * A service's environment on this machine: the image's ENV, then deploy/production.env (what the operator sets; here
 * a rehearsal against the sandbox), then the compose file's `environment:`, which wins, as in Compose. Only
 * addresses change: secret files, and the services' host names and ports.
 */
function environmentOf(service: ComposeService, extra: Record<string, string> = {}): Record<string, string> {
  const image = { NODE_ENV: 'production', WORKFLOW_BUNDLE_PATH: join(work, 'app', 'dist', 'workflow-bundle.js') };
  const sandbox = `http://127.0.0.1:${ports.sandbox}`;
  const operatorFile = {
    ...readEnvFile(join(ROOT, 'deploy', 'production.env.example')),
    PUBLIC_ORIGIN: apiOrigin,
    CODEC_CORS_ORIGINS: `http://127.0.0.1:${ports.ui}`,
    TRUST_PROXY: 'loopback',
    RETURN_URL_ALLOWED_HOSTS: 'localhost,127.0.0.1',
    ALLOW_SANDBOX_PROVIDERS: 'true',
    SANDBOX_URL: sandbox,
    GATEWAY_A_BASE_URL: `${sandbox}/gateway-a`,
    GATEWAY_A_PUBLIC_KEY: 'TEST-sandbox-public-key-dev',
    GATEWAY_B_BASE_URL: `${sandbox}/gateway-b`,
    GATEWAY_B_BUTTON_SCRIPT_URL: `${sandbox}/gateway-b/library/boldPaymentButton.js`,
    SEATMAP_BASE_URL: `${sandbox}/seatmap`,
    VIDEO_PLAYBACK_BASE_URL: `${sandbox}/video/play`,
    SMTP_HOST: '127.0.0.1',
    SMTP_PORT: String(ports.smtp),
    // The sandbox's SMTP has no TLS; production accepts that only to a private address, as here.
    SMTP_TLS: 'none',
    SMTP_USER: '',
  };
  const mapped = Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([key, value]) => {
      if (value.startsWith('/run/secrets/')) return [key, join(work, 'secrets', value.slice('/run/secrets/'.length))];
      if (key === 'DATABASE_URL') {
        expect(value).toBe('postgres://ticketing@postgres-production:5432/ticketing');
        return [key, serverUrl(databases.app)];
      }
      if (key === 'REDIS_URL') return [key, value.replace('redis-production:6379', `127.0.0.1:${ports.redis}`)];
      if (key === 'TEMPORAL_ADDRESS')
        return [key, value.replace('temporal-server:7233', `127.0.0.1:${ports.temporal}`)];
      if (key === 'API_PORT') return [key, String(ports.api)];
      return [key, value];
    }),
  );
  const env = { ...image, ...operatorFile, ...mapped, ...extra };
  for (const [key, value] of Object.entries(env)) {
    expect({ key, value: /-production|temporal-server|temporal-postgres/.test(value) }).toEqual({ key, value: false });
  }
  return { ...env, PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
}

/** The service's compose command, run from the compiled app directory (the image's WORKDIR). */
function startService(name: string, service: ComposeService, env: Record<string, string>): ManagedProcess {
  const [command, ...args] = service.command ?? [];
  expect(command).toBe('node');
  const child = startProcess({
    name,
    command: process.execPath,
    args,
    env,
    isolatedEnv: true,
    cwd: join(work, 'app'),
    logFile: join(logDir, `${name}.log`),
  });
  started.push(child);
  return child;
}

/** Runs a compose health check (`CMD node -e …`) with the service's port mapped; true when it exits 0. */
function healthCheckPasses(service: ComposeService, from: number, to: number): boolean {
  const [kind, command, ...args] = service.healthcheck?.test ?? [];
  expect([kind, command]).toEqual(['CMD', 'node']);
  const mapped = args.map((arg) => arg.replace(`127.0.0.1:${from}/`, `127.0.0.1:${to}/`));
  return spawnSync(process.execPath, mapped, { timeout: 10_000 }).status === 0;
}

/** The helpers' TestApi over real HTTP to the API process (they were written for in-process inject). */
function httpApi(env: ReturnType<typeof loadEnv>): TestApi {
  return {
    env,
    async request(options: {
      method?: string;
      url: string;
      headers?: Record<string, string>;
      payload?: unknown;
      remoteAddress?: string;
    }) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.payload !== undefined) headers['content-type'] = 'application/json';
      // The API trusts X-Forwarded-For from loopback (TRUST_PROXY), as from its load balancer.
      if (options.remoteAddress) headers['x-forwarded-for'] = options.remoteAddress;
      const response = await fetch(`${apiOrigin}${options.url}`, {
        method: options.method ?? 'GET',
        headers,
        body: options.payload === undefined ? undefined : JSON.stringify(options.payload),
      });
      const body = await response.text();
      return { statusCode: response.status, body, json: () => JSON.parse(body), headers: {} };
    },
  } as unknown as TestApi;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'production-smoke-'));
  logDir = join(ROOT, '.dev', 'test-logs', `production-smoke-${process.pid}`);
  const [apiPort = 0, temporal = 0, ui = 0, redis = 0, sandbox = 0, smtp = 0] = await freePorts(6);
  ports = { api: apiPort, temporal, ui, redis, sandbox, smtp };
  apiOrigin = `http://127.0.0.1:${ports.api}`;
  // A release: its workers poll versioned, as build id RELEASE.
  const compose = readCompose({ RELEASE: 'smoke-1' });
  production = Object.fromEntries(
    Object.entries(compose.services).filter(([, service]) => service.profiles?.includes('production')),
  );
  writeSecrets(Object.keys(compose.secrets));

  // The image's build stage: compile (tsc -p tsconfig.build.json) and prebuild the workflow bundle from the output.
  const app = join(work, 'app');
  execFileSync(join(ROOT, 'node_modules', '.bin', 'tsc'), [
    '-p',
    join(ROOT, 'tsconfig.build.json'),
    '--outDir',
    join(app, 'dist'),
  ]);
  copyFileSync(join(ROOT, 'package.json'), join(app, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(app, 'node_modules'));
  execFileSync(process.execPath, ['dist/worker/build-workflow-bundle.js', 'dist/workflow-bundle.js'], { cwd: app });

  // redis-production: a password from its secret file.
  const redisServer = startProcess({
    name: 'redis-production',
    command: 'redis-server',
    args: [
      '--port',
      String(ports.redis),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--requirepass',
      secrets.redis_password ?? '',
    ],
    logFile: join(logDir, 'redis.log'),
  });
  started.push(redisServer);
  // temporal-server on its PostgreSQL databases (persistence and visibility), the UI beside it with the codec.
  const temporalServer = await startTemporalServer({
    databaseUrl: serverUrl('postgres'),
    persistence: databases.temporal,
    visibility: databases.visibility,
    port: ports.temporal,
    uiPort: ports.ui,
    shards: Number(production['temporal-server']?.environment?.NUM_HISTORY_SHARDS),
    workDir: join(work, 'temporal'),
    logFile: join(logDir, 'temporal-server.log'),
    uiLogFile: join(logDir, 'temporal-ui.log'),
    // ops/temporal/entrypoint.sh: <PUBLIC_ORIGIN>/codec, PUBLIC_ORIGIN from the operator's file the UI reads too.
    uiCodecEndpoint: `${environmentOf(production['temporal-ui-production'] as ComposeService).PUBLIC_ORIGIN}/codec`,
    uiCodecIncludeCredentials:
      production['temporal-ui-production']?.environment?.TEMPORAL_CODEC_INCLUDE_CREDENTIALS === 'true',
  });
  started.push(temporalServer);
  // The providers' stand-in, holding the same credentials as the secret files.
  const sandboxProcess = startProcess({
    name: 'sandbox',
    command: process.execPath,
    args: ['--import', 'tsx', 'sandbox/main.ts'],
    cwd: ROOT,
    env: {
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      SANDBOX_PORT: String(ports.sandbox),
      SANDBOX_SMTP_PORT: String(ports.smtp),
      GATEWAY_B_WEBHOOK_URL: `${apiOrigin}/api/v1/webhooks/gateway-b`,
      GATEWAY_A_ACCESS_TOKEN: secrets.gateway_a_access_token,
      GATEWAY_A_WEBHOOK_SECRET: secrets.gateway_a_webhook_secret,
      GATEWAY_B_API_KEY: secrets.gateway_b_api_key,
      GATEWAY_B_SECRET_KEY: secrets.gateway_b_secret_key,
      SEATMAP_SECRET_KEY: secrets.seatmap_secret_key,
    },
    logFile: join(logDir, 'sandbox.log'),
  });
  started.push(sandboxProcess);
  await waitFor('sandbox', () => httpOk(`http://127.0.0.1:${ports.sandbox}/control/health`), {
    process: sandboxProcess,
  });

  // migrate-production: a one-shot that must exit 0 before the API and the workers start.
  await recreateDatabase(serverUrl(databases.app));
  const migrateService = production['migrate-production'] as ComposeService;
  const migrate = startService('migrate-production', migrateService, environmentOf(migrateService));
  expect(await migrate.exited).toBe(0);

  // worker-production × replicas, each healthy by the compose health check (its /health on the metrics port).
  const workerService = production['worker-production'] as ComposeService;
  const replicas = Number(workerService.deploy?.replicas);
  expect(replicas).toBeGreaterThanOrEqual(2);
  workerMetricsPorts = await freePorts(replicas * 2);
  const workers = Array.from({ length: replicas }, (_, index) =>
    startService(
      `worker-production-${index + 1}`,
      workerService,
      environmentOf(workerService, {
        // Each container has a network namespace of its own; processes on one machine need ports of their own.
        WORKER_METRICS_PORT: String(workerMetricsPorts[index * 2]),
        TEMPORAL_METRICS_BIND_ADDRESS: `127.0.0.1:${workerMetricsPorts[index * 2 + 1]}`,
      }),
    ),
  );
  await Promise.all(
    workers.map((worker, index) =>
      waitFor(
        `${worker.name} healthy`,
        async () => healthCheckPasses(workerService, 9464, workerMetricsPorts[index * 2] ?? 0),
        { process: worker, timeoutMs: 180_000 },
      ),
    ),
  );

  // api-production, healthy by its compose health check (/health/ready: a worker polls).
  const apiService = production['api-production'] as ComposeService;
  const apiEnv = environmentOf(apiService);
  const apiProcess = startService('api-production', apiService, apiEnv);
  await waitFor('api-production healthy', async () => healthCheckPasses(apiService, 3000, ports.api), {
    process: apiProcess,
    timeoutMs: 120_000,
  });

  // The test's own view: the API's configuration as it loaded it, and the database for the organizer fixture.
  const loaded = loadEnv(apiEnv);
  api = httpApi(loaded);
  orm = await initOrm({ databaseUrl: loaded.DATABASE_URL, poolMax: 2 });
  organizer = await createOrganizer(orm.em.fork());
}, BOOT_TIMEOUT_MS);

afterAll(async () => {
  await orm?.close(true);
  for (const child of [...started].reverse()) await child.stop('SIGTERM', 15_000).catch(() => undefined);
  for (const database of Object.values(databases)) await dropDatabase(serverUrl(database)).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
}, 120_000);

describe('the production profile, run as processes', () => {
  test('the API and every worker run compiled JavaScript in production mode (the refusals ran: without the rehearsal flag the API refuses the sandbox)', () => {
    const apiService = production['api-production'] as ComposeService;
    expect(apiService.command?.at(-1)).toBe('dist/api/main.js');
    expect(api.env.NODE_ENV).toBe('production');
    const { ALLOW_SANDBOX_PROVIDERS: _allowed, ...withoutFlag } = environmentOf(apiService);
    const refused = spawnSync(process.execPath, (apiService.command ?? []).slice(1), {
      cwd: join(work, 'app'),
      env: withoutFlag,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/point at the sandbox/);
  });

  let saleId: string;

  test('a purchase: reserve, pay with an approved card, CONFIRMED with tickets', async () => {
    const event = await publishEvent(api, organizer, { price: 40_000, capacity: 5 });
    const buyerEmail = `smoke-${Math.random().toString(36).slice(2, 10)}@buyers.test`;
    const token = await signInBuyer(api, buyerEmail);
    const created = await reserveOrder(api, token, orderBody(event, 1));
    expect(created.statusCode).toBe(201);
    saleId = created.json().data.saleId;
    const opened = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${saleId}/payment`,
      headers: session(token),
    });
    expect(opened.statusCode).toBe(200);
    const charged = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(charged.statusCode).toBe(200);
    expect(charged.json().data).toMatchObject({ status: 'approved', saleStatus: 'CONFIRMED' });
    const order = await api.request({
      method: 'GET',
      url: `/api/v1/customer/orders/${saleId}`,
      headers: session(token),
    });
    expect(order.json().data).toMatchObject({ status: 'CONFIRMED', paymentProvider: 'GATEWAY_A' });
    expect(order.json().data.tickets).toHaveLength(1);
  });

  test("the codec: the checkout's history is encrypted at rest, and decodes with the operator token only", async () => {
    const connection = await Connection.connect({ address: `127.0.0.1:${ports.temporal}` });
    try {
      const history = await connection.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId: checkoutWorkflowId(saleId) },
      });
      const input = history.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
      expect(input.length).toBeGreaterThan(0);
      const asJson = input.map((payload) => ({
        metadata: Object.fromEntries(
          Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
        ),
        data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
      }));
      // Encrypted: the codec's encoding, and not even the sale id readable.
      expect(Buffer.from(asJson[0]?.metadata.encoding ?? '', 'base64').toString()).toBe('binary/encrypted');
      expect(Buffer.from(asJson[0]?.data ?? '', 'base64').toString('utf8')).not.toContain(saleId);

      const decode = (authorization?: string) =>
        fetch(`${apiOrigin}/codec/decode`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-namespace': 'default',
            ...(authorization ? { authorization } : {}),
          },
          body: JSON.stringify({ payloads: asJson }),
        });
      expect((await decode()).status).toBe(401);
      expect((await decode('Bearer not-the-operator-token')).status).toBe(401);
      const decoded = await decode(`Bearer ${secrets.codec_operator_token}`);
      expect(decoded.status).toBe(200);
      const { payloads } = (await decoded.json()) as {
        payloads: Array<{ data: string; metadata: Record<string, string> }>;
      };
      expect(Buffer.from(payloads[0]?.metadata.encoding ?? '', 'base64').toString()).toBe('json/plain');
      expect(JSON.parse(Buffer.from(payloads[0]?.data ?? '', 'base64').toString('utf8'))).toMatchObject({ saleId });
    } finally {
      await connection.close();
    }
  });

  test('the Temporal UI is wired to the codec endpoint with credentials, and the API allows its origin', async () => {
    const settings = (await (await fetch(`http://127.0.0.1:${ports.ui}/api/v1/settings`)).json()) as {
      Codec?: { Endpoint?: string; IncludeCredentials?: boolean };
    };
    expect(settings.Codec).toMatchObject({ Endpoint: `${apiOrigin}/codec`, IncludeCredentials: true });
    const preflight = await fetch(`${apiOrigin}/codec/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: `http://127.0.0.1:${ports.ui}`,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-credentials')).toBe('true');
  });

  test("the operator command runs compiled from the image, with the worker's production environment", () => {
    const workerService = production['worker-production'] as ComposeService;
    const listed = spawnSync(process.execPath, ['dist/scripts/operator.js', 'refunds-refused', 'list'], {
      cwd: join(work, 'app'),
      env: environmentOf(workerService),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ status: listed.status, stderr: listed.stderr }).toMatchObject({ status: 0 });
    const accounts = spawnSync(process.execPath, ['dist/scripts/operator.js', 'payout-accounts', 'list'], {
      cwd: join(work, 'app'),
      env: environmentOf(workerService),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ status: accounts.status, stderr: accounts.stderr }).toMatchObject({ status: 0 });
  });

  test('metrics: the API and every worker replica answer scrapes with the token, and refuse them without', async () => {
    const scrape = (url: string, token?: string) =>
      fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const token = secrets.metrics_token;
    const apiMetrics = `${apiOrigin}/metrics`;
    expect((await scrape(apiMetrics)).status).toBe(401);
    const apiScrape = await scrape(apiMetrics, token);
    expect(apiScrape.status).toBe(200);
    expect(await apiScrape.text()).toMatch(/^ticketing_http_requests_total\{/m);
    for (let index = 0; index < workerMetricsPorts.length / 2; index += 1) {
      const url = `http://127.0.0.1:${workerMetricsPorts[index * 2]}/metrics`;
      expect((await scrape(url)).status).toBe(401);
      const workerScrape = await scrape(url, token);
      expect(workerScrape.status).toBe(200);
      // Ours and the Temporal SDK's, in one scrape.
      expect(await workerScrape.text()).toMatch(/^temporal_/m);
    }
  });
});
