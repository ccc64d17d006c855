/**
 * Storefront orders sell on both gateways (issue 15; contract 4.18): the checkoutUrl of a gateway A event is gateway
 * A's checkout page, paid there by card or PSE; a gateway B event's is our hosted page with gateway B's button. Either
 * way the sale is confirmed only by the gateway's own record, re-read when its notification arrives.
 */
import { verifyGatewayBIntegritySignature } from '../../integrations/gateway-b/signature.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { confirmAtBank, eventually, type PublishedEvent, publishEvent, waitForMail } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
let legend: Organizer;
beforeAll(async () => {
  // The storefront's per-IP limit is exercised in its own test; here every request comes from one address.
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
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

interface OrderCreated {
  orderId: string;
  reference: string;
  status: string;
  total: number;
  currency: string;
  checkoutUrl: string;
  expiresAt: string;
}

const order = (event: PublishedEvent, quantity = 1) => ({
  buyerEmail: `store-${Math.random().toString(36).slice(2, 10)}@buyers.test`,
  buyerName: 'Compradora Anónima',
  items: [{ ticketTypeId: event.ticketTypeId, quantity }],
});

async function placeOrder(target: TestApi, body: ReturnType<typeof order>): Promise<OrderCreated> {
  const created = await target.request({ method: 'POST', url: '/api/public/orders', payload: body });
  expect(created.statusCode).toBe(200);
  return created.json().data;
}

const publicOrder = async (target: TestApi, orderId: string) =>
  (await target.request({ method: 'GET', url: `/api/public/orders/${orderId}` })).json().data;

const paid = (target: TestApi, orderId: string) =>
  eventually(
    () => publicOrder(target, orderId),
    (o) => o.status === 'paid',
  );

const available = async (target: TestApi, owner: Organizer, event: PublishedEvent): Promise<number> =>
  (
    await target.request({
      method: 'GET',
      url: `/api/v1/ticket-types/${event.ticketTypeId}`,
      headers: bearer(owner.key),
    })
  ).json().data.available;

const organizerSale = async (target: TestApi, owner: Organizer, saleId: string) =>
  (await target.request({ method: 'GET', url: `/api/v1/sales/${saleId}`, headers: bearer(owner.key) })).json().data;

interface Attempt {
  gateway: string;
  kind: string;
  status: string | null;
  note: string | null;
}
const attemptsOf = async (target: TestApi, owner: Organizer, saleId: string): Promise<Attempt[]> =>
  (await target.request({ method: 'GET', url: `/api/v1/sales/${saleId}/attempts`, headers: bearer(owner.key) })).json()
    .data;

/**
 * Reading an order asks its checkout to pull the gateway (api/http/payment-check.ts), which would confirm the sale by
 * itself. Held off (well inside the checkout's first 30 s pull interval and the 20 s `eventually`), so only the
 * gateway's notification can confirm the sale.
 */
const holdBuyerPulls = async (orderId: string): Promise<void> => {
  await api.services.redis.set(`payment-check:${orderId}`, 'held by the test', 'PX', 60_000);
};

/** A browser submitting a form: url-encoded fields, redirects left to the caller. */
const submit = (url: string, fields: Record<string, string>): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });

/** The data-* attributes of the page's gateway B button, as its script reads them. */
function buttonOf(html: string): { attributes: Record<string, string>; src: string } {
  const tag = /<script\s+data-bold-button[^>]*>/.exec(html)?.[0];
  if (!tag) throw new Error(`no gateway B button on the page:\n${html}`);
  const attributes: Record<string, string> = {};
  let src = '';
  for (const [, name, raw] of tag.matchAll(/([a-z-]+)="([^"]*)"/g)) {
    const value = (raw ?? '').replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&amp;', '&');
    if (name === 'src') src = value;
    else if (name?.startsWith('data-')) attributes[name.slice('data-'.length)] = value;
  }
  return { attributes, src };
}

/** What the sandbox's button script posts to the hosted checkout: every attribute but the button's style. */
const buttonForm = (attributes: Record<string, string>): Record<string, string> => {
  const { 'bold-button': _style, 'render-mode': _mode, ...fields } = attributes;
  return fields;
};

describe('gateway A events: the checkoutUrl is the gateway page, paid by card or PSE', () => {
  test('paid by card at the gateway page: the notification confirms the sale and the tickets are emailed', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5, price: 40_000 });
    const body = order(event, 2);
    const created = await placeOrder(api, body);
    expect(created.status).toBe('pending');
    expect(created.checkoutUrl).toMatch(new RegExp(`^${api.env.SANDBOX_URL}/gateway-a/pse/checkout/`));
    expect(await available(api, organizer, event)).toBe(3);
    await holdBuyerPulls(created.orderId);

    // The page offers cards as well as PSE (a PSE-only preference has no card form).
    const pageHtml = await (await fetch(created.checkoutUrl)).text();
    expect(pageHtml).toContain('id="card-form"');
    expect(pageHtml).toContain('id="pse-form"');
    const charged = await submit(created.checkoutUrl, { decision: 'card', cardholder_name: 'APRO' });
    expect(charged.status).toBe(302);
    expect(new URL(charged.headers.get('location') ?? '').searchParams.get('status')).toBe('approved');

    const confirmed = await paid(api, created.orderId);
    expect(confirmed.tickets).toHaveLength(2);
    expect(confirmed.expiresAt).toBeNull();
    await waitForMail(api.env.SANDBOX_URL, body.buyerEmail, (mail) => mail.subject.includes(created.reference));
    const sale = await organizerSale(api, organizer, created.orderId);
    expect(sale).toMatchObject({ status: 'CONFIRMED', paymentProvider: 'GATEWAY_A', paymentStatus: 'approved' });
    const attempts = await attemptsOf(api, organizer, created.orderId);
    expect(attempts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ gateway: 'GATEWAY_A', kind: 'OPEN', note: "gateway A's checkout page: card or PSE" }),
        expect.objectContaining({ gateway: 'GATEWAY_A', kind: 'NOTIFICATION', status: 'approved' }),
      ]),
    );
    expect(attempts.map((attempt) => attempt.kind)).not.toContain('STATUS_CHECK');
    // An order that pays at gateway A has no hosted gateway B page.
    const noPage = await api.request({ method: 'GET', url: `/api/public/orders/${created.orderId}/pay` });
    expect(noPage.statusCode).toBe(404);
  });

  test('paid by PSE at the same page: confirmed once the bank settles, tickets emailed', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5, price: 30_000 });
    const body = order(event);
    const created = await placeOrder(api, body);
    await holdBuyerPulls(created.orderId);
    const submitted = await confirmAtBank(created.checkoutUrl, body.buyerEmail);
    expect(submitted.status).toBe(302);
    expect((await publicOrder(api, created.orderId)).status).toBe('pending');
    const settled = await fetch(`${api.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reference: created.reference, outcome: 'approved' }),
    });
    expect(settled.status).toBe(200);
    const confirmed = await paid(api, created.orderId);
    expect(confirmed.tickets).toHaveLength(1);
    await waitForMail(api.env.SANDBOX_URL, body.buyerEmail, (mail) => mail.subject.includes(created.reference));
    expect(await organizerSale(api, organizer, created.orderId)).toMatchObject({
      paymentProvider: 'GATEWAY_A',
      paymentStatus: 'approved',
    });
    expect(await attemptsOf(api, organizer, created.orderId)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ gateway: 'GATEWAY_A', kind: 'NOTIFICATION', status: 'approved' }),
      ]),
    );
  });
});

describe('gateway B events: the checkoutUrl is our hosted page with the gateway B button', () => {
  test('the page shows the signed button; paid at the gateway, the signed webhook confirms the sale', async () => {
    const event = await publishEvent(api, legend, { capacity: 5, price: 80_000 });
    const body = order(event, 2);
    const created = await placeOrder(api, body);
    const pageUrl = `${api.env.PUBLIC_ORIGIN}/api/public/orders/${created.orderId}/pay`;
    expect(created).toMatchObject({ status: 'pending', checkoutUrl: pageUrl, currency: 'COP' });
    expect(await available(api, legend, event)).toBe(3);
    await holdBuyerPulls(created.orderId);

    const page = await api.request({ method: 'GET', url: `/api/public/orders/${created.orderId}/pay` });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.body).toContain('data-status="pending"');
    // Only public values leave the server: the signature, never the secret key it is made with.
    expect(page.body).not.toContain(api.env.GATEWAY_B_SECRET_KEY);
    expect(page.body).not.toContain(api.env.GATEWAY_A_ACCESS_TOKEN);
    const { attributes, src } = buttonOf(page.body);
    expect(src).toBe(`${api.env.SANDBOX_URL}/gateway-b/library/boldPaymentButton.js`);
    expect(attributes).toMatchObject({
      'order-id': created.reference,
      amount: String(created.total),
      currency: 'COP',
      'api-key': api.env.GATEWAY_B_API_KEY,
      'redirection-url': pageUrl,
      'expiration-date': String(Date.parse(created.expiresAt) * 1_000_000),
    });
    expect(
      verifyGatewayBIntegritySignature(
        { orderId: created.reference, amount: created.total, currency: 'COP', secretKey: api.env.GATEWAY_B_SECRET_KEY },
        attributes['integrity-signature'] ?? '',
      ),
    ).toBe(true);

    // The button's script (the sandbox's stand-in) is served where the page loads it from.
    const script = await fetch(src);
    expect(script.status).toBe(200);
    expect(await script.text()).toContain('data-bold-button');

    // The buyer clicks the button: its hosted checkout shows the order, then the buyer pays.
    const checkout = await submit(`${api.env.SANDBOX_URL}/gateway-b/checkout`, buttonForm(attributes));
    expect(checkout.status).toBe(200);
    const checkoutHtml = await checkout.text();
    expect(checkoutHtml).toContain(`data-amount="${created.total}"`);
    const charged = await submit(`${api.env.SANDBOX_URL}/gateway-b/checkout/pay`, {
      ...buttonForm(attributes),
      decision: 'approve',
    });
    expect(charged.status).toBe(302);
    const back = new URL(charged.headers.get('location') ?? '');
    expect(`${back.origin}${back.pathname}`).toBe(pageUrl);
    expect(back.searchParams.get('bold-tx-status')).toBe('approved');

    const confirmed = await paid(api, created.orderId);
    expect(confirmed.tickets).toHaveLength(2);
    await waitForMail(api.env.SANDBOX_URL, body.buyerEmail, (mail) => mail.subject.includes(created.reference));
    expect(await organizerSale(api, legend, created.orderId)).toMatchObject({
      status: 'CONFIRMED',
      paymentProvider: 'GATEWAY_B',
      paymentStatus: 'APPROVED',
    });
    const attempts = await attemptsOf(api, legend, created.orderId);
    expect(attempts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ gateway: 'GATEWAY_B', kind: 'OPEN' }),
        expect.objectContaining({ gateway: 'GATEWAY_B', kind: 'NOTIFICATION', status: 'APPROVED' }),
      ]),
    );
    // Confirmed by the webhook's news, not by asking the gateway.
    expect(attempts.map((attempt) => attempt.kind)).not.toContain('STATUS_CHECK');

    // Back on the page the buyer sees the order paid, and no button to pay twice.
    const after = await api.request({ method: 'GET', url: `/api/public/orders/${created.orderId}/pay` });
    expect(after.statusCode).toBe(200);
    expect(after.body).toContain('data-status="paid"');
    expect(after.body).not.toContain('data-bold-button');
  });

  test('a rejected payment leaves the sale unpaid; its stock comes back when the reservation expires', async () => {
    const shortApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '8000', PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
    try {
      const event = await publishEvent(shortApi, legend, { capacity: 2, price: 25_000 });
      const created = await placeOrder(shortApi, order(event, 2));
      expect(await available(shortApi, legend, event)).toBe(0);
      const page = await shortApi.request({ method: 'GET', url: `/api/public/orders/${created.orderId}/pay` });
      const { attributes } = buttonOf(page.body);
      const declined = await submit(`${shortApi.env.SANDBOX_URL}/gateway-b/checkout/pay`, {
        ...buttonForm(attributes),
        decision: 'reject',
      });
      expect(declined.status).toBe(302);
      expect(new URL(declined.headers.get('location') ?? '').searchParams.get('bold-tx-status')).toBe('rejected');
      const rejected = await eventually(
        () => organizerSale(shortApi, legend, created.orderId),
        (sale) => sale.paymentStatus === 'REJECTED',
      );
      expect(rejected.status).toBe('PENDING');
      expect(await available(shortApi, legend, event)).toBe(0);

      const expired = await eventually(
        () => publicOrder(shortApi, created.orderId),
        (o) => o.status === 'expired',
      );
      expect(expired.tickets).toEqual([]);
      await eventually(
        () => available(shortApi, legend, event),
        (units) => units === 2,
      );
      // The gateway refuses a button whose reservation has expired.
      const late = await submit(`${shortApi.env.SANDBOX_URL}/gateway-b/checkout`, buttonForm(attributes));
      expect(late.status).toBe(422);
      const closed = await shortApi.request({ method: 'GET', url: `/api/public/orders/${created.orderId}/pay` });
      expect(closed.body).toContain('data-status="expired"');
      expect(closed.body).not.toContain('data-bold-button');
    } finally {
      await shortApi.close();
    }
  });

  test('a gateway-B-only event without the legend plan gets PAYMENT_UNAVAILABLE and its stock back at once', async () => {
    const event = await publishEvent(api, organizer, { capacity: 3, event: { gatewayBOnly: true } });
    const response = await api.request({ method: 'POST', url: '/api/public/orders', payload: order(event, 3) });
    expect(response.statusCode).toBe(409);
    expect(response.json().error).toMatchObject({
      code: 'PAYMENT_UNAVAILABLE',
      details: { reason: 'gateway_b_not_enabled' },
    });
    await eventually(
      () => available(api, organizer, event),
      (units) => units === 3,
    );
  });

  test('the hosted page of an unknown order is 404', async () => {
    for (const id of ['not-an-id', '01900000-0000-7000-8000-000000000000']) {
      const response = await api.request({ method: 'GET', url: `/api/public/orders/${id}/pay` });
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('NOT_FOUND');
    }
  });
});
