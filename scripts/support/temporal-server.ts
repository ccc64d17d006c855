/**
 * The production Temporal topology on this machine: the Temporal server itself (not the CLI's dev server) built from
 * Go modules, persisting to PostgreSQL (one database for persistence, one for visibility, advanced visibility with
 * our search attributes), with a configurable number of history shards, and the Temporal UI server beside it.
 *
 * The versions are the ones the Temporal CLI v1.5.1 embeds, so the dev server and this server behave alike; the
 * binaries are built once with `go install` and cached outside the repo like the CLI. The SQL schema files come
 * from the server module's source in the Go module cache (the same version, put there by the build).
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { FAIR_MATCHING_DYNAMIC_CONFIG } from '../../api/services/task-fairness.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/definitions.js';
import { httpOk, isPortOpen, type ManagedProcess, startProcess, waitFor } from './processes.js';
import { temporalBinary } from './temporal.js';

export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
export const TEMPORAL_UI_VERSION = 'v2.42.1';

const run = promisify(execFile);
const cache = (name: string) => join(homedir(), '.cache', 'ticketing', name);

export function temporalServerBinaries(): { server: string; sqlTool: string; ui: string } {
  const serverDir = process.env.TEMPORAL_SERVER_DIR ?? cache(`temporal-server-${TEMPORAL_SERVER_VERSION}`);
  return {
    server: join(serverDir, 'server'),
    sqlTool: join(serverDir, 'sql'),
    ui: join(process.env.TEMPORAL_UI_DIR ?? cache(`temporal-ui-${TEMPORAL_UI_VERSION}`), 'server'),
  };
}

/** Builds the server, its SQL tool and the UI server with `go install` when missing (first run: several minutes). */
export function ensureTemporalServerBuilt(log: (line: string) => void = () => undefined): void {
  const binaries = temporalServerBinaries();
  const builds: Array<[string, string[]]> = [];
  if (!existsSync(binaries.server) || !existsSync(binaries.sqlTool)) {
    builds.push([
      binaries.server,
      [
        `go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`,
        `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
      ],
    ]);
  }
  if (!existsSync(binaries.ui)) {
    builds.push([binaries.ui, [`github.com/temporalio/ui-server/v2/cmd/server@${TEMPORAL_UI_VERSION}`]]);
  }
  for (const [binary, modules] of builds) {
    const directory = join(binary, '..');
    mkdirSync(directory, { recursive: true });
    log(`building ${modules.join(' ')} (first run only)…`);
    execFileSync('go', ['install', ...modules], { env: { ...process.env, GOBIN: directory }, stdio: 'inherit' });
  }
}

/** The PostgreSQL schema files of the server version (versioned migrations the SQL tool applies). */
export function temporalSchemaDir(): string {
  const modules = execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
  const dir = join(modules, `go.temporal.io/server@${TEMPORAL_SERVER_VERSION}`, 'schema', 'postgresql', 'v12');
  if (!existsSync(dir)) throw new Error(`Temporal schema files not found at ${dir}; run ensureTemporalServerBuilt`);
  return dir;
}

export interface TemporalDatabases {
  /** Any URL of the PostgreSQL server (its host, port, user and password are used). */
  databaseUrl: string;
  persistence: string;
  visibility: string;
}

/** Creates both databases when missing and brings their schemas to the server version (idempotent). */
export async function prepareTemporalDatabases(databases: TemporalDatabases): Promise<void> {
  const url = new URL(databases.databaseUrl);
  const admin = new pg.Client({ connectionString: databases.databaseUrl });
  await admin.connect();
  try {
    for (const name of [databases.persistence, databases.visibility]) {
      const exists = await admin.query('select 1 from pg_database where datname = $1', [name]);
      if (exists.rowCount === 0) await admin.query(`create database "${name.replace(/"/g, '')}"`);
    }
  } finally {
    await admin.end();
  }
  const schemas = temporalSchemaDir();
  const tool = temporalServerBinaries().sqlTool;
  const common = [
    '--plugin',
    'postgres12',
    '--ep',
    url.hostname,
    '-p',
    url.port || '5432',
    '-u',
    decodeURIComponent(url.username || 'postgres'),
  ];
  const env = { ...process.env, SQL_PASSWORD: decodeURIComponent(url.password) };
  for (const [database, schema] of [
    [databases.persistence, 'temporal'],
    [databases.visibility, 'visibility'],
  ] as const) {
    await run(tool, [...common, '--db', database, 'setup-schema', '-v', '0.0'], { env });
    await run(tool, [...common, '--db', database, 'update-schema', '-d', join(schemas, schema, 'versioned')], { env });
  }
}

export interface TemporalServerOptions extends TemporalDatabases {
  /** Frontend gRPC port (what clients and workers dial). */
  port: number;
  uiPort: number;
  /** History shards: fixed for the life of a cluster (the persistence is laid out by shard). */
  shards: number;
  /** Where the generated configuration lives. */
  workDir: string;
  logFile: string;
  uiLogFile: string;
  /** The codec endpoint the UI decodes payloads with (the API's `/codec`). */
  uiCodecEndpoint?: string;
  /** The UI's browser sends the operator's credentials to the codec endpoint (docker-compose.yml's production UI). */
  uiCodecIncludeCredentials?: boolean;
  namespace?: string;
}

const canBind = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * Free ports for the services' own gRPC and membership listeners. The server stores membership ports in a SMALLINT
 * column, so they must stay below 32768, where the OS never hands out ephemeral ports: picked at random and probed.
 * Also what a test picks for a listener that starts after this server: the server's hundreds of outgoing connections
 * to PostgreSQL take ephemeral ports, one of which can be a port picked from that range a moment before.
 */
export async function freeLowPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    if (!ports.includes(candidate) && (await canBind(candidate))) ports.push(candidate);
  }
  return ports;
}

function serverConfig(options: TemporalServerOptions, ports: number[]): string {
  const url = new URL(options.databaseUrl);
  const [
    frontendMembership,
    historyGrpc,
    historyMembership,
    matchingGrpc,
    matchingMembership,
    workerGrpc,
    workerMembership,
  ] = ports;
  const store = (database: string, maxConns: number) => `
      sql:
        pluginName: postgres12
        databaseName: ${JSON.stringify(database)}
        connectAddr: ${JSON.stringify(`${url.hostname}:${url.port || '5432'}`)}
        connectProtocol: tcp
        user: ${JSON.stringify(decodeURIComponent(url.username || 'postgres'))}
        password: ${JSON.stringify(decodeURIComponent(url.password))}
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: 1h`;
  return `# Generated by scripts/support/temporal-server.ts; edit the options there, not this file.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${options.shards}
  datastores:
    default:${store(options.persistence, 20)}
    visibility:${store(options.visibility, 5)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:
    rpc: { grpcPort: ${options.port}, membershipPort: ${frontendMembership}, bindOnLocalHost: true }
  history:
    rpc: { grpcPort: ${historyGrpc}, membershipPort: ${historyMembership}, bindOnLocalHost: true }
  matching:
    rpc: { grpcPort: ${matchingGrpc}, membershipPort: ${matchingMembership}, bindOnLocalHost: true }
  worker:
    rpc: { grpcPort: ${workerGrpc}, membershipPort: ${workerMembership}, bindOnLocalHost: true }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:${options.port}
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: ${JSON.stringify(join(options.workDir, 'config', 'dynamicconfig', 'production.yaml'))}
  pollInterval: 60s
`;
}

const uiConfig = (options: TemporalServerOptions): string => `# Generated by scripts/support/temporal-server.ts.
temporalGrpcAddress: 127.0.0.1:${options.port}
port: ${options.uiPort}
enableUi: true
defaultNamespace: ${options.namespace ?? 'default'}
cors:
  cookieInsecure: true
  allowOrigins: []
codec:
  endpoint: ${JSON.stringify(options.uiCodecEndpoint ?? '')}
  includeCredentials: ${options.uiCodecIncludeCredentials ?? false}
`;

/** Registers the namespace and our search attributes (list columns and filters in the UI); repeats are no-ops. */
async function registerNamespace(address: string, namespace: string): Promise<void> {
  const cli = temporalBinary();
  // The frontend listens before it is healthy ("Frontend is not healthy yet"): the create is retried until it answers.
  let refusal = '';
  await waitFor(
    'namespace',
    async () => {
      try {
        await run(cli, ['operator', 'namespace', 'create', '--namespace', namespace, '--address', address]);
        return true;
      } catch (error) {
        refusal = (error as { stderr?: string }).stderr ?? String(error);
        return /already/i.test(refusal);
      }
    },
    { timeoutMs: 60_000 },
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}: ${refusal}`);
  });
  const attributes = Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--name', name, '--type', type]);
  // A new namespace takes a moment to be visible to every service; the create is retried until it is.
  await waitFor(
    'search attributes',
    async () => {
      try {
        await run(cli, [
          'operator',
          'search-attribute',
          'create',
          '--namespace',
          namespace,
          '--address',
          address,
          ...attributes,
        ]);
        return true;
      } catch {
        return false;
      }
    },
    { timeoutMs: 60_000 },
  );
}

/**
 * Starts the Temporal server on PostgreSQL (schemas brought up to date first) and the UI beside it; `stop` ends
 * both. Workers and clients dial `127.0.0.1:<port>` exactly as they dial the dev server.
 */
export async function startTemporalServer(options: TemporalServerOptions): Promise<ManagedProcess> {
  ensureTemporalServerBuilt();
  await prepareTemporalDatabases(options);
  const configDir = join(options.workDir, 'config');
  mkdirSync(join(configDir, 'dynamicconfig'), { recursive: true });
  writeFileSync(join(configDir, 'production.yaml'), serverConfig(options, await freeLowPorts(7)));
  // The fair matcher, as on the dev server: checkouts' fairness keys (api/services/task-fairness.ts) need it.
  const dynamicConfig = Object.entries(FAIR_MATCHING_DYNAMIC_CONFIG)
    .map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}\n`)
    .join('');
  writeFileSync(join(configDir, 'dynamicconfig', 'production.yaml'), dynamicConfig);
  const uiDir = join(options.workDir, 'ui', 'config');
  mkdirSync(uiDir, { recursive: true });
  writeFileSync(join(uiDir, 'production.yaml'), uiConfig(options));

  const binaries = temporalServerBinaries();
  const server = startProcess({
    name: 'temporal-server',
    command: binaries.server,
    args: ['--root', options.workDir, '--config', 'config', '--env', 'production', '--allow-no-auth', 'start'],
    logFile: options.logFile,
  });
  const ui = { current: null as ManagedProcess | null };
  try {
    await waitFor(`Temporal server on port ${options.port}`, () => isPortOpen(options.port), {
      process: server,
      timeoutMs: 90_000,
    });
    await registerNamespace(`127.0.0.1:${options.port}`, options.namespace ?? 'default');
    ui.current = startProcess({
      name: 'temporal-ui',
      command: binaries.ui,
      args: ['--root', join(options.workDir, 'ui'), '--config', 'config', '--env', 'production', 'start'],
      logFile: options.uiLogFile,
    });
    await waitFor(`Temporal UI on port ${options.uiPort}`, () => httpOk(`http://127.0.0.1:${options.uiPort}/`), {
      process: ui.current,
      timeoutMs: 60_000,
    });
  } catch (error) {
    await ui.current?.stop('SIGTERM', 5_000).catch(() => undefined);
    await server.stop('SIGTERM', 10_000).catch(() => undefined);
    throw error;
  }
  return {
    name: 'temporal-server',
    child: server.child,
    logFile: options.logFile,
    exited: server.exited,
    async stop(signal, timeoutMs) {
      await ui.current?.stop(signal, timeoutMs);
      await server.stop(signal, timeoutMs);
    },
  };
}
