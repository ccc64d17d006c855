/**
 * Redis down (issue 15): the app is built as in production but its Redis client points at a local port nothing
 * listens on, and fails fast. Every limit keeps holding in the process's memory (rate-limiter-flexible's insurance
 * limiter), so the storefront and organizer keys are still limited, and buyer sign-in, payment opens and ticket
 * resends keep answering; work that truly needs Redis answers 503 SERVICE_UNAVAILABLE. Nothing answers 500.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { Redis } from 'ioredis';
import { buildApp } from '../../api/app.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

/**
 * A different documentation-range address per call, so no count is shared with another test. Counted, not drawn at
 * random: two random draws can meet (1 in 254), and a test then starts on another test's spent budget. With Redis
 * down the counts are this app's alone, so other files and runs cannot share them either.
 */
let addressesHandedOut = randomBytes(1)[0]!;
const ip = () => `203.0.113.${1 + (addressesHandedOut++ % 254)}`;

let api: TestApi;
let down: Redis;
let app: FastifyInstance;
let organizer: Organizer;
let event: PublishedEvent;

const send = (options: InjectOptions) => app.inject(options);

beforeAll(async () => {
  api = await startTestApi();
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  down = new Redis({
    host: '127.0.0.1',
    port,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    retryStrategy: () => 1000,
  });
  down.on('error', () => undefined);
  app = await buildApp(
    { ...api.services, redis: down },
    {
      logger: false,
      rateLimits: {
        publicApi: { points: 3 },
        organizerApiKey: { points: 3 },
        signInRequestPerEmailAndClient: { points: 2 },
        paymentOpen: { points: 2 },
        ticketResendPerClient: { points: 2 },
      },
    },
  );
  await app.ready();
  organizer = await createOrganizer(api.orm.em.fork());
  // Through the API with a working Redis: the fixtures are not what is under test.
  event = await publishEvent(api, organizer);
});
afterAll(async () => {
  await app?.close();
  down?.disconnect();
  await api?.close();
});

const expectRateLimited = (response: Awaited<ReturnType<typeof send>>, limit: number) => {
  expect(response.statusCode).toBe(429);
  expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(response.json()).toEqual({
    error: {
      code: 'RATE_LIMITED',
      message: expect.any(String),
      retryable: true,
      details: { limit, windowSeconds: expect.any(Number), retryAfterSeconds: expect.any(Number) },
    },
  });
};

describe('with Redis down, every limit still holds in the process', () => {
  test('the storefront still limits per IP: 429 after N requests from one IP, another IP unaffected', async () => {
    const client = ip();
    for (let i = 0; i < 3; i++) {
      const response = await send({ method: 'GET', url: '/api/public/events?limit=1', remoteAddress: client });
      expect(response.statusCode).toBe(200);
      expect(response.headers['ratelimit-remaining']).toBe(String(2 - i));
    }
    expectRateLimited(await send({ method: 'GET', url: '/api/public/events?limit=1', remoteAddress: client }), 3);
    expect((await send({ method: 'GET', url: '/api/public/events?limit=1', remoteAddress: ip() })).statusCode).toBe(
      200,
    );
  });

  test('organizer routes limit per key: 429 after N requests with one key, another key unaffected', async () => {
    const other = await createOrganizer(api.orm.em.fork());
    for (let i = 0; i < 3; i++) {
      expect((await send({ method: 'GET', url: '/api/v1/me', headers: bearer(organizer.key) })).statusCode).toBe(200);
    }
    expectRateLimited(await send({ method: 'GET', url: '/api/v1/me', headers: bearer(organizer.key) }), 3);
    expect((await send({ method: 'GET', url: '/api/v1/me', headers: bearer(other.key) })).statusCode).toBe(200);
  });
});

describe('with Redis down, buyer sign-in, payment opens and resends answer (never 500)', () => {
  test('POST /customer/auth/request sends codes and limits per email and client locally; verify answers', async () => {
    const email = `down-${randomUUID().slice(0, 8)}@x.test`;
    const client = ip();
    const request = () =>
      send({ method: 'POST', url: '/api/v1/customer/auth/request', payload: { email }, remoteAddress: client });
    expect((await request()).statusCode).toBe(202);
    expect((await request()).statusCode).toBe(202);
    expectRateLimited(await request(), 2);
    const verify = await send({
      method: 'POST',
      url: '/api/v1/customer/auth/verify',
      payload: { email, code: '000000' },
      remoteAddress: client,
    });
    expect(verify.statusCode).toBe(401);
  });

  test('POST /customer/orders/{id}/payment opens the payment, and the per-buyer limit holds locally', async () => {
    const token = await signInBuyer(api, `down-pay-${randomUUID().slice(0, 8)}@x.test`);
    const order = (await reserveOrder(api, token, orderBody(event))).json().data;
    const open = () =>
      send({ method: 'POST', url: `/api/v1/customer/orders/${order.saleId}/payment`, headers: session(token) });
    expect((await open()).statusCode).toBe(200);
    expect((await open()).statusCode).toBe(200);
    expectRateLimited(await open(), 2);
  });

  test('POST /api/public/tickets/{code}/resend answers 202, and its per-client limit holds locally', async () => {
    const client = ip();
    const resend = () =>
      send({ method: 'POST', url: '/api/public/tickets/AAAAAAAAAAAAAAAAAAAAAAAA/resend', remoteAddress: client });
    expect((await resend()).statusCode).toBe(202);
    expect((await resend()).statusCode).toBe(202);
    // The third is within the storefront's 3 but over the resend limit's 2.
    expectRateLimited(await resend(), 2);
  });
});

describe('with Redis down, what truly needs Redis answers 503 SERVICE_UNAVAILABLE (retryable), never 500', () => {
  test('a purchase session the buyer execution does not know is 404 without Redis (no older sessions are indexed there since the launch baseline)', async () => {
    const token = await signInBuyer(api, `down-session-${randomUUID().slice(0, 8)}@x.test`);
    const response = await send({
      method: 'GET',
      url: `/api/v1/customer/purchase-sessions/${randomUUID()}`,
      headers: session(token),
    });
    expect(response.statusCode).toBe(404);
    expect(response.json().error).toMatchObject({ code: 'NOT_FOUND' });
  });

  test('joining and reading the waiting room of a queued date', async () => {
    const queued = await publishEvent(api, organizer, { date: { virtualQueue: true, queueAdmissionsPerMinute: 30 } });
    const client = ip();
    for (const response of [
      await send({ method: 'POST', url: `/api/public/queue/${queued.eventDateId}`, remoteAddress: client }),
      await send({
        method: 'GET',
        url: `/api/public/queue/${queued.eventDateId}?token=${randomUUID()}`,
        remoteAddress: client,
      }),
    ]) {
      expect(response.statusCode).toBe(503);
      expect(response.json().error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
    }
  });
});
