/**
 * Enterprise SSO exchange (issue 16; contract 4.1 customer row, 4.2 returnUrl, 5.6): an enterprise, set up by an
 * operator, signs a one-time token for one of its users; POST /api/customer-auth/enterprise-exchange turns it into
 * a buyer session that buys only in the enterprise's workspaces and returns only to its allowlisted hosts.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { enterpriseTokenAudience } from '../../domain/enterprise.js';
import { runEnterpriseOperator } from '../../scripts/operator-enterprise.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { DocumentedResponses } from '../support/openapi-responses.js';
import { orderBody, publishEvent, reserveOrder, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const EXCHANGE = '/api/customer-auth/enterprise-exchange';

let api: TestApi;
let served: Organizer;
let notServed: Organizer;
let organizerDocument: DocumentedResponses;

interface TestEnterprise {
  id: string;
  secret: string;
}

/** Runs an operator command as an operator would, and returns what it printed. */
async function operator(...argv: string[]): Promise<{ code: number; output: string }> {
  const lines: string[] = [];
  const code = await runEnterpriseOperator(argv, { orm: api.orm, env: api.env, print: (line) => lines.push(line) });
  return { code, output: lines.join('\n') };
}

async function createEnterprise(workspaceIds: string[], returnHosts: string[] = []): Promise<TestEnterprise> {
  const created = await operator(
    'create',
    '--name',
    `Acme ${randomUUID().slice(0, 6)}`,
    '--workspaces',
    workspaceIds.join(','),
    ...(returnHosts.length ? ['--return-hosts', returnHosts.join(',')] : []),
  );
  expect(created.code).toBe(0);
  const id = /^([0-9a-f-]{36}) /.exec(created.output)?.[1];
  const secret = /(ent_sk_[A-Za-z0-9_-]+)/.exec(created.output)?.[1];
  if (!id || !secret) throw new Error(`unexpected operator output:\n${created.output}`);
  return { id, secret };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

interface TokenOptions {
  subject?: string;
  email?: string;
  name?: string;
  secret?: string;
  issuer?: string;
  audience?: string;
  iat?: number;
  exp?: number;
  jti?: string;
}

/** A token as the enterprise's own system signs it. */
function ssoToken(enterprise: TestEnterprise, options: TokenOptions = {}): Promise<string> {
  const iat = options.iat ?? nowSeconds();
  return new SignJWT({ email: options.email ?? `user-${randomUUID().slice(0, 8)}@acme.test`, name: options.name })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(options.issuer ?? enterprise.id)
    .setAudience(options.audience ?? enterpriseTokenAudience(api.env.PUBLIC_ORIGIN))
    .setSubject(options.subject ?? `acme-user-${randomUUID()}`)
    .setJti(options.jti ?? randomUUID())
    .setIssuedAt(iat)
    .setExpirationTime(options.exp ?? iat + 120)
    .sign(new TextEncoder().encode(options.secret ?? enterprise.secret));
}

/** POST the exchange; the answer must be one the OpenAPI document describes (the operation is outside /api/v1). */
async function exchange(token: string) {
  const response = await api.request({ method: 'POST', url: EXCHANGE, payload: { token } });
  const contentType = response.headers['content-type'];
  expect(
    organizerDocument.problems({
      method: 'POST',
      path: EXCHANGE,
      status: response.statusCode,
      contentType: typeof contentType === 'string' ? contentType : undefined,
      body: response.body,
    }),
  ).toEqual([]);
  return response;
}

async function exchangedSession(enterprise: TestEnterprise, options: TokenOptions = {}): Promise<string> {
  const response = await exchange(await ssoToken(enterprise, options));
  expect(response.statusCode).toBe(200);
  return response.json().data.session_token;
}

const expectRefused = (response: { statusCode: number; json(): { error: unknown } }, reason: string) => {
  expect(response.statusCode).toBe(401);
  expect(response.json().error).toMatchObject({ code: 'UNAUTHENTICATED', retryable: false, details: { reason } });
};

/** Where the browser is sent after paying: the order's returnUrl when it was kept, else our own order page. */
async function landingOf(saleId: string): Promise<string> {
  const landing = await api.request({ method: 'GET', url: `/api/v1/customer/orders/${saleId}/payment/return` });
  expect(landing.statusCode).toBe(302);
  return String(landing.headers.location);
}

beforeAll(async () => {
  api = await startTestApi();
  served = await createOrganizer(api.orm.em.fork());
  notServed = await createOrganizer(api.orm.em.fork());
  const document = await api.request({ method: 'GET', url: '/api/v1/openapi.json' });
  organizerDocument = new DocumentedResponses('organizer', document.json());
});
afterAll(async () => {
  await api.close();
});

describe('POST /api/customer-auth/enterprise-exchange', () => {
  test('is served under {base_url} too (contract 4.0): /api/v1/customer-auth/enterprise-exchange, same rules', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const token = await ssoToken(enterprise, { email: 'v1.exec@acme.test' });
    const url = '/api/v1/customer-auth/enterprise-exchange';
    const response = await api.request({ method: 'POST', url, payload: { token } });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({ session_token: expect.stringMatching(/^bs_/) });
    // One token, one session, whichever address it is sent to.
    const replayed = await api.request({ method: 'POST', url: EXCHANGE, payload: { token } });
    expect(replayed.statusCode).toBe(401);
    expect(replayed.json().error.details).toEqual({ reason: 'token_replayed' });
  });

  test('a valid token becomes a buyer session that can reserve an event of a served workspace', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const response = await exchange(await ssoToken(enterprise, { email: 'Ana.Exec@Acme.test', name: 'Ana Exec' }));
    expect(response.statusCode).toBe(200);
    const { data } = response.json();
    expect(data).toMatchObject({
      session_token: expect.stringMatching(/^bs_/),
      buyer: { email: 'ana.exec@acme.test', name: 'Ana Exec', phone: null },
    });
    // No cookie: a page posting someone's token must not sign the visitor's browser in.
    expect(response.headers['set-cookie']).toBeUndefined();
    const me = await api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(data.session_token) });
    expect(me.json().data).toMatchObject({ id: data.buyer.id, email: 'ana.exec@acme.test' });

    const event = await publishEvent(api, served);
    const order = await reserveOrder(api, data.session_token, orderBody(event));
    expect(order.statusCode).toBe(201);
    expect(order.json().data).toMatchObject({ free: false, saleId: expect.any(String) });
  });

  test('the session is refused for an event of a workspace the enterprise does not serve (404 NOT_FOUND)', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const token = await exchangedSession(enterprise);
    const elsewhere = await publishEvent(api, notServed);
    const refused = await reserveOrder(api, token, orderBody(elsewhere));
    expect(refused.statusCode).toBe(404);
    expect(refused.json().error).toMatchObject({ code: 'NOT_FOUND', details: { reason: 'workspace_not_served' } });
    // The same buyer can still buy where the enterprise sells.
    expect((await reserveOrder(api, token, orderBody(await publishEvent(api, served)))).statusCode).toBe(201);
  });

  test('the public /orders refuses the session outside the enterprise’s workspaces too (issue 31)', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const token = await exchangedSession(enterprise);
    const publicOrder = (event: { ticketTypeId: string }) =>
      api.request({
        method: 'POST',
        url: '/api/public/orders',
        headers: session(token),
        payload: {
          buyerEmail: 'ana.exec@acme.test',
          buyerName: 'Ana Exec',
          items: [{ ticketTypeId: event.ticketTypeId, quantity: 1 }],
        },
      });
    const refused = await publicOrder(await publishEvent(api, notServed));
    expect(refused.statusCode).toBe(404);
    expect(refused.json().error).toMatchObject({ code: 'NOT_FOUND', details: { reason: 'workspace_not_served' } });
    expect((await publicOrder(await publishEvent(api, served))).statusCode).toBe(200);
  });

  test('a purchase session or a membership signup in a workspace the enterprise does not serve is refused too', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const token = await exchangedSession(enterprise);
    const elsewhere = await publishEvent(api, notServed);
    const opened = await api.request({
      method: 'POST',
      url: '/api/v1/customer/purchase-sessions',
      headers: session(token),
      payload: { eventDateId: elsewhere.eventDateId },
    });
    expect(opened.statusCode).toBe(404);
    expect(opened.json().error).toMatchObject({ code: 'NOT_FOUND', details: { reason: 'workspace_not_served' } });

    const plan = await api.request({
      method: 'POST',
      url: '/api/v1/membership-plans',
      headers: bearer(notServed.key),
      payload: { name: 'Club elsewhere', price: 20_000, period: 'MONTHLY', benefits: { discountPercent: 10 } },
    });
    expect(plan.statusCode).toBe(201);
    const signup = await api.request({
      method: 'POST',
      url: '/api/v1/customer/subscriptions',
      headers: session(token),
      payload: { planId: plan.json().data.id },
    });
    expect(signup.statusCode).toBe(404);
    expect(signup.json().error).toMatchObject({ code: 'NOT_FOUND', details: { reason: 'workspace_not_served' } });
  });

  test('each token is accepted once: a replay gets 401 token_replayed, even when both copies race', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const token = await ssoToken(enterprise);
    expect((await exchange(token)).statusCode).toBe(200);
    expectRefused(await exchange(token), 'token_replayed');

    const raced = await ssoToken(enterprise);
    const answers = await Promise.all([exchange(raced), exchange(raced), exchange(raced)]);
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 401, 401]);
    for (const answer of answers.filter((a) => a.statusCode === 401)) expectRefused(answer, 'token_replayed');
  });

  test('a used token id is remembered only until the token expires (exp plus the clock skew)', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const iat = nowSeconds();
    const jti = randomUUID();
    expect((await exchange(await ssoToken(enterprise, { iat, exp: iat + 60, jti }))).statusCode).toBe(200);
    const em = api.orm.em.fork();
    const [use] = await em.execute<{ expires_at: string | Date }[]>(
      'select expires_at from enterprise_token_uses where enterprise_id = ? and jti = ?',
      [enterprise.id, jti],
    );
    expect(new Date(use?.expires_at ?? 0).getTime()).toBe((iat + 60 + 30) * 1000);
    // Once past that instant the row is dead weight; the next exchange of the enterprise clears it.
    await em.execute(`update enterprise_token_uses set expires_at = now() - interval '1 second' where jti = ?`, [jti]);
    expect((await exchange(await ssoToken(enterprise))).statusCode).toBe(200);
    const left = await em.execute('select 1 from enterprise_token_uses where enterprise_id = ? and jti = ?', [
      enterprise.id,
      jti,
    ]);
    expect(left).toHaveLength(0);
  });

  test('an expired token is refused (token_expired), and a refused token leaves nothing behind', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const iat = nowSeconds() - 200;
    const jti = randomUUID();
    expectRefused(await exchange(await ssoToken(enterprise, { iat, exp: iat + 100, jti })), 'token_expired');
    const [uses] = await api.orm.em
      .fork()
      .execute<{ count: string }[]>('select count(*) from enterprise_token_uses where enterprise_id = ?', [
        enterprise.id,
      ]);
    expect(Number(uses?.count)).toBe(0);
  });

  test('a token living more than five minutes is refused (lifetime_too_long)', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const iat = nowSeconds();
    expectRefused(await exchange(await ssoToken(enterprise, { iat, exp: iat + 3600 })), 'lifetime_too_long');
    expect((await exchange(await ssoToken(enterprise, { iat, exp: iat + 300 }))).statusCode).toBe(200);
  });

  test('a forged signature, another service as audience and an unknown issuer are refused', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const other = await createEnterprise([served.workspaceId]);
    expectRefused(await exchange(await ssoToken(enterprise, { secret: other.secret })), 'bad_signature');
    expectRefused(
      await exchange(await ssoToken(enterprise, { secret: 'ent_sk_guessed-by-an-attacker-000000000000000' })),
      'bad_signature',
    );
    expectRefused(
      await exchange(await ssoToken(enterprise, { audience: 'https://another-service.example' })),
      'wrong_audience',
    );
    expectRefused(await exchange(await ssoToken(enterprise, { issuer: randomUUID() })), 'unknown_issuer');
    expectRefused(await exchange('definitely.not.a-jwt'), 'token_malformed');
  });

  test('the OpenAPI document lists the operation at the root, with no credential and its 401', async () => {
    const document = (await api.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const operation = document.paths[EXCHANGE].post;
    expect(operation.servers).toEqual([{ url: '/' }]);
    expect(operation.security).toEqual([]);
    expect(operation.responses['401'].content['application/json'].example.error.details).toEqual({
      reason: 'token_replayed',
    });
    expect((operation.parameters ?? []).map((p: { name: string }) => p.name)).not.toContain('X-Workspace-Id');
  });

  test('a body without a token is a validation error, not a 500', async () => {
    const response = await api.request({ method: 'POST', url: EXCHANGE, payload: {} });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.code).toBe('VALIDATION_FAILED');
  });
});

describe('enterprise buyers are identified by (enterprise, sub), never merged by email', () => {
  test('the same subject gets the same buyer again, with the email and name of its latest token', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const first = (await exchange(await ssoToken(enterprise, { subject: 'emp-1', email: 'old@acme.test' }))).json();
    const again = (
      await exchange(await ssoToken(enterprise, { subject: 'emp-1', email: 'new@acme.test', name: 'Renamed' }))
    ).json();
    expect(again.data.buyer).toMatchObject({ id: first.data.buyer.id, email: 'new@acme.test', name: 'Renamed' });
  });

  test('one email at two enterprises and at a first-party sign-in is three separate buyers', async () => {
    const email = `shared-${randomUUID().slice(0, 8)}@people.test`;
    const acme = await createEnterprise([served.workspaceId]);
    const globex = await createEnterprise([served.workspaceId]);
    const atAcme = (await exchange(await ssoToken(acme, { subject: 'same-sub', email }))).json().data.buyer.id;
    const atGlobex = (await exchange(await ssoToken(globex, { subject: 'same-sub', email }))).json().data.buyer.id;
    // Proving the address by emailed code reaches a first-party account, not the enterprises' buyers of that email.
    const firstParty = await signInBuyer(api, email);
    const me = await api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(firstParty) });
    expect(me.json().data.email).toBe(email);
    expect(new Set([me.json().data.id, atAcme, atGlobex]).size).toBe(3);
  });
});

describe('returnUrl follows the enterprise allowlist (contract 4.2)', () => {
  test('an allowlisted host is kept; another host, even one the service-wide list allows, is ignored', async () => {
    const enterprise = await createEnterprise([served.workspaceId], ['shop.acme.test', '*.acme-stores.test']);
    const event = await publishEvent(api, served);
    // A fresh buyer per order: one buyer's unpaid order would hold the next one (pending_sale_in_progress).
    const landingFor = async (returnUrl: string) => {
      const order = await reserveOrder(api, await exchangedSession(enterprise), orderBody(event, 1, { returnUrl }));
      expect(order.statusCode).toBe(201);
      const saleId: string = order.json().data.saleId;
      return { saleId, landing: await landingOf(saleId), warnings: order.json().warnings };
    };

    const kept = await landingFor('https://shop.acme.test/thanks');
    expect(kept.warnings).toBeUndefined();
    expect(kept.landing).toMatch(/^https:\/\/shop\.acme\.test\/thanks\?reference=FT-/);
    expect((await landingFor('https://bogota.acme-stores.test/ok')).landing).toMatch(
      /^https:\/\/bogota\.acme-stores\.test\/ok\?reference=FT-/,
    );
    for (const returnUrl of [
      'https://evil.example.net/steal',
      'https://shop.acme.test@evil.example.net/',
      'https://shop.acme.test.evil.example.net/',
      'http://shop.acme.test/thanks',
      // Allowed by RETURN_URL_ALLOWED_HOSTS for first-party buyers, but not by this enterprise.
      'http://localhost:5173/thanks',
    ]) {
      const { saleId, landing, warnings } = await landingFor(returnUrl);
      expect(landing).toContain(`/api/public/orders/${saleId}`);
      // Ignored as contract 4.2 says (the purchase proceeds), and the answer says so (issue 31).
      expect(warnings).toEqual([expect.objectContaining({ code: 'RETURN_URL_IGNORED', field: 'body.returnUrl' })]);
    }
  });

  test('a first-party session keeps using the service-wide list', async () => {
    const event = await publishEvent(api, served);
    const landingFor = async (returnUrl: string) => {
      const token = await signInBuyer(api, `first-party-${randomUUID().slice(0, 8)}@people.test`);
      const order = await reserveOrder(api, token, orderBody(event, 1, { returnUrl }));
      expect(order.statusCode).toBe(201);
      return landingOf(order.json().data.saleId);
    };
    expect(await landingFor('http://localhost:5173/thanks')).toMatch(/^http:\/\/localhost:5173\/thanks\?reference=FT-/);
    expect(await landingFor('https://shop.acme.test/x')).toContain('/api/public/orders/');
  });
});

describe('operators manage enterprises', () => {
  test('the secret is stored encrypted, never in plaintext', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const [row] = await api.orm.em
      .fork()
      .execute<{ secret_ciphertext: string }[]>('select secret_ciphertext from enterprises where id = ?', [
        enterprise.id,
      ]);
    expect(row?.secret_ciphertext).toMatch(/^v1:/);
    expect(row?.secret_ciphertext).not.toContain(enterprise.secret);
  });

  test('rotating the secret refuses tokens signed with the old one', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const rotated = await operator('rotate-secret', enterprise.id);
    expect(rotated.code).toBe(0);
    const secret = /(ent_sk_[A-Za-z0-9_-]+)/.exec(rotated.output)?.[1] as string;
    expectRefused(await exchange(await ssoToken(enterprise)), 'bad_signature');
    expect((await exchange(await ssoToken({ id: enterprise.id, secret }))).statusCode).toBe(200);
  });

  test("disabling an enterprise refuses its tokens and ends its buyers' sessions", async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const token = await exchangedSession(enterprise);
    expect((await operator('disable', enterprise.id)).code).toBe(0);
    const me = await api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) });
    expect(me.statusCode).toBe(401);
    expectRefused(await exchange(await ssoToken(enterprise)), 'unknown_issuer');
    expect((await operator('enable', enterprise.id)).code).toBe(0);
    expect((await exchange(await ssoToken(enterprise))).statusCode).toBe(200);
  });

  test('a bad allowlist entry or an unknown workspace is refused when configured', async () => {
    const badHost = await operator(
      'create',
      '--name',
      'Bad',
      '--workspaces',
      served.workspaceId,
      '--return-hosts',
      'https://shop.acme.test',
    );
    expect(badHost.code).toBe(1);
    expect(badHost.output).toContain('not a host pattern');
    const noWorkspace = await operator('create', '--name', 'Bad', '--workspaces', randomUUID());
    expect(noWorkspace.code).toBe(1);
    expect(noWorkspace.output).toContain('no workspace');
    expect((await operator('create', '--name', 'Bad')).code).toBe(2);
  });

  test('changing the served workspaces applies to live sessions at once', async () => {
    const enterprise = await createEnterprise([served.workspaceId]);
    const token = await exchangedSession(enterprise);
    const elsewhere = await publishEvent(api, notServed);
    expect((await reserveOrder(api, token, orderBody(elsewhere))).statusCode).toBe(404);
    expect(
      (await operator('update', enterprise.id, '--workspaces', `${served.workspaceId},${notServed.workspaceId}`)).code,
    ).toBe(0);
    expect((await reserveOrder(api, token, orderBody(elsewhere))).statusCode).toBe(201);
  });
});
