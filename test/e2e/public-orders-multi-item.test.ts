/**
 * Several items per storefront order (contract 4.18 "all from a single organizer", 7.3 MULTIPLE_ORGS and
 * MIXED_CURRENCY): one sale of one event date holds every item, its stock is taken in one transaction, all or nothing,
 * and concurrent orders naming the same types in opposite orders neither deadlock nor oversell.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { replayHistories, showHistory, writeHistory } from '../replay/recorder.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  confirmAtBank,
  eventually,
  type PublishedEvent,
  publishEvent,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { seatedEvent } from '../support/seats.js';
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

/** A second ticket type on the event's date, created through the organizer API like the first. */
async function addType(
  target: TestApi,
  event: PublishedEvent,
  fields: { name: string; price: number; capacity: number },
): Promise<string> {
  const response = await target.request({
    method: 'POST',
    url: '/api/v1/ticket-types',
    headers: bearer(organizer.key),
    payload: { eventId: event.eventId, eventDateId: event.eventDateId, maxPerOrder: 10, ...fields },
  });
  if (response.statusCode !== 201 && response.statusCode !== 200) throw new Error(response.body);
  return response.json().data.id;
}

/** An event whose one date sells two general-admission types: A (published with the event) and B (added after). */
async function twoTypeEvent(target: TestApi, capacityA = 10, capacityB = 10) {
  const event = await publishEvent(target, organizer, { capacity: capacityA, price: 40_000 });
  const b = await addType(target, event, { name: 'VIP', price: 90_000, capacity: capacityB });
  return { event, a: event.ticketTypeId, b };
}

const buyer = () => ({
  buyerEmail: `multi-${Math.random().toString(36).slice(2, 9)}@buyers.test`,
  buyerName: 'Comprador Varios',
});
const place = (target: TestApi, items: Array<{ ticketTypeId: string; quantity: number; seats?: string[] }>) =>
  target.request({ method: 'POST', url: '/api/public/orders', payload: { ...buyer(), items } });
const available = async (target: TestApi, ticketTypeId: string): Promise<number> =>
  (
    await target.request({ method: 'GET', url: `/api/v1/ticket-types/${ticketTypeId}`, headers: bearer(organizer.key) })
  ).json().data.available;
const control = (path: string, body: unknown) =>
  fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('several items in one storefront order', () => {
  test('two ticket types make one PENDING sale with two items, charged the sum of the quoted buyerTotals; paid, both get tickets', async () => {
    const { event, a, b } = await twoTypeEvent(api);
    const quote = (await api.request({ method: 'GET', url: `/api/public/events/${event.slug}/availability` })).json()
      .data;
    const types = quote.dates[0].ticketTypes as Array<{ id: string; buyerTotal: number }>;
    const unit = (id: string) => types.find((type) => type.id === id)!.buyerTotal;

    const created = await place(api, [
      { ticketTypeId: a, quantity: 2 },
      { ticketTypeId: b, quantity: 1 },
    ]);
    expect(created.statusCode).toBe(200);
    const order = created.json().data;
    expect(order).toMatchObject({ status: 'pending', currency: 'COP', total: 2 * unit(a) + unit(b) });
    expect(await available(api, a)).toBe(8);
    expect(await available(api, b)).toBe(9);

    const sale = (
      await api.request({ method: 'GET', url: `/api/v1/sales/${order.orderId}`, headers: bearer(organizer.key) })
    ).json().data;
    expect(sale.status).toBe('PENDING');
    expect(sale.total).toBe(order.total);
    expect(sale.subtotal - sale.discountAmount + sale.serviceFee + sale.iva).toBe(sale.total);
    expect(
      (sale.items as Array<{ ticketTypeId: string; quantity: number }>)
        .map((item) => [item.ticketTypeId, item.quantity])
        .sort(),
    ).toEqual(
      [
        [a, 2],
        [b, 1],
      ].sort(),
    );

    await confirmAtBank(order.checkoutUrl, 'multi@buyers.test');
    await control('/gateway-a/pse/settle', { reference: order.reference, outcome: 'approved' });
    const paid = await eventually(
      async () => (await api.request({ method: 'GET', url: `/api/public/orders/${order.orderId}` })).json().data,
      (o) => o.status === 'paid',
    );
    const perType: Record<string, number> = {};
    for (const ticket of paid.tickets as Array<{ ticketTypeId: string }>) {
      perType[ticket.ticketTypeId] = (perType[ticket.ticketTypeId] ?? 0) + 1;
    }
    expect(perType).toEqual({ [a]: 2, [b]: 1 });

    // The reserve update now carries an items list: its execution replays, and with RECORD_WORKFLOW_HISTORIES=1 it
    // becomes a committed fixture that later workflow changes must keep replaying.
    const scratch = mkdtempSync(join(tmpdir(), 'multi-item-history-'));
    try {
      const file = writeHistory(
        showHistory(api.env.TEMPORAL_ADDRESS, checkoutWorkflowId(order.orderId)),
        'checkout-public-multi-item-paid',
        scratch,
      );
      expect(replayHistories([file]).map((result) => result.ok)).toEqual([true]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);

  test('one item sold out: 409 sold_out naming that type, and nothing of the other item is reserved', async () => {
    // B is created after A, so it has the higher id and is taken second: A's units were already taken when B
    // came up short, and must have gone back with the rolled-back transaction.
    const { a, b } = await twoTypeEvent(api, 10, 1);
    const refused = await place(api, [
      { ticketTypeId: b, quantity: 2 },
      { ticketTypeId: a, quantity: 3 },
    ]);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.details).toMatchObject({ reason: 'sold_out', ticketTypeId: b });
    expect(await available(api, a)).toBe(10);
    expect(await available(api, b)).toBe(1);
  });

  test('an order left unpaid expires and every item returns to stock', async () => {
    const shortApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '2500', PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
    try {
      const { a, b } = await twoTypeEvent(shortApi, 5, 5);
      const created = await place(shortApi, [
        { ticketTypeId: a, quantity: 2 },
        { ticketTypeId: b, quantity: 3 },
      ]);
      expect(created.statusCode).toBe(200);
      expect([await available(shortApi, a), await available(shortApi, b)]).toEqual([3, 2]);
      const orderId = created.json().data.orderId;
      await eventually(
        async () => (await shortApi.request({ method: 'GET', url: `/api/public/orders/${orderId}` })).json().data,
        (o) => o.status === 'expired',
      );
      await eventually(
        async () => [await available(shortApi, a), await available(shortApi, b)],
        (units) => units[0] === 5 && units[1] === 5,
      );
    } finally {
      await shortApi.close();
    }
  });

  test('tickets from two organizers: 409 MULTIPLE_ORGS, and nothing is reserved', async () => {
    const other = await createOrganizer(api.orm.em.fork());
    const mine = await publishEvent(api, organizer, { capacity: 5 });
    const theirs = await publishEvent(api, other, { capacity: 5 });
    const response = await place(api, [
      { ticketTypeId: mine.ticketTypeId, quantity: 1 },
      { ticketTypeId: theirs.ticketTypeId, quantity: 1 },
    ]);
    expect(response.statusCode).toBe(409);
    expect(response.json().error.code).toBe('MULTIPLE_ORGS');
    expect(await available(api, mine.ticketTypeId)).toBe(5);
  });

  test('tickets in two currencies: 409 MIXED_CURRENCY', async () => {
    const { a, b } = await twoTypeEvent(api);
    // No API changes a type's currency (it is the workspace's when the type is created); a type priced before the
    // workspace changed currency is the case this stands for.
    await api.orm.em.fork().execute("update ticket_types set currency = 'USD' where id = ?", [b]);
    const response = await place(api, [
      { ticketTypeId: a, quantity: 1 },
      { ticketTypeId: b, quantity: 1 },
    ]);
    expect(response.statusCode).toBe(409);
    expect(response.json().error.code).toBe('MIXED_CURRENCY');
    expect(await available(api, a)).toBe(10);
  });

  test('tickets of two dates of one organizer: 422 naming items, one order per date', async () => {
    const first = await publishEvent(api, organizer, { capacity: 5 });
    const second = await publishEvent(api, organizer, { capacity: 5 });
    const response = await place(api, [
      { ticketTypeId: first.ticketTypeId, quantity: 1 },
      { ticketTypeId: second.ticketTypeId, quantity: 1 },
    ]);
    expect(response.statusCode).toBe(422);
    const error = response.json().error;
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details.fields).toEqual([
      { field: 'body.items', message: expect.stringMatching(/one order per date/) },
    ]);
    expect(await available(api, first.ticketTypeId)).toBe(5);
  });

  test('the same ticket type twice in one order: 422 naming items', async () => {
    const { a } = await twoTypeEvent(api);
    const response = await place(api, [
      { ticketTypeId: a, quantity: 1 },
      { ticketTypeId: a, quantity: 2 },
    ]);
    expect(response.statusCode).toBe(422);
    expect(response.json().error.details.fields[0].field).toBe('body.items');
    expect(await available(api, a)).toBe(10);
  });

  test('each item keeps its own rules: over maxPerOrder on one item refuses the whole order', async () => {
    const { a, b } = await twoTypeEvent(api);
    const response = await place(api, [
      { ticketTypeId: a, quantity: 1 },
      { ticketTypeId: b, quantity: 11 },
    ]);
    expect(response.statusCode).toBe(409);
    expect(response.json().error.details).toMatchObject({ reason: 'max_per_order', ticketTypeId: b });
    expect(await available(api, a)).toBe(10);
  });

  test('numbered tickets are sold in one-item orders only: a numbered type with another item is 422', async () => {
    const seated = await seatedEvent(api, organizer);
    const general = await addType(api, seated, { name: 'General', price: 20_000, capacity: 5 });
    const token = await signInBuyer(api, `seated-multi-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
    const response = await api.request({
      method: 'POST',
      url: '/api/public/orders',
      headers: session(token),
      payload: {
        ...buyer(),
        items: [
          { ticketTypeId: seated.ticketTypeId, quantity: 1, seats: ['A-1'] },
          { ticketTypeId: general, quantity: 1 },
        ],
      },
    });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.details.fields[0]).toMatchObject({
      field: 'body.items',
      message: expect.stringMatching(/one-item orders/),
    });
    expect(await available(api, general)).toBe(5);
  });

  test('many concurrent orders naming two types in opposite orders: no deadlock, no 5xx, no oversell', async () => {
    // 16 units spread 2 per stock row and 3 units per item: every take locks all rows of its type, the case where
    // taking types in the order the buyer listed them would deadlock.
    const { a, b } = await twoTypeEvent(api, 16, 16);
    const deadlocks = async (): Promise<number> => {
      const rows = await api.orm.em
        .fork()
        .execute<{ deadlocks: string }[]>('select deadlocks from pg_stat_database where datname = current_database()');
      return Number(rows[0]?.deadlocks ?? 0);
    };
    const before = await deadlocks();
    const responses = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        place(
          api,
          i % 2 === 0
            ? [
                { ticketTypeId: a, quantity: 3 },
                { ticketTypeId: b, quantity: 3 },
              ]
            : [
                { ticketTypeId: b, quantity: 3 },
                { ticketTypeId: a, quantity: 3 },
              ],
        ),
      ),
    );
    const statuses = responses.map((response) => response.statusCode);
    expect(statuses.filter((status) => status !== 200 && status !== 409)).toEqual([]);
    for (const refused of responses.filter((response) => response.statusCode === 409)) {
      expect(refused.json().error.details.reason).toBe('sold_out');
    }
    // 16 units, 3 per order: five orders fit, and each took both of its items or neither.
    const sold = statuses.filter((status) => status === 200).length;
    expect(sold).toBe(5);
    expect(await available(api, a)).toBe(16 - 3 * sold);
    expect(await available(api, b)).toBe(16 - 3 * sold);
    // Statistics reach pg_stat_database shortly after each transaction ends.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await api.orm.em.fork().execute('select pg_stat_clear_snapshot()');
    expect(await deadlocks()).toBe(before);
  });
});
