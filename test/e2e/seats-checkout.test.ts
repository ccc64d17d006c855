/**
 * Numbered seats through the real stack: purchase sessions (a workflow owning the hold token), seats validated at
 * the sandbox seat-map provider, held for the order's window, booked on payment and released when the sale ends.
 */
import { providerUrls } from '../../config/env.js';
import { SeatMapClient } from '../../integrations/seatmap/client.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  cardToken,
  customerOrder,
  eventually,
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let shortApi: TestApi;
let organizer: Organizer;
let seatMap: SeatMapClient;
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  // Same stack, a 4-second payment window: expiry paths in seconds.
  shortApi = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000', PAYMENT_WINDOW_OVERRIDE_MS: '4000' });
  organizer = await createOrganizer(api.orm.em.fork());
  seatMap = new SeatMapClient({ baseUrl: providerUrls(api.env).seatMap, secretKey: api.env.SEATMAP_SECRET_KEY });
});
afterAll(async () => {
  await shortApi.close();
  await api.close();
});

const control = async (path: string, body: unknown) => {
  const response = await fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status >= 300) throw new Error(`control ${path} → ${response.status} ${await response.text()}`);
};

const LABELS = ['A-1', 'A-2', 'A-3', 'A-4'];

/** A published event whose date carries a fresh chart; its only ticket type is numbered (category PLATEA). */
async function seatedEvent(): Promise<PublishedEvent> {
  const chartKey = `chart-${Math.random().toString(36).slice(2, 10)}`;
  await control('/seatmap/charts', {
    chartKey,
    objects: [
      ...LABELS.map((label) => ({ label, categoryKey: 'PLATEA', categoryLabel: 'Platea' })),
      { label: 'P-1', categoryKey: 'PALCO', categoryLabel: 'Palco' },
    ],
  });
  return publishEvent(api, organizer, {
    price: 50_000,
    capacity: 4,
    date: { seatMapChartKey: chartKey },
    ticketType: { name: 'Platea', seatMapCategoryKey: 'PLATEA', seatingSurcharge: 2_000 },
  });
}

const email = () => `seats-${Math.random().toString(36).slice(2, 9)}@buyers.test`;

async function openSession(token: string, event: PublishedEvent, target: TestApi = api) {
  const response = await target.request({
    method: 'POST',
    url: '/api/v1/customer/purchase-sessions',
    headers: session(token),
    payload: { eventDateId: event.eventDateId },
  });
  expect(response.statusCode).toBe(201);
  return response.json().data as { id: string; holdToken: string; expiresAt: string; state: string };
}

const seatOrder = (event: PublishedEvent, seats: string[], holdToken: string) =>
  orderBody(event, seats.length, {
    items: [{ ticketTypeId: event.ticketTypeId, quantity: seats.length, seats }],
    holdToken,
  });

const statusOf = async (event: PublishedEvent, label: string) =>
  (await seatMap.objectStatuses(event.eventDateId, [label]))[0]!;

const errorOf = (response: { json(): { error: { code: string; details?: Record<string, unknown> } } }) =>
  response.json().error;

async function availableSeats(event: PublishedEvent) {
  const response = await api.request({ method: 'GET', url: `/api/public/events/${event.slug}/availability` });
  expect(response.statusCode).toBe(200);
  return response.json().data.dates[0].ticketTypes[0].availableSeats as Array<{
    label: string;
    categoryKey: string;
    categoryLabel: string;
    status: string;
  }>;
}

describe('numbered seats and purchase sessions', () => {
  test("availability lists only the type's seats that can be ordered now (contract 2, availableSeats)", async () => {
    const event = await seatedEvent();
    expect(await availableSeats(event)).toEqual(
      LABELS.map((label) => ({ label, categoryKey: 'PLATEA', categoryLabel: 'Platea', status: 'free' })),
    );
    const token = await signInBuyer(api, email());
    const opened = await openSession(token, event);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-2'], holdToken: opened.holdToken });
    const seats = await availableSeats(event);
    expect(seats.map((seat) => seat.label)).toEqual(LABELS.filter((label) => label !== 'A-2'));
    expect(seats.every((seat) => seat.status === 'free')).toBe(true);
  });

  test('a held seat is ordered with its session, charged the surcharge, kept held for the window and booked on payment', async () => {
    const event = await seatedEvent();
    const token = await signInBuyer(api, email());
    const opened = await openSession(token, event);
    const read = await api.request({
      method: 'GET',
      url: `/api/v1/customer/purchase-sessions/${opened.id}`,
      headers: session(token),
    });
    expect(read.json().data).toMatchObject({ id: opened.id, state: 'ACTIVE', holdToken: opened.holdToken });
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-1', 'A-2'], holdToken: opened.holdToken });

    const created = await reserveOrder(api, token, seatOrder(event, ['A-1', 'A-2'], opened.holdToken));
    expect(created.statusCode).toBe(201);
    const order = created.json().data;
    // 50 000 + 10 % fee 5 000 + 2 000 surcharge = 7 000 fee, 19 % IVA on it = 1 330.
    expect(order.total).toBe(2 * (50_000 + 7_000 + 1_330));
    // The hold now lasts as long as the reservation.
    const hold = await seatMap.getHoldToken(opened.holdToken);
    expect(Date.parse(hold!.expiresAt)).toBeGreaterThanOrEqual(Date.parse(order.expiresAt));

    const paid = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(paid.json().data.saleStatus).toBe('CONFIRMED');
    expect(await statusOf(event, 'A-1')).toMatchObject({ status: 'booked', orderId: order.saleId });
    expect(await statusOf(event, 'A-2')).toMatchObject({ status: 'booked' });
    // Sold seats leave the storefront's list.
    expect((await availableSeats(event)).map((seat) => seat.label)).toEqual(['A-3', 'A-4']);
    expect((await customerOrder(api, token, order.saleId)).status).toBe('CONFIRMED');
  });

  test('a paid seated sale refunded by the organizer puts its seats back on sale', async () => {
    const event = await seatedEvent();
    const token = await signInBuyer(api, email());
    const opened = await openSession(token, event);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-3'], holdToken: opened.holdToken });
    const order = (await reserveOrder(api, token, seatOrder(event, ['A-3'], opened.holdToken))).json().data;
    const paid = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(paid.json().data.saleStatus).toBe('CONFIRMED');
    expect(await statusOf(event, 'A-3')).toMatchObject({ status: 'booked', orderId: order.saleId });

    const refunded = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${order.saleId}/refund`,
      headers: bearer(organizer.key),
      payload: { reason: 'the buyer cannot attend' },
    });
    expect([200, 202]).toContain(refunded.statusCode);
    await eventually(
      async () => (await customerOrder(api, token, order.saleId)).status,
      (status) => status === 'REFUNDED',
    );
    expect(await statusOf(event, 'A-3')).toMatchObject({ status: 'free', orderId: null });
    expect((await availableSeats(event)).find((seat) => seat.label === 'A-3')?.status).toBe('free');
  });

  test('HOLD_TOKEN_MISMATCH, seats_not_held and SEAT_NOT_AVAILABLE through HTTP', async () => {
    const event = await seatedEvent();
    const ana = await signInBuyer(api, email());
    const bea = await signInBuyer(api, email());
    const anaSession = await openSession(ana, event);
    const beaSession = await openSession(bea, event);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-1'], holdToken: anaSession.holdToken });
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-3'], holdToken: beaSession.holdToken });

    const foreign = await reserveOrder(api, ana, seatOrder(event, ['A-1'], beaSession.holdToken));
    expect(foreign.statusCode).toBe(409);
    expect(errorOf(foreign).code).toBe('HOLD_TOKEN_MISMATCH');

    const notHeld = await reserveOrder(api, ana, seatOrder(event, ['A-2'], anaSession.holdToken));
    expect(notHeld.statusCode).toBe(409);
    expect(errorOf(notHeld)).toMatchObject({ code: 'ORDER_REJECTED', details: { reason: 'seats_not_held' } });

    const taken = await reserveOrder(api, ana, seatOrder(event, ['A-3'], anaSession.holdToken));
    expect(taken.statusCode).toBe(409);
    expect(errorOf(taken).code).toBe('SEAT_NOT_AVAILABLE');

    // Without any purchase session the token cannot be the buyer's.
    const nobody = await signInBuyer(api, email());
    const none = await reserveOrder(api, nobody, seatOrder(event, ['A-1'], anaSession.holdToken));
    expect(errorOf(none).code).toBe('HOLD_TOKEN_MISMATCH');
  });

  test('two buyers racing for one seat: exactly one wins', async () => {
    const event = await seatedEvent();
    const tokens = await Promise.all([signInBuyer(api, email()), signInBuyer(api, email())]);
    const attempts = await Promise.all(
      tokens.map((token) =>
        api.request({
          method: 'POST',
          url: '/api/public/orders',
          headers: session(token),
          payload: {
            buyerEmail: email(),
            buyerName: 'Racing Buyer',
            items: [{ ticketTypeId: event.ticketTypeId, quantity: 1, seats: ['A-4'] }],
          },
        }),
      ),
    );
    const codes = attempts.map((response) => response.statusCode).sort();
    expect(codes).toEqual([200, 409]);
    const loser = attempts.find((response) => response.statusCode === 409)!;
    expect(errorOf(loser).code).toBe('SEAT_NOT_AVAILABLE');
    expect((await statusOf(event, 'A-4')).status).toBe('reservedByToken');
  });

  test('a second session supersedes the first; release and an expired map clock are reported', async () => {
    const event = await seatedEvent();
    const token = await signInBuyer(api, email());
    const first = await openSession(token, event);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-1'], holdToken: first.holdToken });
    const second = await openSession(token, event);
    expect(second.id).not.toBe(first.id);
    // The superseded session's seats are free again.
    expect((await statusOf(event, 'A-1')).status).toBe('free');
    const noSeats = await reserveOrder(api, token, orderBody(event, 1, {}));
    expect(errorOf(noSeats).code).toBe('VALIDATION_FAILED');
    const stale = await api.request({
      method: 'POST',
      url: '/api/v1/customer/orders',
      headers: { ...session(token), 'x-purchase-session': first.id },
      payload: seatOrder(event, ['A-1'], first.holdToken),
    });
    expect(stale.statusCode).toBe(409);
    expect(errorOf(stale).code).toBe('PURCHASE_SESSION_SUPERSEDED');

    // The map clock ran out at the provider: the order is refused as expired.
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-2'], holdToken: second.holdToken });
    await control('/seatmap/expire-hold', { holdToken: second.holdToken });
    const expired = await reserveOrder(api, token, seatOrder(event, ['A-2'], second.holdToken));
    expect(errorOf(expired).code).toBe('PURCHASE_SESSION_EXPIRED');

    const third = await openSession(token, event);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-3'], holdToken: third.holdToken });
    const released = await api.request({
      method: 'POST',
      url: `/api/v1/customer/purchase-sessions/${third.id}/release`,
      headers: session(token),
    });
    expect(released.statusCode).toBe(200);
    expect(released.json().data.state).toBe('RELEASED');
    expect((await statusOf(event, 'A-3')).status).toBe('free');
    const after = await api.request({
      method: 'POST',
      url: '/api/v1/customer/orders',
      headers: { ...session(token), 'x-purchase-session': third.id },
      payload: seatOrder(event, ['A-3'], third.holdToken),
    });
    expect(errorOf(after).code).toBe('PURCHASE_SESSION_EXPIRED');
  });

  test("two concurrent orders on one session: PURCHASE_SESSION_BUSY; superseding it mid-order keeps the order's seats", async () => {
    const event = await seatedEvent();
    const token = await signInBuyer(api, email());
    const opened = await openSession(token, event);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-1', 'A-2'], holdToken: opened.holdToken });
    const headers = { ...session(token), 'x-purchase-session': opened.id };
    // A slow provider keeps the first order in flight for seconds.
    await control('/faults', { target: 'seatmap', mode: 'slow', delayMs: 800 });
    try {
      const first = api.request({
        method: 'POST',
        url: '/api/v1/customer/orders',
        headers,
        payload: seatOrder(event, ['A-1'], opened.holdToken),
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const second = await api.request({
        method: 'POST',
        url: '/api/v1/customer/orders',
        headers,
        payload: seatOrder(event, ['A-2'], opened.holdToken),
      });
      expect(second.statusCode).toBe(409);
      expect(errorOf(second).code).toBe('PURCHASE_SESSION_BUSY');
      // Another tab opens a session while the first order is still in flight.
      const replacement = await openSession(token, event);
      expect(replacement.state).toBe('ACTIVE');
      const placed = await first;
      expect(placed.statusCode).toBe(201);
      // The order placed in flight keeps its seat held although its session was superseded meanwhile.
      expect((await statusOf(event, 'A-1')).status).toBe('reservedByToken');
    } finally {
      await control('/faults', { target: 'seatmap', mode: 'ok' });
    }
    const next = await api.request({
      method: 'POST',
      url: '/api/v1/customer/orders',
      headers,
      payload: seatOrder(event, ['A-2'], opened.holdToken),
    });
    expect(errorOf(next).code).toBe('PURCHASE_SESSION_SUPERSEDED');
  });

  test('expiry releases the seats in the provider, and a seat lost at the provider is never sold twice', async () => {
    const event = await seatedEvent();
    const token = await signInBuyer(shortApi, email());
    const opened = await openSession(token, event, shortApi);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-1'], holdToken: opened.holdToken });
    const created = await reserveOrder(shortApi, token, seatOrder(event, ['A-1'], opened.holdToken));
    expect(created.statusCode).toBe(201);
    const saleId = created.json().data.saleId;
    await eventually(
      async () => (await customerOrder(shortApi, token, saleId)).status,
      (status) => status === 'ABANDONED',
    );
    // The compensation frees the seat at the provider right after the sale closes.
    await eventually(
      async () => (await statusOf(event, 'A-1')).status,
      (status) => status === 'free',
      10_000,
    );

    // The provider drops a live order's hold before the order expires; another buyer takes the seat; the first
    // buyer's payment then cannot book it, so the sale closes and the money goes back.
    const ana = await signInBuyer(api, email());
    const anaSession = await openSession(ana, event);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-2'], holdToken: anaSession.holdToken });
    const anaOrder = (await reserveOrder(api, ana, seatOrder(event, ['A-2'], anaSession.holdToken))).json().data;
    await control('/seatmap/expire-hold', { holdToken: anaSession.holdToken });
    expect((await statusOf(event, 'A-2')).status).toBe('free');
    const bea = await signInBuyer(api, email());
    const beaSession = await openSession(bea, event);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-2'], holdToken: beaSession.holdToken });
    // The seat is still Ana's in our records while her sale is pending: nobody else can order it.
    const clash = await reserveOrder(api, bea, seatOrder(event, ['A-2'], beaSession.holdToken));
    expect(errorOf(clash).code).toBe('SEAT_NOT_AVAILABLE');
    const paid = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${anaOrder.saleId}/payment/card`,
      headers: session(ana),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(paid.json().data.saleStatus).toBe('ABANDONED');
    const closed = await customerOrder(api, ana, anaOrder.saleId);
    expect(closed.status).toBe('ABANDONED');
    expect((await statusOf(event, 'A-2')).status).toBe('reservedByToken');
    expect((await statusOf(event, 'A-2')).holdToken).toBe(beaSession.holdToken);
  });

  test('a workspace that enforces purchase sessions requires X-Purchase-Session on orders and payments', async () => {
    const strict = await createOrganizer(api.orm.em.fork());
    await api.orm.em
      .fork()
      .execute('update workspaces set requires_purchase_session = true where id = ?', [strict.workspaceId]);
    const event = await publishEvent(api, strict, { capacity: 10 });
    const token = await signInBuyer(api, email());
    const missing = await reserveOrder(api, token, orderBody(event));
    expect(missing.statusCode).toBe(409);
    expect(errorOf(missing).code).toBe('PURCHASE_SESSION_REQUIRED');
    const opened = await openSession(token, event);
    const headers = { ...session(token), 'x-purchase-session': opened.id };
    const created = await api.request({
      method: 'POST',
      url: '/api/v1/customer/orders',
      headers,
      payload: orderBody(event),
    });
    expect(created.statusCode).toBe(201);
    const saleId = created.json().data.saleId;
    const noHeader = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${saleId}/payment`,
      headers: session(token),
    });
    expect(errorOf(noHeader).code).toBe('PURCHASE_SESSION_REQUIRED');
    const withHeader = await api.request({ method: 'POST', url: `/api/v1/customer/orders/${saleId}/payment`, headers });
    expect(withHeader.statusCode).toBe(200);
  });
});
