import { newId } from '../../entities/ids.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  cardToken,
  customerOrder,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

describe('reservation rules of contract 4.2', () => {
  test('a buyer may hold at most maxPerOrder tickets of a type across orders (per_buyer_limit)', async () => {
    const event = await publishEvent(api, organizer, { maxPerOrder: 3 });
    const token = await signInBuyer(api, email('limit'));
    const first = (await reserveOrder(api, token, orderBody(event, 2))).json().data;
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${first.saleId}/payment`,
      headers: session(token),
    });
    const paid = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${first.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(paid.json().data.saleStatus).toBe('CONFIRMED');
    const second = await reserveOrder(api, token, orderBody(event, 2));
    expect(second.statusCode).toBe(409);
    expect(second.json().error.details).toMatchObject({ reason: 'per_buyer_limit', alreadyHeld: 2, maxPerBuyer: 3 });
    expect((await reserveOrder(api, token, orderBody(event, 1))).statusCode).toBe(201);
  });

  test('pending_sale_in_progress names the live unpaid purchase, also beside one whose deadline passed unclosed', async () => {
    const event = await publishEvent(api, organizer, { maxPerOrder: 5 });
    const token = await signInBuyer(api, email('pending'));
    const lapsed = (await reserveOrder(api, token, orderBody(event))).json().data;
    // Its deadline passed and nothing closed it yet (the first second after a deadline): it holds the buyer back no more.
    await api.orm.em
      .fork()
      .execute("update sales set expires_at = now() - interval '1 second' where id = ?", [lapsed.saleId]);
    const live = await reserveOrder(api, token, orderBody(event));
    expect(live.statusCode).toBe(201);
    const third = await reserveOrder(api, token, orderBody(event));
    expect(third.statusCode).toBe(409);
    expect(third.json().error.details).toEqual({
      reason: 'pending_sale_in_progress',
      pendingSaleId: live.json().data.saleId,
      pendingReference: live.json().data.reference,
    });
  });

  test('outside the presale window and outside the sales window the order is SALE_CLOSED', async () => {
    const presale = await publishEvent(api, organizer, { ticketType: { presaleStartsAt: inAnHour() } });
    const token = await signInBuyer(api, email('presale'));
    const early = await reserveOrder(api, token, orderBody(presale));
    expect(early.statusCode).toBe(409);
    expect(early.json().error).toMatchObject({ code: 'SALE_CLOSED', details: { reason: 'presale_closed' } });
    const notYet = await publishEvent(api, organizer, { date: { salesStartAt: inAnHour() } });
    const closed = await reserveOrder(api, token, orderBody(notYet));
    expect(closed.json().error).toMatchObject({ code: 'SALE_CLOSED', details: { reason: 'sales_window_closed' } });
  });

  test('an event deleted after publication is not on sale (NOT_AVAILABLE), and one sold elsewhere is EXTERNAL_SALE', async () => {
    const deleted = await publishEvent(api, organizer);
    await api.orm.em.fork().execute('update events set deleted_at = now() where id = ?', [deleted.eventId]);
    const token = await signInBuyer(api, email('deleted'));
    const refused = await reserveOrder(api, token, orderBody(deleted));
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'NOT_AVAILABLE', details: { reason: 'not_published' } });
    const elsewhere = await publishEvent(api, organizer);
    await api.orm.em
      .fork()
      .execute("update events set sales_mode = 'EXTERNAL', external_sales_url = ? where id = ?", [
        'https://tickets.example.test/show',
        elsewhere.eventId,
      ]);
    const external = await reserveOrder(api, token, orderBody(elsewhere));
    expect(external.json().error).toMatchObject({
      code: 'EXTERNAL_SALE',
      details: { reason: 'external_sale', url: 'https://tickets.example.test/show' },
    });
  });

  test('members-only tickets need an active membership with that benefit (MEMBERS_ONLY otherwise)', async () => {
    const event = await publishEvent(api, organizer, { ticketType: { membersOnly: true } });
    const token = await signInBuyer(api, email('member'));
    const refused = await reserveOrder(api, token, orderBody(event));
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.code).toBe('MEMBERS_ONLY');

    const plan = await api.request({
      method: 'POST',
      url: '/api/v1/membership-plans',
      headers: bearer(organizer.key),
      payload: {
        name: 'Club',
        price: 20_000,
        period: 'MONTHLY',
        benefits: { membersOnlyAccess: true, discountPercent: 0 },
      },
    });
    expect(plan.statusCode).toBe(201);
    const buyerId = (await api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) })).json()
      .data.id;
    // The row the membership workflow writes for a paid period, written directly to keep this rule's test short;
    // memberships.test.ts buys a members-only ticket as a buyer who joined through the workflow.
    await api.orm.em.fork().execute(
      `insert into membership_subscriptions (id, created_at, updated_at, workspace_id, plan_id, buyer_id, status, current_period_end, currency)
       values (?, now(), now(), ?, ?, ?, 'ACTIVE', now() + interval '30 days', 'COP')`,
      [newId(), organizer.workspaceId, plan.json().data.id, buyerId],
    );
    expect((await reserveOrder(api, token, orderBody(event))).statusCode).toBe(201);
  });

  test('a returnUrl outside the allowlist is ignored and the purchase proceeds', async () => {
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, email('return'));
    const created = await reserveOrder(
      api,
      token,
      orderBody(event, 1, { returnUrl: 'https://evil.example.net/steal' }),
    );
    expect(created.statusCode).toBe(201);
    const saleId = created.json().data.saleId;
    const landing = await api.request({ method: 'GET', url: `/api/v1/customer/orders/${saleId}/payment/return` });
    expect(landing.statusCode).toBe(302);
    expect(landing.headers.location).not.toContain('evil.example.net');
    expect(landing.headers.location).toContain(`/api/public/orders/${saleId}`);
    // The address the bank sends the buyer to answers (issue 31): the order's status, without its tickets, which
    // belong to the buyer's session.
    const fallback = new URL(landing.headers.location as string);
    const page = await api.request({ method: 'GET', url: `${fallback.pathname}${fallback.search}` });
    expect(page.statusCode).toBe(200);
    expect(page.json().data).toMatchObject({
      orderId: saleId,
      reference: created.json().data.reference,
      status: 'pending',
      tickets: [],
    });
  });

  test('a card left pending by the gateway keeps the sale PENDING until the gateway settles it', async () => {
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, email('pending-card'));
    const order = (await reserveOrder(api, token, orderBody(event))).json().data;
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    const charged = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'CONT') },
    });
    expect(charged.json().data).toMatchObject({ status: 'in_process', saleStatus: 'PENDING', declineCode: null });
    expect((await customerOrder(api, token, order.saleId)).status).toBe('PENDING');
  });

  test('public availability follows real orders: a reservation lowers it and a release restores it', async () => {
    const event = await publishEvent(api, organizer, { capacity: 6 });
    const availability = async () =>
      (await api.request({ method: 'GET', url: `/api/public/events/${event.slug}/availability` })).json().data.dates[0]
        .ticketTypes[0].available;
    expect(await availability()).toBe(6);
    const token = await signInBuyer(api, email('avail'));
    const order = (await reserveOrder(api, token, orderBody(event, 4))).json().data;
    expect(await availability()).toBe(2);
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/release`,
      headers: session(token),
    });
    expect(await availability()).toBe(6);
  });
});
