/**
 * The benchmark's own isolated stack, started the way scripts/test.ts starts the test stack: a disposable
 * PostgreSQL database, a Redis database index, a Temporal dev server (SQLite file, like the tests), the sandbox
 * providers, the worker and the API as child processes on free ports — plus a bench-only worker that runs the empty
 * workflow of the orchestration baseline. API and worker load bench/lib/probe.ts, which records event-loop lag.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { nativeEnvFor, nodeFlagsFor } from '../../config/node-flags.js';
import { dropDatabase, recreateDatabase } from '../../scripts/support/database.js';
import {
  freePorts,
  httpOk,
  isPortOpen,
  type ManagedProcess,
  startProcess,
  waitFor,
} from '../../scripts/support/processes.js';
import { startTemporalDevServer, temporalBinary } from '../../scripts/support/temporal.js';
import { startTemporalServer } from '../../scripts/support/temporal-server.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/definitions.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BENCH_TASK_QUEUE = 'ticketing-bench';
export const EMPTY_TASK_QUEUE = 'bench-empty';

/**
 * How Temporal persists: `file` is exactly what `npm run dev` and scripts/test.ts run (the dev server's SQLite file,
 * write-ahead logging, scripts/support/temporal.ts); `journal` is the same file with SQLite's default rollback
 * journal (what they ran before 2026-11-26); `memory` keeps everything in memory; `server` is the production Temporal
 * server on PostgreSQL. The modes show how much of the ceiling is Temporal's persistence.
 */
export type TemporalMode = 'file' | 'journal' | 'memory' | 'server';
export const TEMPORAL_MODES: readonly TemporalMode[] = ['file', 'journal', 'memory', 'server'];
/** History shards of the production server in the bench: one per core is plenty on one box. */
const BENCH_HISTORY_SHARDS = Number(process.env.BENCH_TEMPORAL_SHARDS ?? 4);

async function startTemporal(
  mode: TemporalMode,
  options: { port: number; uiPort: number; dbFile: string; logFile: string; databaseUrl: string; work: string },
): Promise<ManagedProcess> {
  if (mode === 'file') return startTemporalDevServer(options);
  if (mode === 'server') {
    // The production topology (scripts/support/temporal-server.ts) on fresh databases beside the bench's own.
    const base = new URL(options.databaseUrl).pathname.slice(1);
    for (const name of [`${base}_temporal`, `${base}_temporal_visibility`]) {
      const url = new URL(options.databaseUrl);
      url.pathname = `/${name}`;
      await dropDatabase(url.href).catch(() => undefined);
    }
    return startTemporalServer({
      databaseUrl: options.databaseUrl,
      persistence: `${base}_temporal`,
      visibility: `${base}_temporal_visibility`,
      shards: BENCH_HISTORY_SHARDS,
      port: options.port,
      uiPort: options.uiPort,
      workDir: join(options.work, 'temporal-server'),
      logFile: options.logFile,
      uiLogFile: options.logFile.replace(/\.log$/, '-ui.log'),
    });
  }
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
    '--namespace',
    'default',
    '--log-level',
    'warn',
    ...(mode === 'journal' ? ['--db-filename', options.dbFile] : []),
    ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
  ];
  const server = startProcess({ name: 'temporal', command: temporalBinary(), args, logFile: options.logFile });
  await waitFor(`Temporal on port ${options.port}`, () => isPortOpen(options.port), { process: server });
  await waitFor('Temporal UI', () => httpOk(`http://127.0.0.1:${options.uiPort}/`), { process: server });
  return server;
}

export interface BenchStack {
  env: Record<string, string>;
  apiUrl: string;
  sandboxUrl: string;
  temporalAddress: string;
  work: string;
  logDir: string;
  processes: { temporal: ManagedProcess; sandbox: ManagedProcess; worker: ManagedProcess; api: ManagedProcess };
  /**
   * Replicas of the API beside the first (`apiReplicas` − 1), each on a port of its own and sharing its database, Redis
   * and Temporal, as replicas behind a load balancer do; `apiUrls` lists every replica, the first one's first.
   */
  apiReplicas: ManagedProcess[];
  apiUrls: string[];
  emptyWorker: ManagedProcess;
  probeFile(name: 'api' | 'worker'): string;
  /** Stops the API and starts it again with `extra` over its environment (same port); resolves once it is live. */
  restartApi(extra: Record<string, string>): Promise<ManagedProcess>;
  stop(): Promise<void>;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...env } });
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

export async function startBenchStack(options: {
  databaseUrl: string;
  redisUrl: string;
  poolMax: number;
  temporalMode: TemporalMode;
  log: (line: string) => void;
  /** API processes to run (1 unless a bench compares replicas). */
  apiReplicas?: number;
}): Promise<BenchStack> {
  const work = mkdtempSync(join(tmpdir(), 'ticketing-bench-'));
  const logDir = join(ROOT, '.dev', 'bench-logs', `${process.pid}`);
  mkdirSync(logDir, { recursive: true });
  const [temporalPort = 0, temporalUiPort = 0, sandboxPort = 0, smtpPort = 0, apiPort = 0, ...replicaPorts] =
    await freePorts(4 + Math.max(1, options.apiReplicas ?? 1));
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    // The bench measures capacity; the per-key limiter (tested on its own) would answer 429 long before that.
    ORGANIZER_RATE_LIMIT_PER_MINUTE: '100000000',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    DATABASE_URL: options.databaseUrl,
    DATABASE_POOL_MAX: String(options.poolMax),
    REDIS_URL: options.redisUrl,
    TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
    TEMPORAL_TASK_QUEUE: BENCH_TASK_QUEUE,
    SANDBOX_URL: `http://127.0.0.1:${sandboxPort}`,
    SANDBOX_PORT: String(sandboxPort),
    SANDBOX_SMTP_PORT: String(smtpPort),
    SMTP_PORT: String(smtpPort),
    PUBLIC_ORIGIN: `http://127.0.0.1:${apiPort}`,
    API_PORT: String(apiPort),
    GATEWAY_B_WEBHOOK_URL: `http://127.0.0.1:${apiPort}/api/v1/webhooks/gateway-b`,
  };
  const started: ManagedProcess[] = [];
  // A process killed before it exits writes no CPU profile: profiled runs give the worker's drain time to end.
  const stopGraceMs = process.env.BENCH_CPU_PROFILE_DIR ? 120_000 : 10_000;
  const stop = async () => {
    for (const child of [...started].reverse()) await child.stop('SIGTERM', stopGraceMs).catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
    if (!process.env.KEEP_BENCH_DATABASE) {
      await dropDatabase(options.databaseUrl).catch(() => undefined);
      if (options.temporalMode === 'server') {
        for (const suffix of ['_temporal', '_temporal_visibility']) {
          const url = new URL(options.databaseUrl);
          url.pathname = `${url.pathname}${suffix}`;
          await dropDatabase(url.href).catch(() => undefined);
        }
      }
    }
  };
  try {
    options.log(`stack: database ${new URL(options.databaseUrl).pathname.slice(1)}, redis ${options.redisUrl}`);
    await recreateDatabase(options.databaseUrl);
    if ((await run(process.execPath, ['--import', 'tsx', 'scripts/migrations.ts', 'up'], env)) !== 0) {
      throw new Error('migrations failed');
    }
    options.log(
      options.temporalMode === 'server'
        ? 'stack: temporal server on PostgreSQL'
        : `stack: temporal dev server (${options.temporalMode})`,
    );
    const temporal = await startTemporal(options.temporalMode, {
      port: temporalPort,
      uiPort: temporalUiPort,
      dbFile: join(work, 'temporal.sqlite'),
      logFile: join(logDir, 'temporal.log'),
      databaseUrl: options.databaseUrl,
      work,
    });
    started.push(temporal);
    const probe = pathToFileURL(join(ROOT, 'bench', 'lib', 'probe.ts')).href;
    const node = (name: string, entry: string, extra: Record<string, string> = {}, withProbe = false) =>
      startProcess({
        name,
        command: process.execPath,
        args: [
          // The process's production flags (config/node-flags.ts), or BENCH_NODE_FLAGS_<PROCESS>=<flags> instead (empty
          // for none), to compare settings; an API replica (api-2, …) takes the API's.
          ...(process.env[`BENCH_NODE_FLAGS_${name.replace(/-\d+$/, '').toUpperCase().replace(/-/g, '_')}`]
            ?.split(/\s+/)
            .filter(Boolean) ?? nodeFlagsFor(entry)),
          '--import',
          'tsx',
          ...(withProbe ? ['--import', probe] : []),
          // BENCH_CPU_PROFILE_DIR=<dir>: V8 CPU profiles of the API and the worker (one per thread, in <dir>/<process>),
          // written when they stop.
          ...(withProbe && process.env.BENCH_CPU_PROFILE_DIR
            ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROFILE_DIR, name)}`]
            : []),
          entry,
        ],
        env: {
          ...env,
          ...nativeEnvFor(entry),
          ...extra,
          ...(withProbe ? { BENCH_PROBE_FILE: join(logDir, `${name}.probe.jsonl`) } : {}),
        },
        cwd: ROOT,
        logFile: join(logDir, `${name}.log`),
      });
    options.log('stack: sandbox, worker, api, bench worker');
    const sandbox = node('sandbox', 'sandbox/main.ts');
    started.push(sandbox);
    await waitFor('sandbox', () => httpOk(`${env.SANDBOX_URL}/control/health`), { process: sandbox });
    const worker = node('worker', 'worker/main.ts', {}, true);
    started.push(worker);
    // Replicas share the database's 100 connections with the worker and the bench: past two, each gets a smaller
    // pool, so that n of them together open about what two would.
    const replicaCount = 1 + replicaPorts.length;
    const apiPool: Record<string, string> =
      replicaCount > 2
        ? { DATABASE_POOL_MAX: String(Math.max(5, Math.floor((2 * options.poolMax) / replicaCount))) }
        : {};
    let api = node('api', 'api/main.ts', apiPool, true);
    started.push(api);
    const apiReplicas = replicaPorts.map((port, index) =>
      node(`api-${index + 2}`, 'api/main.ts', { ...apiPool, API_PORT: String(port) }, true),
    );
    started.push(...apiReplicas);
    const emptyWorker = node('bench-worker', 'bench/lib/empty-worker.ts', { TEMPORAL_TASK_QUEUE: EMPTY_TASK_QUEUE });
    started.push(emptyWorker);
    await waitFor('API', () => httpOk(`http://127.0.0.1:${apiPort}/health/live`), { process: api });
    for (const [index, replica] of apiReplicas.entries()) {
      await waitFor(`API replica ${index + 2}`, () => httpOk(`http://127.0.0.1:${replicaPorts[index]}/health/live`), {
        process: replica,
      });
    }
    return {
      env,
      apiUrl: `http://127.0.0.1:${apiPort}`,
      apiReplicas,
      apiUrls: [apiPort, ...replicaPorts].map((port) => `http://127.0.0.1:${port}`),
      sandboxUrl: env.SANDBOX_URL ?? '',
      temporalAddress: env.TEMPORAL_ADDRESS ?? '',
      work,
      logDir,
      processes: { temporal, sandbox, worker, api },
      emptyWorker,
      probeFile: (name) => join(logDir, `${name}.probe.jsonl`),
      async restartApi(extra) {
        await api.stop('SIGTERM', stopGraceMs);
        started.splice(started.indexOf(api), 1);
        api = node('api', 'api/main.ts', extra, true);
        started.push(api);
        await waitFor('API', () => httpOk(`http://127.0.0.1:${apiPort}/health/live`), { process: api });
        return api;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
