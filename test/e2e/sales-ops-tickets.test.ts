/**
 * Tickets at the door and after the sale: check-in (consumes once), access check (does not consume), reassignment to
 * another date or type (stock moves atomically), resend (organizer and anonymous public), and the buyer's tickets.
 */
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { publishEvent, session, waitForMail } from '../support/purchase.js';
import { available, complimentary, payByCard, reserve, saleOf, ticketsOf, uniqueEmail } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
let staff: Organizer;
let other: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  staff = await createOrganizer(api.orm.em.fork(), { role: 'STAFF', workspaceId: organizer.workspaceId });
  other = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const checkin = (who: Organizer, code: string) =>
  api.request({ method: 'POST', url: `/api/v1/tickets/${code}/checkin`, headers: bearer(who.key) });
const access = (who: Organizer, code: string) =>
  api.request({ method: 'GET', url: `/api/v1/tickets/${code}/access`, headers: bearer(who.key) });

describe('door check-in (POST /tickets/{ticketCode}/checkin, STAFF)', () => {
  test('a ticket is consumed once: the second scan gets 409 TICKET_ALREADY_USED naming when it was used', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    const first = await checkin(staff, ticket!.code);
    expect(first.statusCode).toBe(200);
    expect(first.json().data).toMatchObject({ ticketCode: ticket!.code, admitted: true, status: 'USED', valid: false });
    const checkedInAt = first.json().data.checkedInAt;
    expect(Date.parse(checkedInAt)).toBeGreaterThan(Date.now() - 60_000);
    const second = await checkin(staff, ticket!.code);
    expect(second.statusCode).toBe(409);
    expect(second.json().error).toMatchObject({ code: 'TICKET_ALREADY_USED', details: { checkedInAt } });
  });

  test('concurrent scans at two doors admit exactly one', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    const scans = await Promise.all(Array.from({ length: 8 }, () => checkin(staff, ticket!.code)));
    expect(scans.filter((scan) => scan.statusCode === 200)).toHaveLength(1);
    const refused = scans.filter((scan) => scan.statusCode === 409);
    expect(refused).toHaveLength(7);
    for (const scan of refused) expect(scan.json().error.code).toBe('TICKET_ALREADY_USED');
  });

  test('a ticket of a cancelled sale is not admitted (409 INVALID_STATE, ticket_invalid)', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    await api.request({
      method: 'POST',
      url: `/api/v1/sales/${sale.id}/cancel`,
      headers: bearer(organizer.key),
      payload: {},
    });
    const scan = await checkin(staff, ticket!.code);
    expect(scan.statusCode).toBe(409);
    expect(scan.json().error).toMatchObject({ code: 'INVALID_STATE', details: { reason: 'ticket_invalid' } });
  });

  test("another workspace's ticket and an unknown code are 404; a VIEWER gets 403", async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    expect((await checkin(other, ticket!.code)).statusCode).toBe(404);
    expect((await checkin(staff, 'AAAAAAAAAAAAAAAAAAAAAAAA')).statusCode).toBe(404);
    const viewer = await createOrganizer(api.orm.em.fork(), { role: 'VIEWER', workspaceId: organizer.workspaceId });
    expect((await access(viewer, ticket!.code)).statusCode).toBe(403);
  });
});

describe('access check (GET /tickets/{ticketCode}/access, STAFF)', () => {
  test('returns TicketAccess exactly as the contract shapes it, and does not consume the ticket', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    for (let i = 0; i < 2; i += 1) {
      const response = await access(staff, ticket!.code);
      expect(response.statusCode).toBe(200);
      const data = response.json().data;
      expect(Object.keys(data).sort()).toEqual(
        [
          'checkedInAt',
          'eventDateId',
          'eventId',
          'eventName',
          'saleStatus',
          'startsAt',
          'status',
          'ticketCode',
          'ticketTypeName',
          'valid',
        ].sort(),
      );
      expect(data).toMatchObject({
        ticketCode: ticket!.code,
        valid: true,
        status: 'VALID',
        saleStatus: 'CONFIRMED',
        eventId: event.eventId,
        eventDateId: event.eventDateId,
        ticketTypeName: 'General',
        checkedInAt: null,
      });
    }
    expect((await checkin(staff, ticket!.code)).statusCode).toBe(200);
    expect((await access(staff, ticket!.code)).json().data).toMatchObject({ valid: false, status: 'USED' });
  });
});

describe('reassignment (PATCH /tickets/{ticketCode})', () => {
  test('moving a ticket to another date of the same event moves its stock unit: availability stays exact', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const headers = bearer(organizer.key);
    const date2 = (
      await api.request({
        method: 'POST',
        url: `/api/v1/events/${event.eventId}/dates`,
        headers,
        payload: { startsAt: new Date(Date.now() + 40 * 24 * 3600 * 1000).toISOString(), paymentWindowMinutes: 10 },
      })
    ).json().data;
    const type2 = (
      await api.request({
        method: 'POST',
        url: '/api/v1/ticket-types',
        headers,
        payload: {
          eventId: event.eventId,
          eventDateId: date2.id,
          name: 'General',
          price: 50_000,
          capacity: 5,
          maxPerOrder: 10,
        },
      })
    ).json().data;
    const sale = await complimentary(api, organizer, event, 2);
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(3);
    expect(await available(api, organizer, type2.id)).toBe(5);

    // Without ticketTypeId the type with the same name on the new date is used.
    const moved = await api.request({
      method: 'PATCH',
      url: `/api/v1/tickets/${ticket!.code}`,
      headers,
      payload: { eventDateId: date2.id },
    });
    expect(moved.statusCode).toBe(200);
    expect(moved.json().data).toMatchObject({
      ticketCode: ticket!.code,
      eventDateId: date2.id,
      status: 'VALID',
      valid: true,
    });
    expect(await available(api, organizer, event.ticketTypeId)).toBe(4);
    expect(await available(api, organizer, type2.id)).toBe(4);
    const held = await api.orm.em
      .fork()
      .execute<{ ticket_type_id: string; quantity: string }[]>(
        'select ticket_type_id, sum(quantity) as quantity from sale_stock_allocations where sale_id = ? group by ticket_type_id',
        [sale.id],
      );
    expect(Object.fromEntries(held.map((row) => [row.ticket_type_id, Number(row.quantity)]))).toEqual({
      [event.ticketTypeId]: 1,
      [type2.id]: 1,
    });

    // Moving it back, then cancelling the sale, returns every unit where it belongs.
    const back = await api.request({
      method: 'PATCH',
      url: `/api/v1/tickets/${ticket!.code}`,
      headers,
      payload: { eventDateId: event.eventDateId, ticketTypeId: event.ticketTypeId },
    });
    expect(back.statusCode).toBe(200);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(3);
    expect(await available(api, organizer, type2.id)).toBe(5);
    await api.request({
      method: 'PATCH',
      url: `/api/v1/tickets/${ticket!.code}`,
      headers,
      payload: { ticketTypeId: type2.id, eventDateId: date2.id },
    });
    await api.request({ method: 'POST', url: `/api/v1/sales/${sale.id}/cancel`, headers, payload: {} });
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
    expect(await available(api, organizer, type2.id)).toBe(5);
  });

  test('a sold-out target type refuses the move (409) and nothing changes', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const headers = bearer(organizer.key);
    const vip = (
      await api.request({
        method: 'POST',
        url: '/api/v1/ticket-types',
        headers,
        payload: {
          eventId: event.eventId,
          eventDateId: event.eventDateId,
          name: 'VIP',
          price: 90_000,
          capacity: 1,
          maxPerOrder: 1,
        },
      })
    ).json().data;
    await complimentary(api, organizer, event, 1, { ticketTypeId: vip.id });
    const sale = await complimentary(api, organizer, event);
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    const refused = await api.request({
      method: 'PATCH',
      url: `/api/v1/tickets/${ticket!.code}`,
      headers,
      payload: { ticketTypeId: vip.id },
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.details.reason).toBe('sold_out');
    expect(await available(api, organizer, event.ticketTypeId)).toBe(4);
    expect(await available(api, organizer, vip.id)).toBe(0);
  });

  test('a used ticket cannot be reassigned (409 INVALID_STATE)', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    await checkin(staff, ticket!.code);
    const response = await api.request({
      method: 'PATCH',
      url: `/api/v1/tickets/${ticket!.code}`,
      headers: bearer(organizer.key),
      payload: { ticketTypeId: event.ticketTypeId },
    });
    expect(response.statusCode).toBe(409);
    expect(response.json().error.code).toBe('INVALID_STATE');
  });
});

describe('resend', () => {
  test('organizer resend (STAFF) emails the ticket and its QR code to the buyer: 202', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const email = uniqueEmail('resend');
    const sale = (
      await api.request({
        method: 'POST',
        url: '/api/v1/sales',
        headers: bearer(organizer.key),
        payload: {
          eventDateId: event.eventDateId,
          ticketTypeId: event.ticketTypeId,
          quantity: 1,
          complimentary: true,
          buyer: { name: 'Resend Me', email },
        },
      })
    ).json().data;
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    const response = await api.request({
      method: 'POST',
      url: `/api/v1/tickets/${ticket!.code}/resend`,
      headers: bearer(staff.key),
    });
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({ data: { accepted: true } });
    const mail = await waitForMail(api.env.SANDBOX_URL, email, (m) => m.subject.includes('(resent)'));
    expect(mail.text).toContain(ticket!.code);
    expect(mail.attachments.filter((a) => a.contentType === 'image/png')).toHaveLength(1);
  });

  test('public resend answers 202 whether or not the code exists, and is rate limited per client', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const email = uniqueEmail('public-resend');
    const sale = (
      await api.request({
        method: 'POST',
        url: '/api/v1/sales',
        headers: bearer(organizer.key),
        payload: {
          eventDateId: event.eventDateId,
          ticketTypeId: event.ticketTypeId,
          quantity: 1,
          complimentary: true,
          buyer: { name: 'Public Resend', email },
        },
      })
    ).json().data;
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    const from = (ip: string, code: string) =>
      api.request({ method: 'POST', url: `/api/public/tickets/${code}/resend`, remoteAddress: ip });
    const known = await from('198.51.100.10', ticket!.code);
    const unknown = await from('198.51.100.10', 'AAAAAAAAAAAAAAAAAAAAAAAA');
    const malformed = await from('198.51.100.10', 'nope');
    for (const response of [known, unknown, malformed]) {
      expect(response.statusCode).toBe(202);
      expect(response.json()).toEqual({ data: { accepted: true } });
    }
    await waitForMail(api.env.SANDBOX_URL, email, (m) => m.text.includes(ticket!.code));
    const burst = [];
    for (let i = 0; i < 4; i += 1) burst.push(await from('198.51.100.10', 'AAAAAAAAAAAAAAAAAAAAAAAA'));
    expect(burst.map((r) => r.statusCode)).toEqual([202, 202, 429, 429]);
    expect(burst[3]!.headers['retry-after']).toBeDefined();
    // Another client is not affected.
    expect((await from('198.51.100.11', ticket!.code)).statusCode).toBe(202);
  });
});

describe("the buyer's tickets (/customer/tickets)", () => {
  test('lists and shows the tickets of a paid purchase; cancelling it is refused (already paid)', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'my-tickets', 2);
    await payByCard(api, token, order.saleId, 'APRO');
    const list = await api.request({ method: 'GET', url: '/api/v1/customer/tickets?limit=1', headers: session(token) });
    expect(list.statusCode).toBe(200);
    expect(list.json().data).toHaveLength(1);
    expect(list.json().page.hasMore).toBe(true);
    const next = await api.request({
      method: 'GET',
      url: `/api/v1/customer/tickets?limit=1&cursor=${list.json().page.nextCursor}`,
      headers: session(token),
    });
    expect(next.json().data).toHaveLength(1);
    expect(next.json().data[0].id).not.toBe(list.json().data[0].id);
    const ticket = list.json().data[0];
    expect(ticket).toMatchObject({
      saleId: order.saleId,
      saleReference: order.reference,
      status: 'VALID',
      valid: true,
      saleStatus: 'CONFIRMED',
    });
    const one = await api.request({
      method: 'GET',
      url: `/api/v1/customer/tickets/${ticket.id}`,
      headers: session(token),
    });
    expect(one.statusCode).toBe(200);
    expect(one.json().data.code).toBe(ticket.code);
    const cancel = await api.request({
      method: 'POST',
      url: `/api/v1/customer/tickets/${ticket.id}/cancel`,
      headers: session(token),
    });
    expect(cancel.statusCode).toBe(409);
    expect(cancel.json().error).toMatchObject({ code: 'INVALID_STATE', details: { reason: 'already_paid' } });
    // Someone else's session sees nothing.
    const { token: stranger } = await reserve(api, event, 'stranger');
    expect(
      (await api.request({ method: 'GET', url: `/api/v1/customer/tickets/${ticket.id}`, headers: session(stranger) }))
        .statusCode,
    ).toBe(404);
  });

  test('an unpaid purchase is cancelled by its buyer: released through its checkout, stock back', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'buyer-cancel', 2);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(3);
    const cancel = await api.request({
      method: 'POST',
      url: `/api/v1/customer/tickets/${order.saleId}/cancel`,
      headers: session(token),
    });
    expect(cancel.statusCode).toBe(200);
    expect(cancel.json().data).toEqual({ saleId: order.saleId, reference: order.reference, status: 'ABANDONED' });
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
    expect((await saleOf(api, organizer, order.saleId)).status).toBe('ABANDONED');
  });
});
