/**
 * The whole suite: lint, typecheck, then jest against a real stack this script starts and removes — a disposable
 * PostgreSQL database, a Redis database index, a Temporal dev server with UI, the sandbox providers and a worker.
 * Extra arguments go to jest (`npm test -- test/unit`).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { nativeEnvFor, nodeFlagsFor } from '../config/node-flags.js';
import { connectTemporalClient } from '../config/temporal.js';
import { dropDatabase, recreateDatabase } from './support/database.js';
import { freePorts, httpOk, type ManagedProcess, startProcess, waitFor } from './support/processes.js';
import { startTemporalDevServer } from './support/temporal.js';
import { brokenExecutions } from './support/terminations.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/**
 * Fault files whose faults hit only processes of their own (each kills or restarts its own worker, API or Temporal
 * server, on its own task queue) run side by side. The others run one at a time, alone: they restart the machine's
 * PostgreSQL or Redis, or flip the shared sandbox's global fault switches (gateway down, notifications lost), which
 * would hit every test running meanwhile.
 */
const SIDE_BY_SIDE_FAULTS = [
  'test/faults/api-kill.test.ts',
  'test/faults/worker-kill.test.ts',
  'test/faults/temporal-restart.test.ts',
  'test/faults/two-workers.test.ts',
];
/**
 * Files that touch nothing of the run's stack or of the machine's services (the simulations bring their own Temporal
 * server and in-memory providers) run in the background, one after the other, through both fault phases of a full
 * run: their minutes overlap the serial phase's waits for restarts instead of adding to the run. Their output is
 * printed when they end. A focused run of one of them runs it in its phase as usual.
 */
const BACKGROUND_FAULTS = ['test/faults/starved-worker.test.ts'];
const BACKGROUND_SIMULATIONS = [
  'test/simulation/checkout-simulation.test.ts',
  'test/simulation/membership-simulation.test.ts',
  'test/simulation/lost-local-charge.test.ts',
  'test/simulation/event-cancellation-simulation.test.ts',
];
/**
 * The production-profile smoke test compiles the project and starts its own Temporal server on PostgreSQL, Redis and
 * two worker replicas: on a full run it goes with the background files, not beside the main phase's tests.
 */
const BACKGROUND_DEPLOYMENT = ['test/deployment/production-smoke.test.ts'];
const BACKGROUND_LATER = [...BACKGROUND_SIMULATIONS, ...BACKGROUND_DEPLOYMENT];
const OWN_PROCESS_FAULTS = [...SIDE_BY_SIDE_FAULTS, ...BACKGROUND_FAULTS];
const jestArgs = process.argv.slice(2);
const focused = jestArgs.some((arg) => !arg.startsWith('-'));

/**
 * Runs a command in the repo and resolves with its exit code and, when `holdOutput` is set, its output: held until it
 * ends, so a background run does not interleave with the rest (otherwise the output goes straight to ours).
 */
function runCommand(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  holdOutput: boolean,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      stdio: holdOutput ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      env: { ...process.env, ...env },
    });
    const chunks: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.once('exit', (code, signal) =>
      resolve({ code: code ?? (signal ? 1 : 0), output: Buffer.concat(chunks).toString() }),
    );
  });
}

async function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  return (await runCommand(command, args, env, false)).code;
}

const runStartedAt = Date.now();
/** Announces a phase with the run's elapsed time, so a slow run's log says where its minutes went. */
function phase(title: string): void {
  const elapsed = Math.round((Date.now() - runStartedAt) / 1000);
  console.log(`» ${title} [${Math.floor(elapsed / 60)}m${String(elapsed % 60).padStart(2, '0')}s]`);
}

/**
 * Nothing a provider, the database or a process does may fail an execution (ARCHITECTURE.md): after the suite, every
 * execution on the run's Temporal server completed, was cancelled on purpose, continued as new or is still running. A
 * test that terminates an execution on purpose says so in the termination's reason (scripts/support/terminations.ts).
 */
async function noBrokenExecutions(env: NodeJS.ProcessEnv): Promise<boolean> {
  const { client, connection } = await connectTemporalClient({
    TEMPORAL_ADDRESS: env.TEMPORAL_ADDRESS ?? '',
    TEMPORAL_NAMESPACE: env.TEMPORAL_NAMESPACE ?? 'default',
  });
  try {
    const { broken, terminatedOnPurpose } = await brokenExecutions(client);
    const { count: completed } = await client.workflow.count("ExecutionStatus = 'Completed'");
    console.log(
      `  ${completed} executions completed; ${terminatedOnPurpose} terminated on purpose by tests; ` +
        `${broken.length} failed, terminated or timed out`,
    );
    for (const line of broken) console.error(`  ✗ ${line}`);
    return broken.length === 0;
  } finally {
    await connection.close();
  }
}

const work = mkdtempSync(join(tmpdir(), 'ticketing-test-'));
// Every run gets its own ports, database and Redis index, so two runs on one machine never share state.
const runId = `${process.pid}`;
const [
  temporalPort = 7333,
  temporalUiPort = 8333,
  sandboxPort = 4410,
  smtpPort = 2625,
  apiPort = 3300,
  workerMetricsPort = 9564,
  temporalMetricsPort = 9565,
] = await freePorts(7);
const logDir = join(ROOT, '.dev', 'test-logs', runId);

/**
 * A Redis database of this run's own, claimed by a lock in database 0 that lapses if the run dies without releasing
 * it. Runs on one machine (focused runs beside a full one) picked theirs by pid modulo 15 before: two could get the
 * same one, and the later run's FLUSHDB wiped the earlier one's waiting rooms under its tests (a turn "unknown").
 * Databases 1–7 are the runs'; test/e2e/dev-stack.test.ts takes the run's plus 8.
 */
async function claimRedisDatabase(): Promise<{ url: string; release: () => Promise<void> }> {
  const locks = new Redis('redis://127.0.0.1:6379/0', { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await locks.connect();
    for (let offset = 0; offset < 7; offset += 1) {
      const database = 1 + ((process.pid + offset) % 7);
      const lock = `ticketing:test-run-redis-database:${database}`;
      if ((await locks.set(lock, runId, 'EX', 3 * 60 * 60, 'NX')) !== 'OK') continue;
      return {
        url: `redis://127.0.0.1:6379/${database}`,
        release: async () => {
          if ((await locks.get(lock)) === runId) await locks.del(lock);
          locks.disconnect();
        },
      };
    }
  } catch {
    // No lock to be had (Redis not up yet is reported by the stack's own start): fall back to the pid's database.
  }
  locks.disconnect();
  return { url: `redis://127.0.0.1:6379/${1 + (process.pid % 7)}`, release: async () => undefined };
}
const redisDatabase = process.env.TEST_REDIS_URL
  ? { url: process.env.TEST_REDIS_URL, release: async () => undefined }
  : await claimRedisDatabase();
const testEnv: NodeJS.ProcessEnv = {
  NODE_ENV: 'test',
  LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
  DATABASE_URL: process.env.TEST_DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/ticketing_test_${runId}`,
  REDIS_URL: redisDatabase.url,
  TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
  TEMPORAL_UI_PORT: String(temporalUiPort),
  TEMPORAL_TASK_QUEUE: 'ticketing-test',
  // Few webhook slots, so the test that stalls receivers fills them well inside a receiver's timeout under any load.
  WEBHOOK_WORKER_MAX_ACTIVITIES: '4',
  SANDBOX_URL: `http://127.0.0.1:${sandboxPort}`,
  SANDBOX_PORT: String(sandboxPort),
  SANDBOX_SMTP_PORT: String(smtpPort),
  SMTP_PORT: String(smtpPort),
  PUBLIC_ORIGIN: `http://127.0.0.1:${apiPort}`,
  API_PORT: String(apiPort),
  GATEWAY_B_WEBHOOK_URL: `http://127.0.0.1:${apiPort}/api/v1/webhooks/gateway-b`,
  TEST_WORK_DIR: work,
  // The worker's /metrics (test/e2e/metrics.test.ts scrapes it) and the Temporal SDK exporter it includes.
  WORKER_METRICS_PORT: String(workerMetricsPort),
  TEMPORAL_METRICS_BIND_ADDRESS: `127.0.0.1:${temporalMetricsPort}`,
  // A starved 2-core machine must not shed requests of tests about something else; load-shedding.test.ts sets its own.
  LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: '0',
  LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION: '0',
  // Tests share one database: a global lapsed-hold sweep would close other tests' sales under them (the reconciler and
  // metrics tests assert who closes one). Its tests run it scoped to their own workspace (test/integration/lapsed-holds).
  LAPSED_HOLD_SWEEP_ENABLED: 'false',
};

const started: ManagedProcess[] = [];
let dropDatabaseAtExit: string | null = null;
async function teardown(): Promise<void> {
  for (const child of [...started].reverse()) await child.stop('SIGTERM', 10_000);
  rmSync(work, { recursive: true, force: true });
  if (dropDatabaseAtExit && !process.env.KEEP_TEST_DATABASE)
    await dropDatabase(dropDatabaseAtExit).catch(() => undefined);
  await redisDatabase.release().catch(() => undefined);
}
process.on('SIGINT', () => void teardown().then(() => process.exit(130)));

let exitCode = 1;
try {
  // The typecheck runs while the stack starts (most of both is waiting on the other core); jest waits for its verdict.
  let typecheck: Promise<number> = Promise.resolve(0);
  if (!focused) {
    phase('lint (biome)');
    if ((await run('biome', ['check', '.'])) !== 0) throw new Error('lint failed');
    phase('typecheck (tsc), beside the test stack');
    typecheck = run('tsc', ['--noEmit', '-p', 'tsconfig.json']);
  }

  phase('test stack: database, redis, temporal, sandbox, worker');
  Object.assign(process.env, testEnv);
  await recreateDatabase(testEnv.DATABASE_URL ?? '');
  dropDatabaseAtExit = testEnv.DATABASE_URL ?? null;
  if ((await run('tsx', ['scripts/migrations.ts', 'up'], testEnv)) !== 0) throw new Error('migrations failed');
  const redis = new Redis(testEnv.REDIS_URL ?? '');
  await redis.flushdb();
  redis.disconnect();

  // One workflow bundle for the run's workers (the fault stacks' too) and its replays: built once, not per process.
  testEnv.WORKFLOW_BUNDLE_PATH = join(work, 'workflow-bundle.js');
  const bundled = await run('tsx', ['worker/build-workflow-bundle.ts', testEnv.WORKFLOW_BUNDLE_PATH], testEnv);
  if (bundled !== 0) throw new Error('building the workflow bundle failed');
  process.env.WORKFLOW_BUNDLE_PATH = testEnv.WORKFLOW_BUNDLE_PATH;

  started.push(
    await startTemporalDevServer({
      port: temporalPort,
      uiPort: temporalUiPort,
      dbFile: join(work, 'temporal.sqlite'),
      logFile: join(logDir, 'temporal.log'),
    }),
  );
  const node = (name: string, entry: string): ManagedProcess =>
    startProcess({
      name,
      command: process.execPath,
      args: [...nodeFlagsFor(entry), '--import', 'tsx', entry],
      env: { ...testEnv, ...nativeEnvFor(entry) },
      cwd: ROOT,
      logFile: join(logDir, `${name}.log`),
    });
  if (existsSync(join(ROOT, 'sandbox', 'main.ts'))) {
    const sandbox = node('sandbox', 'sandbox/main.ts');
    started.push(sandbox);
    await waitFor('sandbox', () => httpOk(`http://127.0.0.1:${sandboxPort}/control/health`), { process: sandbox });
  }
  const worker = node('worker', 'worker/main.ts');
  started.push(worker);
  // One API process on a real port receives the sandbox gateways' notifications; tests also build their own
  // in-process API (with their own settings) against the same stack.
  const api = node('api', 'api/main.ts');
  started.push(api);
  await waitFor('API', () => httpOk(`http://127.0.0.1:${apiPort}/health/live`), { process: api });

  if ((await typecheck) !== 0) throw new Error('typecheck failed');
  phase(`jest (stack logs in ${logDir})`);
  const jestEnv = {
    ...testEnv,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --experimental-vm-modules --no-warnings`.trim(),
  };
  // Fault injection restarts the machine's Postgres and Redis, so it runs after everything else: on a full run, or
  // when asked for (`npm test -- test/faults`, or some of its files).
  const faultsOnly = jestArgs.some((arg) => arg.includes('test/faults'));
  const inBackgroundLater = focused ? [] : BACKGROUND_LATER.map((file) => `--testPathIgnorePatterns=${file}`);
  exitCode = faultsOnly
    ? 0
    : await run('jest', ['--ci', ...jestArgs, '--testPathIgnorePatterns=test/faults', ...inBackgroundLater], jestEnv);
  if (exitCode === 0 && (!focused || faultsOnly)) {
    const wholeFaultSuite = !focused || jestArgs.some((arg) => /^test\/faults\/?$/.test(arg));
    if (wholeFaultSuite) {
      const backgroundFiles = [...BACKGROUND_FAULTS, ...(focused ? [] : BACKGROUND_LATER)];
      phase(`in the background: ${backgroundFiles.join(', ')}`);
      const background = runCommand('jest', ['--ci', '--maxWorkers=1', ...backgroundFiles], jestEnv, true);
      phase('fault injection on private processes, side by side (kills and restarts their own worker, API, Temporal)');
      exitCode = await run(
        'jest',
        ['--ci', `--maxWorkers=${SIDE_BY_SIDE_FAULTS.length}`, ...SIDE_BY_SIDE_FAULTS],
        jestEnv,
      );
      if (exitCode === 0) {
        phase('fault injection on shared services, one at a time (the sandbox, Redis and PostgreSQL)');
        exitCode = await run(
          'jest',
          [
            '--ci',
            '--runInBand',
            'test/faults',
            ...OWN_PROCESS_FAULTS.map((file) => `--testPathIgnorePatterns=${file}`),
          ],
          jestEnv,
        );
      }
      const { code, output } = await background;
      phase(`the background files ended (exit ${code})`);
      process.stdout.write(output);
      if (exitCode === 0) exitCode = code;
    } else {
      phase('fault injection, one file at a time');
      exitCode = await run('jest', ['--ci', '--runInBand', ...jestArgs], jestEnv);
    }
  }
  if (exitCode === 0 && !focused) {
    phase('no execution of the whole run failed, was terminated or timed out');
    if (!(await noBrokenExecutions(testEnv))) exitCode = 1;
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  exitCode = 1;
} finally {
  await teardown();
}
process.exit(exitCode);
