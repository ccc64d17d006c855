/**
 * The `ticketing` commands end to end against a fake service: what they send, what they print on stdout and
 * stderr, what they store and the exit code. The real service is exercised by test/e2e/cli.test.ts.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { configFile, loadLogin, saveLogin } from '../../cli/config.js';
import { run } from '../../cli/program.js';
import {
  deviceAuthorization,
  type FakeAnswer,
  type FakeApi,
  fakeClock,
  oauthError,
  type RecordedRequest,
  startFakeApi,
} from './cli-fake-api.js';

const KEY = 'tkt_live_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

const sale = (n: number, extra: Record<string, unknown> = {}) => ({
  id: `sale-${n}`,
  reference: `FT-${1000 + n}`,
  status: 'CONFIRMED',
  channel: 'WEB',
  subtotal: 170_000,
  discountAmount: 0,
  serviceFee: 0,
  iva: 3_230,
  total: 173_230,
  currency: 'COP',
  buyerName: n === 2 ? 'Gómez, "Ana"' : `Buyer ${n}`,
  buyerEmail: `buyer${n}@example.test`,
  buyerPhone: null,
  buyerDocumentType: null,
  buyerDocumentNumber: null,
  organizationId: 'ws-1',
  eventId: 'event-1',
  eventDateId: 'date-1',
  paymentProvider: 'GATEWAY_A',
  paymentRef: `pay-${n}`,
  confirmedAt: '2026-11-02T15:00:00.000Z',
  createdAt: '2026-11-02T14:59:00.000Z',
  expiresAt: null,
  failureReason: null,
  paymentStatus: 'approved',
  declineCode: null,
  ...extra,
});

const event = (n: number) => ({
  id: `event-${n}`,
  name: `Concert ${n}`,
  slug: `concert-${n}`,
  description: null,
  status: 'PUBLISHED',
  createdAt: '2026-10-01T12:00:00.000Z',
  publishedAt: '2026-10-02T12:00:00.000Z',
});

/** Answers a list from `rows`, `limit` at a time, with cursors c1, c2… as the contract's Page says. */
function paged(rows: unknown[], request: RecordedRequest): FakeAnswer {
  const limit = Number(request.query.get('limit') ?? 20);
  const start = Number((request.query.get('cursor') ?? 'c0').slice(1));
  const data = rows.slice(start, start + limit);
  const hasMore = start + limit < rows.length;
  return { status: 200, body: { data, page: { nextCursor: hasMore ? `c${start + limit}` : null, hasMore } } };
}

const ME = {
  data: {
    userId: 'user-1',
    name: 'Ana Organizer',
    email: 'ana@example.test',
    role: 'ADMIN',
    activeWorkspaceId: 'ws-1',
    workspaces: [{ id: 'ws-1', name: 'Teatro Colón', slug: 'teatro', role: 'ADMIN', sections: null }],
  },
};

let api: FakeApi;
let configDir: string;
let workDir: string;
let tokenAnswers: FakeAnswer[];
let sales: unknown[];
let events: unknown[];
let override: ((request: RecordedRequest) => FakeAnswer | undefined) | undefined;

beforeAll(async () => {
  api = await startFakeApi((request) => {
    const answer = override?.(request);
    if (answer) return answer;
    switch (request.path) {
      case '/api/v1/auth/device/code':
        return { status: 200, body: deviceAuthorization({ verification_uri: `${api.url}/device` }) };
      case '/api/v1/auth/device/token':
        return tokenAnswers.shift() ?? oauthError('expired_token');
      case '/api/v1/auth/revoke':
        return { status: 200, body: {} };
      case '/api/v1/me':
        return { status: 200, body: ME };
      case '/api/v1/events':
        return paged(events, request);
      case '/api/v1/sales':
        return paged(sales, request);
      default:
        return {
          status: 404,
          body: { error: { code: 'ROUTE_NOT_FOUND', message: 'no', retryable: false, details: null } },
        };
    }
  });
});
afterAll(() => api.close());

beforeEach(() => {
  configDir = mkdtempSync(join(tmpdir(), 'ticketing-cli-home-'));
  workDir = mkdtempSync(join(tmpdir(), 'ticketing-cli-work-'));
  api.requests.length = 0;
  tokenAnswers = [];
  sales = [];
  events = [];
  override = undefined;
});
afterEach(() => {
  rmSync(configDir, { recursive: true, force: true });
  rmSync(workDir, { recursive: true, force: true });
});

async function ticketing(args: string[], env: Record<string, string> = {}) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await run(args, {
    stdout,
    stderr,
    env: { TICKETING_CONFIG_DIR: configDir, ...env },
    interactive: false,
    clock: fakeClock(),
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

const loggedIn = () => saveLogin(configDir, { apiUrl: api.url, key: KEY, workspace: 'ws-1' });
const requestsTo = (path: string) => api.requests.filter((r) => r.path === path);

describe('ticketing login', () => {
  test('shows the code and pages, stores the key in a 0600 file, and never prints the key', async () => {
    tokenAnswers = [
      oauthError('authorization_pending'),
      { status: 200, body: { access_token: KEY, token_type: 'Bearer', scope: 'write' } },
    ];
    const result = await ticketing(['login', '--api-url', `${api.url}/api/v1/`]);

    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      `open this page in a browser:\n  ${api.url}/device\nand enter the code:\n  WDJB-MJHT\n`,
    );
    expect(result.stderr).toContain('http://127.0.0.1:1/device?user_code=WDJB-MJHT');
    expect(result.stdout).toContain(
      `Logged in to ${api.url} as Ana Organizer <ana@example.test>, workspace "Teatro Colón"`,
    );
    expect(result.stdout + result.stderr).not.toContain(KEY);
    expect(result.stdout + result.stderr).not.toContain('device-code-secret');
    expect(statSync(configFile(configDir)).mode & 0o777).toBe(0o600);
    expect(await loadLogin(configDir)).toEqual({ apiUrl: api.url, key: KEY });
    expect(Object.fromEntries(requestsTo('/api/v1/auth/device/code')[0]?.form ?? [])).toEqual({
      client_id: 'ticketing-cli',
      scope: 'write',
    });
  });

  test('--scope read asks for a read key; TICKETING_API_URL names the server when --api-url is not given', async () => {
    tokenAnswers = [{ status: 200, body: { access_token: KEY, token_type: 'Bearer', scope: 'read' } }];
    const result = await ticketing(['login', '--scope', 'read'], { TICKETING_API_URL: api.url });

    expect(result.code).toBe(0);
    expect(requestsTo('/api/v1/auth/device/code')[0]?.form.get('scope')).toBe('read');
    expect(result.stdout).toContain('with a read key');
  });

  test('a denied request exits 1 with one clear line and stores nothing', async () => {
    tokenAnswers = [oauthError('authorization_pending'), oauthError('access_denied')];
    const result = await ticketing(['login', '--api-url', api.url]);

    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/\nerror: Login denied on the verification page; nothing was stored\n$/);
    expect(existsSync(configFile(configDir))).toBe(false);
  });

  test('an expired code exits 1 and says to log in again', async () => {
    tokenAnswers = [oauthError('expired_token')];
    const result = await ticketing(['login', '--api-url', api.url]);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: The code expired before anyone approved it: run `ticketing login` again');
  });

  test('plain http to another machine is refused before anything is sent', async () => {
    const result = await ticketing(['login', '--api-url', 'http://tickets.example.com']);

    expect(result.code).toBe(2);
    expect(result.stderr).toContain('must use https');
  });

  test('logout revokes the key at the service (RFC 7009), then removes it', async () => {
    await loggedIn();
    const result = await ticketing(['logout']);

    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`Logged out: the key is revoked at ${api.url} and removed from ${configDir}.\n`);
    expect(requestsTo('/api/v1/auth/revoke').map((r) => [r.method, Object.fromEntries(r.form)])).toEqual([
      ['POST', { token: KEY, token_type_hint: 'access_token', client_id: 'ticketing-cli' }],
    ]);
    expect(existsSync(configFile(configDir))).toBe(false);
    expect((await ticketing(['logout'])).stdout).toBe('Not logged in.\n');
    expect(requestsTo('/api/v1/auth/revoke')).toHaveLength(1);
  });

  test('logout keeps the key when the service does not revoke it, and says how to only forget it', async () => {
    await loggedIn();
    override = (request) =>
      request.path === '/api/v1/auth/revoke'
        ? { status: 503, body: { error: { code: 'SERVICE_UNAVAILABLE', message: 'Try again', retryable: true } } }
        : undefined;
    const refused = await ticketing(['logout']);

    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/error: .*did not revoke the key: .*NOT revoked and is still saved.*--local/);
    expect(existsSync(configFile(configDir))).toBe(true);

    const local = await ticketing(['logout', '--local']);
    expect(local.code).toBe(0);
    expect(local.stdout).toContain('Logged out; removed the key');
    expect(local.stderr).toContain('The key was not revoked');
    expect(existsSync(configFile(configDir))).toBe(false);
    expect(requestsTo('/api/v1/auth/revoke')).toHaveLength(1);
  });
});

describe('ticketing events list', () => {
  test('follows the pages to the end, sending the key and the stored workspace', async () => {
    await loggedIn();
    events = Array.from({ length: 230 }, (_, i) => event(i));
    const result = await ticketing(['events', 'list', '--json']);

    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as Array<{ id: string }>).map((e) => e.id)).toEqual(
      events.map((e) => (e as { id: string }).id),
    );
    const calls = requestsTo('/api/v1/events');
    expect(calls.map((r) => [r.query.get('limit'), r.query.get('cursor')])).toEqual([
      ['100', null],
      ['100', 'c100'],
      ['100', 'c200'],
    ]);
    expect(calls[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(calls[0]?.headers['x-workspace-id']).toBe('ws-1');
  });

  test('--limit stops early; --workspace overrides the stored workspace', async () => {
    await loggedIn();
    events = Array.from({ length: 10 }, (_, i) => event(i));
    const result = await ticketing(['events', 'list', '--limit', '3', '--json', '--workspace', 'ws-2']);

    expect(JSON.parse(result.stdout)).toHaveLength(3);
    expect(requestsTo('/api/v1/events').map((r) => [r.query.get('limit'), r.headers['x-workspace-id']])).toEqual([
      ['3', 'ws-2'],
    ]);
  });

  test('without a stored login nothing is sent and the user is told to log in', async () => {
    const result = await ticketing(['events', 'list']);

    expect(result).toMatchObject({ code: 1, stderr: 'error: Not logged in: run `ticketing login`\n' });
    expect(api.requests).toHaveLength(0);
  });

  test('a key the service refuses (401) says to run ticketing login', async () => {
    await loggedIn();
    override = () => ({
      status: 401,
      body: { error: { code: 'INVALID_API_KEY', message: 'Invalid API key', retryable: false, details: null } },
    });
    const result = await ticketing(['events', 'list']);

    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'error: The service refused the stored key (expired or revoked?): run `ticketing login`\n',
    );
  });

  test('a TICKETING_API_URL other than the server that issued the key is refused, so the key is not sent there', async () => {
    await loggedIn();
    const result = await ticketing(['events', 'list'], { TICKETING_API_URL: 'https://elsewhere.example.com' });

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('The stored key is for');
    expect(api.requests).toHaveLength(0);
  });
});

describe('ticketing sales list', () => {
  test('sends the filters the contract takes: a --from/--to day becomes that whole UTC day', async () => {
    await loggedIn();
    sales = [sale(1), sale(2)];
    const result = await ticketing([
      'sales',
      'list',
      '--status',
      'CONFIRMED',
      '--from',
      '2026-11-01',
      '--to',
      '2026-11-30',
    ]);

    expect(result.code).toBe(0);
    const query = requestsTo('/api/v1/sales')[0]?.query;
    expect([query?.get('status'), query?.get('from'), query?.get('to')]).toEqual([
      'CONFIRMED',
      '2026-11-01T00:00:00.000Z',
      '2026-11-30T23:59:59.999Z',
    ]);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(/^REFERENCE\s+STATUS\s+CHANNEL\s+TOTAL\s+BUYER\s+EMAIL\s+CREATED \(UTC\)$/);
    expect(lines[1]).toMatch(
      /^FT-1001\s+CONFIRMED\s+WEB\s+COP 173,230\s+Buyer 1\s+buyer1@example.test\s+2026-11-02 14:59Z$/,
    );
    expect(lines[3]).toBe('2 sales');
  });

  test('--json prints the sales as the API sent them', async () => {
    await loggedIn();
    sales = [sale(1)];
    const result = await ticketing(['sales', 'list', '--json']);

    expect(JSON.parse(result.stdout)).toEqual([sale(1)]);
    expect(result.stderr).toBe('');
  });

  test("the contract's error body becomes one line on stderr and exit code 1", async () => {
    await loggedIn();
    override = () => ({
      status: 422,
      body: {
        error: {
          code: 'VALIDATION_FAILED',
          message: 'from: Invalid ISO datetime',
          retryable: false,
          details: {
            fields: [
              { field: 'from', message: 'Invalid ISO datetime' },
              { field: 'to', message: 'bad' },
            ],
          },
        },
      },
    });
    const result = await ticketing(['sales', 'list', '--from', '2026-11-01T00:00:00Z']);

    expect(result).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'error: from: Invalid ISO datetime; to: bad (VALIDATION_FAILED)\n',
    });
  });

  test.each([
    [['sales', 'list', '--status', 'PAID']],
    [['sales', 'list', '--limit', '0']],
    [['sales', 'list', '--from', '2026-02-30']],
    [['sales', 'list', '--from', '2026-11-30', '--to', '2026-11-01']],
    [['sales', 'export', '--format', 'xlsx']],
  ])('a command typed wrong (%j) exits 2 before calling the service', async (args) => {
    await loggedIn();
    const result = await ticketing(args);

    expect(result.code).toBe(2);
    expect(result.stderr).not.toBe('');
    expect(api.requests).toHaveLength(0);
  });
});

describe('ticketing sales export', () => {
  test('--format csv --out writes every page to the file (BOM, header, quoted cells) with mode 0600', async () => {
    await loggedIn();
    sales = Array.from({ length: 150 }, (_, i) => sale(i + 1));
    const out = join(workDir, 'sales.csv');
    const result = await ticketing(['sales', 'export', '--format', 'csv', '--out', out, '--status', 'CONFIRMED']);

    expect(result.code).toBe(0);
    expect(result.stderr).toBe(`Exported 150 sales to ${out}\n`);
    const text = readFileSync(out, 'utf8');
    const lines = text.split('\r\n');
    expect(lines[0]).toBe(
      '\uFEFFid,reference,status,channel,subtotal,discountAmount,serviceFee,iva,total,currency,buyerName,buyerEmail,' +
        'buyerPhone,eventId,eventDateId,paymentProvider,paymentRef,paymentStatus,confirmedAt,createdAt',
    );
    expect(lines[2]).toBe(
      'sale-2,FT-1002,CONFIRMED,WEB,170000,0,0,3230,173230,COP,"Gómez, ""Ana""",buyer2@example.test,,event-1,date-1,' +
        'GATEWAY_A,pay-2,approved,2026-11-02T15:00:00.000Z,2026-11-02T14:59:00.000Z',
    );
    expect(lines).toHaveLength(1 + 150 + 1);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(readdirSync(workDir)).toEqual(['sales.csv']);
    expect(requestsTo('/api/v1/sales').map((r) => r.query.get('status'))).toEqual(['CONFIRMED', 'CONFIRMED']);
  });

  test('--format json to stdout is one JSON array of the sales', async () => {
    await loggedIn();
    sales = Array.from({ length: 101 }, (_, i) => sale(i + 1));
    const result = await ticketing(['sales', 'export', '--format', 'json']);

    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(sales);
    expect(result.stderr).toBe('');
  });

  test('an empty export is still a valid file: the CSV header, or []', async () => {
    await loggedIn();
    expect(JSON.parse((await ticketing(['sales', 'export', '--format', 'json'])).stdout)).toEqual([]);
    expect((await ticketing(['sales', 'export'])).stdout).toMatch(/^id,reference,.*,createdAt\r\n$/);
  });

  test('a failure half way leaves no file that looks complete', async () => {
    await loggedIn();
    sales = Array.from({ length: 150 }, (_, i) => sale(i + 1));
    override = (request) =>
      request.query.get('cursor')
        ? {
            status: 503,
            body: { error: { code: 'SERVICE_UNAVAILABLE', message: 'Try later', retryable: true, details: null } },
          }
        : undefined;
    const out = join(workDir, 'sales.csv');
    const result = await ticketing(['sales', 'export', '--out', out]);

    expect(result).toMatchObject({ code: 1, stderr: 'error: Try later (SERVICE_UNAVAILABLE)\n' });
    expect(readdirSync(workDir)).toEqual([]);
  });
});

describe('ticketing -w with a workspace the key cannot reach', () => {
  const NOT_ACCESSIBLE = {
    code: 'WORKSPACE_NOT_ACCESSIBLE',
    message: 'X-Workspace-Id ws-9 is not a workspace this key can reach; the default workspace was used',
    field: 'X-Workspace-Id',
    activeWorkspaceId: 'ws-1',
    activeWorkspaceName: 'Teatro Colón',
    accessibleWorkspaces: 1,
  };
  const answerWithWarning = (request: RecordedRequest): FakeAnswer | undefined => {
    if (request.path !== '/api/v1/events') return undefined;
    const answer = paged(events, request);
    return { ...answer, body: { ...(answer.body as object), warnings: [NOT_ACCESSIBLE] } };
  };

  test("surfaces the service's warning once on stderr, naming the workspace shown instead", async () => {
    await loggedIn();
    events = Array.from({ length: 150 }, (_, i) => event(i));
    override = answerWithWarning;
    const result = await ticketing(['-w', 'ws-9', 'events', 'list', '--json']);

    expect(result.code).toBe(0);
    expect(requestsTo('/api/v1/events')[0]?.headers['x-workspace-id']).toBe('ws-9');
    expect(result.stderr).toBe(
      'warning: X-Workspace-Id ws-9 is not a workspace this key can reach; the default workspace was used; showing ' +
        'workspace "Teatro Colón" (ws-1) instead (WORKSPACE_NOT_ACCESSIBLE) (--strict makes this an error)\n',
    );
    expect(JSON.parse(result.stdout)).toHaveLength(150);
  });

  test('--strict fails with exit code 1 and prints no data', async () => {
    await loggedIn();
    events = [event(1)];
    override = answerWithWarning;
    const result = await ticketing(['--strict', '-w', 'ws-9', 'events', 'list']);

    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^error: X-Workspace-Id ws-9 is not a workspace .*stopped \(--strict\), nothing was printed\n$/,
    );
  });
});
