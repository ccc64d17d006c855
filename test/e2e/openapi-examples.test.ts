/**
 * Swagger "try it" starts from each operation's request example, so every example must work when sent. Both
 * documents the API serves give every request body an example with realistic values (no email the reference's
 * generator made up), and this test sends each example to the API against the test stack, as a reader would after
 * swapping the placeholders (ids, the emailed code, a card token) for their own: an organizer builds a catalog, a
 * buyer signs in, buys and pays by card, joins a plan, an anonymous buyer orders on the storefront. Every example is
 * answered with success; the device-token poll, sent before anyone approved the code, gets the grant's own
 * `authorization_pending`. The last test fails when an operation with a body was not sent here.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { EXAMPLE_PLACEHOLDERS } from '../../api/plugins/openapi-examples.js';
import { acceptStaffInvitation } from '../../api/services/staff.js';
import { enterpriseTokenAudience } from '../../domain/enterprise.js';
import { DEV_VIDEO_CREDENTIALS } from '../../sandbox/video.js';
import { runEnterpriseOperator } from '../../scripts/operator-enterprise.js';
import { bearer, createOrganizer, type Organizer, uniqueClientAddress } from '../support/fixtures.js';
import { cardToken, type InboxMessage, inbox, session, waitForMail } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

type Surface = 'organizer' | 'public';
type Method = 'POST' | 'PATCH';
interface Operation {
  requestBody?: { content: Record<string, { example?: unknown }> };
}
interface Document {
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
}

let api: TestApi;
let organizer: Organizer;
const documents = {} as Record<Surface, Document>;
/** Placeholder of the examples → the value this test created in its place. */
const real = new Map<string, string>();
const sent = new Set<string>();

beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(api.orm.em.fork());
  real.set(EXAMPLE_PLACEHOLDERS.workspaceId, organizer.workspaceId);
  for (const [surface, url] of [
    ['organizer', '/api/v1/openapi.json'],
    ['public', '/api/public/openapi.json'],
  ] as const) {
    const response = await api.request({ method: 'GET', url });
    expect(response.statusCode).toBe(200);
    documents[surface] = response.json();
  }
});
afterAll(async () => {
  await api?.close();
});

/** Every operation with a request body, as `<surface> <METHOD> <path>`. */
function operationsWithBodies(): string[] {
  return (Object.entries(documents) as Array<[Surface, Document]>).flatMap(([surface, doc]) =>
    Object.entries(doc.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) => operation.requestBody)
        .map(([method]) => `${surface} ${method.toUpperCase()} ${path}`),
    ),
  );
}

/** The example the served document gives, with every placeholder swapped for what this test created. */
function exampleOf(surface: Surface, method: Method, path: string): unknown {
  const operation = documents[surface].paths[path]?.[method.toLowerCase()];
  const example = operation?.requestBody?.content['application/json']?.example;
  if (example === undefined) throw new Error(`${surface} ${method} ${path} has no application/json example`);
  let text = JSON.stringify(example);
  for (const [placeholder, value] of real) text = text.replaceAll(placeholder, value);
  return JSON.parse(text);
}

/** Sends an operation's example as a client would; `params` fill the path's `{…}`. */
async function send(
  surface: Surface,
  method: Method,
  path: string,
  options: { params?: Record<string, string>; headers?: Record<string, string>; remoteAddress?: string } = {},
) {
  const base = path.startsWith('/api/') ? '' : (documents[surface].servers?.[0]?.url ?? '');
  const url = base + path.replace(/\{(\w+)\}/g, (_, name: string) => options.params?.[name] ?? `{${name}}`);
  expect(url).not.toContain('{');
  sent.add(`${surface} ${method} ${path}`);
  return api.request({
    method,
    url,
    payload: exampleOf(surface, method, path) as object,
    headers: options.headers ?? bearer(organizer.key),
    ...(options.remoteAddress ? { remoteAddress: options.remoteAddress } : {}),
  });
}

/** Sends an example and expects success; answers the response's `data`. */
async function succeeds(...args: Parameters<typeof send>): Promise<Record<string, unknown>> {
  const response = await send(...args);
  const operation = `${args[0]} ${args[1]} ${args[2]}`;
  const succeeded = response.statusCode >= 200 && response.statusCode < 300;
  // The whole answer beside the verdict, so a refused example says why.
  expect({ operation, succeeded, status: response.statusCode, body: response.body }).toEqual({
    operation,
    succeeded: true,
    status: response.statusCode,
    body: response.body,
  });
  return response.json().data;
}

const id = (data: Record<string, unknown>): string => {
  expect(typeof data.id).toBe('string');
  return data.id as string;
};

/** A video asset or live stream the provider created for this workspace (its passthrough); answers its playback id. */
async function createAtProvider(kind: 'assets' | 'live-streams'): Promise<string> {
  const credentials = `${DEV_VIDEO_CREDENTIALS.tokenId}:${DEV_VIDEO_CREDENTIALS.tokenSecret}`;
  const response = await fetch(`${api.env.SANDBOX_URL}/video/video/v1/${kind}`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(credentials).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ playback_policy: ['signed'], passthrough: organizer.workspaceId }),
  });
  expect(response.status).toBe(201);
  const { data } = (await response.json()) as { data: { playback_ids: Array<{ id: string }> } };
  return data.playback_ids[0]!.id;
}

describe('request examples of the OpenAPI documents', () => {
  test('every request body has an example, and every email in them is a realistic address', () => {
    const operations = operationsWithBodies();
    expect(operations.length).toBeGreaterThanOrEqual(40);
    const missing: string[] = [];
    const emails: string[] = [];
    for (const [surface, doc] of Object.entries(documents)) {
      for (const [path, operations] of Object.entries(doc.paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
            if (media.example === undefined) missing.push(`${surface} ${method.toUpperCase()} ${path} (${type})`);
            JSON.stringify(media.example ?? null, (key, value) => {
              if (/email/i.test(key) && typeof value === 'string') emails.push(value);
              return value;
            });
          }
        }
      }
    }
    expect(missing).toEqual([]);
    expect(emails.length).toBeGreaterThan(0);
    for (const email of emails) expect(email).toMatch(/^[a-z]+(\.[a-z]+)?@example\.com$/);
  });

  test('the organizer examples build a catalog: venue, event, dates, ticket types, discount, plan', async () => {
    real.set(EXAMPLE_PLACEHOLDERS.venueId, id(await succeeds('organizer', 'POST', '/venues')));
    await succeeds('organizer', 'PATCH', '/venues/{id}', { params: { id: real.get(EXAMPLE_PLACEHOLDERS.venueId)! } });

    const eventId = id(await succeeds('organizer', 'POST', '/events'));
    real.set(EXAMPLE_PLACEHOLDERS.eventId, eventId);
    await succeeds('organizer', 'PATCH', '/events/{id}', { params: { id: eventId } });
    const dateId = id(await succeeds('organizer', 'POST', '/events/{id}/dates', { params: { id: eventId } }));
    real.set(EXAMPLE_PLACEHOLDERS.eventDateId, dateId);
    await succeeds('organizer', 'PATCH', '/events/{id}/dates/{dateId}', { params: { id: eventId, dateId } });
    const ticketTypeId = id(await succeeds('organizer', 'POST', '/ticket-types'));
    real.set(EXAMPLE_PLACEHOLDERS.ticketTypeId, ticketTypeId);
    await succeeds('organizer', 'PATCH', '/ticket-types/{id}', { params: { id: ticketTypeId } });

    // A second date with its own ticket type, where a ticket is moved to below.
    const otherDateId = id(await succeeds('organizer', 'POST', '/events/{id}/dates', { params: { id: eventId } }));
    real.set(EXAMPLE_PLACEHOLDERS.eventDateId, otherDateId);
    real.set(EXAMPLE_PLACEHOLDERS.otherEventDateId, otherDateId);
    real.set(EXAMPLE_PLACEHOLDERS.otherTicketTypeId, id(await succeeds('organizer', 'POST', '/ticket-types')));
    real.set(EXAMPLE_PLACEHOLDERS.eventDateId, dateId);

    const published = await api.request({
      method: 'POST',
      url: `/api/v1/events/${eventId}/publish`,
      headers: bearer(organizer.key),
      payload: {},
    });
    expect(published.statusCode).toBe(200);

    const discountId = id(await succeeds('organizer', 'POST', '/discounts'));
    await succeeds('organizer', 'PATCH', '/discounts/{id}', { params: { id: discountId } });
    const planId = id(await succeeds('organizer', 'POST', '/membership-plans'));
    real.set(EXAMPLE_PLACEHOLDERS.planId, planId);
    await succeeds('organizer', 'PATCH', '/membership-plans/{id}', { params: { id: planId } });
  });

  test('the team, sales, tickets and webhook examples', async () => {
    // POST /staff invites; the person accepts through the emailed link, and the role example changes that member.
    // The link's token is minted when the mailer sends it (minting another would void the emailed one), so it is read
    // from the mail, as the invitee would.
    const invitee = 'carlos.perez@example.com';
    const mailKey = (message: InboxMessage) => `${message.receivedAt}\n${message.text}`;
    const seen = new Set((await inbox(api.env.SANDBOX_URL, invitee)).map(mailKey));
    await succeeds('organizer', 'POST', '/staff');
    const invitation = await waitForMail(
      api.env.SANDBOX_URL,
      invitee,
      (message) => !seen.has(mailKey(message)) && message.text.includes('/invitations/accept?token='),
    );
    const token = /\/invitations\/accept\?token=([A-Za-z0-9_-]+)/.exec(invitation.text)?.[1] ?? '';
    const accepted = await acceptStaffInvitation(api.orm.em.fork(), token);
    expect(accepted).not.toBeNull();
    await succeeds('organizer', 'PATCH', '/staff/{id}/role', { params: { id: accepted?.userId ?? '' } });

    const sale = await succeeds('organizer', 'POST', '/sales');
    const tickets = await api.request({
      method: 'GET',
      url: `/api/v1/sales/${id(sale)}/tickets`,
      headers: bearer(organizer.key),
    });
    const ticketCode = (tickets.json().data as Array<{ code: string }>)[0]?.code;
    expect(ticketCode).toBeDefined();
    await succeeds('organizer', 'PATCH', '/tickets/{ticketCode}', { params: { ticketCode: ticketCode! } });
    await succeeds('organizer', 'POST', '/sales/{id}/cancel', { params: { id: id(sale) } });

    const webhookId = id(await succeeds('organizer', 'POST', '/webhooks'));
    await succeeds('organizer', 'PATCH', '/webhooks/{id}', { params: { id: webhookId } });

    await succeeds('organizer', 'POST', '/workspaces');
    const minted = await succeeds('organizer', 'POST', '/api-keys');
    real.set(EXAMPLE_PLACEHOLDERS.apiKey, minted.key as string);
    await succeeds('organizer', 'POST', '/auth/revoke', { headers: {} });
    const revoked = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(minted.key as string) });
    expect(revoked.statusCode).toBe(401);

    // Cancelling an event undoes its sales: a throwaway one, so the catalog above stays on sale.
    const throwaway = await api.request({
      method: 'POST',
      url: '/api/v1/events',
      headers: bearer(organizer.key),
      payload: { name: `Cancelled show ${randomUUID().slice(0, 6)}` },
    });
    expect(throwaway.statusCode).toBe(201);
    await succeeds('organizer', 'POST', '/events/{id}/cancel', { params: { id: throwaway.json().data.id } });
  });

  test('the buyer examples: sign in, profile, order, card payment, organizer refund, seats, membership', async () => {
    const remoteAddress = uniqueClientAddress();
    const requested = await send('organizer', 'POST', '/customer/auth/request', { headers: {}, remoteAddress });
    expect(requested.statusCode).toBe(202);
    const email = (exampleOf('organizer', 'POST', '/customer/auth/request') as { email: string }).email;
    const mail = await waitForMail(api.env.SANDBOX_URL, email, (message) => /sign-in code/i.test(message.subject));
    real.set(EXAMPLE_PLACEHOLDERS.signInCode, /(\d{6})/.exec(mail.subject)?.[1] ?? '');
    const verified = await succeeds('organizer', 'POST', '/customer/auth/verify', { headers: {}, remoteAddress });
    const buyer = session(verified.session_token as string);

    await succeeds('organizer', 'PATCH', '/customer/profile', { headers: buyer });
    const order = await succeeds('organizer', 'POST', '/customer/orders', { headers: buyer });
    const saleId = order.saleId as string;
    const opened = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${saleId}/payment`,
      headers: buyer,
    });
    expect(opened.statusCode).toBe(200);
    real.set(EXAMPLE_PLACEHOLDERS.cardToken, await cardToken(api, 'APRO'));
    const paid = await succeeds('organizer', 'POST', '/customer/orders/{id}/payment/card', {
      params: { id: saleId },
      headers: buyer,
    });
    expect(paid.saleStatus).toBe('CONFIRMED');
    await succeeds('organizer', 'POST', '/sales/{id}/refund', { params: { id: saleId } });

    await succeeds('organizer', 'POST', '/customer/purchase-sessions', { headers: buyer });
    await succeeds('organizer', 'POST', '/customer/subscriptions', { headers: buyer });
    await succeeds('organizer', 'POST', '/customer/subscriptions/cancel', { headers: buyer });

    // Member content: the examples register a video and a live the provider made for this workspace.
    real.set(EXAMPLE_PLACEHOLDERS.providerAssetId, await createAtProvider('assets'));
    real.set(EXAMPLE_PLACEHOLDERS.providerStreamId, await createAtProvider('live-streams'));
    const videoId = id(await succeeds('organizer', 'POST', '/content/videos'));
    real.set(EXAMPLE_PLACEHOLDERS.videoId, videoId);
    await succeeds('organizer', 'POST', '/content/playback-token', {
      headers: { ...bearer(organizer.key), ...buyer },
    });
    await succeeds('organizer', 'PATCH', '/content/videos/{id}', { params: { id: videoId } });
    await succeeds('organizer', 'POST', '/content/posts');
    const liveId = id(await succeeds('organizer', 'POST', '/content/lives'));
    await succeeds('organizer', 'PATCH', '/content/lives/{id}', { params: { id: liveId } });
  });

  test('the storefront order, sign-up, device login and enterprise exchange examples', async () => {
    const order = await succeeds('public', 'POST', '/orders', { headers: {}, remoteAddress: uniqueClientAddress() });
    expect(order.status).toBe('pending');

    await succeeds('organizer', 'POST', '/auth/signup', { headers: {}, remoteAddress: uniqueClientAddress() });
    const device = await api.request({
      method: 'POST',
      url: '/api/v1/auth/device/code',
      payload: exampleOf('organizer', 'POST', '/auth/device/code') as object,
    });
    sent.add('organizer POST /auth/device/code');
    expect(device.statusCode).toBe(200);
    real.set(EXAMPLE_PLACEHOLDERS.deviceCode, device.json().device_code);
    // Nobody approved the code yet: the grant's own answer to a poll that came too early.
    const poll = await send('organizer', 'POST', '/auth/device/token', { headers: {} });
    expect({ status: poll.statusCode, body: poll.json() }).toEqual({
      status: 400,
      body: expect.objectContaining({ error: 'authorization_pending' }),
    });

    const lines: string[] = [];
    const created = await runEnterpriseOperator(
      ['create', '--name', `Acme ${randomUUID().slice(0, 6)}`, '--workspaces', organizer.workspaceId],
      { orm: api.orm, env: api.env, print: (line) => lines.push(line) },
    );
    expect(created).toBe(0);
    const enterpriseId = /^([0-9a-f-]{36}) /m.exec(lines.join('\n'))?.[1];
    const secret = /(ent_sk_[A-Za-z0-9_-]+)/.exec(lines.join('\n'))?.[1];
    expect(enterpriseId && secret).toBeTruthy();
    const now = Math.floor(Date.now() / 1000);
    // Each token is accepted once: a fresh one for each of the exchange's two addresses.
    const oneTimeToken = () =>
      new SignJWT({ email: 'ana.gomez@example.com', name: 'Ana Gómez' })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(enterpriseId!)
        .setAudience(enterpriseTokenAudience(api.env.PUBLIC_ORIGIN))
        .setSubject('emp-1042')
        .setJti(randomUUID())
        .setIssuedAt(now)
        .setExpirationTime(now + 120)
        .sign(new TextEncoder().encode(secret!));
    real.set(EXAMPLE_PLACEHOLDERS.enterpriseToken, await oneTimeToken());
    await succeeds('organizer', 'POST', '/api/customer-auth/enterprise-exchange', { headers: {} });
    // Under {base_url} too (contract 4.0 read literally).
    real.set(EXAMPLE_PLACEHOLDERS.enterpriseToken, await oneTimeToken());
    await succeeds('organizer', 'POST', '/customer-auth/enterprise-exchange', { headers: {} });
  });

  test('every operation with a request body had its example sent above', () => {
    expect(operationsWithBodies().filter((operation) => !sent.has(operation))).toEqual([]);
  });
});
