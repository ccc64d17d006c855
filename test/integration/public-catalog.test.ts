import { randomInt, randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { createEventFixture, daysFromNow, holdStock, inventoryOf } from '../support/catalog-fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  // The per-IP limit has its own test file; here it is raised so paging the whole catalog never meets it.
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(async () => {
  await api.close();
});

const em = () => api.orm.em.fork();
/** A client address of its own, so this file shares no rate-limit counter with other test files. */
const clientIp = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
const get = (url: string, options: Partial<InjectOptions> = {}) =>
  api.request({ method: 'GET', url, remoteAddress: clientIp, ...options });

interface Summary {
  id: string;
  slug: string;
  nextDate: { id: string; startsAt: string } | null;
  priceFrom: number | null;
}

/** Every event of the public catalog, following the cursor from the first page to the last. */
async function wholeCatalog(limit: number): Promise<Summary[]> {
  const rows: Summary[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 1000; page++) {
    const response = await get(`/api/public/events?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.data.length).toBeLessThanOrEqual(limit);
    rows.push(...body.data);
    if (!body.page.hasMore) {
      expect(body.page.nextCursor).toBeNull();
      return rows;
    }
    cursor = body.page.nextCursor;
  }
  throw new Error('the catalog did not end');
}

const upcoming = (types = [{ price: 10_000, capacity: 10 }]) => ({ startsAt: daysFromNow(10), types });

describe('public catalog (GET /api/public/events)', () => {
  test('lists only PUBLISHED, non-deleted events with an upcoming date whose sales are open or about to open', async () => {
    const listed = await createEventFixture(em(), { dates: [upcoming()] });
    const salesNotYetOpen = await createEventFixture(em(), {
      dates: [{ ...upcoming(), salesStartAt: daysFromNow(2), salesEndAt: daysFromNow(9) }],
    });
    const hidden = await Promise.all([
      createEventFixture(em(), { status: 'DRAFT', dates: [upcoming()] }),
      createEventFixture(em(), { status: 'CANCELLED', dates: [upcoming()] }),
      createEventFixture(em(), { deleted: true, dates: [upcoming()] }),
      createEventFixture(em(), { dates: [{ startsAt: daysFromNow(-1), types: [{ price: 1000, capacity: 5 }] }] }),
      createEventFixture(em(), { dates: [{ ...upcoming(), salesEndAt: daysFromNow(-1) }] }),
      createEventFixture(em(), { dates: [{ ...upcoming(), cancelled: true }] }),
      createEventFixture(em(), { dates: [{ ...upcoming(), deleted: true }] }),
    ]);
    const ids = (await wholeCatalog(100)).map((row) => row.id);
    expect(ids).toEqual(expect.arrayContaining([listed.eventId, salesNotYetOpen.eventId]));
    for (const event of hidden) expect(ids).not.toContain(event.eventId);
  });

  test('limit and cursor page through the catalog newest first, without repeating or skipping an event', async () => {
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await createEventFixture(em(), { dates: [upcoming()] })).eventId);
    const paged = (await wholeCatalog(2)).map((row) => row.id);
    expect(new Set(paged).size).toBe(paged.length);
    expect([...paged].sort().reverse()).toEqual(paged);
    const ours = paged.filter((id) => created.includes(id));
    expect(ours).toEqual([...created].reverse());
    const unpaged = (await wholeCatalog(100)).map((row) => row.id);
    expect(unpaged.filter((id) => created.includes(id))).toEqual(ours);
  });

  test('a cursor the list did not return is 422, a limit above 100 is 422', async () => {
    for (const url of ['/api/public/events?cursor=not-a-cursor', '/api/public/events?limit=101']) {
      const response = await get(url);
      expect(response.statusCode).toBe(422);
      expect(response.json().error.code).toBe('VALIDATION_FAILED');
    }
  });

  test('a row shows venue, the next date still on sale and priceFrom = the lowest buyerTotal open to every buyer', async () => {
    const created = await createEventFixture(em(), {
      name: 'Festival de Jazz',
      description: 'Tres noches de jazz',
      imageUrl: 'https://cdn.example.test/jazz.jpg',
      workspace: { serviceFeeBps: 1000, serviceFeeFixed: 0 },
      venue: { name: 'Teatro Colón', city: 'Bogotá' },
      dates: [
        // Sales ended: neither the next date nor part of priceFrom.
        { startsAt: daysFromNow(3), salesEndAt: daysFromNow(-1), types: [{ price: 1_000, capacity: 5 }] },
        {
          startsAt: daysFromNow(7),
          types: [
            { price: 80_000, capacity: 5 },
            { price: 20_000, capacity: 5, membersOnly: true },
          ],
        },
        { startsAt: daysFromNow(14), types: [{ price: 50_000, capacity: 5 }] },
      ],
    });
    const response = await get(`/api/public/events/${created.slug}`);
    const row = (await wholeCatalog(100)).find((event) => event.id === created.eventId);
    expect(row).toEqual({
      id: created.eventId,
      slug: created.slug,
      name: 'Festival de Jazz',
      description: 'Tres noches de jazz',
      imageUrl: 'https://cdn.example.test/jazz.jpg',
      venue: { name: 'Teatro Colón', city: 'Bogotá' },
      nextDate: {
        id: created.dates[1]!.id,
        startsAt: expect.any(String),
        endsAt: null,
        timezone: 'America/Bogota',
      },
      // 50 000 + 10 % fee (5 000) + 19 % IVA on the fee (950); the cheaper members-only type does not count.
      priceFrom: 55_950,
      currency: 'COP',
      salesMode: 'INTERNAL',
      externalSalesUrl: null,
    });
    const { dates: _dates, ...detailSummary } = response.json().data;
    expect(detailSummary).toEqual(row);
  });

  test('the catalog may be cached for 30 seconds (Cache-Control: public, max-age=30)', async () => {
    const created = await createEventFixture(em(), { dates: [upcoming()] });
    for (const url of ['/api/public/events', `/api/public/events/${created.slug}`]) {
      expect((await get(url)).headers['cache-control']).toBe('public, max-age=30');
    }
  });
});

describe('public event (GET /api/public/events/{slug})', () => {
  test('returns the event with its upcoming dates only, earliest first, and each date’s sales window', async () => {
    const salesStartAt = daysFromNow(1);
    const created = await createEventFixture(em(), {
      venue: { name: 'Movistar Arena', city: 'Bogotá' },
      dates: [
        { startsAt: daysFromNow(20), label: 'Segunda función', types: [{ price: 1000, capacity: 1 }] },
        { startsAt: daysFromNow(-2), label: 'Pasada' },
        { startsAt: daysFromNow(5), label: 'Primera función', endsAt: daysFromNow(5.1), salesStartAt },
        { startsAt: daysFromNow(6), label: 'Cancelada', cancelled: true },
      ],
    });
    const response = await get(`/api/public/events/${created.slug}`);
    expect(response.statusCode).toBe(200);
    const event = response.json().data;
    expect(event.dates.map((date: { label: string }) => date.label)).toEqual(['Primera función', 'Segunda función']);
    expect(event.dates[0]).toEqual({
      id: created.dates[2]!.id,
      label: 'Primera función',
      startsAt: expect.any(String),
      endsAt: expect.any(String),
      timezone: 'America/Bogota',
      venueName: 'Movistar Arena',
      city: 'Bogotá',
      salesStartAt: salesStartAt.toISOString(),
      salesEndAt: null,
      salesStatus: 'UPCOMING',
    });
    expect(event.dates[1].salesStatus).toBe('OPEN');
    expect(event.nextDate.id).toBe(created.dates[2]!.id);
  });

  test('draft, cancelled, deleted and unknown events are 404 on the event and its availability', async () => {
    const draft = await createEventFixture(em(), { status: 'DRAFT', dates: [upcoming()] });
    const cancelled = await createEventFixture(em(), { status: 'CANCELLED', dates: [upcoming()] });
    const deleted = await createEventFixture(em(), { deleted: true, dates: [upcoming()] });
    for (const slug of [draft.slug, cancelled.slug, deleted.slug, `nope-${randomUUID()}`]) {
      for (const url of [`/api/public/events/${slug}`, `/api/public/events/${slug}/availability`]) {
        const response = await get(url);
        expect(response.statusCode).toBe(404);
        expect(response.json().error.code).toBe('NOT_FOUND');
      }
    }
  });

  test('a published event whose dates are all past is still readable, with no dates and no next date', async () => {
    const created = await createEventFixture(em(), { dates: [{ startsAt: daysFromNow(-3) }] });
    const response = await get(`/api/public/events/${created.slug}`);
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({ dates: [], nextDate: null, priceFrom: null });
  });
});

describe('public availability (GET /api/public/events/{slug}/availability)', () => {
  test('available = capacity − sold − reserved: a PENDING sale reserves, a CONFIRMED sale sells', async () => {
    const created = await createEventFixture(em(), { dates: [upcoming([{ price: 30_000, capacity: 10 }])] });
    const date = created.dates[0]!;
    const typeId = date.typeIds[0]!;
    const base = {
      workspaceId: created.workspaceId,
      eventId: created.eventId,
      eventDateId: date.id,
      ticketTypeId: typeId,
    };
    await holdStock(em(), { ...base, quantity: 3, status: 'PENDING' });
    await holdStock(em(), { ...base, quantity: 2, status: 'CONFIRMED' });

    expect(await inventoryOf(em(), typeId)).toEqual({ available: 5, sold: 2, reserved: 3 });

    const response = await get(`/api/public/events/${created.slug}/availability`);
    expect(response.statusCode).toBe(200);
    const type = response.json().data.dates[0].ticketTypes[0];
    expect(type).toMatchObject({ id: typeId, available: 10 - 2 - 3, soldOut: false });
  });

  test('a ticket type with every unit sold or reserved shows available 0 and soldOut true', async () => {
    const created = await createEventFixture(em(), { dates: [upcoming([{ price: 30_000, capacity: 4 }])] });
    const date = created.dates[0]!;
    const base = {
      workspaceId: created.workspaceId,
      eventId: created.eventId,
      eventDateId: date.id,
      ticketTypeId: date.typeIds[0]!,
    };
    await holdStock(em(), { ...base, quantity: 1, status: 'PENDING' });
    await holdStock(em(), { ...base, quantity: 3, status: 'CONFIRMED' });
    const response = await get(`/api/public/events/${created.slug}/availability`);
    expect(response.json().data.dates[0].ticketTypes[0]).toMatchObject({ available: 0, soldOut: true });
  });

  test('only upcoming, live dates and live ticket types are listed', async () => {
    const created = await createEventFixture(em(), {
      dates: [
        { startsAt: daysFromNow(-1), types: [{ price: 1000, capacity: 5 }] },
        {
          startsAt: daysFromNow(4),
          types: [
            { name: 'General', price: 1000, capacity: 5 },
            { name: 'Borrado', price: 1000, capacity: 5, deleted: true },
          ],
        },
        { startsAt: daysFromNow(5), cancelled: true, types: [{ price: 1000, capacity: 5 }] },
        { startsAt: daysFromNow(6), deleted: true, types: [{ price: 1000, capacity: 5 }] },
      ],
    });
    const response = await get(`/api/public/events/${created.slug}/availability`);
    const data = response.json().data;
    expect(data.slug).toBe(created.slug);
    expect(data.dates.map((date: { id: string }) => date.id)).toEqual([created.dates[1]!.id]);
    expect(data.dates[0].ticketTypes.map((type: { name: string }) => type.name)).toEqual(['General']);
  });

  test('buyerTotal = price + buyerServiceFee + iva for fee paid, fee absorbed, numbered and free types', async () => {
    const created = await createEventFixture(em(), {
      workspace: { serviceFeeBps: 1000, serviceFeeFixed: 500 },
      venue: { name: 'Estadio El Campín', city: 'Bogotá' },
      dates: [
        {
          startsAt: daysFromNow(30),
          label: 'Noche 1',
          types: [
            { name: 'General', price: 50_000, capacity: 100 },
            { name: 'Absorbida', price: 50_000, capacity: 100, feeAbsorbedByOrganizer: true },
            {
              name: 'Platea numerada',
              price: 50_000,
              capacity: 100,
              feeAbsorbedByOrganizer: true,
              seatMapCategoryKey: 'platea',
              seatingSurcharge: 2_000,
            },
            {
              name: 'Palco numerado',
              price: 40_000,
              capacity: 100,
              seatMapCategoryKey: 'palco',
              serviceFeeBps: 500,
              seatingSurcharge: 3_000,
              maxPerOrder: 4,
            },
            { name: 'Cortesía', price: 0, capacity: 100 },
            { name: 'Socios', price: 30_000, capacity: 100, membersOnly: true },
          ],
        },
      ],
    });
    const response = await get(`/api/public/events/${created.slug}/availability`);
    expect(response.statusCode).toBe(200);
    const [date] = response.json().data.dates;
    expect(date).toMatchObject({
      id: created.dates[0]!.id,
      label: 'Noche 1',
      endsAt: null,
      timezone: 'America/Bogota',
      venueName: 'Estadio El Campín',
      city: 'Bogotá',
    });
    const byName = Object.fromEntries(date.ticketTypes.map((type: { name: string }) => [type.name, type]));
    // Fee paid by the buyer: 10 % of 50 000 + 500 = 5 500; IVA 19 % of 5 500 = 1 045.
    expect(byName.General).toEqual({
      id: created.dates[0]!.typeIds[0],
      name: 'General',
      description: null,
      price: 50_000,
      buyerServiceFee: 5_500,
      seatingSurcharge: 0,
      iva: 1_045,
      buyerTotal: 56_545,
      seatsioCategoryKey: null,
      currency: 'COP',
      maxPerOrder: 10,
      available: 100,
      soldOut: false,
    });
    // Absorbed by the organizer, not numbered: the buyer pays the price only.
    expect(byName.Absorbida).toMatchObject({ buyerServiceFee: 0, seatingSurcharge: 0, iva: 0, buyerTotal: 50_000 });
    // Absorbed but numbered: the seating surcharge is still the buyer's, with its IVA (19 % of 2 000 = 380).
    expect(byName['Platea numerada']).toMatchObject({
      buyerServiceFee: 2_000,
      seatingSurcharge: 2_000,
      iva: 380,
      buyerTotal: 52_380,
      seatsioCategoryKey: 'platea',
      availableSeats: [],
    });
    // Type override 5 % + inherited fixed 500 + surcharge 3 000 = 5 500; IVA 1 045.
    expect(byName['Palco numerado']).toMatchObject({
      buyerServiceFee: 5_500,
      seatingSurcharge: 3_000,
      iva: 1_045,
      buyerTotal: 46_545,
      seatsioCategoryKey: 'palco',
      maxPerOrder: 4,
    });
    // A free ticket is free: no fee, no surcharge, no IVA.
    expect(byName.Cortesía).toMatchObject({ price: 0, buyerServiceFee: 0, iva: 0, buyerTotal: 0 });
    // Members-only types are listed (POST /orders rejects them).
    expect(byName.Socios).toMatchObject({ price: 30_000, buyerTotal: 30_000 + 3_500 + 665 });
    for (const type of date.ticketTypes) {
      expect(type.buyerTotal).toBe(type.price + type.buyerServiceFee + type.iva);
      expect('availableSeats' in type).toBe(type.seatsioCategoryKey !== null);
    }
  });

  test('availability is never cached (Cache-Control: no-store)', async () => {
    const created = await createEventFixture(em(), { dates: [upcoming()] });
    const response = await get(`/api/public/events/${created.slug}/availability`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
  });

  test('needs no API key and ignores one sent', async () => {
    const created = await createEventFixture(em(), { dates: [upcoming()] });
    const response = await get(`/api/public/events/${created.slug}/availability`, {
      headers: { authorization: 'Bearer tkt_live_not-a-real-key' },
    });
    expect(response.statusCode).toBe(200);
  });
});
