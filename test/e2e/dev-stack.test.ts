/**
 * The README's first command, as a newcomer runs it: `npm run dev` (scripts/dev.sh) starts the whole stack, prints
 * the URLs and a demo key, refuses to start twice, and Ctrl-C stops everything it started. Run on its own ports,
 * database and state folder so it never touches a developer's stack.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropDatabase } from '../../scripts/support/database.js';
import { freePorts, isPortOpen } from '../../scripts/support/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STARTUP_MS = 240_000;

let stack: ChildProcess | null = null;
let output = '';
const stateDir = mkdtempSync(join(tmpdir(), 'ticketing-dev-smoke-'));
const databaseUrl = `postgres://postgres@127.0.0.1:5432/ticketing_devsmoke_test_${process.pid}`;
let ports: { api: number; temporal: number; temporalUi: number; sandbox: number; smtp: number };
let env: NodeJS.ProcessEnv;

function runDev(): ChildProcess {
  return spawn('bash', ['scripts/dev.sh'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The run's Redis URL on another index (eight further on, of the sixteen), for a stack that must not share it. */
function ownRedisIndex(runUrl: string): string {
  const url = new URL(runUrl);
  url.pathname = `/${(Number(url.pathname.slice(1) || 0) + 8) % 16}`;
  return url.href;
}

beforeAll(async () => {
  const [api = 0, temporal = 0, temporalUi = 0, sandbox = 0, smtp = 0] = await freePorts(5);
  ports = { api, temporal, temporalUi, sandbox, smtp };
  env = {
    ...process.env,
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    API_PORT: String(api),
    TEMPORAL_PORT: String(temporal),
    TEMPORAL_UI_PORT: String(temporalUi),
    SANDBOX_PORT: String(sandbox),
    SANDBOX_SMTP_PORT: String(smtp),
    DATABASE_URL: databaseUrl,
    // A Redis index of its own too: a stack on another database that shares the run's Redis would take part in its
    // waiting rooms (the room's leader reads the date from its own database, finds none and drops the room).
    REDIS_URL: ownRedisIndex(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0'),
    DEV_STATE_DIR: stateDir,
    TICKETING_SKIP_INSTALL: '1',
    PUBLIC_ORIGIN: '',
    TEMPORAL_ADDRESS: '',
    SANDBOX_URL: '',
    SMTP_PORT: '',
    GATEWAY_B_WEBHOOK_URL: '',
    PAYMENT_WINDOW_OVERRIDE_MS: '',
  };
  for (const key of [
    'PUBLIC_ORIGIN',
    'TEMPORAL_ADDRESS',
    'SANDBOX_URL',
    'SMTP_PORT',
    'GATEWAY_B_WEBHOOK_URL',
    'PAYMENT_WINDOW_OVERRIDE_MS',
    'NODE_OPTIONS',
  ]) {
    delete env[key];
  }
  stack = runDev();
  stack.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  stack.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const deadline = Date.now() + 200_000;
  while (!output.includes('Ticketing stack is up')) {
    if (stack.exitCode !== null) throw new Error(`npm run dev exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`the stack did not come up in time:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}, STARTUP_MS);

afterAll(async () => {
  if (stack && stack.exitCode === null) {
    stack.kill('SIGKILL');
  }
  rmSync(stateDir, { recursive: true, force: true });
  await dropDatabase(databaseUrl).catch(() => undefined);
});

describe('npm run dev (the README first command)', () => {
  test('prints the URLs and a demo key that works against the API, and writes .dev/demo.json', async () => {
    const demo = JSON.parse(readFileSync(join(stateDir, 'demo.json'), 'utf8'));
    expect(demo).toMatchObject({
      baseUrl: `http://127.0.0.1:${ports.api}/api/v1`,
      publicBaseUrl: `http://127.0.0.1:${ports.api}/api/public`,
      sandboxUrl: `http://127.0.0.1:${ports.sandbox}`,
      temporalUiUrl: `http://127.0.0.1:${ports.temporalUi}`,
      workspaceId: expect.any(String),
      demoEvent: {
        id: expect.any(String),
        slug: expect.any(String),
        eventDateId: expect.any(String),
        ticketTypeId: expect.any(String),
      },
    });
    expect(output).toContain(demo.apiKey);
    expect(demo.apiKey).toMatch(/^tkt_live_/);

    const me = await fetch(`${demo.baseUrl}/me`, { headers: { authorization: `Bearer ${demo.apiKey}` } });
    expect(me.status).toBe(200);
    const body = (await me.json()) as { data: { role: string; activeWorkspaceId: string } };
    expect(body.data).toMatchObject({ role: 'ADMIN', activeWorkspaceId: demo.workspaceId });
    const readOnly = await fetch(`${demo.baseUrl}/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demo.readApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x' }),
    });
    expect(((await readOnly.json()) as { error: { code: string } }).error.code).toBe('READ_ONLY_KEY');

    const availability = await fetch(`${demo.publicBaseUrl}/events/${demo.demoEvent.slug}/availability`);
    expect(availability.status).toBe(200);
    const docs = await fetch(`${demo.baseUrl}/openapi.json`);
    expect(((await docs.json()) as { openapi: string }).openapi).toBe('3.1.0');
  });

  test('the Temporal UI serves its page and the sandbox answers', async () => {
    const ui = await fetch(`http://127.0.0.1:${ports.temporalUi}/`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toMatch(/<html/i);
    const sandbox = await fetch(`http://127.0.0.1:${ports.sandbox}/control/health`);
    expect(sandbox.status).toBe(200);
  });

  test('running it again while it runs says so instead of failing on busy ports', async () => {
    const second = runDev();
    let text = '';
    second.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => second.once('exit', resolve));
    expect(code).toBe(0);
    expect(text).toMatch(/already running/);
  });

  test('Ctrl-C stops everything it started', async () => {
    const exited = new Promise<number | null>((resolve) => stack?.once('exit', resolve));
    stack?.kill('SIGINT');
    expect(await exited).toBe(0);
    for (const port of Object.values(ports)) expect(await isPortOpen(port)).toBe(false);
  });
});
