import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  confirmAtBank,
  eventually,
  type PublishedEvent,
  publishEvent,
  session,
  signInBuyer,
  waitForMail,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  // The storefront's per-IP limit is exercised in its own test; here every request comes from one address.
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const order = (event: PublishedEvent, quantity = 1, extra: Record<string, unknown> = {}) => ({
  buyerEmail: `anon-${Math.random().toString(36).slice(2, 9)}@buyers.test`,
  buyerName: 'Anónimo Comprador',
  items: [{ ticketTypeId: event.ticketTypeId, quantity, ...extra }],
});
const available = async (event: PublishedEvent) =>
  (
    await api.request({
      method: 'GET',
      url: `/api/v1/ticket-types/${event.ticketTypeId}`,
      headers: bearer(organizer.key),
    })
  ).json().data.available;
const control = (path: string, body: unknown) =>
  fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('public storefront orders (contract 4.18)', () => {
  test('an anonymous general-admission order reserves stock and returns the payment link and exact expiresAt', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10, price: 40_000 });
    const created = await api.request({ method: 'POST', url: '/api/public/orders', payload: order(event, 2) });
    expect(created.statusCode).toBe(200);
    const data = created.json().data;
    expect(data).toMatchObject({ status: 'pending', currency: 'COP', total: 2 * (40_000 + 4_000 + 760) });
    expect(data.checkoutUrl).toMatch(new RegExp(`^${api.env.SANDBOX_URL}/gateway-a/pse/checkout/`));
    expect(await available(event)).toBe(8);

    const status = await api.request({ method: 'GET', url: `/api/public/orders/${data.orderId}` });
    expect(status.json().data).toMatchObject({ status: 'pending', expiresAt: data.expiresAt, tickets: [] });
    expect(status.headers['cache-control']).toBe('no-store');

    // The buyer pays at the bank; the order turns paid once the gateway's notification arrives.
    const submitted = await confirmAtBank(data.checkoutUrl, 'anon@buyers.test');
    expect(submitted.status).toBe(302);
    await control('/gateway-a/pse/settle', { reference: data.reference, outcome: 'approved' });
    const paid = await eventually(
      async () => (await api.request({ method: 'GET', url: `/api/public/orders/${data.orderId}` })).json().data,
      (o) => o.status === 'paid',
    );
    expect(paid.expiresAt).toBeNull();
    expect(paid.tickets).toHaveLength(2);
  });

  test('a price-0 order is paid at once: 200 status paid, tickets listed and emailed, no payment link', async () => {
    const event = await publishEvent(api, organizer, { capacity: 10, price: 0 });
    const body = order(event, 2);
    const created = await api.request({ method: 'POST', url: '/api/public/orders', payload: body });
    expect(created.statusCode).toBe(200);
    const data = created.json().data;
    expect(data).toMatchObject({ status: 'paid', total: 0, currency: 'COP' });
    expect(data.checkoutUrl).toBe(`${api.env.PUBLIC_ORIGIN}/api/public/orders/${data.orderId}`);
    expect(Number.isNaN(Date.parse(data.expiresAt))).toBe(false);
    expect(await available(event)).toBe(8);
    const status = (await api.request({ method: 'GET', url: `/api/public/orders/${data.orderId}` })).json().data;
    expect(status).toMatchObject({ status: 'paid', expiresAt: null });
    expect(status.tickets).toHaveLength(2);
    await waitForMail(api.env.SANDBOX_URL, body.buyerEmail, (mail) => mail.subject.includes(data.reference));
  });

  test('orders with seats need a buyer session: 401 CUSTOMER_SESSION_REQUIRED', async () => {
    const event = await publishEvent(api, organizer);
    const response = await api.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: order(event, 1, { seats: ['A-1'] }),
    });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe('CUSTOMER_SESSION_REQUIRED');
    const token = await signInBuyer(api, `seated-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
    const withSession = await api.request({
      method: 'POST',
      url: '/api/public/orders',
      headers: session(token),
      payload: order(event, 1, { seats: ['A-1'] }),
    });
    expect(withSession.statusCode).not.toBe(401);
  });

  test('a date with a virtual queue answers QUEUE_REQUIRED with an absolute waiting-room URL before any hold', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5, date: { virtualQueue: true } });
    const response = await api.request({ method: 'POST', url: '/api/public/orders', payload: order(event) });
    expect(response.statusCode).toBe(409);
    expect(response.json().error.code).toBe('QUEUE_REQUIRED');
    expect(response.json().error.details.waitingRoomUrl).toMatch(/^https?:\/\/[^/]+\/api\/public\/queue\//);
    expect(await available(event)).toBe(5);
  });

  test('members-only tickets, unpublished events, sold-out types and unknown ids get the contract errors', async () => {
    const members = await publishEvent(api, organizer, { ticketType: { membersOnly: true } });
    const membersOnly = await api.request({ method: 'POST', url: '/api/public/orders', payload: order(members) });
    expect(membersOnly.json().error.code).toBe('MEMBERS_ONLY');

    const draft = await publishEvent(api, organizer);
    await api.request({
      method: 'POST',
      url: `/api/v1/events/${draft.eventId}/cancel`,
      headers: bearer(organizer.key),
      payload: {},
    });
    const cancelled = await api.request({ method: 'POST', url: '/api/public/orders', payload: order(draft) });
    expect(cancelled.statusCode).toBe(409);
    expect(cancelled.json().error.code).toBe('NOT_AVAILABLE');

    const small = await publishEvent(api, organizer, { capacity: 1 });
    expect((await api.request({ method: 'POST', url: '/api/public/orders', payload: order(small) })).statusCode).toBe(
      200,
    );
    const soldOut = await api.request({ method: 'POST', url: '/api/public/orders', payload: order(small) });
    expect(soldOut.statusCode).toBe(409);
    expect(soldOut.json().error.details.reason).toBe('sold_out');

    const unknown = await api.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: order({ ...small, ticketTypeId: '01900000-0000-7000-8000-000000000000' }),
    });
    expect(unknown.statusCode).toBe(404);
    const twoTypes = await api.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: { ...order(small), items: [order(small).items[0], order(members).items[0]] },
    });
    expect(twoTypes.statusCode).toBe(422);
    expect((await api.request({ method: 'GET', url: '/api/public/orders/not-an-id' })).statusCode).toBe(404);
  });

  test('an order left unpaid shows as expired and the stock returns', async () => {
    const shortApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '2500', PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
    try {
      const event = await publishEvent(shortApi, organizer, { capacity: 3 });
      const created = (
        await shortApi.request({ method: 'POST', url: '/api/public/orders', payload: order(event, 3) })
      ).json().data;
      const expired = await eventually(
        async () =>
          (await shortApi.request({ method: 'GET', url: `/api/public/orders/${created.orderId}` })).json().data,
        (o) => o.status === 'expired',
      );
      expect(expired.expiresAt).toBeNull();
      await eventually(
        () => available(event),
        (units) => units === 3,
      );
    } finally {
      await shortApi.close();
    }
  });
});
