import type { EntityManager } from '@mikro-orm/postgresql';
import type { InjectOptions } from 'fastify';
import { quoteUnit, resolveFeePolicy } from '../../domain/pricing.js';
import { newId } from '../../entities/ids.js';
import { Sale } from '../../entities/index.js';
import { STOCK_SHARDS, takeStock } from '../../entities/stock.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let admin: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  admin = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

type Row = { id: string; [field: string]: unknown };

const call = (method: InjectOptions['method'], url: string, key: string, payload?: object) =>
  api.request({ method, url: `/api/v1${url}`, headers: bearer(key), ...(payload ? { payload } : {}) });

const created = async (response: Awaited<ReturnType<typeof call>>): Promise<Row> => {
  if (response.statusCode !== 201) throw new Error(`expected 201, got ${response.statusCode}: ${response.body}`);
  return response.json().data;
};

const fieldsOf = (response: Awaited<ReturnType<typeof call>>): string[] =>
  response.json().error.details.fields.map((f: { field: string }) => f.field);

/** An event with one date, through the API. */
async function eventWithDate(organizer: Organizer = admin) {
  const event = await call('POST', '/events', organizer.key, { name: 'Estéreo Picnic' }).then(created);
  const date = await call('POST', `/events/${event.id}/dates`, organizer.key, {
    startsAt: '2027-03-20T20:00:00Z',
  }).then(created);
  return { eventId: event.id, eventDateId: date.id };
}

const createType = (ids: { eventId: string; eventDateId: string }, payload: object = {}, key = admin.key) =>
  call('POST', '/ticket-types', key, { ...ids, name: 'General', price: 50000, capacity: 100, ...payload }).then(
    created,
  );

/**
 * Direct inventory fixture: a sale in `status` holding `quantity` units, taken with the same stock function checkout
 * uses (the sales API is not part of this suite).
 */
async function holdUnits(
  ids: { eventId: string; eventDateId: string },
  ticketTypeId: string,
  quantity: number,
  status: 'PENDING' | 'CONFIRMED',
) {
  await api.orm.em.fork().transactional(async (tx: EntityManager) => {
    const saleId = newId();
    tx.create(Sale, {
      id: saleId,
      workspace: admin.workspaceId,
      reference: `FT-${newId().slice(-10).toUpperCase()}`,
      status,
      origin: 'ORGANIZER',
      event: ids.eventId,
      eventDate: ids.eventDateId,
      buyerName: 'Ana Buyer',
      buyerEmail: 'ana@example.test',
      subtotal: 0,
      discountAmount: 0,
      serviceFee: 0,
      iva: 0,
      total: 0,
      currency: 'COP',
    });
    await tx.flush();
    expect(await takeStock(tx, { saleId, ticketTypeId, quantity })).not.toBeNull();
  });
}

describe('ticket types: create and read', () => {
  test('creating a ticket type creates its stock rows in the same transaction; currency comes from the workspace', async () => {
    const ids = await eventWithDate();
    const type = await createType(ids, { capacity: 250 });
    expect(type).toMatchObject({
      ...ids,
      name: 'General',
      description: null,
      price: 50000,
      currency: 'COP',
      capacity: 250,
      maxPerOrder: 10,
      membersOnly: false,
      presaleStartsAt: null,
      presaleEndsAt: null,
      numbered: false,
      seatMapCategoryKey: null,
      feeAbsorbedByOrganizer: false,
      serviceFeeBps: null,
      serviceFeeFixed: null,
      seatingSurcharge: 0,
      sortOrder: 0,
      sold: 0,
      reserved: 0,
      available: 250,
    });
    const stock = await api.orm.em
      .fork()
      .getConnection()
      .execute<{ shard: number; available: number }[]>(
        'select shard, available from ticket_stock where ticket_type_id = ? order by shard',
        [type.id],
      );
    expect(stock).toHaveLength(STOCK_SHARDS);
    expect(stock.reduce((sum, row) => sum + row.available, 0)).toBe(250);
    const fetched = await call('GET', `/ticket-types/${type.id}`, admin.readKey);
    expect(fetched.json().data).toEqual(type);
  });

  test('the buyer quote equals domain/pricing.ts: 12 345 at the workspace fee of 10 % → fee 1 235, IVA 235, total 13 815', async () => {
    const ids = await eventWithDate();
    const type = await createType(ids, { price: 12345 });
    // Hand-computed: round½↑(12 345 × 10 %) = 1 235 (1 234.5 rounds up); IVA round½↑(1 235 × 19 %) = 235 (234.65).
    expect(type).toMatchObject({ buyerServiceFee: 1235, iva: 235, buyerTotal: 13815 });
    const quote = quoteUnit({
      price: 12345,
      numbered: false,
      feePolicy: resolveFeePolicy(
        { serviceFeeBps: 1000, serviceFeeFixed: 0, feeAbsorbedByOrganizer: false, seatingSurcharge: 0 },
        { feeAbsorbedByOrganizer: false, seatingSurcharge: 0 },
      ),
    });
    expect({ buyerServiceFee: type.buyerServiceFee, iva: type.iva, buyerTotal: type.buyerTotal }).toEqual({
      buyerServiceFee: quote.buyerServiceFee,
      iva: quote.iva,
      buyerTotal: quote.buyerTotal,
    });
  });

  test('type overrides apply: 8 % + 500 fixed → fee 4 500, IVA 855, total 55 355; absorbed + numbered pays only the surcharge', async () => {
    const ids = await eventWithDate();
    const overridden = await createType(ids, { price: 50000, serviceFeeBps: 800, serviceFeeFixed: 500 });
    expect(overridden).toMatchObject({ buyerServiceFee: 4500, iva: 855, buyerTotal: 55355 });
    const seated = await createType(ids, {
      price: 50000,
      feeAbsorbedByOrganizer: true,
      seatMapCategoryKey: 'PALCO',
      seatingSurcharge: 2000,
    });
    // The organizer absorbs the 5 000 fee; the buyer pays the 2 000 surcharge and its IVA (380).
    expect(seated).toMatchObject({ numbered: true, buyerServiceFee: 2000, iva: 380, buyerTotal: 52380 });
    const free = await createType(ids, { price: 0 });
    expect(free).toMatchObject({ buyerServiceFee: 0, iva: 0, buyerTotal: 0 });
    const patched = await call('PATCH', `/ticket-types/${overridden.id}`, admin.key, {
      serviceFeeBps: null,
      serviceFeeFixed: null,
    });
    // Back on the workspace default: 10 % of 50 000 = 5 000, IVA 950.
    expect(patched.json().data).toMatchObject({
      serviceFeeBps: null,
      buyerServiceFee: 5000,
      iva: 950,
      buyerTotal: 55950,
    });
  });

  test('maxPerOrder is 1–30 (default 10); out of range is refused with 422 naming the field', async () => {
    const ids = await eventWithDate();
    for (const maxPerOrder of [0, 31]) {
      const response = await call('POST', '/ticket-types', admin.key, {
        ...ids,
        name: 'x',
        price: 1,
        capacity: 1,
        maxPerOrder,
      });
      expect(response.statusCode).toBe(422);
      expect(fieldsOf(response)).toEqual(['body.maxPerOrder']);
    }
    expect((await createType(ids, { maxPerOrder: 30 })).maxPerOrder).toBe(30);
  });

  test('eventDateId must be a date of eventId; eventId must be an event of the workspace (422)', async () => {
    const ids = await eventWithDate();
    const other = await eventWithDate();
    const mismatch = await call('POST', '/ticket-types', admin.key, {
      eventId: ids.eventId,
      eventDateId: other.eventDateId,
      name: 'x',
      price: 1,
      capacity: 1,
    });
    expect(mismatch.statusCode).toBe(422);
    expect(fieldsOf(mismatch)).toEqual(['body.eventDateId']);
    const unknown = await call('POST', '/ticket-types', admin.key, {
      eventId: newId(),
      eventDateId: ids.eventDateId,
      name: 'x',
      price: 1,
      capacity: 1,
    });
    expect(fieldsOf(unknown)).toEqual(['body.eventId']);
    const negative = await call('POST', '/ticket-types', admin.key, { ...ids, name: 'x', price: -1, capacity: 1.5 });
    expect(fieldsOf(negative).sort()).toEqual(['body.capacity', 'body.price']);
  });

  test('amounts the columns cannot hold are refused with 422 naming the field, never a 500', async () => {
    const ids = await eventWithDate();
    for (const field of ['price', 'serviceFeeFixed', 'seatingSurcharge']) {
      for (const amount of [10_000_001, 3_000_000_000, 1_000_000_000_000]) {
        const response = await call('POST', '/ticket-types', admin.key, {
          ...ids,
          name: 'Too dear',
          price: 1000,
          capacity: 10,
          [field]: amount,
        });
        expect(response.statusCode).toBe(422);
        expect(fieldsOf(response)).toEqual([`body.${field}`]);
      }
    }
    // The largest amounts are taken, and the largest order they allow still fits the sale's amount columns.
    const dearest = await createType(ids, {
      price: 10_000_000,
      serviceFeeBps: 10_000,
      serviceFeeFixed: 10_000_000,
      seatingSurcharge: 10_000_000,
      maxPerOrder: 30,
    });
    expect(dearest).toMatchObject({ price: 10_000_000 });
    // What checkout charges for 30 of them, the seating surcharge on top, fits a 32-bit sale amount.
    const unitCharged = (dearest.buyerTotal as number) + 10_000_000;
    expect(30 * unitCharged).toBeLessThanOrEqual(2 ** 31 - 1);
    const patched = await call('PATCH', `/ticket-types/${dearest.id}`, admin.key, { price: 3_000_000_000 });
    expect(patched.statusCode).toBe(422);
  });

  test('a presale window must end after it starts', async () => {
    const ids = await eventWithDate();
    const response = await call('POST', '/ticket-types', admin.key, {
      ...ids,
      name: 'Preventa',
      price: 1,
      capacity: 1,
      presaleStartsAt: '2027-01-02T00:00:00Z',
      presaleEndsAt: '2027-01-01T00:00:00Z',
    });
    expect(response.statusCode).toBe(422);
    expect(fieldsOf(response)).toEqual(['body.presaleEndsAt']);
  });

  test('a cancelled event gets no new ticket types (409)', async () => {
    const ids = await eventWithDate();
    await call('POST', `/events/${ids.eventId}/cancel`, admin.key);
    const response = await call('POST', '/ticket-types', admin.key, { ...ids, name: 'x', price: 1, capacity: 1 });
    expect(response.statusCode).toBe(409);
    expect(response.json().error.details.reason).toBe('event_cancelled');
  });
});

describe('ticket types: lists', () => {
  test('the list filters by event and eventDate and pages with limit and cursor', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const first = await eventWithDate(owner);
    const second = await eventWithDate(owner);
    const secondDate = await call('POST', `/events/${second.eventId}/dates`, owner.key, {
      startsAt: '2027-03-21T20:00:00Z',
    }).then(created);
    const a = await createType(first, { name: 'A' }, owner.key);
    const b = await createType(second, { name: 'B' }, owner.key);
    const c = await createType({ eventId: second.eventId, eventDateId: secondDate.id }, { name: 'C' }, owner.key);

    const all = await call('GET', '/ticket-types', owner.readKey);
    expect(all.json().data.map((t: Row) => t.name)).toEqual(['C', 'B', 'A']);
    const byEvent = await call('GET', `/ticket-types?event=${second.eventId}`, owner.readKey);
    expect(byEvent.json().data.map((t: Row) => t.id)).toEqual([c.id, b.id]);
    const byDate = await call('GET', `/ticket-types?eventDate=${first.eventDateId}`, owner.readKey);
    expect(byDate.json().data.map((t: Row) => t.id)).toEqual([a.id]);
    const page1 = await call('GET', '/ticket-types?limit=2', owner.readKey);
    expect(page1.json().page.hasMore).toBe(true);
    const page2 = await call('GET', `/ticket-types?limit=2&cursor=${page1.json().page.nextCursor}`, owner.readKey);
    expect(page2.json().data.map((t: Row) => t.id)).toEqual([a.id]);
    expect(page2.json().page.hasMore).toBe(false);
    const badFilter = await call('GET', '/ticket-types?event=abc', owner.readKey);
    expect(badFilter.statusCode).toBe(422);
    expect(fieldsOf(badFilter)).toEqual(['querystring.event']);
  });
});

describe('ticket types: capacity and stock', () => {
  test('sold and reserved come from the sales holding stock; available is what is left', async () => {
    const ids = await eventWithDate();
    const type = await createType(ids, { capacity: 10 });
    await holdUnits(ids, type.id, 3, 'CONFIRMED');
    await holdUnits(ids, type.id, 2, 'PENDING');
    const fetched = await call('GET', `/ticket-types/${type.id}`, admin.key);
    expect(fetched.json().data).toMatchObject({ capacity: 10, sold: 3, reserved: 2, available: 5 });
  });

  test('growing capacity adds stock; shrinking below sold + reserved is refused with 409 and changes nothing', async () => {
    const ids = await eventWithDate();
    const type = await createType(ids, { capacity: 10 });
    await holdUnits(ids, type.id, 8, 'PENDING');

    const refused = await call('PATCH', `/ticket-types/${type.id}`, admin.key, { capacity: 5, name: 'Renamed' });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.code).toBe('CONFLICT');
    const unchanged = (await call('GET', `/ticket-types/${type.id}`, admin.key)).json().data;
    expect(unchanged).toMatchObject({ name: 'General', capacity: 10, reserved: 8, available: 2 });

    const grown = await call('PATCH', `/ticket-types/${type.id}`, admin.key, { capacity: 15 });
    expect(grown.json().data).toMatchObject({ capacity: 15, reserved: 8, available: 7 });
    const exact = await call('PATCH', `/ticket-types/${type.id}`, admin.key, { capacity: 8 });
    expect(exact.statusCode).toBe(200);
    expect(exact.json().data).toMatchObject({ capacity: 8, reserved: 8, available: 0 });
  });

  test('PATCH is partial: unrelated fields keep their values', async () => {
    const ids = await eventWithDate();
    const type = await createType(ids, { description: 'Acceso general', sortOrder: 3, membersOnly: true });
    const response = await call('PATCH', `/ticket-types/${type.id}`, admin.key, { price: 60000 });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({
      price: 60000,
      description: 'Acceso general',
      sortOrder: 3,
      membersOnly: true,
      capacity: 100,
      available: 100,
    });
  });
});

describe('ticket types: soft delete (contract 4.14)', () => {
  test('DELETE answers 200 with an object body; the type is gone from list and GET (404) but its row stays', async () => {
    const ids = await eventWithDate();
    const type = await createType(ids);
    const deleted = await call('DELETE', `/ticket-types/${type.id}`, admin.key);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ data: expect.objectContaining({ id: type.id, name: 'General' }) });
    expect((await call('GET', `/ticket-types/${type.id}`, admin.key)).statusCode).toBe(404);
    expect((await call('PATCH', `/ticket-types/${type.id}`, admin.key, { price: 1 })).statusCode).toBe(404);
    const list = await call('GET', `/ticket-types?event=${ids.eventId}`, admin.key);
    expect(list.json().data).toEqual([]);
    const rows = await api.orm.em
      .fork()
      .getConnection()
      .execute<{ deleted_at: Date | null }[]>('select deleted_at from ticket_types where id = ?', [type.id]);
    expect(rows[0]?.deleted_at).not.toBeNull();
  });
  test.each(['PENDING', 'CONFIRMED'] as const)(
    'a type a %s sale holds units of is not deleted: 409 INVALID_STATE as DELETE /events, and it stays on sale',
    async (status) => {
      const ids = await eventWithDate();
      const type = await createType(ids, { capacity: 20 });
      await holdUnits(ids, type.id, 3, status);
      const refused = await call('DELETE', `/ticket-types/${type.id}`, admin.key);
      expect(refused.statusCode).toBe(409);
      expect(refused.json().error).toMatchObject({
        code: 'INVALID_STATE',
        details: { reason: 'ticket_type_has_sales', sales: 1 },
      });
      const still = await call('GET', `/ticket-types/${type.id}`, admin.key);
      expect(still.statusCode).toBe(200);
      expect(still.json().data).toMatchObject({ available: 17 });
    },
  );

  test('a deleted type stops selling: its stock is gone, so a purchase that read it before the delete takes nothing', async () => {
    const ids = await eventWithDate();
    const type = await createType(ids, { capacity: 20 });
    expect((await call('DELETE', `/ticket-types/${type.id}`, admin.key)).statusCode).toBe(200);
    const taken = await api.orm.em.fork().transactional(async (tx: EntityManager) => {
      const saleId = newId();
      tx.create(Sale, {
        id: saleId,
        workspace: admin.workspaceId,
        reference: `FT-${newId().slice(-10).toUpperCase()}`,
        status: 'PENDING',
        origin: 'ORGANIZER',
        event: ids.eventId,
        eventDate: ids.eventDateId,
        buyerName: 'Ana Buyer',
        buyerEmail: 'ana@example.test',
        subtotal: 0,
        discountAmount: 0,
        serviceFee: 0,
        iva: 0,
        total: 0,
        currency: 'COP',
      });
      await tx.flush();
      return takeStock(tx, { saleId, ticketTypeId: type.id, quantity: 1 });
    });
    expect(taken).toBeNull();
  });

  test('a type deleted while sales held its units (before the rule) stays in /reports/inventory with them', async () => {
    const ids = await eventWithDate();
    const kept = await createType(ids, { name: 'Kept', capacity: 20 });
    const deletedWithSales = await createType(ids, { name: 'Deleted with sales', capacity: 20 });
    const deletedUnsold = await createType(ids, { name: 'Deleted unsold', capacity: 20 });
    await holdUnits(ids, deletedWithSales.id, 6, 'CONFIRMED');
    await holdUnits(ids, deletedWithSales.id, 2, 'PENDING');
    expect((await call('DELETE', `/ticket-types/${deletedUnsold.id}`, admin.key)).statusCode).toBe(200);
    // As the API allowed before the rule: the row is soft-deleted with its units still held.
    await api.orm.em
      .fork()
      .getConnection()
      .execute('update ticket_types set deleted_at = now() where id = ?', [deletedWithSales.id]);

    const inventory = await call('GET', `/reports/inventory?event=${ids.eventId}&limit=100`, admin.key);
    expect(inventory.statusCode).toBe(200);
    const rows = inventory.json().data as Array<{ ticketTypeId: string; sold: number; reserved: number }>;
    expect(rows.map((row) => row.ticketTypeId).sort()).toEqual([kept.id, deletedWithSales.id].sort());
    expect(rows.find((row) => row.ticketTypeId === deletedWithSales.id)).toMatchObject({ sold: 6, reserved: 2 });
  });
});
