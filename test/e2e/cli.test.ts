/**
 * Issue 16, the command-line client: `bin/ticketing.mjs` runs as its own process against the API on a real port,
 * logs in with the device flow while a second actor approves (or denies) the code on the verification page, and
 * then reads events and sales and exports sales with the key it stored.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.js';
import { approveDevice } from '../support/device.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { orderBody, type PublishedEvent, publishEvent, reserveOrder, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CODE_PROMPT = /enter the code:\n\s+(\S+)\n/;

interface CliRun {
  child: ChildProcessWithoutNullStreams;
  output: { stdout: string; stderr: string };
  /** Resolves with the user code once the client has printed it. */
  userCode(): Promise<string>;
  exited: Promise<number | null>;
}

function ticketing(args: string[], configDir: string): CliRun {
  const { NODE_OPTIONS: _jestOptions, TICKETING_API_URL: _unused, ...env } = process.env;
  const child = spawn(process.execPath, ['bin/ticketing.mjs', ...args], {
    cwd: ROOT,
    env: { ...env, TICKETING_CONFIG_DIR: configDir },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => {
    output.stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output.stderr += chunk.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const userCode = () =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const code = CODE_PROMPT.exec(output.stderr)?.[1];
        if (code) {
          child.stderr.off('data', check);
          resolve(code);
        }
      };
      child.stderr.on('data', check);
      check();
      void exited.then(() => reject(new Error(`ticketing exited before showing a code: ${output.stderr}`)));
    });
  return { child, output, userCode, exited };
}

async function finished(run: CliRun): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const code = await run.exited;
  return { code, ...run.output };
}

/** The API built on the test stack's services, listening on a free port of this machine, as a real server does. */
async function listening(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

/** A minimal RFC 4180 reader, enough for the export's rows. */
function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  for (const line of text.replace(/^\uFEFF/, '').split('\r\n')) {
    if (line === '') continue;
    const cells: string[] = [];
    for (const match of line.matchAll(/(?:^|,)(?:"((?:[^"]|"")*)"|([^,]*))/g)) {
      cells.push(match[1] !== undefined ? match[1].replaceAll('""', '"') : (match[2] ?? ''));
    }
    rows.push(cells);
  }
  return rows;
}

let api: TestApi;
let apiUrl: string;
let organizer: Organizer;
let event: PublishedEvent;
let confirmed: { id: string; reference: string; total: number; createdAt: string };
let pendingSaleId: string;
const configDirs: string[] = [];

const freshConfigDir = () => {
  const directory = mkdtempSync(join(tmpdir(), 'ticketing-cli-e2e-'));
  configDirs.push(directory);
  return directory;
};

beforeAll(async () => {
  // A one-second interval keeps the polling short; the client waits whatever the server says.
  api = await startTestApi({ DEVICE_CODE_INTERVAL_SECONDS: '1' });
  apiUrl = await listening(api.app);
  organizer = await createOrganizer(api.orm.em.fork());
  event = await publishEvent(api, organizer, { name: 'CLI Concert' });

  const sold = await api.request({
    method: 'POST',
    url: '/api/v1/sales',
    headers: bearer(organizer.key),
    payload: {
      eventDateId: event.eventDateId,
      ticketTypeId: event.ticketTypeId,
      quantity: 2,
      channel: 'POS',
      buyer: { name: 'Gómez, Ana', email: 'ana.gomez@example.test' },
    },
  });
  expect(sold.statusCode).toBe(201);
  confirmed = sold.json().data;
  expect(sold.json().data.status).toBe('CONFIRMED');

  const reserved = await reserveOrder(api, await signInBuyer(api, 'pending.buyer@example.test'), orderBody(event, 1));
  expect(reserved.statusCode).toBe(201);
  pendingSaleId = reserved.json().data.saleId;
}, 120_000);

afterAll(async () => {
  for (const directory of configDirs) rmSync(directory, { recursive: true, force: true });
  await api?.close();
});

describe('ticketing CLI against the real stack', () => {
  const configDir = freshConfigDir();

  test('login: the client shows a code, a second actor approves it, and a working key is stored with mode 0600', async () => {
    const login = ticketing(['login', '--api-url', apiUrl], configDir);
    const userCode = await login.userCode();
    expect(login.output.stderr).toMatch(/open this page in a browser:\n\s+http\S*\/device\n/);

    await approveDevice(api, { email: organizer.email, userCode, decision: 'approve' });
    const result = await finished(login);

    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Logged in to ${apiUrl} as `);
    expect(result.stdout).toContain(`<${organizer.email}>, workspace "${organizer.workspaceName}" with a write key.`);
    const path = join(configDir, 'config.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(configDir).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(readFileSync(path, 'utf8')) as { apiUrl: string; key: string };
    expect(stored.apiUrl).toBe(apiUrl);
    expect(result.stdout + result.stderr).not.toContain(stored.key);

    const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(stored.key) });
    expect(me.statusCode).toBe(200);
    expect(me.json().data.email).toBe(organizer.email);
  }, 120_000);

  test('events list --json prints the workspace events as the API returns them', async () => {
    const result = await finished(ticketing(['events', 'list', '--json'], configDir));

    expect(result.code).toBe(0);
    const events = JSON.parse(result.stdout) as Array<{ id: string; name: string; status: string }>;
    expect(events).toEqual([expect.objectContaining({ id: event.eventId, name: 'CLI Concert', status: 'PUBLISHED' })]);
  }, 60_000);

  test('sales list --status CONFIRMED --from <day> --json returns the confirmed sale and not the pending one', async () => {
    const day = confirmed.createdAt.slice(0, 10);
    const result = await finished(
      ticketing(['sales', 'list', '--status', 'CONFIRMED', '--from', day, '--json'], configDir),
    );

    expect(result.code).toBe(0);
    const sales = JSON.parse(result.stdout) as Array<{ id: string; status: string; total: number }>;
    expect(sales).toEqual([expect.objectContaining({ id: confirmed.id, status: 'CONFIRMED', total: confirmed.total })]);
    expect(sales.map((sale) => sale.id)).not.toContain(pendingSaleId);

    const later = await finished(ticketing(['sales', 'list', '--from', '2999-01-01', '--json'], configDir));
    expect(JSON.parse(later.stdout)).toEqual([]);
  }, 60_000);

  test('sales export --format csv writes the sales as CSV on stdout', async () => {
    const result = await finished(
      ticketing(['sales', 'export', '--format', 'csv', '--status', 'CONFIRMED'], configDir),
    );

    expect(result.code).toBe(0);
    const [header, ...rows] = csvRows(result.stdout);
    expect(header?.slice(0, 4)).toEqual(['id', 'reference', 'status', 'channel']);
    const column = (name: string) => header?.indexOf(name) ?? -1;
    expect(rows).toHaveLength(1);
    expect(rows[0]?.[column('id')]).toBe(confirmed.id);
    expect(rows[0]?.[column('reference')]).toBe(confirmed.reference);
    expect(rows[0]?.[column('total')]).toBe(String(confirmed.total));
    expect(rows[0]?.[column('buyerName')]).toBe('Gómez, Ana');
  }, 60_000);

  test('a revoked key makes every command say to log in again', async () => {
    const stored = JSON.parse(readFileSync(join(configDir, 'config.json'), 'utf8')) as { key: string };
    const keys = await api.request({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(stored.key) });
    const deviceKey = (keys.json().data as Array<{ id: string; name: string }>).find((key) => /device/.test(key.name));
    expect(deviceKey).toBeDefined();
    const revoked = await api.request({
      method: 'DELETE',
      url: `/api/v1/api-keys/${deviceKey?.id}`,
      headers: bearer(organizer.key),
    });
    expect(revoked.statusCode).toBe(200);

    const result = await finished(ticketing(['events', 'list'], configDir));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/run `ticketing login`\n$/);
  }, 60_000);
});

describe('ticketing logout and -w against the real stack', () => {
  const configDir = freshConfigDir();
  let stored: { key: string };

  beforeAll(async () => {
    const login = ticketing(['login', '--api-url', apiUrl], configDir);
    await approveDevice(api, { email: organizer.email, userCode: await login.userCode(), decision: 'approve' });
    expect((await finished(login)).code).toBe(0);
    stored = JSON.parse(readFileSync(join(configDir, 'config.json'), 'utf8'));
  }, 120_000);

  test("-w with a workspace the key cannot reach surfaces the API's warning; --strict makes it fail", async () => {
    const foreign = await createOrganizer(api.orm.em.fork());
    const warned = await finished(ticketing(['-w', foreign.workspaceId, 'events', 'list', '--json'], configDir));
    expect(warned.code).toBe(0);
    expect(warned.stderr).toContain(
      `warning: X-Workspace-Id ${foreign.workspaceId} is not a workspace this key can reach`,
    );
    expect(warned.stderr).toContain(
      `showing workspace "${organizer.workspaceName}" (${organizer.workspaceId}) instead`,
    );

    const strict = await finished(ticketing(['--strict', '-w', foreign.workspaceId, 'sales', 'list'], configDir));
    expect(strict.code).toBe(1);
    expect(strict.stdout).toBe('');
    expect(strict.stderr).toContain('WORKSPACE_NOT_ACCESSIBLE');

    const mine = await finished(ticketing(['--strict', '-w', organizer.workspaceId, 'events', 'list'], configDir));
    expect({ code: mine.code, stderr: mine.stderr }).toEqual({ code: 0, stderr: '' });
  }, 60_000);

  test('logout revokes the key at the API: the key it held gets 401 afterwards', async () => {
    const before = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(stored.key) });
    expect(before.statusCode).toBe(200);

    const result = await finished(ticketing(['logout'], configDir));
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`the key is revoked at ${apiUrl}`);
    expect(() => statSync(join(configDir, 'config.json'))).toThrow();

    const after = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(stored.key) });
    expect(after.statusCode).toBe(401);
  }, 60_000);
});

describe('ticketing login when the code is not approved', () => {
  test('denied on the verification page: exit code 1, a clear message, nothing stored', async () => {
    const configDir = freshConfigDir();
    const login = ticketing(['login', '--api-url', apiUrl], configDir);
    await approveDevice(api, { email: organizer.email, userCode: await login.userCode(), decision: 'deny' });
    const result = await finished(login);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: Login denied on the verification page; nothing was stored');
    expect(() => statSync(join(configDir, 'config.json'))).toThrow();
  }, 120_000);

  test('nobody approves before the code expires: exit code 1 and the advice to log in again', async () => {
    // The same API with a two-second code lifetime, so expiry comes without waiting ten minutes.
    const shortLived = await buildApp(
      { ...api.services, env: { ...api.env, DEVICE_CODE_TTL_SECONDS: 2, DEVICE_CODE_INTERVAL_SECONDS: 1 } },
      { logger: false },
    );
    try {
      const configDir = freshConfigDir();
      const login = ticketing(['login', '--api-url', await listening(shortLived)], configDir);
      await login.userCode();
      const result = await finished(login);

      expect(result.code).toBe(1);
      expect(result.stderr).toContain('error: The code expired before anyone approved it: run `ticketing login` again');
      expect(() => statSync(join(configDir, 'config.json'))).toThrow();
    } finally {
      await shortLived.close();
    }
  }, 60_000);
});
