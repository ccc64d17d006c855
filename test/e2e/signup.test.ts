/**
 * Self-service sign-up (contract 4.1 POST /auth/signup, issue 16): the whole path a new organizer takes over HTTP —
 * sign up, open the emailed link, name a first workspace, approve a first key through the device flow, use the key —
 * and the rules around it: no account enumeration, a link that works once and expires, rate limits.
 */
import { createHash } from 'node:crypto';
import { DeviceBrowser, elementData, elementText, formField } from '../support/device.js';
import { bearer, createOrganizer } from '../support/fixtures.js';
import { inbox, waitForMail } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let shortLinks: TestApi;
beforeAll(async () => {
  api = await startTestApi();
  shortLinks = await startTestApi({ SIGN_UP_LINK_TTL_SECONDS: '1' });
});
afterAll(async () => {
  await api?.close();
  await shortLinks?.close();
});

const uniqueEmail = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@organizers.test`;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let addresses = 0;
/** A client address per request group (198.51.100.0/24, a documentation range), so per-client limits stay apart. */
const nextAddress = () => {
  addresses += 1;
  return `198.51.${(process.pid % 200) + 1}.${addresses}`;
};

function signUp(target: TestApi, body: Record<string, unknown>, remoteAddress = nextAddress()) {
  return target.request({ method: 'POST', url: '/api/v1/auth/signup', payload: body, remoteAddress });
}

/** The link of the verification email sent to `email`, as a path on the API origin. */
async function verificationPath(target: TestApi, email: string): Promise<{ path: string; token: string }> {
  const mail = await waitForMail(target.env.SANDBOX_URL, email, (m) => /verify your email/i.test(m.subject));
  const link = /(https?:\/\/\S+\/auth\/verify\?token=([A-Za-z0-9_-]+))/.exec(mail.text);
  if (!link?.[1] || !link[2]) throw new Error(`no verification link in: ${mail.text}`);
  const url = new URL(link[1]);
  return { path: `${url.pathname}${url.search}`, token: link[2] };
}

const usersWithEmail = async (email: string) =>
  api.orm.em.fork().execute<{ id: string; name: string }[]>('select id, name from users where email = ?', [email]);

describe('a new organizer signs up and reaches a first key over HTTP', () => {
  it('sign-up → verification link → first workspace → device approval → a key that reads and writes', async () => {
    const email = uniqueEmail('ada');
    const signedUp = await signUp(api, { email, name: 'Ada Lovelace' });
    expect(signedUp.statusCode).toBe(202);
    expect(signedUp.json()).toEqual({ data: { sent: true, expiresInSeconds: api.env.SIGN_UP_LINK_TTL_SECONDS } });

    const { path, token } = await verificationPath(api, email);
    // Unverified: the sign-up is recorded, with the link's hash only; no account exists yet.
    const pending = await api.orm.em
      .fork()
      .execute<{ token_hash: string; verified_at: Date | null }[]>(
        'select token_hash, verified_at from organizer_sign_ups where email = ?',
        [email],
      );
    expect(pending).toEqual([{ token_hash: sha256(token), verified_at: null }]);
    expect(await usersWithEmail(email)).toEqual([]);

    const browser = new DeviceBrowser(api);
    // Opening the link (as a mail scanner would, too) only shows the confirmation button.
    const opened = await browser.get(path);
    expect(opened.statusCode).toBe(200);
    expect(opened.body).toContain('Confirm my email');
    expect(await usersWithEmail(email)).toEqual([]);
    const verified = await browser.postForm('/auth/verify', { token });
    expect(verified.statusCode).toBe(303);
    expect(verified.headers.location).toBe('/device');
    const sessionCookie = verified.cookies.find((cookie) => cookie.name === 'organizer_session');
    expect(sessionCookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/device' });
    const sessionRows = await api.orm.em
      .fork()
      .execute<{ token_hash: string }[]>(
        'select s.token_hash from organizer_web_sessions s join users u on u.id = s.user_id where u.email = ?',
        [email],
      );
    expect(sessionRows).toEqual([{ token_hash: sha256(sessionCookie?.value ?? '') }]);
    expect((await usersWithEmail(email)).map((user) => user.name)).toEqual(['Ada Lovelace']);

    const started = await api.request({
      method: 'POST',
      url: '/api/v1/auth/device/code',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'client_id=ticketing-cli',
    });
    expect(started.statusCode).toBe(200);
    const { device_code: deviceCode, user_code: userCode } = started.json();

    // No workspace yet: the page asks for one before anything can be approved.
    const firstPage = await browser.get(`/device?user_code=${userCode}`);
    expect(firstPage.statusCode).toBe(200);
    expect(firstPage.body).toContain('id="first-workspace"');
    const created = await browser.postForm('/device/workspace', {
      name: 'Teatro Lumen',
      user_code: formField(firstPage.body, 'user_code') ?? '',
      csrf: formField(firstPage.body, 'csrf') ?? '',
    });
    expect(created.statusCode).toBe(303);
    const confirmation = await browser.get(String(created.headers.location));
    expect(confirmation.statusCode).toBe(200);
    expect(elementData(confirmation.body, 'client-id', 'client-id')).toBe('ticketing-cli');
    expect(elementData(confirmation.body, 'scope', 'scope')).toBe('write');
    expect(elementText(confirmation.body, 'workspace')).toContain('Teatro Lumen');
    expect(elementText(confirmation.body, 'user-code')).toBe(userCode);

    const decided = await browser.postForm('/device/decision', {
      authorization_id: formField(confirmation.body, 'authorization_id') ?? '',
      workspace_id: elementData(confirmation.body, 'workspace-choice', 'selected') ?? '',
      decision: 'approve',
      csrf: formField(confirmation.body, 'csrf') ?? '',
    });
    expect(elementData(decided.body, 'result', 'result')).toBe('approved');

    const exchanged = await api.request({
      method: 'POST',
      url: '/api/v1/auth/device/token',
      payload: {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        device_code: deviceCode,
        client_id: 'ticketing-cli',
      },
    });
    expect(exchanged.statusCode).toBe(200);
    const key: string = exchanged.json().access_token;
    expect(key).toMatch(new RegExp(`^${api.env.API_KEY_PREFIX}_live_`));

    const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(key) });
    expect(me.statusCode).toBe(200);
    expect(me.json().data).toMatchObject({
      name: 'Ada Lovelace',
      email,
      role: 'ADMIN',
      workspaces: [expect.objectContaining({ name: 'Teatro Lumen', role: 'ADMIN' })],
    });
    // The CLI session can write (contract 5.3): as the workspace's ADMIN it mints a key for an integration.
    const minted = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(key),
      payload: { name: 'box office integration' },
    });
    expect(minted.statusCode).toBe(201);

    // The link verified the account once; opening it again signs nobody in.
    const again = await new DeviceBrowser(api).get(path);
    expect(again.statusCode).toBe(410);
    expect(again.cookies.find((cookie) => cookie.name === 'organizer_session')).toBeUndefined();
  });
});

describe('no account enumeration', () => {
  it('a known email gets the same answer as a new one, and its account is left untouched', async () => {
    const known = await createOrganizer(api.orm.em.fork());
    const [before] = await usersWithEmail(known.email);
    const fresh = await signUp(api, { email: uniqueEmail('fresh'), name: 'Someone New' });
    const repeat = await signUp(api, { email: known.email, name: 'Someone Else' });
    expect(repeat.statusCode).toBe(fresh.statusCode);
    expect(repeat.json()).toEqual(fresh.json());

    // The owner is told someone tried, and gets no verification link: the account cannot be taken over or renamed.
    const notice = await waitForMail(api.env.SANDBOX_URL, known.email, (m) => /already have/i.test(m.subject));
    expect(notice.text).not.toContain('/auth/verify');
    expect(await usersWithEmail(known.email)).toEqual([before]);
    const signUps = await api.orm.em
      .fork()
      .execute<{ n: number }[]>('select count(*)::int as n from organizer_sign_ups where email = ?', [known.email]);
    expect(signUps[0]?.n).toBe(0);
  });

  it('email case does not make a second account', async () => {
    const email = uniqueEmail('casey');
    expect((await signUp(api, { email: email.toUpperCase(), name: 'Casey' })).statusCode).toBe(202);
    const { path, token } = await verificationPath(api, email);
    const browser = new DeviceBrowser(api);
    expect((await browser.get(path)).statusCode).toBe(200);
    expect((await browser.postForm('/auth/verify', { token })).statusCode).toBe(303);
    expect(await usersWithEmail(email)).toHaveLength(1);
  });
});

describe('the verification link', () => {
  it('stops working once it expires, and creates no account', async () => {
    const email = uniqueEmail('late');
    expect((await signUp(shortLinks, { email, name: 'Late Reader' })).statusCode).toBe(202);
    const { path } = await verificationPath(shortLinks, email);
    const expiresAt = await shortLinks.orm.em
      .fork()
      .execute<{ expires_at: string }[]>('select expires_at from organizer_sign_ups where email = ?', [email]);
    const wait = new Date(expiresAt[0]?.expires_at ?? 0).getTime() - Date.now() + 200;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const opened = await new DeviceBrowser(shortLinks).get(path);
    expect(opened.statusCode).toBe(410);
    expect(opened.cookies.find((cookie) => cookie.name === 'organizer_session')).toBeUndefined();
    expect(await usersWithEmail(email)).toEqual([]);
  });

  it('a confirmation posted from another site signs nobody in', async () => {
    const email = uniqueEmail('csrf');
    expect((await signUp(api, { email, name: 'Target' })).statusCode).toBe(202);
    const { token } = await verificationPath(api, email);
    const forged = await api.request({
      method: 'POST',
      url: '/auth/verify',
      payload: new URLSearchParams({ token }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
    });
    expect(forged.statusCode).toBe(403);
    expect(forged.cookies.find((cookie) => cookie.name === 'organizer_session')).toBeUndefined();
    expect(await usersWithEmail(email)).toEqual([]);
  });

  it('refuses a token nobody was sent', async () => {
    const opened = await new DeviceBrowser(api).get('/auth/verify?token=not-a-real-token');
    expect(opened.statusCode).toBe(410);
    expect(opened.headers['content-type']).toMatch(/^text\/html/);
  });
});

describe('sign-up input and limits', () => {
  it('refuses a malformed email or a missing name with the contract error body', async () => {
    const response = await signUp(api, { email: 'not-an-email', name: 'X' });
    expect(response.statusCode).toBe(422);
    expect(response.json().error).toMatchObject({ code: 'VALIDATION_FAILED', retryable: false });
    const fields = response.json().error.details.fields.map((field: { field: string }) => field.field);
    expect(fields).toEqual(expect.arrayContaining(['body.email', 'body.name']));
  });

  it('is rate limited per email from each client address, so a stranger cannot block the owner (issue 31)', async () => {
    const email = uniqueEmail('flooded');
    const stranger = nextAddress();
    const { points } = api.app.rateLimits.limits.signUpPerEmailAndClient;
    for (let attempt = 0; attempt < points; attempt += 1) {
      expect((await signUp(api, { email, name: 'Flood Target' }, stranger)).statusCode).toBe(202);
    }
    const refused = await signUp(api, { email, name: 'Flood Target' }, stranger);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.code).toBe('RATE_LIMITED');
    expect(refused.headers['retry-after']).toBeDefined();
    // Only the allowed sign-ups mailed the address.
    await waitForMail(api.env.SANDBOX_URL, email, () => true);
    const deadline = Date.now() + 20_000;
    while ((await inbox(api.env.SANDBOX_URL, email)).length < points && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(await inbox(api.env.SANDBOX_URL, email)).toHaveLength(points);

    // The owner, from their own address, still signs up and gets a working link.
    const owner = nextAddress();
    expect((await signUp(api, { email, name: 'Real Owner' }, owner)).statusCode).toBe(202);
    const mails = async () => (await inbox(api.env.SANDBOX_URL, email)).length;
    const until = Date.now() + 20_000;
    while ((await mails()) <= points && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await mails()).toBe(points + 1);
  });

  it('is rate limited per client address', async () => {
    const address = nextAddress();
    const { points } = api.app.rateLimits.limits.signUpPerClient;
    for (let attempt = 0; attempt < points; attempt += 1) {
      const allowed = await signUp(api, { email: uniqueEmail('burst'), name: 'Burst' }, address);
      expect(allowed.statusCode).toBe(202);
    }
    const refused = await signUp(api, { email: uniqueEmail('burst'), name: 'Burst' }, address);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.code).toBe('RATE_LIMITED');
  });
});
