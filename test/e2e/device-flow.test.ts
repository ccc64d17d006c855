/**
 * The OAuth 2.0 device authorization grant (RFC 8628; contract 5.1 item 6, 5.3): POST /auth/device/code, the
 * verification page at /device, and POST /auth/device/token, with the RFC's answers while pending, when polled too
 * fast, after a denial, after expiry and after the key was handed out; the page's case-insensitive codes and CSRF
 * protection; and the discovery documents naming the endpoints.
 */
import { createHash } from 'node:crypto';
import {
  approveDevice,
  DeviceBrowser,
  elementData,
  elementText,
  formField,
  signInOnDevicePage,
} from '../support/device.js';
import { addMembership, bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { inbox, waitForMail } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';

/** The default configuration: expires_in 600, interval 5. */
let api: TestApi;
/** An interval of 1 s, so pacing rules show within a test's time. */
let fastPolls: TestApi;
/** Codes that expire after 2 s. */
let shortLived: TestApi;
let organizer: Organizer;

beforeAll(async () => {
  api = await startTestApi();
  fastPolls = await startTestApi({ DEVICE_CODE_INTERVAL_SECONDS: '1' });
  shortLived = await startTestApi({ DEVICE_CODE_TTL_SECONDS: '2', DEVICE_CODE_INTERVAL_SECONDS: '1' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api?.close();
  await fastPolls?.close();
  await shortLived?.close();
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface DeviceCodeAnswer {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

async function startLogin(target: TestApi, fields: Record<string, string> = { client_id: 'ticketing-cli' }) {
  const response = await target.request({
    method: 'POST',
    url: '/api/v1/auth/device/code',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(fields).toString(),
  });
  if (response.statusCode !== 200) throw new Error(`device/code → ${response.statusCode} ${response.body}`);
  return response.json() as DeviceCodeAnswer;
}

function poll(target: TestApi, deviceCode: string, fields: Record<string, string> = {}) {
  return target.request({
    method: 'POST',
    url: '/api/v1/auth/device/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: GRANT_TYPE,
      device_code: deviceCode,
      client_id: 'ticketing-cli',
      ...fields,
    }).toString(),
  });
}

describe('POST /auth/device/code', () => {
  it('answers the fields of RFC 8628 section 3.2, and keeps only a hash of the device code', async () => {
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/auth/device/code',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'client_id=ticketing-cli&scope=write',
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    const body = response.json() as DeviceCodeAnswer;
    const origin = api.env.PUBLIC_ORIGIN.replace(/\/$/, '');
    expect(body).toEqual({
      device_code: expect.any(String),
      user_code: expect.stringMatching(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/),
      verification_uri: `${origin}/device`,
      verification_uri_complete: `${origin}/device?user_code=${body.user_code}`,
      expires_in: 600,
      interval: 5,
    });
    expect(body.device_code.length).toBeGreaterThanOrEqual(43);
    const rows = await api.orm.em
      .fork()
      .execute<{ device_code_hash: string; user_code: string; scope: string }[]>(
        'select device_code_hash, user_code, scope from device_authorizations where device_code_hash = ?',
        [sha256(body.device_code)],
      );
    expect(rows).toEqual([
      { device_code_hash: sha256(body.device_code), user_code: body.user_code.replace('-', ''), scope: 'write' },
    ]);
  });

  it('accepts JSON too, and defaults the scope to write for the command-line session (contract 5.3)', async () => {
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/auth/device/code',
      payload: { client_id: 'ticketing-cli' },
    });
    expect(response.statusCode).toBe(200);
    const [row] = await api.orm.em
      .fork()
      .execute<{ scope: string }[]>('select scope from device_authorizations where device_code_hash = ?', [
        sha256(response.json().device_code),
      ]);
    expect(row?.scope).toBe('write');
  });

  it.each([
    ['a missing client_id', '', 'invalid_request'],
    ['a client_id with markup', 'client_id=%3Cscript%3E', 'invalid_client'],
    ['a scope nobody defined', 'client_id=ticketing-cli&scope=admin', 'invalid_scope'],
    ['a client_id sent twice', 'client_id=a&client_id=b', 'invalid_request'],
  ])('answers %s with the OAuth error %s', async (_case, payload, error) => {
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/auth/device/code',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload,
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error, error_description: expect.any(String) });
  });
});

describe('POST /auth/device/token while the person has not decided', () => {
  it('answers authorization_pending to a client that keeps to the interval', async () => {
    const login = await startLogin(fastPolls);
    const first = await poll(fastPolls, login.device_code);
    expect(first.statusCode).toBe(400);
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.json()).toEqual({ error: 'authorization_pending', error_description: expect.any(String) });
    await sleep(login.interval * 1000 + 100);
    expect((await poll(fastPolls, login.device_code)).json().error).toBe('authorization_pending');
  });

  it('answers slow_down to an early poll, and the interval of that request then grows by 5 seconds', async () => {
    const login = await startLogin(fastPolls);
    expect(login.interval).toBe(1);
    expect((await poll(fastPolls, login.device_code)).json().error).toBe('authorization_pending');
    const early = await poll(fastPolls, login.device_code);
    expect(early.statusCode).toBe(400);
    expect(early.json()).toEqual({ error: 'slow_down', error_description: expect.any(String), interval: 6 });
    // The original interval has passed, but not the grown one: still too early.
    await sleep(login.interval * 1000 + 200);
    const stillEarly = await poll(fastPolls, login.device_code);
    expect(stillEarly.json()).toMatchObject({ error: 'slow_down', interval: 11 });
  });

  it('refuses another grant type, a foreign client and an unknown device code', async () => {
    const login = await startLogin(api);
    const wrongGrant = await poll(api, login.device_code, { grant_type: 'authorization_code' });
    expect(wrongGrant.statusCode).toBe(400);
    expect(wrongGrant.json().error).toBe('unsupported_grant_type');
    expect((await poll(api, login.device_code, { client_id: 'another-client' })).json().error).toBe('invalid_grant');
    expect((await poll(api, 'no-such-device-code')).json().error).toBe('invalid_grant');
    const missing = await api.request({
      method: 'POST',
      url: '/api/v1/auth/device/token',
      payload: { grant_type: GRANT_TYPE, client_id: 'ticketing-cli' },
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toMatchObject({
      error: 'invalid_request',
      error_description: expect.stringContaining('device_code'),
    });
  });
});

describe('the person decides on /device', () => {
  it('approve: the next poll gets a write key once; it works on GET /me and can write; a second exchange is refused', async () => {
    const login = await startLogin(fastPolls);
    const decided = await approveDevice(fastPolls, {
      email: organizer.email,
      userCode: login.user_code,
      decision: 'approve',
    });
    expect(elementData(decided.confirmationPage, 'client-id', 'client-id')).toBe('ticketing-cli');
    expect(elementData(decided.confirmationPage, 'scope', 'scope')).toBe('write');
    expect(elementText(decided.confirmationPage, 'workspace')).toContain(organizer.workspaceName);
    expect(elementData(decided.resultPage, 'result', 'result')).toBe('approved');

    const exchanged = await poll(fastPolls, login.device_code);
    expect(exchanged.statusCode).toBe(200);
    expect(exchanged.headers['cache-control']).toBe('no-store');
    const token = exchanged.json();
    expect(token).toEqual({ access_token: expect.any(String), token_type: 'Bearer', scope: 'write' });
    expect(token.access_token).toMatch(new RegExp(`^${fastPolls.env.API_KEY_PREFIX}_live_`));

    const me = await fastPolls.request({ method: 'GET', url: '/api/v1/me', headers: bearer(token.access_token) });
    expect(me.statusCode).toBe(200);
    expect(me.json().data).toMatchObject({ email: organizer.email, activeWorkspaceId: organizer.workspaceId });
    const wrote = await fastPolls.request({
      method: 'POST',
      url: '/api/v1/workspaces',
      headers: bearer(token.access_token),
      payload: { name: 'Second stage' },
    });
    expect(wrote.statusCode).toBe(201);

    // Stored hashed, in the workspace approved, linked to the request it came from.
    const [key] = await fastPolls.orm.em.fork().execute<{ workspace_id: string; scope: string; linked: number }[]>(
      `select k.workspace_id, k.scope, (select count(*)::int from device_authorizations d where d.api_key_id = k.id) as linked
         from api_keys k where k.secret_hash = ?`,
      [sha256(token.access_token)],
    );
    expect(key).toEqual({ workspace_id: organizer.workspaceId, scope: 'write', linked: 1 });

    const second = await poll(fastPolls, login.device_code);
    expect(second.statusCode).toBe(400);
    expect(second.json().error).toBe('invalid_grant');
  });

  it('the approval page shows where and when the request came from, warns, and vouches for no client name (issue 31)', async () => {
    const started = await api.request({
      method: 'POST',
      url: '/api/v1/auth/device/code',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ client_id: 'ticketing-cli' }).toString(),
      remoteAddress: '203.0.113.77',
    });
    expect(started.statusCode).toBe(200);
    const before = Date.now();
    const decided = await approveDevice(api, {
      email: organizer.email,
      userCode: started.json().user_code,
      decision: 'deny',
    });
    const page = decided.confirmationPage;
    expect(elementText(page, 'requested-from')).toContain('203.0.113.77');
    expect(elementData(page, 'requested-from', 'address')).toBe('203.0.113.77');
    const at = Date.parse(elementData(page, 'requested-at', 'at') ?? '');
    expect(Math.abs(at - before)).toBeLessThan(60_000);
    expect(elementText(page, 'requested-at')).toMatch(/UTC/);
    expect(elementText(page, 'warning')).toMatch(/deny/i);
    // Whoever asked may call itself ticketing-cli: the page never presents that name as a trusted client.
    const client = elementText(page, 'client-id') ?? '';
    expect(client).toContain('ticketing-cli');
    expect(client).toMatch(/cannot vouch/);
    expect(client).not.toMatch(/command-line client/i);
  });

  it('a read scope asked for gives a key that cannot write (READ_ONLY_KEY)', async () => {
    const login = await startLogin(fastPolls, { client_id: 'reporting-script', scope: 'read' });
    const decided = await approveDevice(fastPolls, {
      email: organizer.email,
      userCode: login.user_code,
      decision: 'approve',
    });
    expect(elementData(decided.confirmationPage, 'scope', 'scope')).toBe('read');
    const token = (await poll(fastPolls, login.device_code, { client_id: 'reporting-script' })).json();
    expect(token.scope).toBe('read');
    expect(
      (await fastPolls.request({ method: 'GET', url: '/api/v1/me', headers: bearer(token.access_token) })).statusCode,
    ).toBe(200);
    const refused = await fastPolls.request({
      method: 'POST',
      url: '/api/v1/workspaces',
      headers: bearer(token.access_token),
      payload: { name: 'Not allowed' },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('READ_ONLY_KEY');
  });

  it('deny: the client gets access_denied and no key exists', async () => {
    const login = await startLogin(fastPolls);
    const decided = await approveDevice(fastPolls, {
      email: organizer.email,
      userCode: login.user_code,
      decision: 'deny',
    });
    expect(elementData(decided.resultPage, 'result', 'result')).toBe('denied');
    const answer = await poll(fastPolls, login.device_code);
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error).toBe('access_denied');
    const [row] = await fastPolls.orm.em
      .fork()
      .execute<{ api_key_id: string | null }[]>(
        'select api_key_id from device_authorizations where device_code_hash = ?',
        [sha256(login.device_code)],
      );
    expect(row).toEqual({ api_key_id: null });
  });

  it('expiry: the client gets expired_token and the page no longer finds the code', async () => {
    const login = await startLogin(shortLived);
    expect(login.expires_in).toBe(2);
    const { browser } = await signInOnDevicePage(shortLived, { email: organizer.email });
    await sleep(login.expires_in * 1000 + 200);
    const answer = await poll(shortLived, login.device_code);
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error).toBe('expired_token');
    const page = await browser.get(`/device?user_code=${login.user_code}`);
    expect(page.statusCode).toBe(404);
    expect(page.body).not.toContain('id="confirm"');
  });

  it('finds the code whatever its case, with or without the dash', async () => {
    const login = await startLogin(api);
    const { browser } = await signInOnDevicePage(api, { email: organizer.email });
    for (const typed of [
      login.user_code.toLowerCase(),
      login.user_code.replace('-', ''),
      ` ${login.user_code.slice(0, 4)} ${login.user_code.slice(5).toLowerCase()} `,
    ]) {
      const page = await browser.get(`/device?user_code=${encodeURIComponent(typed)}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('id="confirm"');
      expect(elementText(page.body, 'user-code')).toBe(login.user_code);
    }
    const malformed = await browser.get('/device?user_code=AEIO-UAEI');
    expect(malformed.statusCode).toBe(400);
  });

  it("refuses an approval without this session's CSRF token; the request stays pending until a real one", async () => {
    const login = await startLogin(fastPolls);
    const { browser, page } = await signInOnDevicePage(fastPolls, {
      email: organizer.email,
      userCode: login.user_code,
    });
    expect(page).toContain('id="confirm"');
    const fields = {
      authorization_id: formField(page, 'authorization_id') ?? '',
      workspace_id: elementData(page, 'workspace-choice', 'selected') ?? '',
      decision: 'approve',
    };
    // Another signed-in browser's token is no good here either: tokens are bound to the session.
    const other = await signInOnDevicePage(fastPolls, { email: organizer.email, userCode: login.user_code });
    for (const csrf of [undefined, 'forged', formField(other.page, 'csrf')]) {
      const refused = await browser.postForm('/device/decision', csrf === undefined ? fields : { ...fields, csrf });
      expect(refused.statusCode).toBe(403);
    }
    expect((await poll(fastPolls, login.device_code)).json().error).toBe('authorization_pending');

    const accepted = await browser.postForm('/device/decision', { ...fields, csrf: formField(page, 'csrf') ?? '' });
    expect(elementData(accepted.body, 'result', 'result')).toBe('approved');
    expect((await poll(fastPolls, login.device_code)).statusCode).toBe(200);
  });

  it('refuses to approve a key for a workspace the person cannot reach, and lets them pick among their own', async () => {
    const other = await createOrganizer(api.orm.em.fork());
    const login = await startLogin(fastPolls);
    const { browser, page } = await signInOnDevicePage(fastPolls, {
      email: organizer.email,
      userCode: login.user_code,
    });
    const refused = await browser.postForm('/device/decision', {
      authorization_id: formField(page, 'authorization_id') ?? '',
      workspace_id: other.workspaceId,
      decision: 'approve',
      csrf: formField(page, 'csrf') ?? '',
    });
    expect(refused.statusCode).toBe(403);

    // Once a member there (as VIEWER), the page offers that workspace: the key is minted there (customer endpoints
    // called with it stay there, contract 5.6); organizer requests still follow contract 5.5 (default workspace unless
    // X-Workspace-Id), always with the person's role in the workspace acted in.
    await addMembership(api.orm.em.fork(), organizer.userId, other.workspaceId, 'VIEWER');
    const decided = await approveDevice(fastPolls, {
      email: organizer.email,
      userCode: login.user_code,
      decision: 'approve',
      workspaceId: other.workspaceId,
    });
    expect(decided.confirmationPage).toContain(`value="${other.workspaceId}"`);
    const token = (await poll(fastPolls, login.device_code)).json();
    const [key] = await fastPolls.orm.em
      .fork()
      .execute<{ workspace_id: string }[]>('select workspace_id from api_keys where secret_hash = ?', [
        sha256(token.access_token),
      ]);
    expect(key?.workspace_id).toBe(other.workspaceId);
    const there = await fastPolls.request({
      method: 'GET',
      url: '/api/v1/me',
      headers: { ...bearer(token.access_token), 'x-workspace-id': other.workspaceId },
    });
    expect(there.json().data).toMatchObject({ activeWorkspaceId: other.workspaceId, role: 'VIEWER' });
  });
});

describe('signing in on /device', () => {
  it('answers the same page for an address without an account, and mails it nothing', async () => {
    const known = new DeviceBrowser(api);
    const unknown = new DeviceBrowser(api);
    const stranger = `stranger-${Math.random().toString(36).slice(2, 10)}@organizers.test`;
    const pages = [];
    // The stranger first: by the time the known address has its code, the stranger's request was handled too.
    for (const [browser, email] of [
      [unknown, stranger],
      [known, organizer.email],
    ] as const) {
      const start = await browser.get('/device');
      const asked = await browser.postForm('/device/sign-in', {
        email,
        user_code: '',
        csrf: formField(start.body, 'csrf') ?? '',
      });
      expect(asked.statusCode).toBe(200);
      pages.push(asked.body.replaceAll(email, '<email>').replace(/name="csrf" value="[^"]*"/, 'name="csrf"'));
    }
    expect(pages[1]).toBe(pages[0]);
    await waitForMail(api.env.SANDBOX_URL, organizer.email, (m) => /organizer sign-in code/i.test(m.subject));
    expect(await inbox(api.env.SANDBOX_URL, stranger)).toEqual([]);
  });

  it('strangers typing wrong codes for the address never spend the owner’s code (issue 31)', async () => {
    const person = await createOrganizer(api.orm.em.fork());
    const ownerBrowser = new DeviceBrowser(api);
    const start = await ownerBrowser.get('/device');
    const asked = await ownerBrowser.postForm('/device/sign-in', {
      email: person.email,
      user_code: '',
      csrf: formField(start.body, 'csrf') ?? '',
    });
    expect(asked.statusCode).toBe(200);
    const mail = await waitForMail(api.env.SANDBOX_URL, person.email, (m) => /organizer sign-in code/i.test(m.subject));
    const code = /(\d{6})/.exec(mail.subject)?.[1] ?? '';
    const wrong = code === '000000' ? '000001' : '000000';
    // Two strangers' browsers spend their whole per-address budget guessing: far past the code's shared attempts.
    for (const stranger of [new DeviceBrowser(api), new DeviceBrowser(api)]) {
      const page = await stranger.get('/device');
      for (let i = 0; i < 10; i += 1) {
        const guessed = await stranger.postForm('/device/sign-in/code', {
          email: person.email,
          code: wrong,
          user_code: '',
          csrf: formField(page.body, 'csrf') ?? '',
        });
        expect(guessed.statusCode).toBe(401);
      }
    }
    const signedIn = await ownerBrowser.postForm('/device/sign-in/code', {
      email: person.email,
      code,
      user_code: '',
      csrf: formField(asked.body, 'csrf') ?? '',
    });
    expect(signedIn.statusCode).toBe(303);
  });

  it('refuses a sign-in form that did not come from a page of this browser', async () => {
    const browser = new DeviceBrowser(api);
    const refused = await browser.postForm('/device/sign-in', {
      email: organizer.email,
      user_code: '',
      csrf: 'forged',
    });
    expect(refused.statusCode).toBe(403);
  });
});

describe('discovery documents', () => {
  it('the RFC 9728 document names the device endpoints and its authorization server, whose RFC 8414 document does too', async () => {
    const origin = api.env.PUBLIC_ORIGIN.replace(/\/$/, '');
    const resource = await api.request({ method: 'GET', url: '/.well-known/oauth-protected-resource' });
    expect(resource.statusCode).toBe(200);
    const endpoints = {
      device_authorization_endpoint: `${origin}/api/v1/auth/device/code`,
      token_endpoint: `${origin}/api/v1/auth/device/token`,
      grant_types_supported: [GRANT_TYPE],
    };
    expect(resource.json()).toMatchObject({ ...endpoints, authorization_servers: [origin] });
    const issuer = resource.json().authorization_servers[0] as string;
    const server = await api.request({
      method: 'GET',
      url: `${new URL(issuer).pathname.replace(/\/$/, '')}/.well-known/oauth-authorization-server`,
    });
    expect(server.statusCode).toBe(200);
    expect(server.json()).toMatchObject({ issuer, ...endpoints, token_endpoint_auth_methods_supported: ['none'] });
  });

  it('the OpenAPI document describes the OAuth error format of the device endpoints', async () => {
    const document = (await api.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const token = document.paths['/auth/device/token'].post;
    expect(Object.keys(token.requestBody.content)).toEqual(
      expect.arrayContaining(['application/x-www-form-urlencoded', 'application/json']),
    );
    expect(JSON.stringify(token.responses['400'])).toContain('OAuthError');
    expect(token.security).toEqual([]);
  });
});

describe('token revocation (RFC 7009): how a client logs out', () => {
  const revoke = (payload: string, contentType = 'application/x-www-form-urlencoded') =>
    api.request({ method: 'POST', url: '/api/v1/auth/revoke', headers: { 'content-type': contentType }, payload });
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

  it('the holder of a read key ends it by presenting it; the key gets 401 from then on', async () => {
    const holder = await createOrganizer(api.orm.em.fork());
    expect((await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(holder.readKey) })).statusCode).toBe(
      200,
    );
    const revoked = await revoke(
      form({ token: holder.readKey, token_type_hint: 'access_token', client_id: 'ticketing-cli' }),
    );
    expect({ status: revoked.statusCode, body: revoked.json() }).toEqual({ status: 200, body: {} });
    expect(revoked.headers['cache-control']).toBe('no-store');
    expect((await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(holder.readKey) })).statusCode).toBe(
      401,
    );
    // The same holder's other key is untouched.
    expect((await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(holder.key) })).statusCode).toBe(200);
  });

  it('an unknown or already revoked token gets the same answer, so the endpoint tells nobody which strings are keys', async () => {
    const holder = await createOrganizer(api.orm.em.fork());
    expect((await revoke(JSON.stringify({ token: holder.key }), 'application/json')).json()).toEqual({});
    const again = await revoke(form({ token: holder.key }));
    const unknown = await revoke(form({ token: 'tkt_live_not-a-key-at-all-0000000000000000000000' }));
    expect([again.statusCode, again.json(), unknown.statusCode, unknown.json()]).toEqual([200, {}, 200, {}]);
  });

  it('a request without a token is an OAuth invalid_request, and the discovery document names the endpoint', async () => {
    const missing = await revoke(form({ client_id: 'ticketing-cli' }));
    expect({ status: missing.statusCode, error: missing.json().error }).toEqual({
      status: 400,
      error: 'invalid_request',
    });
    const server = await api.request({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
    const origin = api.env.PUBLIC_ORIGIN.replace(/\/$/, '');
    expect(server.json()).toMatchObject({
      revocation_endpoint: `${origin}/api/v1/auth/revoke`,
      revocation_endpoint_auth_methods_supported: ['none'],
    });
  });
});
