import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { FAIR_MATCHING_DYNAMIC_CONFIG } from '../../api/services/task-fairness.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/definitions.js';
import { httpOk, isPortOpen, type ManagedProcess, startProcess, waitFor } from './processes.js';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';

/** The Temporal CLI (dev server + UI) built from source once by scripts/bootstrap.sh and cached outside the repo. */
export function temporalBinary(): string {
  const path =
    process.env.TEMPORAL_BIN ?? join(homedir(), '.cache', 'ticketing', `temporal-${TEMPORAL_CLI_VERSION}`, 'temporal');
  if (!existsSync(path)) {
    throw new Error(`Temporal CLI not found at ${path}; run scripts/bootstrap.sh (it builds it with go install)`);
  }
  return path;
}

/** Starts `temporal server start-dev` with a persistent database file, so a restart keeps every workflow. */
export async function startTemporalDevServer(options: {
  port: number;
  uiPort: number;
  dbFile: string;
  logFile: string;
  /** The codec endpoint the Temporal UI decodes payloads with (the API's `/codec`); `npm run dev` passes it. */
  uiCodecEndpoint?: string;
}): Promise<ManagedProcess> {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
    '--db-filename',
    options.dbFile,
    // Write-ahead logging: with SQLite's default rollback journal every history write waits on a journal file and an
    // fsync, and the dev server stalled the whole box at half the workflows per second (bench/results/
    // quick-2026-11-26-*: 23 vs 54 empty workflows/s). A crashed server recovers from the WAL; losing the last writes
    // on power loss (synchronous=normal) is acceptable for a development server, which production never runs.
    '--sqlite-pragma',
    'journal_mode=wal',
    '--sqlite-pragma',
    'synchronous=normal',
    '--namespace',
    'default',
    '--log-level',
    'warn',
    // Checkouts' fairness keys (api/services/task-fairness.ts) mean nothing to the default matcher.
    ...Object.entries(FAIR_MATCHING_DYNAMIC_CONFIG).flatMap(([key, value]) => [
      '--dynamic-config-value',
      `${key}=${JSON.stringify(value)}`,
    ]),
    ...(options.uiCodecEndpoint ? ['--ui-codec-endpoint', options.uiCodecEndpoint] : []),
    ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
  ];
  const server = startProcess({ name: 'temporal', command: temporalBinary(), args, logFile: options.logFile });
  await waitFor(`Temporal on port ${options.port}`, () => isPortOpen(options.port), {
    process: server,
    timeoutMs: 60_000,
  });
  await waitFor(`Temporal UI on port ${options.uiPort}`, () => httpOk(`http://127.0.0.1:${options.uiPort}/`), {
    process: server,
    timeoutMs: 60_000,
  });
  return server;
}
