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
  waitForMail,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const uniqueEmail = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;

async function availabilityOf(event: PublishedEvent): Promise<number> {
  const response = await api.request({
    method: 'GET',
    url: `/api/v1/ticket-types/${event.ticketTypeId}`,
    headers: bearer(organizer.key),
  });
  return response.json().data.available;
}

describe('headless checkout with a gateway A card (contract 4.2–4.6)', () => {
  test('reserve → open payment → approved card: the sale is CONFIRMED, tickets are issued and emailed with QR codes', async () => {
    const event = await publishEvent(api, organizer, { price: 50_000, capacity: 10 });
    const email = uniqueEmail('card-ok');
    const token = await signInBuyer(api, email);

    const created = await reserveOrder(api, token, orderBody(event, 2));
    expect(created.statusCode).toBe(201);
    const order = created.json().data;
    expect(order).toMatchObject({ free: false, saleId: expect.any(String), currency: 'COP' });
    expect(order.reference).toMatch(/^FT-[2-9A-HJ-NP-Z]{8}$/);
    // 2 × (50,000 + fee 5,000 + IVA 950) with the workspace default 10 % fee.
    expect(order.total).toBe(2 * (50_000 + 5_000 + 950));
    const expiresIn = Date.parse(order.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(9 * 60_000);
    expect(expiresIn).toBeLessThanOrEqual(10 * 60_000);
    expect(await availabilityOf(event)).toBe(8);

    const opened = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(opened.statusCode).toBe(200);
    expect(opened.json().data).toEqual({
      publicKey: api.env.GATEWAY_A_PUBLIC_KEY,
      amount: order.total,
      currency: 'COP',
      reference: order.reference,
      payerEmail: email,
    });
    // Opening again is idempotent: the same configuration.
    const reopened = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.reference}/payment`,
      headers: session(token),
    });
    expect(reopened.json().data).toEqual(opened.json().data);

    const charged = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(charged.statusCode).toBe(200);
    expect(charged.json().data).toMatchObject({ status: 'approved', saleStatus: 'CONFIRMED', declineCode: null });

    const status = await api.request({
      method: 'GET',
      url: `/api/v1/customer/orders/${order.saleId}`,
      headers: session(token),
    });
    const confirmed = status.json().data;
    expect(confirmed).toMatchObject({
      status: 'CONFIRMED',
      publicStatus: 'paid',
      expiresAt: null,
      paymentProvider: 'GATEWAY_A',
    });
    expect(confirmed.confirmedAt).not.toBeNull();
    expect(confirmed.tickets).toHaveLength(2);
    for (const ticket of confirmed.tickets) expect(ticket.code).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(new Set(confirmed.tickets.map((t: { code: string }) => t.code)).size).toBe(2);

    const mail = await waitForMail(api.env.SANDBOX_URL, email, (m) => m.subject.includes(order.reference));
    expect(mail.attachments.filter((a) => a.contentType === 'image/png')).toHaveLength(2);
    for (const ticket of confirmed.tickets) expect(mail.text).toContain(ticket.code);

    const organizerView = await api.request({
      method: 'GET',
      url: `/api/v1/sales/${order.saleId}`,
      headers: bearer(organizer.key),
    });
    expect(organizerView.statusCode).toBe(200);
    expect(organizerView.json().data).toMatchObject({
      status: 'CONFIRMED',
      reference: order.reference,
      buyerEmail: email,
      total: order.total,
    });
    expect(organizerView.json().data.items[0]).toMatchObject({ quantity: 2, unitPrice: 50_000 });
    const attempts = await api.request({
      method: 'GET',
      url: `/api/v1/sales/${order.saleId}/attempts`,
      headers: bearer(organizer.key),
    });
    expect(attempts.json().data.map((a: { kind: string }) => a.kind)).toEqual(
      // The gateway's notification of this payment arrives after the charge's answer confirmed the sale: nothing to record.
      expect.arrayContaining(['OPEN', 'CARD']),
    );
    expect(await availabilityOf(event)).toBe(8);
  });

  test('a rejected card keeps the sale PENDING with the decline code; a second card then confirms it', async () => {
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, uniqueEmail('card-retry'));
    const order = (await reserveOrder(api, token, orderBody(event))).json().data;
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });

    const declined = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'FUND') },
    });
    expect(declined.statusCode).toBe(200);
    expect(declined.json().data).toMatchObject({
      status: 'rejected',
      saleStatus: 'PENDING',
      declineCode: 'cc_rejected_insufficient_amount',
    });
    const pending = await customerOrder(api, token, order.saleId);
    expect(pending).toMatchObject({
      status: 'PENDING',
      declineCode: 'cc_rejected_insufficient_amount',
      paymentStatus: 'rejected',
    });
    expect(pending.tickets).toEqual([]);

    const approved = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(approved.json().data).toMatchObject({ status: 'approved', saleStatus: 'CONFIRMED' });
  });

  test('the same card token sent again after its charge confirmed the sale answers that charge; a new token is refused', async () => {
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, uniqueEmail('card-again'));
    const order = (await reserveOrder(api, token, orderBody(event))).json().data;
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    const charge = (card: string) =>
      api.request({
        method: 'POST',
        url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
        headers: session(token),
        payload: { token: card },
      });
    const card = await cardToken(api, 'APRO');
    const first = await charge(card);
    expect(first.json().data).toMatchObject({ status: 'approved', saleStatus: 'CONFIRMED' });

    // What a front end does after the contract's retryable 503: the same token again, after the sale confirmed.
    const again = await charge(card);
    expect(again.statusCode).toBe(200);
    expect(again.json().data).toEqual(first.json().data);

    const other = await charge(await cardToken(api, 'APRO'));
    expect(other.statusCode).toBe(409);
    expect(other.json().error).toMatchObject({ code: 'PAYMENT_UNAVAILABLE', details: { reason: 'not_pending' } });
    const charges = await api.orm.em
      .fork()
      .execute<{ provider_payment_id: string }[]>(
        `select provider_payment_id from payment_attempts where sale_id = ? and kind = 'CARD' and provider_payment_id is not null`,
        [order.saleId],
      );
    expect(charges.map((row) => row.provider_payment_id)).toEqual([first.json().data.paymentId]);
  });

  test('a 100% discount confirms at once with free: true and issues the tickets without a gateway', async () => {
    const event = await publishEvent(api, organizer);
    const discount = await api.request({
      method: 'POST',
      url: '/api/v1/discounts',
      headers: bearer(organizer.key),
      payload: {
        code: `FREE${Math.random().toString(36).slice(2, 7)}`,
        type: 'PERCENT',
        value: 100,
        eventId: event.eventId,
      },
    });
    expect(discount.statusCode).toBe(201);
    const token = await signInBuyer(api, uniqueEmail('free'));
    const created = await reserveOrder(
      api,
      token,
      orderBody(event, 2, { discountCode: discount.json().data.code.toLowerCase() }),
    );
    expect(created.statusCode).toBe(201);
    const result = created.json().data;
    expect(result).toEqual({
      free: true,
      reference: expect.stringMatching(/^FT-/),
      saleId: null,
      total: null,
      currency: null,
      expiresAt: null,
    });
    const status = await customerOrder(api, token, result.reference);
    expect(status).toMatchObject({ status: 'CONFIRMED', total: 0, serviceFee: 0, iva: 0 });
    expect(status.tickets).toHaveLength(2);
    const payment = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${result.reference}/payment`,
      headers: session(token),
    });
    expect(payment.statusCode).toBe(409);
    expect(payment.json().error.code).toBe('PAYMENT_UNAVAILABLE');
    const uses = await api.request({
      method: 'GET',
      url: `/api/v1/discounts?event=${event.eventId}`,
      headers: bearer(organizer.key),
    });
    expect(uses.json().data[0].uses).toBe(1);
  });

  test('the buyer releases a reservation: the sale is ABANDONED and the stock is back at once', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, uniqueEmail('release'));
    const order = (await reserveOrder(api, token, orderBody(event, 3))).json().data;
    expect(await availabilityOf(event)).toBe(2);
    const released = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/release`,
      headers: session(token),
    });
    expect(released.statusCode).toBe(200);
    expect(released.json().data.status).toBe('ABANDONED');
    expect(await availabilityOf(event)).toBe(5);
    const again = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/release`,
      headers: session(token),
    });
    expect(again.statusCode).toBe(409);
    expect(await availabilityOf(event)).toBe(5);
    const payment = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(payment.json().error).toMatchObject({ code: 'PAYMENT_UNAVAILABLE', details: { reason: 'not_pending' } });
  });

  test('a second reservation for the same date while one is unpaid is refused with pending_sale_in_progress', async () => {
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, uniqueEmail('pending'));
    const first = (await reserveOrder(api, token, orderBody(event))).json().data;
    const second = await reserveOrder(api, token, orderBody(event));
    expect(second.statusCode).toBe(409);
    expect(second.json().error.details).toEqual({
      reason: 'pending_sale_in_progress',
      pendingSaleId: first.saleId,
      pendingReference: first.reference,
    });
    const unfinished = await api.request({
      method: 'GET',
      url: `/api/v1/customer/orders?eventDateId=${event.eventDateId}`,
      headers: session(token),
    });
    expect(unfinished.json().data.id).toBe(first.saleId);
  });

  test('quantity above maxPerOrder, unknown ids, missing session and bad bodies get the contract errors', async () => {
    const event = await publishEvent(api, organizer, { maxPerOrder: 2 });
    const token = await signInBuyer(api, uniqueEmail('rules'));
    const tooMany = await reserveOrder(api, token, orderBody(event, 3));
    expect(tooMany.statusCode).toBe(409);
    expect(tooMany.json().error.details.reason).toBe('max_per_order');
    const noSession = await api.request({ method: 'POST', url: '/api/v1/customer/orders', payload: orderBody(event) });
    expect(noSession.statusCode).toBe(401);
    expect(noSession.json().error.code).toBe('CUSTOMER_SESSION_REQUIRED');
    const twoItems = await reserveOrder(api, token, {
      ...orderBody(event),
      items: [orderBody(event).items[0], orderBody(event).items[0]],
    });
    expect(twoItems.statusCode).toBe(422);
    const nit = await api.request({
      method: 'POST',
      url: '/api/v1/customer/orders',
      headers: session(token),
      payload: {
        ...orderBody(event),
        buyer: { name: 'Empresa SAS', phone: '1', idType: 'NIT', idNumber: '900123456' },
      },
    });
    expect(nit.statusCode).toBe(422);
    expect(nit.json().error.details.fields[0].field).toBe('body.buyer.nitDigit');
    const unknown = await reserveOrder(
      api,
      token,
      orderBody({ ...event, ticketTypeId: '01900000-0000-7000-8000-000000000000' }),
    );
    expect(unknown.statusCode).toBe(404);
    const otherBuyer = await signInBuyer(api, uniqueEmail('other'));
    const order = (await reserveOrder(api, token, orderBody(event))).json().data;
    const foreign = await api.request({
      method: 'GET',
      url: `/api/v1/customer/orders/${order.saleId}`,
      headers: session(otherBuyer),
    });
    expect(foreign.statusCode).toBe(404);
  });

  test('concurrent buyers on the last units: exactly the capacity is reserved, the rest get sold_out', async () => {
    const event = await publishEvent(api, organizer, { capacity: 3, maxPerOrder: 1 });
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => signInBuyer(api, uniqueEmail(`race${i}`))));
    const responses = await Promise.all(tokens.map((token) => reserveOrder(api, token, orderBody(event))));
    const won = responses.filter((r) => r.statusCode === 201);
    const lost = responses.filter((r) => r.statusCode === 409);
    expect(won).toHaveLength(3);
    expect(lost).toHaveLength(5);
    for (const response of lost) expect(response.json().error.details.reason).toBe('sold_out');
    expect(await availabilityOf(event)).toBe(0);
  });

  test('opening payment is limited to 10 per minute per buyer (429 with Retry-After)', async () => {
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, uniqueEmail('limit'));
    const order = (await reserveOrder(api, token, orderBody(event))).json().data;
    const statuses: number[] = [];
    let last: Awaited<ReturnType<TestApi['request']>> | null = null;
    for (let i = 0; i < 11; i += 1) {
      last = await api.request({
        method: 'POST',
        url: `/api/v1/customer/orders/${order.saleId}/payment`,
        headers: session(token),
      });
      statuses.push(last.statusCode);
    }
    expect(statuses.slice(0, 10).every((s) => s === 200)).toBe(true);
    expect(statuses[10]).toBe(429);
    expect(Number(last?.headers['retry-after'])).toBeGreaterThan(0);
    expect(last?.json().error.code).toBe('RATE_LIMITED');
  });
});

describe('expiry (contract 3, rule 5)', () => {
  let shortApi: TestApi;
  beforeAll(async () => {
    shortApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '3000' });
  });
  afterAll(async () => {
    await shortApi.close();
  });

  test('an unpaid reservation expires: the stock returns, the sale is ABANDONED and payment is unavailable', async () => {
    const event = await publishEvent(shortApi, organizer, { capacity: 4 });
    const token = await signInBuyer(shortApi, uniqueEmail('expiry'));
    const order = (await reserveOrder(shortApi, token, orderBody(event, 4))).json().data;
    expect(await availabilityOf(event)).toBe(0);
    const expired = await eventually(
      async () => await customerOrder(shortApi, token, order.saleId),
      (sale) => sale.status === 'ABANDONED',
      15_000,
    );
    expect(expired).toMatchObject({ publicStatus: 'expired', expiresAt: null });
    expect(await availabilityOf(event)).toBe(4);
    const payment = await shortApi.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(payment.statusCode).toBe(409);
    expect(payment.json().error.code).toBe('PAYMENT_UNAVAILABLE');
    const sale = (
      await shortApi.request({ method: 'GET', url: `/api/v1/sales/${order.saleId}`, headers: bearer(organizer.key) })
    ).json().data;
    expect(sale.failureReason).toBe('payment window expired');
  });
});
