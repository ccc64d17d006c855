/**
 * Fault-injection harness. Each fault test starts processes it may kill — its own worker on its own task queue and
 * its own API on a free port (and, for the Temporal restart, its own Temporal dev server) — against the run's
 * Postgres, Redis, Temporal and sandbox (the environment scripts/test.ts sets), drives a small crowd of buyers that
 * reserve and pay through that API, injects the fault while they do, then checks the sale's invariants with SQL.
 *
 * Run by scripts/test.ts after the main jest run, alone (`jest --runInBand test/faults`): the Postgres and Redis
 * restarts hit every process on the machine.
 */
import { exec } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MikroORM } from '@mikro-orm/postgresql';
import proto from '@temporalio/proto';
import { Redis } from 'ioredis';
import pg from 'pg';
import {
  createBuyers,
  type BenchBuyer as FaultBuyer,
  type BenchEvent as FaultEvent,
  publishEvent,
} from '../../bench/lib/fixtures.js';
import { HttpClient } from '../../bench/lib/http.js';
import { nativeEnvFor, nodeFlagsFor } from '../../config/node-flags.js';
import { connectTemporalClient } from '../../config/temporal.js';
import { ormConfig } from '../../entities/orm.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { dropDatabase } from '../../scripts/support/database.js';
import {
  freePorts,
  httpOk,
  type ManagedProcess,
  sleep,
  startProcess,
  waitFor,
} from '../../scripts/support/processes.js';
import { startTemporalDevServer } from '../../scripts/support/temporal.js';
import { freeLowPorts, startTemporalServer } from '../../scripts/support/temporal-server.js';
import { healthProbeWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer } from '../support/fixtures.js';
import { checkInvariants, type InvariantReport } from './invariants.js';

export type { FaultBuyer, FaultEvent };

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(exec);

export function faultEnv(): Record<string, string> {
  if (process.env.NODE_ENV !== 'test' || !process.env.DATABASE_URL || !process.env.TEMPORAL_ADDRESS) {
    throw new Error('Fault tests run through `npm test`, which starts the stack they need');
  }
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
}

export interface FaultStack {
  name: string;
  env: Record<string, string>;
  apiUrl: string;
  http: HttpClient;
  pool: pg.Pool;
  worker: ManagedProcess;
  api: ManagedProcess;
  temporal: ManagedProcess | null;
  organizerKey: string;
  /** SIGKILL (or another signal) the worker, then start a new one and wait until it runs workflows. */
  restartWorker(signal?: NodeJS.Signals): Promise<void>;
  /**
   * Starts one more worker process on the same task queue (a second replica, or with `env` another release); stopped
   * with the stack.
   */
  startExtraWorker(label: string, env?: Record<string, string>): Promise<ManagedProcess>;
  restartApi(signal?: NodeJS.Signals): Promise<void>;
  /** Stops the test's own Temporal dev server and starts it again on the same ports and state file. */
  restartTemporal(signal?: NodeJS.Signals): Promise<void>;
  waitForWorker(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A payment window longer than a restarted service is away, so every payer can still pay once it is back (a payer
 * whose window lapses while the service is down cannot pay at all, which is the contract, not a loss). Payers finish
 * within ~6 s of the service's return, but with the four side-by-side fault files on a slow 2-core box (2026-11-26,
 * twice as slow as the day before) a restart alone took up to 28 s and payers then waited on a starved stack: 18 s
 * and 45 s windows failed there, on old code and new alike. Scenarios using it let non-payers release, so nothing
 * waits for the long window to expire.
 */
export const WINDOW_OUTLASTING_A_RESTART_MS = 75_000;

export interface FaultStackOptions {
  /** Payment window of every reservation (PAYMENT_WINDOW_OVERRIDE_MS on the API). */
  paymentWindowMs: number;
  /** Start a Temporal dev server for this test alone (to restart it). */
  ownTemporal?: boolean;
  /**
   * Start, for this test alone, the Temporal server the production profile runs: persistence and visibility on
   * PostgreSQL (scripts/support/temporal-server.ts), instead of the dev server on SQLite.
   */
  temporalOnPostgres?: boolean;
  /** More environment for the stack's API and worker (Worker Versioning, shorter grace periods). */
  env?: Record<string, string>;
}

export async function startFaultStack(name: string, options: FaultStackOptions): Promise<FaultStack> {
  const base = faultEnv();
  const logDir = join(ROOT, '.dev', 'test-logs', `faults-${process.ppid}`);
  mkdirSync(logDir, { recursive: true });
  const [apiPort = 0, temporalPort = 0, temporalUiPort = 0] = options.temporalOnPostgres
    ? await freeLowPorts(3)
    : await freePorts(3);
  const temporalDb = join(base.TEST_WORK_DIR ?? logDir, `faults-${name}-${randomUUID().slice(0, 6)}.sqlite`);
  const env: Record<string, string> = {
    ...base,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    TEMPORAL_TASK_QUEUE: `faults-${name}-${randomUUID().slice(0, 8)}`,
    API_PORT: String(apiPort),
    PUBLIC_ORIGIN: `http://127.0.0.1:${apiPort}`,
    PAYMENT_WINDOW_OVERRIDE_MS: String(options.paymentWindowMs),
    // A closed sale keeps listening for late money for a while; long enough for this test's late payments.
    LATE_PAYMENT_GRACE_MS: String(5 * 60_000),
    // A fault stack's worker (own task queue) must not point the run's reconciler Schedule at its queue, which dies
    // with it; disabled, it pauses the Schedule for the rest of the run (the fault tests do not rely on it).
    RECONCILER_ENABLED: 'false',
    DATABASE_POOL_MAX: '5',
    ...(options.ownTemporal || options.temporalOnPostgres ? { TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}` } : {}),
    ...options.env,
  };
  const temporalOptions = {
    port: temporalPort,
    uiPort: temporalUiPort,
    dbFile: temporalDb,
    logFile: join(logDir, `${name}-temporal.log`),
  };
  const node = (role: string, entry: string, extraEnv: Record<string, string> = {}) =>
    startProcess({
      name: `${name}-${role}`,
      command: process.execPath,
      args: [...nodeFlagsFor(entry), '--import', 'tsx', entry],
      env: { ...env, ...nativeEnvFor(entry), ...extraEnv },
      cwd: ROOT,
      logFile: join(logDir, `${name}-${role}.log`),
    });

  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 3 });
  // A Postgres restart breaks idle clients; the pool drops them and the next query reconnects.
  pool.on('error', () => undefined);
  const http = new HttpClient(`http://127.0.0.1:${apiPort}`, 64);
  const started: ManagedProcess[] = [];
  let temporal: ManagedProcess | null = null;
  let worker: ManagedProcess | null = null;
  let api: ManagedProcess | null = null;

  const waitForWorker = async (timeoutMs = 90_000) => {
    const { client, connection } = await connectTemporalClient({
      TEMPORAL_ADDRESS: env.TEMPORAL_ADDRESS ?? '',
      TEMPORAL_NAMESPACE: env.TEMPORAL_NAMESPACE ?? 'default',
    });
    try {
      await client.workflow.execute('healthProbe', {
        taskQueue: env.TEMPORAL_TASK_QUEUE ?? '',
        workflowId: healthProbeWorkflowId(randomUUID()),
        workflowExecutionTimeout: `${Math.round(timeoutMs / 1000)} seconds`,
      });
    } finally {
      await connection.close();
    }
  };
  const startApi = async () => {
    api = node('api', 'api/main.ts');
    started.push(api);
    await waitFor(`${name} API`, () => httpOk(`http://127.0.0.1:${apiPort}/health/live`), {
      process: api,
      timeoutMs: 60_000,
    });
  };
  const startWorker = async () => {
    worker = node('worker', 'worker/main.ts');
    started.push(worker);
    await waitForWorker();
  };

  // Disposable names (scripts/support/database.ts drops only *_test_<suffix>).
  const serverSuffix = randomUUID().slice(0, 6);
  const serverDatabases = {
    databaseUrl: env.DATABASE_URL ?? '',
    persistence: `faults_${name.replace(/\W/g, '_')}_temporal_test_${serverSuffix}`,
    visibility: `faults_${name.replace(/\W/g, '_')}_visibility_test_${serverSuffix}`,
  };
  const stop = async () => {
    for (const child of [...started].reverse()) await child.stop('SIGTERM', 10_000).catch(() => undefined);
    http.close();
    await pool.end().catch(() => undefined);
    if (options.temporalOnPostgres) {
      for (const database of [serverDatabases.persistence, serverDatabases.visibility]) {
        const url = new URL(serverDatabases.databaseUrl);
        url.pathname = `/${database}`;
        await dropDatabase(url.toString()).catch(() => undefined);
      }
    }
  };
  try {
    if (options.ownTemporal) {
      temporal = await startTemporalDevServer(temporalOptions);
      started.push(temporal);
    } else if (options.temporalOnPostgres) {
      temporal = await startTemporalServer({
        ...serverDatabases,
        port: temporalPort,
        uiPort: temporalUiPort,
        shards: 4,
        workDir: join(base.TEST_WORK_DIR ?? logDir, `faults-${name}-temporal-${randomUUID().slice(0, 6)}`),
        logFile: join(logDir, `${name}-temporal-server.log`),
        uiLogFile: join(logDir, `${name}-temporal-ui.log`),
      });
      started.push(temporal);
    }
    await Promise.all([startApi(), startWorker()]);
    const orm = await MikroORM.init(ormConfig({ databaseUrl: env.DATABASE_URL ?? '', poolMax: 1 }));
    const organizer = await createOrganizer(orm.em.fork()).finally(() => orm.close(true));
    return {
      name,
      env,
      apiUrl: `http://127.0.0.1:${apiPort}`,
      http,
      pool,
      get worker() {
        return worker!;
      },
      get api() {
        return api!;
      },
      get temporal() {
        return temporal;
      },
      organizerKey: organizer.key,
      async restartWorker(signal: NodeJS.Signals = 'SIGKILL') {
        await worker?.stop(signal, 5000);
        await startWorker();
      },
      async startExtraWorker(label: string, extraEnv: Record<string, string> = {}) {
        const extra = node(`worker-${label}`, 'worker/main.ts', extraEnv);
        started.push(extra);
        return extra;
      },
      async restartApi(signal: NodeJS.Signals = 'SIGKILL') {
        await api?.stop(signal, 5000);
        await startApi();
      },
      async restartTemporal(signal: NodeJS.Signals = 'SIGTERM') {
        if (!temporal) throw new Error('this fault stack has no Temporal server of its own');
        await temporal.stop(signal, 15_000);
        temporal = await startTemporalDevServer(temporalOptions);
        started.push(temporal);
      },
      waitForWorker,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

// ------------------------------------------------------------------------------------------------ shared services

/** `pg_ctlcluster … restart` of the machine's cluster (override with FAULT_PG_RESTART_CMD). */
export const PG_RESTART =
  process.env.FAULT_PG_RESTART_CMD ??
  'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | head -1) main restart';
export const PG_STOP =
  process.env.FAULT_PG_STOP_CMD ?? 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | head -1) main stop';
export const PG_START =
  process.env.FAULT_PG_START_CMD ??
  'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | head -1) main start';
export const REDIS_STOP =
  process.env.FAULT_REDIS_STOP_CMD ??
  'redis-cli -h 127.0.0.1 -p 6379 shutdown || redis-cli -h 127.0.0.1 -p 6379 shutdown nosave';
export const REDIS_START = process.env.FAULT_REDIS_START_CMD ?? 'redis-server /etc/redis/redis.conf';

export async function shell(command: string): Promise<string> {
  const { stdout, stderr } = await run(command, { timeout: 60_000 });
  return `${stdout}${stderr}`.trim();
}

export async function postgresReady(databaseUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function redisReady(redisUrl: string): Promise<boolean> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** Makes sure Postgres is up again (starting it when a restart left it down) and answers queries. */
export async function ensurePostgres(databaseUrl: string): Promise<void> {
  if (await postgresReady(databaseUrl)) return;
  await shell(PG_START).catch(() => undefined);
  await waitFor('PostgreSQL', () => postgresReady(databaseUrl), { timeoutMs: 60_000 });
}

export async function ensureRedis(redisUrl: string): Promise<void> {
  if (await redisReady(redisUrl)) return;
  await shell(REDIS_START).catch(() => undefined);
  await waitFor('Redis', () => redisReady(redisUrl), { timeoutMs: 30_000 });
}

// ------------------------------------------------------------------------------------------------ buyers

export interface BuyerOutcome {
  index: number;
  pays: boolean;
  saleId: string | null;
  /** What the buyer's client saw last: created, sold_out, released, unpaid, approved, declined, unavailable… */
  outcome: string;
  chargeStatus: string | null;
  retries: number;
  errors: string[];
}

export interface CrowdProgress {
  reserved: number;
  chargesStarted: number;
  done: number;
}

const retryable = (status: number) => status === 0 || status >= 500 || status === 429;

/**
 * One buyer: reserve (retrying through outages; a retry that finds the buyer's own pending sale adopts it), then —
 * for payers — open payment and charge an approved card (the same token on every retry, so a retried charge is the
 * same payment at the gateway); non-payers release every other time, or let the reservation expire.
 */
async function buyer(
  stack: FaultStack,
  event: FaultEvent,
  who: FaultBuyer,
  index: number,
  pays: boolean,
  cardToken: string,
  deadline: number,
  progress: CrowdProgress,
  releaseAll: boolean,
): Promise<BuyerOutcome> {
  const result: BuyerOutcome = {
    index,
    pays,
    saleId: null,
    outcome: 'gave_up',
    chargeStatus: null,
    retries: 0,
    errors: [],
  };
  const headers = { 'x-customer-session': who.token };
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await stack.http.request(method, path, { headers, body, timeoutMs: 45_000 });
    if (retryable(response.status)) {
      result.retries += 1;
      const reason = (response.body as { error?: { details?: { reason?: string } } } | null)?.error?.details?.reason;
      const error = response.networkError ?? `${response.status}${reason ? ` ${reason}` : ''}`;
      if (result.errors.length < 500) result.errors.push(`${method} ${path.split('/').slice(-1)[0]}: ${error}`);
      const retryAfter = response.status === 429 ? 1000 : Math.min(2000, 200 * result.retries);
      await sleep(retryAfter);
    }
    return response;
  };
  const bodyOf = (response: { body: unknown }) =>
    (response.body ?? {}) as {
      data?: { saleId?: string; status?: string; saleStatus?: string };
      error?: { code?: string; details?: { reason?: string; pendingSaleId?: string } };
    };

  while (!result.saleId && Date.now() < deadline) {
    const response = await call('POST', '/api/v1/customer/orders', {
      eventDateId: event.eventDateId,
      items: [{ ticketTypeId: event.ticketTypeId, quantity: 1 }],
      buyer: { name: 'Fault Buyer', phone: '+57 300 000 0000', idType: 'CC', idNumber: '1020304050' },
      returnUrl: 'http://127.0.0.1/thanks',
    });
    const body = bodyOf(response);
    if (response.status === 201) result.saleId = body.data?.saleId ?? null;
    else if (body.error?.details?.reason === 'pending_sale_in_progress')
      result.saleId = body.error.details.pendingSaleId ?? null;
    else if (body.error?.details?.reason === 'sold_out') {
      result.outcome = 'sold_out';
      return result;
    } else if (!retryable(response.status)) {
      result.outcome = `reserve:${response.status}:${body.error?.code ?? ''}`;
      return result;
    }
  }
  if (!result.saleId) return result;
  progress.reserved += 1;
  result.outcome = 'reserved';
  const sale = `/api/v1/customer/orders/${result.saleId}`;

  if (!pays) {
    if (index % 2 === 0 || releaseAll) {
      while (Date.now() < deadline) {
        const released = await call('POST', `${sale}/release`);
        if (released.status === 200 || released.status === 409) {
          result.outcome = released.status === 200 ? 'released' : `release:${bodyOf(released).error?.code}`;
          break;
        }
      }
    } else {
      result.outcome = 'unpaid';
    }
    return result;
  }

  let opened = false;
  while (!opened && Date.now() < deadline) {
    const response = await call('POST', `${sale}/payment`);
    if (response.status === 200) opened = true;
    else if (!retryable(response.status)) {
      result.outcome = `open:${bodyOf(response).error?.details?.reason ?? response.status}`;
      return result;
    }
  }
  progress.chargesStarted += 1;
  while (Date.now() < deadline) {
    const response = await call('POST', `${sale}/payment/card`, { token: cardToken });
    const body = bodyOf(response);
    if (response.status === 200) {
      result.chargeStatus = body.data?.status ?? null;
      result.outcome = `${body.data?.status}:${body.data?.saleStatus}`;
      return result;
    }
    if (!retryable(response.status)) {
      // 409: not payable any more — maybe because an earlier, interrupted attempt already confirmed it.
      result.outcome = `charge:${body.error?.details?.reason ?? response.status}`;
      return result;
    }
  }
  return result;
}

export interface Crowd {
  progress: CrowdProgress;
  outcomes: Promise<BuyerOutcome[]>;
}

/** Starts `count` buyers (2 of 3 pay; of the others half release, half let it expire), staggered, bounded. */
export async function startCrowd(
  stack: FaultStack,
  event: FaultEvent,
  options: { count: number; budgetMs: number; staggerMs?: number; releaseAll?: boolean },
): Promise<Crowd> {
  const buyers = await createBuyers(stack.pool, `fault-${stack.name}`, options.count);
  const gateway = new GatewayAClient({
    baseUrl: `${stack.env.SANDBOX_URL}/gateway-a`,
    accessToken: stack.env.GATEWAY_A_ACCESS_TOKEN ?? 'TEST-4010000000000000-000000-sandbox-access-token-dev',
    publicKey: stack.env.GATEWAY_A_PUBLIC_KEY ?? 'TEST-sandbox-public-key-dev',
  });
  const tokens = await Promise.all(
    buyers.map(
      async () =>
        (
          await gateway.createCardToken({
            cardNumber: '5031755734530604',
            securityCode: '123',
            expirationMonth: 11,
            expirationYear: 2030,
            cardholderName: 'APRO',
            identification: { type: 'CC', number: '1020304050' },
          })
        ).id,
    ),
  );
  const progress: CrowdProgress = { reserved: 0, chargesStarted: 0, done: 0 };
  const deadline = Date.now() + options.budgetMs;
  const outcomes = Promise.all(
    buyers.map(async (who, index) => {
      await sleep(index * (options.staggerMs ?? 100));
      const pays = index % 3 !== 2;
      const outcome = await buyer(
        stack,
        event,
        who,
        index,
        pays,
        tokens[index]!,
        deadline,
        progress,
        !!options.releaseAll,
      );
      progress.done += 1;
      return outcome;
    }),
  );
  return { progress, outcomes };
}

export async function publishFaultEvent(stack: FaultStack, capacity: number): Promise<FaultEvent> {
  return publishEvent(stack.http, stack.organizerKey, { name: `Fault ${stack.name}`, capacity, maxPerOrder: 2 });
}

/** Waits (bounded) for `check` to hold, polling. */
export async function until(description: string, check: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await Promise.resolve(check()).catch(() => false)) return;
    await sleep(200);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
}

/**
 * Waits until every reservation of the event has ended (no PENDING sale left) and every approved payment is settled
 * into a confirmation or a refund, then returns the invariants report.
 */
export async function settledInvariants(
  stack: FaultStack,
  event: FaultEvent,
  timeoutMs: number,
): Promise<InvariantReport> {
  const query = async <R>(sql: string, params: unknown[]) => (await stack.pool.query(sql, params)).rows as R[];
  const options = {
    ticketTypeId: event.ticketTypeId,
    capacity: event.capacity,
    requireSettled: true,
    gateway: { sandboxUrl: stack.env.SANDBOX_URL ?? '' },
  };
  const deadline = Date.now() + timeoutMs;
  let report = await checkInvariants(query, options);
  while (report.violations.length > 0 && Date.now() < deadline) {
    await sleep(1000);
    report = await checkInvariants(query, options).catch(() => report);
  }
  return report;
}

/** Final status of each buyer's sale, from the database. */
export async function statusesOf(stack: FaultStack, saleIds: string[]): Promise<Map<string, string>> {
  const rows = await stack.pool.query<{ id: string; status: string }>(
    'select id, status from sales where id = any($1::uuid[])',
    [saleIds],
  );
  return new Map(rows.rows.map((row) => [row.id, row.status]));
}

// ------------------------------------------------------------------------------------------------ one scenario

export interface ScenarioResult {
  event: FaultEvent;
  outcomes: BuyerOutcome[];
  report: InvariantReport;
  statuses: Map<string, string>;
  /** Buyers who pay and got a reservation: each must end with a CONFIRMED sale. */
  payers: BuyerOutcome[];
  faultAtMs: number;
  totalMs: number;
}

/**
 * Publishes an event, lets `buyers` reserve and pay (2 of 3 pay; the rest release or let the reservation expire),
 * injects the fault once a few payments are in flight, waits for every buyer and for every reservation to end, and
 * returns what the assertions need.
 */
export async function runScenario(
  stack: FaultStack,
  options: {
    buyers: number;
    capacity: number;
    paymentWindowMs: number;
    inject: () => Promise<void>;
    log?: (line: string) => void;
    /** Every non-payer releases (instead of half letting the reservation expire). */
    releaseAll?: boolean;
  },
): Promise<ScenarioResult> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const event = await publishFaultEvent(stack, options.capacity);
  const crowd = await startCrowd(stack, event, {
    count: options.buyers,
    budgetMs: 120_000,
    releaseAll: options.releaseAll ?? false,
  });
  await until('payments in flight', () => crowd.progress.chargesStarted >= 3, 60_000);
  const faultAtMs = Date.now() - started;
  log(`fault at +${faultAtMs} ms: ${JSON.stringify(crowd.progress)}`);
  await options.inject();
  log(`recovered at +${Date.now() - started} ms`);
  const outcomes = await crowd.outcomes;
  log(`buyers done at +${Date.now() - started} ms`);
  const report = await settledInvariants(stack, event, options.paymentWindowMs + 90_000);
  if (report.violations.length > 0) await logViolatingCheckouts(stack, report.violations, log);
  const saleIds = outcomes.map((o) => o.saleId).filter((id): id is string => id !== null);
  const statuses = await statusesOf(stack, saleIds);
  return {
    event,
    outcomes,
    report,
    statuses,
    payers: outcomes.filter((o) => o.pays && o.saleId !== null),
    faultAtMs,
    totalMs: Date.now() - started,
  };
}

/**
 * A buyer's retries and the errors behind them: the first few and the last few, since a buyer that never finished is
 * explained by what it kept getting at the end (a 429 after many retries), not only by what started it.
 */
const retriesOf = (o: BuyerOutcome): string => {
  const shown =
    o.errors.length <= 8
      ? o.errors
      : [...o.errors.slice(0, 3), `… ${o.errors.length - 8} more …`, ...o.errors.slice(-5)];
  return `retries ${o.retries}${shown.length ? `: ${shown.join('; ')}` : ''}`;
};

/** A readable line per buyer for a failing assertion. */
export const describeOutcomes = (result: ScenarioResult): string =>
  result.outcomes
    .map(
      (o) =>
        `#${o.index} ${o.pays ? 'payer' : 'non-payer'} ${o.saleId ?? '-'} → ${o.outcome} / ${o.saleId ? result.statuses.get(o.saleId) : '-'} (${retriesOf(o)})`,
    )
    .join('\n');

/** Progress lines of a fault test, on stderr so they show up next to jest's output. */
export const faultLog =
  (name: string) =>
  (line: string): void => {
    process.stderr.write(`[faults:${name}] ${line}\n`);
  };

/**
 * Sales of payers that did not end CONFIRMED, described (empty when every purchase completed). A scenario that expects
 * some purchases not to finish names them with `excused`, judged on the outcome itself rather than on its description,
 * which grows as the harness explains more.
 */
export const unfinishedPurchases = (
  result: ScenarioResult,
  excused: (payer: BuyerOutcome, status: string | undefined) => boolean = () => false,
): string[] =>
  result.payers
    .filter((payer) => {
      const status = result.statuses.get(payer.saleId ?? '');
      return status !== 'CONFIRMED' && !excused(payer, status);
    })
    .map(
      (payer) =>
        `#${payer.index} ${payer.saleId}: ${payer.outcome} / ${result.statuses.get(payer.saleId ?? '')} (${retriesOf(payer)})`,
    );

/** Logs the checkout history of every sale a violation names by reference, so a failing run explains itself. */
export async function logViolatingCheckouts(
  stack: FaultStack,
  violations: readonly string[],
  log: (line: string) => void,
): Promise<void> {
  const references = [...new Set(violations.flatMap((line) => line.match(/FT-[0-9A-Z]{8}/g) ?? []))];
  for (const reference of references) {
    const rows = await stack.pool.query<{ id: string }>('select id from sales where reference = $1', [reference]);
    const saleId = rows.rows[0]?.id;
    if (saleId) log(`${reference} (${saleId}) checkout history:\n${await checkoutHistory(stack, saleId)}`);
  }
}

/** A compact account of a sale's checkout execution (event types with times), for a failing assertion. */
export async function checkoutHistory(stack: FaultStack, saleId: string): Promise<string> {
  const { client, connection } = await connectTemporalClient({
    TEMPORAL_ADDRESS: stack.env.TEMPORAL_ADDRESS ?? '',
    TEMPORAL_NAMESPACE: stack.env.TEMPORAL_NAMESPACE ?? 'default',
  });
  try {
    const history = await client.workflow.getHandle(`checkout/${saleId}`).fetchHistory();
    const events = history.events ?? [];
    const start = Number(events[0]?.eventTime?.seconds ?? 0) * 1000 + (events[0]?.eventTime?.nanos ?? 0) / 1e6;
    return events
      .map((event) => {
        const at = Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6 - start;
        const type = proto.temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? String(event.eventType);
        const activity = event.activityTaskScheduledEventAttributes?.activityType?.name;
        const failure =
          event.activityTaskTimedOutEventAttributes?.failure?.message ??
          event.activityTaskFailedEventAttributes?.failure?.message ??
          event.workflowTaskFailedEventAttributes?.failure?.message;
        return `+${Math.round(at)}ms ${type.replace('EVENT_TYPE_', '')}${activity ? ` ${activity}` : ''}${failure ? ` (${failure})` : ''}`;
      })
      .join('\n');
  } catch (error) {
    return `history unavailable: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    await connection.close();
  }
}

/** When the PostgreSQL server started: a restart changes it. */
export async function postgresStartedAt(databaseUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const rows = await client.query<{ at: Date }>('select pg_postmaster_start_time() as at');
    return rows.rows[0]?.at.toISOString() ?? '';
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The Redis server's run id: a restart changes it. */
export async function redisRunId(redisUrl: string): Promise<string> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  try {
    return /run_id:(\w+)/.exec(await redis.info('server'))?.[1] ?? '';
  } finally {
    redis.disconnect();
  }
}
