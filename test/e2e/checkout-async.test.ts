import { createHash } from 'node:crypto';
import { signGatewayANotification } from '../../integrations/gateway-a/signature.js';
import { signGatewayBWebhook } from '../../integrations/gateway-b/signature.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  confirmAtBank,
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
let organizer: Organizer;
let legend: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  legend = await createOrganizer(api.orm.em.fork());
  // Plan and allowlist are operator settings, not organizer API fields.
  await api.orm.em
    .fork()
    .execute(`update workspaces set plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [legend.workspaceId]);
});
afterAll(async () => {
  await api.close();
});

const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;
const control = (path: string, body: unknown) =>
  fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

async function reserve(target: TestApi, event: PublishedEvent, label: string, quantity = 1) {
  const token = await signInBuyer(target, email(label));
  const created = await reserveOrder(target, token, orderBody(event, quantity));
  expect(created.statusCode).toBe(201);
  return {
    token,
    order: created.json().data as { saleId: string; reference: string; total: number; expiresAt: string },
  };
}

const orderOf = async (target: TestApi, token: string, saleId: string) =>
  (await target.request({ method: 'GET', url: `/api/v1/customer/orders/${saleId}`, headers: session(token) })).json()
    .data;

/** Opens PSE and plays the buyer at the bank page: pick a bank, confirm; the browser lands back on our return URL. */
async function payAtBank(target: TestApi, token: string, saleId: string): Promise<void> {
  const pse = await target.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment/pse`,
    headers: session(token),
  });
  expect(pse.statusCode).toBe(200);
  const { redirectUrl } = pse.json().data;
  const page = await fetch(redirectUrl);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('id="pse-form"');
  const submitted = await confirmAtBank(redirectUrl);
  expect(submitted.status).toBe(302);
  const backToUs = submitted.headers.get('location') ?? '';
  expect(backToUs).toContain(`/api/v1/customer/orders/${saleId}/payment/return`);
  const landing = await fetch(backToUs, { redirect: 'manual' });
  expect(landing.status).toBe(302);
  expect(landing.headers.get('location')).toMatch(/^http:\/\/localhost:5173\/thanks\?reference=FT-/);
}

describe('PSE bank transfer settles asynchronously (contract 4.4)', () => {
  test('the sale stays PENDING after the bank page and confirms only when the signed notification arrives', async () => {
    const event = await publishEvent(api, organizer);
    const { token, order } = await reserve(api, event, 'pse');
    await payAtBank(api, token, order.saleId);
    expect((await orderOf(api, token, order.saleId)).status).toBe('PENDING');

    const settled = await control('/gateway-a/pse/settle', { reference: order.reference, outcome: 'approved' });
    expect(settled.status).toBe(200);
    const confirmed = await eventually(
      () => orderOf(api, token, order.saleId),
      (o) => o.status === 'CONFIRMED',
    );
    expect(confirmed.tickets).toHaveLength(1);
    expect(confirmed.paymentStatus).toBe('approved');

    // A duplicated delivery of the same notification changes nothing.
    const replay = await control('/notifications/replay', { gateway: 'gateway-a', reference: order.reference });
    expect(replay.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const after = await orderOf(api, token, order.saleId);
    expect(after.status).toBe('CONFIRMED');
    expect(after.tickets.map((t: { code: string }) => t.code)).toEqual(
      confirmed.tickets.map((t: { code: string }) => t.code),
    );
  });

  test('a rejected transfer leaves the sale PENDING with the gateway status', async () => {
    const event = await publishEvent(api, organizer);
    const { token, order } = await reserve(api, event, 'pse-no');
    await payAtBank(api, token, order.saleId);
    const settled = await control('/gateway-a/pse/settle', { reference: order.reference, outcome: 'rejected' });
    expect(settled.status).toBe(200);
    // The rule, not a latency: a first delivery refused on a starved box is sent again after 1, 5 and 15 s, and the
    // checkout asks the gateway itself every 30 s while a payment is open. The delivery record says which it was.
    const rejected = await eventually(
      () => orderOf(api, token, order.saleId),
      (o) => o.paymentStatus === 'rejected',
      45_000,
    ).catch(async (error: Error) => {
      const { data } = (await settled.json()) as { data: { notification: unknown } };
      throw new Error(`${error.message}\nnotification delivery: ${JSON.stringify(data.notification)}`);
    });
    expect(rejected.status).toBe('PENDING');
  });
});

describe('gateway notifications are verified and never trusted blindly', () => {
  test('a forged gateway A notification gets 401 and changes nothing', async () => {
    const event = await publishEvent(api, organizer);
    const { token, order } = await reserve(api, event, 'forged-a');
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/webhooks/gateway-a?data.id=123456&type=payment',
      headers: {
        'x-request-id': 'req-1',
        'x-signature': signGatewayANotification({ dataId: '123456', xRequestId: 'req-1', secret: 'not-the-secret' }),
      },
      payload: { type: 'payment', data: { id: '123456' } },
    });
    expect(response.statusCode).toBe(401);
    expect((await orderOf(api, token, order.saleId)).status).toBe('PENDING');
  });

  test('a correctly signed notification naming a payment that is not approved confirms nothing', async () => {
    const event = await publishEvent(api, organizer);
    const { token, order } = await reserve(api, event, 'signed-a');
    await payAtBank(api, token, order.saleId);
    const search = await fetch(
      `${api.env.SANDBOX_URL}/gateway-a/v1/payments/search?external_reference=${order.reference}`,
      {
        headers: { authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` },
      },
    );
    const paymentId = String(((await search.json()) as { results: Array<{ id: number | string }> }).results[0]?.id);
    const response = await api.request({
      method: 'POST',
      url: `/api/v1/webhooks/gateway-a?data.id=${paymentId}&type=payment`,
      headers: {
        'x-request-id': 'req-2',
        'x-signature': signGatewayANotification({
          dataId: paymentId,
          xRequestId: 'req-2',
          secret: api.env.GATEWAY_A_WEBHOOK_SECRET,
        }),
      },
      // The body lies; the service re-reads the payment (still pending) from the gateway.
      payload: { type: 'payment', action: 'payment.updated', data: { id: paymentId, status: 'approved' } },
    });
    expect(response.statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await orderOf(api, token, order.saleId)).status).toBe('PENDING');
  });

  test('a forged gateway B webhook gets 401', async () => {
    const body = JSON.stringify({ id: 'evt', type: 'SALE_APPROVED', data: {} });
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/webhooks/gateway-b',
      headers: { 'content-type': 'application/json', 'x-bold-signature': signGatewayBWebhook(body, 'wrong-secret') },
      payload: body,
    });
    expect(response.statusCode).toBe(401);
  });
});

describe('gateway B payment button (legend plan + allowlist)', () => {
  test('open payment returns the signed button configuration; an approved payment confirms the sale', async () => {
    const event = await publishEvent(api, legend, { price: 80_000 });
    const { token, order } = await reserve(api, event, 'bold');
    const opened = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(opened.statusCode).toBe(200);
    const config = opened.json().data;
    expect(Object.keys(config).sort()).toEqual(
      [
        'amount',
        'apiKey',
        'currency',
        'description',
        'expirationDate',
        'integritySignature',
        'orderId',
        'redirectionUrl',
        'renderMode',
      ].sort(),
    );
    expect(config).toMatchObject({
      orderId: order.reference,
      amount: order.total,
      currency: 'COP',
      apiKey: api.env.GATEWAY_B_API_KEY,
    });
    expect(config.integritySignature).toBe(
      createHash('sha256').update(`${order.reference}${order.total}COP${api.env.GATEWAY_B_SECRET_KEY}`).digest('hex'),
    );
    expect(config.expirationDate).toBe(Date.parse(order.expiresAt) * 1_000_000);
    const pse = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/pse`,
      headers: session(token),
    });
    expect(pse.statusCode).toBe(409);
    expect(pse.json().error).toMatchObject({ code: 'PAYMENT_UNAVAILABLE', details: { reason: 'gateway_b_only' } });

    const paid = await control('/gateway-b/pay', { ...config, outcome: 'approved' });
    expect(paid.status).toBe(201);
    const confirmed = await eventually(
      () => orderOf(api, token, order.saleId),
      (o) => o.status === 'CONFIRMED',
    );
    expect(confirmed).toMatchObject({ paymentProvider: 'GATEWAY_B', paymentStatus: 'APPROVED' });

    // Gateway B re-notifying an approved charge is how it reports refunds: flagged for the organizer.
    await control('/gateway-b/renotify', { orderId: order.reference });
    const flagged = await eventually(
      () => orderOf(api, token, order.saleId),
      (o) => o.paymentStatus === 'FT_SALE_APPROVED_POST_CONFIRM',
    );
    expect(flagged.status).toBe('CONFIRMED');
  });

  test('a rejected button payment keeps the sale PENDING', async () => {
    const event = await publishEvent(api, legend);
    const { token, order } = await reserve(api, event, 'bold-no');
    const config = (
      await api.request({
        method: 'POST',
        url: `/api/v1/customer/orders/${order.saleId}/payment`,
        headers: session(token),
      })
    ).json().data;
    const paid = await control('/gateway-b/pay', { ...config, outcome: 'rejected' });
    expect(paid.status).toBe(201);
    const rejected = await eventually(
      () => orderOf(api, token, order.saleId),
      (o) => o.paymentStatus === 'REJECTED',
    );
    expect(rejected.status).toBe('PENDING');
  });
});

describe('a buyer charged twice for one sale gets the second charge back', () => {
  test('two bank transfers for one order: the first approved pays the sale, the second is refunded', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'twice');
    const pse = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/pse`,
      headers: session(token),
    });
    expect(pse.statusCode).toBe(200);
    const { redirectUrl } = pse.json().data;
    // Two browser tabs on the same bank page: two transfers for one order.
    for (let tab = 0; tab < 2; tab += 1) {
      const submitted = await confirmAtBank(redirectUrl, 'b@example.test');
      expect(submitted.status).toBe(302);
    }
    const first = await control('/gateway-a/pse/settle', { reference: order.reference, outcome: 'approved' });
    expect(first.status).toBe(200);
    const confirmed = await eventually(
      () => orderOf(api, token, order.saleId),
      (o) => o.status === 'CONFIRMED',
    );
    const second = await control('/gateway-a/pse/settle', { reference: order.reference, outcome: 'approved' });
    expect(second.status).toBe(200);

    const attempts = await eventually(
      async () =>
        (
          await api.request({
            method: 'GET',
            url: `/api/v1/sales/${order.saleId}/attempts`,
            headers: bearer(organizer.key),
          })
        ).json().data as Array<{
          kind: string;
          status: string | null;
          providerPaymentId: string | null;
          note: string | null;
        }>,
      // A refund is recorded when it is requested and marked refunded only once the gateway reports it so.
      (list) => list.some((a) => a.kind === 'REFUND' && a.status === 'refunded'),
      20_000,
    );
    const refunds = attempts.filter((a) => a.kind === 'REFUND');
    expect(refunds).toHaveLength(1);
    expect(refunds[0]?.note).toMatch(/already paid/);

    const search = await fetch(
      `${api.env.SANDBOX_URL}/gateway-a/v1/payments/search?external_reference=${order.reference}`,
      { headers: { authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` } },
    );
    const payments = ((await search.json()) as { results: Array<{ id: number; status: string }> }).results;
    expect(payments).toHaveLength(2);
    const refunded = payments.filter((p) => p.status === 'refunded');
    const kept = payments.filter((p) => p.status === 'approved');
    expect(refunded).toHaveLength(1);
    expect(kept).toHaveLength(1);
    expect(String(refunded[0]?.id)).toBe(refunds[0]?.providerPaymentId);

    // The sale stays paid by the payment that confirmed it, with its tickets.
    const after = await orderOf(api, token, order.saleId);
    expect(after.status).toBe('CONFIRMED');
    expect(after.tickets).toHaveLength(confirmed.tickets.length);
  });
});

describe('late payments are never lost (contract 3, rule 5)', () => {
  let shortApi: TestApi;
  beforeAll(async () => {
    shortApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '4000' });
  });
  afterAll(async () => {
    await shortApi.close();
  });

  const expired = (token: string, saleId: string) =>
    eventually(
      () => orderOf(shortApi, token, saleId),
      (o) => o.status === 'ABANDONED',
      20_000,
    );

  test('paid after expiry with stock still available: the sale is confirmed', async () => {
    const event = await publishEvent(shortApi, organizer, { capacity: 5 });
    const { token, order } = await reserve(shortApi, event, 'late-ok', 2);
    await payAtBank(shortApi, token, order.saleId);
    await expired(token, order.saleId);
    await control('/gateway-a/pse/settle', { reference: order.reference, outcome: 'approved' });
    const confirmed = await eventually(
      () => orderOf(shortApi, token, order.saleId),
      (o) => o.status === 'CONFIRMED',
    );
    expect(confirmed.tickets).toHaveLength(2);
    const available = (
      await shortApi.request({
        method: 'GET',
        url: `/api/v1/ticket-types/${event.ticketTypeId}`,
        headers: bearer(organizer.key),
      })
    ).json().data.available;
    expect(available).toBe(3);
    // The late-payment entry is written right after the confirmation, so it is awaited like the status.
    await eventually(
      async () =>
        (
          await shortApi.request({
            method: 'GET',
            url: `/api/v1/sales/${order.saleId}/attempts`,
            headers: bearer(organizer.key),
          })
        )
          .json()
          .data.map((a: { kind: string }) => a.kind),
      (kinds: string[]) => kinds.includes('LATE_PAYMENT'),
    );
  });

  test('paid after expiry when the event was cancelled meanwhile: the payment is refunded, no ticket is sold', async () => {
    const event = await publishEvent(shortApi, organizer, { capacity: 5 });
    const { token, order } = await reserve(shortApi, event, 'late-cancelled-event');
    await payAtBank(shortApi, token, order.saleId);
    await expired(token, order.saleId);
    const cancelled = await shortApi.request({
      method: 'POST',
      url: `/api/v1/events/${event.eventId}/cancel`,
      headers: bearer(organizer.key),
      payload: {},
    });
    expect(cancelled.statusCode).toBe(200);
    await control('/gateway-a/pse/settle', { reference: order.reference, outcome: 'approved' });
    const refunded = await eventually(
      () => orderOf(shortApi, token, order.saleId),
      (o) => o.paymentStatus === 'FT_LATE_PAYMENT_REFUNDED',
      20_000,
    );
    expect(refunded.status).toBe('ABANDONED');
    expect(refunded.tickets).toEqual([]);
  });

  test('paid after expiry when the stock was sold meanwhile: the payment is refunded and the reason recorded', async () => {
    const event = await publishEvent(shortApi, organizer, { capacity: 1 });
    const { token, order } = await reserve(shortApi, event, 'late-refund');
    await payAtBank(shortApi, token, order.saleId);
    await expired(token, order.saleId);
    // Someone else buys the last ticket before the transfer settles.
    const other = await reserve(shortApi, event, 'late-winner');
    expect(other.order.saleId).toBeDefined();
    await control('/gateway-a/pse/settle', { reference: order.reference, outcome: 'approved' });
    const refunded = await eventually(
      () => orderOf(shortApi, token, order.saleId),
      (o) => o.paymentStatus === 'FT_LATE_PAYMENT_REFUNDED',
      20_000,
    );
    expect(refunded.status).toBe('ABANDONED');
    expect(refunded.tickets).toEqual([]);
    const attempts = (
      await shortApi.request({
        method: 'GET',
        url: `/api/v1/sales/${order.saleId}/attempts`,
        headers: bearer(organizer.key),
      })
    ).json().data;
    const refund = attempts.find((a: { kind: string }) => a.kind === 'REFUND');
    expect(refund.note).toMatch(/sold meanwhile/);
    const search = await fetch(
      `${shortApi.env.SANDBOX_URL}/gateway-a/v1/payments/search?external_reference=${order.reference}`,
      {
        headers: { authorization: `Bearer ${shortApi.env.GATEWAY_A_ACCESS_TOKEN}` },
      },
    );
    const payments = ((await search.json()) as { results: Array<{ status: string }> }).results;
    expect(payments.map((p) => p.status)).toContain('refunded');
  });
});
