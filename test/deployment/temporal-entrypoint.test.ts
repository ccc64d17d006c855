/**
 * ops/temporal/entrypoint.sh, the production profile's Temporal server and UI entrypoint, run as the image runs it but
 * with stand-ins for the tools it calls (psql, the SQL tool, the server, the CLI, the UI server), since this machine
 * has no Docker engine: what configuration it writes, that the UI's codec endpoint follows PUBLIC_ORIGIN, and that a
 * stop reaches the server (sh ignores signals it does not handle, so `docker stop` used to end in a kill).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './compose-file.js';

const ENTRYPOINT = join(ROOT, 'ops', 'temporal', 'entrypoint.sh');

let work: string;
let calls: string;
/** Every entrypoint started, stopped after each test whatever it asserted (a failed one must not leave it running). */
const running: ChildProcess[] = [];

function stub(name: string, body: string): void {
  const path = join(work, 'bin', name);
  writeFileSync(path, `#!/bin/sh\necho "${name} $*" >> "${calls}"\n${body}\n`);
  chmodSync(path, 0o755);
}

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'temporal-entrypoint-'));
  calls = join(work, 'calls.log');
  writeFileSync(calls, '');
  mkdirSync(join(work, 'bin'), { recursive: true });
  stub('psql', 'echo 1');
  stub('sql', 'exit 0');
  stub('temporal', 'exit 0');
  // The server runs until it is told to stop, and says how it was stopped.
  stub('server', `trap 'echo "server stopped by TERM" >> "${calls}"; exit 0' TERM\nwhile :; do sleep 0.1; done`);
  stub('temporal-ui', `cat "$2/config/production.yaml" >> "${calls}"`);
});

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  // The server stand-in too, if a failed entrypoint left it behind.
  spawnSync('pkill', ['-f', join(work, 'bin')]);
  rmSync(work, { recursive: true, force: true });
});

function run(command: 'server' | 'ui', env: Record<string, string>): ChildProcess {
  const child = spawn('sh', [ENTRYPOINT, command], {
    env: {
      PATH: `${join(work, 'bin')}:${process.env.PATH ?? ''}`,
      TEMPORAL_ROOT: join(work, 'root'),
      BROADCAST_ADDRESS: '127.0.0.1',
      ...env,
    },
    stdio: 'ignore',
  });
  running.push(child);
  return child;
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not reached; calls so far:\n${readFileSync(calls, 'utf8')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("the Temporal image's entrypoint", () => {
  test('server: sets up both schemas, writes its configuration, registers the namespace, and forwards a stop to the server', async () => {
    const child = run('server', {
      POSTGRES_HOST: 'temporal-postgres',
      POSTGRES_USER: 'temporal',
      POSTGRES_PASSWORD: 'pw',
      NUM_HISTORY_SHARDS: '512',
    });
    const exit = exited(child);
    await until(() => readFileSync(calls, 'utf8').includes('search-attribute create'));
    const log = readFileSync(calls, 'utf8');
    expect(log).toMatch(/sql .*--db temporal setup-schema/);
    expect(log).toMatch(/sql .*--db temporal_visibility update-schema -d .*\/schema\/visibility\/versioned/);
    expect(log).toMatch(/server --root .*\/root --config config --env production --allow-no-auth start/);
    expect(log).toMatch(/temporal operator namespace create --namespace default/);
    const config = readFileSync(join(work, 'root', 'config', 'production.yaml'), 'utf8');
    expect(config).toMatch(/numHistoryShards: 512/);
    expect(config).toMatch(/databaseName: "temporal_visibility"/);
    expect(readFileSync(join(work, 'root', 'config', 'dynamicconfig', 'production.yaml'), 'utf8')).toMatch(
      /matching\.enableFairness/,
    );

    // docker stop: TERM to the entrypoint, which must reach the server and wait for it.
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(readFileSync(calls, 'utf8')).toContain('server stopped by TERM');
  });

  test('ui: the codec endpoint is <PUBLIC_ORIGIN>/codec, with credentials; an explicit endpoint wins', async () => {
    expect(await exited(run('ui', { PUBLIC_ORIGIN: 'https://tickets.example.com/' }))).toBe(0);
    expect(readFileSync(calls, 'utf8')).toMatch(/endpoint: "https:\/\/tickets\.example\.com\/codec"/);
    expect(readFileSync(calls, 'utf8')).toMatch(/includeCredentials: true/);

    writeFileSync(calls, '');
    const explicit = run('ui', {
      PUBLIC_ORIGIN: 'https://tickets.example.com',
      TEMPORAL_CODEC_ENDPOINT: 'https://codec.internal/codec',
    });
    expect(await exited(explicit)).toBe(0);
    expect(readFileSync(calls, 'utf8')).toMatch(/endpoint: "https:\/\/codec\.internal\/codec"/);
    expect(existsSync(join(work, 'root', 'ui', 'config', 'production.yaml'))).toBe(true);
  });
});
