/**
 * Path 12 of "Money is never stranded": a checkout has a business key. An Idempotency-Key on POST /customer/orders
 * or POST /api/public/orders names one sale of one principal, whether the retry finds the stored response, runs
 * alongside the first request, or comes after the stored response was lost.
 */
import { reserveThroughCheckout } from '../../api/http/checkout.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
  storefrontReserveRequest,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  // Anonymous orders here all come from one address; the storefront's per-IP limit has its own test.
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const unique = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}`;
const email = (label: string) => `${unique(label)}@buyers.test`;

const available = async (event: PublishedEvent): Promise<number> =>
  (
    await api.request({
      method: 'GET',
      url: `/api/v1/ticket-types/${event.ticketTypeId}`,
      headers: bearer(organizer.key),
    })
  ).json().data.available;

const salesOf = (event: PublishedEvent) =>
  api.orm.em
    .fork()
    .execute<{ id: string; status: string }[]>('select id, status from sales where event_date_id = ?', [
      event.eventDateId,
    ]);

/** What a lost response leaves behind: no stored answer for the key, as after a crash or a 5xx. */
const forgetStoredResponse = (key: string) =>
  api.orm.em.fork().execute('delete from idempotency_records where key = ?', [key]);

const reserveWithKey = (token: string, key: string, body: unknown) =>
  api.request({
    method: 'POST',
    url: '/api/v1/customer/orders',
    headers: { ...session(token), 'idempotency-key': key },
    payload: body as object,
  });

const publicOrder = (event: PublishedEvent, buyerEmail: string, quantity = 1) => ({
  buyerEmail,
  buyerName: 'Anónimo Comprador',
  items: [{ ticketTypeId: event.ticketTypeId, quantity }],
});

const orderPublicly = (key: string, body: unknown, remoteAddress = '198.51.100.7') =>
  api.request({
    method: 'POST',
    url: '/api/public/orders',
    headers: { 'idempotency-key': key },
    payload: body as object,
    remoteAddress,
  });

describe('POST /customer/orders with an Idempotency-Key (path 12)', () => {
  test('the same key twice makes one sale: same saleId and reference, one PENDING row, stock taken once', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const token = await signInBuyer(api, email('twice'));
    const key = unique('order');
    const first = await reserveWithKey(token, key, orderBody(event, 2));
    const retry = await reserveWithKey(token, key, orderBody(event, 2));
    expect(first.statusCode).toBe(201);
    expect(retry.statusCode).toBe(201);
    expect(retry.json().data).toEqual(first.json().data);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(await salesOf(event)).toEqual([{ id: first.json().data.saleId, status: 'PENDING' }]);
    expect(await available(event)).toBe(8);
  });

  test('the same key with a different body is refused with 422 IDEMPOTENCY_KEY_REUSED and makes nothing', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const token = await signInBuyer(api, email('reused'));
    const key = unique('order');
    expect((await reserveWithKey(token, key, orderBody(event, 1))).statusCode).toBe(201);
    const reused = await reserveWithKey(token, key, orderBody(event, 3));
    expect(reused.statusCode).toBe(422);
    expect(reused.json().error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', retryable: false });
    expect(await salesOf(event)).toHaveLength(1);
    expect(await available(event)).toBe(9);
  });

  test('requests with one key sent concurrently make one sale', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const token = await signInBuyer(api, email('concurrent'));
    const key = unique('order');
    const responses = await Promise.all([1, 2, 3].map(() => reserveWithKey(token, key, orderBody(event, 1))));
    expect(responses.map((response) => response.statusCode)).toEqual([201, 201, 201]);
    expect(new Set(responses.map((response) => response.json().data.saleId)).size).toBe(1);
    expect(new Set(responses.map((response) => response.json().data.reference)).size).toBe(1);
    expect(await salesOf(event)).toHaveLength(1);
    expect(await available(event)).toBe(9);
  });

  test('a retry after the stored response was lost reaches the same sale instead of making a second one', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const token = await signInBuyer(api, email('lost'));
    const key = unique('order');
    const first = await reserveWithKey(token, key, orderBody(event, 2));
    expect(first.statusCode).toBe(201);
    await forgetStoredResponse(key);
    const retry = await reserveWithKey(token, key, orderBody(event, 2));
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(retry.json().data).toMatchObject({
      saleId: first.json().data.saleId,
      reference: first.json().data.reference,
      total: first.json().data.total,
    });
    expect(await salesOf(event)).toEqual([{ id: first.json().data.saleId, status: 'PENDING' }]);
    expect(await available(event)).toBe(8);
  });

  test('without a key every request is a sale of its own, as before', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const first = await reserveOrder(api, await signInBuyer(api, email('nokey-a')), orderBody(event, 1));
    const second = await reserveOrder(api, await signInBuyer(api, email('nokey-b')), orderBody(event, 1));
    expect(first.statusCode).toBe(201);
    expect(second.statusCode).toBe(201);
    expect(second.json().data.saleId).not.toBe(first.json().data.saleId);
    expect(await salesOf(event)).toHaveLength(2);
  });
});

describe('keys belong to one principal (path 12)', () => {
  test("buyer B sending buyer A's key gets a result of its own, never A's", async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const tokenA = await signInBuyer(api, email('buyer-a'));
    const tokenB = await signInBuyer(api, email('buyer-b'));
    const key = unique('shared');
    const saleA = await reserveWithKey(tokenA, key, orderBody(event, 1));
    const saleB = await reserveWithKey(tokenB, key, orderBody(event, 1));
    expect(saleA.statusCode).toBe(201);
    expect(saleB.statusCode).toBe(201);
    expect(saleB.headers['idempotent-replayed']).toBeUndefined();
    expect(saleB.json().data.saleId).not.toBe(saleA.json().data.saleId);
    expect(saleB.json().data.reference).not.toBe(saleA.json().data.reference);
    expect(await salesOf(event)).toHaveLength(2);
  });

  test("buyer B replaying A's key on A's POST /customer/orders/{id}/payment gets 404, not A's payment configuration", async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const tokenA = await signInBuyer(api, email('payer-a'));
    const tokenB = await signInBuyer(api, email('payer-b'));
    const saleId = (await reserveOrder(api, tokenA, orderBody(event, 1))).json().data.saleId as string;
    const key = unique('payment');
    const open = (token: string) =>
      api.request({
        method: 'POST',
        url: `/api/v1/customer/orders/${saleId}/payment`,
        headers: { ...session(token), 'idempotency-key': key },
      });
    const mine = await open(tokenA);
    expect(mine.statusCode).toBe(200);
    const theirs = await open(tokenB);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.json().error.code).toBe('NOT_FOUND');
  });

  test('the buyer-session cookie is scoped to the buyer too, not to the client address', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const tokenA = await signInBuyer(api, email('cookie-a'));
    const tokenB = await signInBuyer(api, email('cookie-b'));
    const key = unique('cookie');
    const send = (token: string) =>
      api.request({
        method: 'POST',
        url: '/api/v1/customer/orders',
        headers: { 'idempotency-key': key },
        cookies: { buyer_session: token },
        payload: orderBody(event, 1),
        remoteAddress: '203.0.113.50',
      });
    const a = await send(tokenA);
    const b = await send(tokenB);
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(201);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(b.json().data.saleId).not.toBe(a.json().data.saleId);
  });
});

describe('POST /api/public/orders with an Idempotency-Key (path 12)', () => {
  test('an anonymous order sent twice, concurrently, and again after its stored response was lost is one order', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const key = unique('public');
    const body = publicOrder(event, email('anon'), 2);
    const [first, concurrent] = await Promise.all([orderPublicly(key, body), orderPublicly(key, body)]);
    expect(first.statusCode).toBe(200);
    expect(concurrent.statusCode).toBe(200);
    expect(concurrent.json().data).toEqual(first.json().data);

    await forgetStoredResponse(key);
    const afterLoss = await orderPublicly(key, body);
    expect(afterLoss.statusCode).toBe(200);
    expect(afterLoss.headers['idempotent-replayed']).toBeUndefined();
    expect(afterLoss.json().data).toMatchObject({
      orderId: first.json().data.orderId,
      reference: first.json().data.reference,
      checkoutUrl: first.json().data.checkoutUrl,
    });
    expect(await salesOf(event)).toEqual([{ id: first.json().data.orderId, status: 'PENDING' }]);
    expect(await available(event)).toBe(8);
  });

  test('the same key from two client addresses is two anonymous principals and two orders', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const key = unique('public');
    const here = await orderPublicly(key, publicOrder(event, email('here')), '198.51.100.21');
    const there = await orderPublicly(key, publicOrder(event, email('there')), '198.51.100.22');
    expect(here.statusCode).toBe(200);
    expect(there.statusCode).toBe(200);
    expect(there.json().data.orderId).not.toBe(here.json().data.orderId);
    expect(await salesOf(event)).toHaveLength(2);
  });

  test('after a lost response, the same key with another buyer is refused instead of answering with the first order', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const key = unique('public');
    expect((await orderPublicly(key, publicOrder(event, email('first')))).statusCode).toBe(200);
    await forgetStoredResponse(key);
    const other = await orderPublicly(key, publicOrder(event, email('second')));
    expect(other.statusCode).toBe(422);
    expect(other.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await salesOf(event)).toHaveLength(1);
  });
});

describe('the checkout execution is the business key (path 12)', () => {
  test('two reservations for one key with no stored response to replay join one execution and make one sale', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const key = { origin: 'public-order' as const, idempotencyKey: { scope: `ip:${unique('race')}`, key: 'k' } };
    const request = storefrontReserveRequest(event, email('race'), 'Race Buyer');
    const [a, b, c] = await Promise.all([
      reserveThroughCheckout(api.services, request, key),
      reserveThroughCheckout(api.services, request, key),
      reserveThroughCheckout(api.services, request, key),
    ]);
    expect(b.saleId).toBe(a.saleId);
    expect(c.saleId).toBe(a.saleId);
    expect(b.reference).toBe(a.reference);
    expect(await salesOf(event)).toEqual([{ id: a.saleId, status: 'PENDING' }]);
    expect(await available(event)).toBe(9);
    const description = await api.services.temporal.workflow.getHandle(`checkout/${a.saleId}`).describe();
    expect(description.status.name).toBe('RUNNING');
  });
});
