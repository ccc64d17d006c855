import type { InjectOptions } from 'fastify';
import { newId } from '../../entities/ids.js';
import { Sale } from '../../entities/index.js';
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

const createEvent = (key: string, payload: object = {}) =>
  call('POST', '/events', key, { name: 'Festival Cordillera', ...payload }).then(created);
const addDate = (key: string, eventId: string, payload: object = {}) =>
  call('POST', `/events/${eventId}/dates`, key, { startsAt: '2027-03-01T23:00:00Z', ...payload }).then(created);
const addTicketType = (key: string, eventId: string, eventDateId: string, payload: object = {}) =>
  call('POST', '/ticket-types', key, {
    eventId,
    eventDateId,
    name: 'General',
    price: 50000,
    capacity: 100,
    ...payload,
  }).then(created);

const fieldsOf = (response: Awaited<ReturnType<typeof call>>): string[] =>
  response.json().error.details.fields.map((f: { field: string }) => f.field);

const rawRow = async (table: 'events' | 'event_dates' | 'ticket_types', id: string) => {
  const rows = await api.orm.em
    .fork()
    .getConnection()
    .execute<{ deleted_at: Date | null; status?: string }[]>(`select * from ${table} where id = ?`, [id]);
  return rows[0];
};

/** A sale row on a date, as checkout would leave it (direct fixture: the sales API is not part of this suite). */
async function saleFixture(
  organizer: Organizer,
  eventId: string,
  eventDateId: string,
  status: 'PENDING' | 'CONFIRMED',
) {
  const em = api.orm.em.fork();
  const sale = em.create(Sale, {
    id: newId(),
    workspace: organizer.workspaceId,
    reference: `FT-${newId().slice(-10).toUpperCase()}`,
    status,
    origin: 'ORGANIZER',
    event: eventId,
    eventDate: eventDateId,
    buyerName: 'Ana Buyer',
    buyerEmail: 'ana@example.test',
    subtotal: 0,
    discountAmount: 0,
    serviceFee: 0,
    iva: 0,
    total: 0,
    currency: 'COP',
  });
  await em.flush();
  return sale.id;
}

describe('events: create, read, update', () => {
  test('an event is created as DRAFT with a slug generated from its name', async () => {
    const event = await createEvent(admin.key, { name: 'Rock al Parque: Edición Ñandú' });
    expect(event).toEqual({
      id: expect.any(String),
      name: 'Rock al Parque: Edición Ñandú',
      slug: expect.stringMatching(/^rock-al-parque-edicion-nandu(-[0-9a-f]{6})?$/),
      description: null,
      imageUrl: null,
      venueId: null,
      status: 'DRAFT',
      salesMode: 'INTERNAL',
      externalSalesUrl: null,
      gatewayBOnly: false,
      publishedAt: null,
      cancelledAt: null,
      cancellation: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const again = await createEvent(admin.key, { name: 'Rock al Parque: Edición Ñandú' });
    expect(again.slug).not.toBe(event.slug);
    expect(again.slug).toMatch(/^rock-al-parque-edicion-nandu/);
  });

  test('a slug used by an event of the same workspace, or by a published event anywhere, is 409 naming body.slug', async () => {
    const slug = `unique-${newId().slice(-8)}`;
    await createEvent(admin.key, { slug });
    const mine = await createEvent(admin.key, { name: 'Mine' });
    for (const duplicate of [
      await call('POST', '/events', admin.key, { name: 'Again', slug }),
      await call('PATCH', `/events/${mine.id}`, admin.key, { slug }),
    ]) {
      expect(duplicate.statusCode).toBe(409);
      expect(duplicate.json().error.code).toBe('ALREADY_EXISTS');
      expect(fieldsOf(duplicate)).toEqual(['body.slug']);
    }
    // A published event's slug is its public address: taken for everyone (saying so reveals nothing).
    const publicSlug = `public-${newId().slice(-8)}`;
    const published = await createEvent(admin.key, { slug: publicSlug });
    const date = await addDate(admin.key, published.id);
    await addTicketType(admin.key, published.id, date.id);
    expect((await call('POST', `/events/${published.id}/publish`, admin.key)).statusCode).toBe(200);
    const other = await createOrganizer(api.orm.em.fork());
    const taken = await call('POST', '/events', other.key, { name: 'Other', slug: publicSlug });
    expect(taken.statusCode).toBe(409);
    expect(fieldsOf(taken)).toEqual(['body.slug']);
  });

  test('another workspace’s unpublished slug can be neither probed nor squatted (issue 31)', async () => {
    const slug = `secret-tour-${newId().slice(-8)}`;
    const victim = await createOrganizer(api.orm.em.fork());
    const draft = await createEvent(victim.key, { name: 'Unannounced tour', slug });
    const prober = await createOrganizer(api.orm.em.fork());
    // The answer is the one a free slug gets: nothing says the victim's draft exists.
    const probe = await call('POST', '/events', prober.key, { name: 'Probe', slug });
    expect(probe.statusCode).toBe(201);
    expect(probe.json().data.slug).toBe(slug);
    const squat = await createOrganizer(api.orm.em.fork());
    const renamed = await createEvent(squat.key, { name: 'Squat' });
    expect((await call('PATCH', `/events/${renamed.id}`, squat.key, { slug })).statusCode).toBe(200);

    // The first to publish keeps the public address; the others learn it then, when it is public.
    const date = await addDate(victim.key, draft.id);
    await addTicketType(victim.key, draft.id, date.id);
    expect((await call('POST', `/events/${draft.id}/publish`, victim.key)).statusCode).toBe(200);
    const storefront = await api.request({ method: 'GET', url: `/api/public/events/${slug}` });
    expect(storefront.statusCode).toBe(200);
    expect(storefront.json().data.id).toBe(draft.id);
    const probeEvent = probe.json().data;
    const probeDate = await addDate(prober.key, probeEvent.id);
    await addTicketType(prober.key, probeEvent.id, probeDate.id);
    const late = await call('POST', `/events/${probeEvent.id}/publish`, prober.key);
    expect(late.statusCode).toBe(409);
    expect(late.json().error).toMatchObject({ code: 'ALREADY_EXISTS', details: { reason: 'slug_taken' } });
  });

  test('slugs the service uses are reserved (422 naming body.slug); a name that lands on one gets a suffix', async () => {
    for (const slug of ['admin', 'checkout', 'ticketing']) {
      const reserved = await call('POST', '/events', admin.key, { name: 'X', slug });
      expect(reserved.statusCode).toBe(422);
      expect(fieldsOf(reserved)).toEqual(['body.slug']);
    }
    const named = await createEvent(admin.key, { name: 'Admin' });
    expect(named.slug).toMatch(/^admin-[0-9a-f]{6}$/);
    const workspace = await call('POST', '/workspaces', admin.key, { name: 'Support', slug: 'support' });
    expect(workspace.statusCode).toBe(422);
  });

  test('a workspace slug another tenant uses is accepted: it is a label, so creating one reveals no tenant (issue 31)', async () => {
    const slug = `teatro-${newId().slice(-8)}`;
    const first = await call('POST', '/workspaces', admin.key, { name: 'Teatro', slug });
    expect(first.statusCode).toBe(201);
    const other = await createOrganizer(api.orm.em.fork());
    const second = await call('POST', '/workspaces', other.key, { name: 'Teatro', slug });
    expect(second.statusCode).toBe(201);
    expect(second.json().data.slug).toBe(slug);
  });

  test('venueId must name a venue of the same workspace (422 body.venueId otherwise)', async () => {
    const stranger = await createOrganizer(api.orm.em.fork());
    const foreignVenue = await call('POST', '/venues', stranger.key, { name: 'Not yours' }).then(created);
    for (const venueId of [foreignVenue.id, newId(), 'nope']) {
      const response = await call('POST', '/events', admin.key, { name: 'X', venueId });
      expect(response.statusCode).toBe(422);
      expect(fieldsOf(response)).toEqual(['body.venueId']);
    }
    const venue = await call('POST', '/venues', admin.key, { name: 'Mine' }).then(created);
    expect((await createEvent(admin.key, { venueId: venue.id })).venueId).toBe(venue.id);
  });

  test('an EXTERNAL event needs externalSalesUrl (422 body.externalSalesUrl)', async () => {
    const missing = await call('POST', '/events', admin.key, { name: 'Elsewhere', salesMode: 'EXTERNAL' });
    expect(missing.statusCode).toBe(422);
    expect(fieldsOf(missing)).toEqual(['body.externalSalesUrl']);
    const event = await createEvent(admin.key, {
      salesMode: 'EXTERNAL',
      externalSalesUrl: 'https://tickets.example.com/e/1',
    });
    const cleared = await call('PATCH', `/events/${event.id}`, admin.key, { externalSalesUrl: null });
    expect(cleared.statusCode).toBe(422);
  });

  test('PATCH is partial: only the fields sent change', async () => {
    const event = await createEvent(admin.key, { description: 'Primera edición', gatewayBOnly: true });
    const response = await call('PATCH', `/events/${event.id}`, admin.key, {
      name: 'Renamed',
      imageUrl: 'https://cdn.example.com/poster.jpg',
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({
      name: 'Renamed',
      slug: event.slug,
      description: 'Primera edición',
      gatewayBOnly: true,
      imageUrl: 'https://cdn.example.com/poster.jpg',
      status: 'DRAFT',
    });
  });
});

describe('events: lists', () => {
  test('the list pages newest first and filters by status and q', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const salsa = await createEvent(owner.key, { name: 'Salsa al Parque' });
    await createEvent(owner.key, { name: 'Jazz al Parque' });
    const cancelled = await createEvent(owner.key, { name: 'Ópera' });
    await call('POST', `/events/${cancelled.id}/cancel`, owner.key);

    const page1 = await call('GET', '/events?limit=2', owner.readKey);
    expect(page1.json().data.map((e: Row) => e.name)).toEqual(['Ópera', 'Jazz al Parque']);
    expect(page1.json().page.hasMore).toBe(true);
    const page2 = await call('GET', `/events?limit=2&cursor=${page1.json().page.nextCursor}`, owner.readKey);
    expect(page2.json().data.map((e: Row) => e.name)).toEqual(['Salsa al Parque']);
    expect(page2.json().page).toEqual({ nextCursor: null, hasMore: false });

    const byStatus = await call('GET', '/events?status=CANCELLED', owner.readKey);
    expect(byStatus.json().data.map((e: Row) => e.id)).toEqual([cancelled.id]);
    const byName = await call('GET', '/events?q=SALSA', owner.readKey);
    expect(byName.json().data.map((e: Row) => e.id)).toEqual([salsa.id]);
    const badStatus = await call('GET', '/events?status=LIVE', owner.readKey);
    expect(badStatus.statusCode).toBe(422);
    expect(fieldsOf(badStatus)).toEqual(['querystring.status']);
  });
});

describe('events: publish and cancel', () => {
  test('publishing an event without a date is refused with a clear message', async () => {
    const event = await createEvent(admin.key);
    const response = await call('POST', `/events/${event.id}/publish`, admin.key);
    expect(response.statusCode).toBe(409);
    expect(response.json().error).toMatchObject({ code: 'INVALID_STATE', details: { reason: 'no_dates' } });
    expect(response.json().error.message).toMatch(/at least one date/);
  });

  test('publishing an event whose dates have no ticket type is refused', async () => {
    const event = await createEvent(admin.key);
    await addDate(admin.key, event.id);
    const response = await call('POST', `/events/${event.id}/publish`, admin.key);
    expect(response.statusCode).toBe(409);
    expect(response.json().error.details.reason).toBe('no_ticket_types');
    expect(response.json().error.message).toMatch(/at least one ticket type/);
  });

  test('a deleted date does not count toward publishing', async () => {
    const event = await createEvent(admin.key);
    const date = await addDate(admin.key, event.id);
    await addTicketType(admin.key, event.id, date.id);
    expect((await call('DELETE', `/events/${event.id}/dates/${date.id}`, admin.key)).statusCode).toBe(200);
    const response = await call('POST', `/events/${event.id}/publish`, admin.key);
    expect(response.json().error.details.reason).toBe('no_dates');
  });

  test('an event with a date and a ticket type is published: PUBLISHED with publishedAt; publishing again changes nothing', async () => {
    const event = await createEvent(admin.key);
    const date = await addDate(admin.key, event.id);
    await addTicketType(admin.key, event.id, date.id);
    const published = await call('POST', `/events/${event.id}/publish`, admin.key);
    expect(published.statusCode).toBe(200);
    expect(published.json().data.status).toBe('PUBLISHED');
    expect(Date.parse(published.json().data.publishedAt)).not.toBeNaN();
    const again = await call('POST', `/events/${event.id}/publish`, admin.key);
    expect(again.statusCode).toBe(200);
    expect(again.json().data.publishedAt).toBe(published.json().data.publishedAt);
  });

  test('cancel keeps the record and its sales; repeating it changes nothing; a cancelled event cannot be published', async () => {
    const event = await createEvent(admin.key);
    const date = await addDate(admin.key, event.id);
    await addTicketType(admin.key, event.id, date.id);
    await call('POST', `/events/${event.id}/publish`, admin.key);
    const saleId = await saleFixture(admin, event.id, date.id, 'CONFIRMED');

    const cancelled = await call('POST', `/events/${event.id}/cancel`, admin.key);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json().data).toMatchObject({ id: event.id, status: 'CANCELLED', name: event.name });
    expect(cancelled.json().data.cancelledAt).toEqual(expect.any(String));
    const again = await call('POST', `/events/${event.id}/cancel`, admin.key);
    expect(again.json().data.cancelledAt).toBe(cancelled.json().data.cancelledAt);

    const fetched = await call('GET', `/events/${event.id}`, admin.key);
    expect(fetched.statusCode).toBe(200);
    expect(fetched.json().data.status).toBe('CANCELLED');
    expect((await call('GET', `/events/${event.id}/dates`, admin.key)).json().data).toHaveLength(1);
    // The record stays; undoing it is the event-cancellation workflow's work, in the background (tested on its own).
    const sale = await api.orm.em
      .fork()
      .getConnection()
      .execute<{ status: string }[]>('select status from sales where id = ?', [saleId]);
    expect(sale).toHaveLength(1);
    expect(['CONFIRMED', 'CANCELLED', 'REFUNDED']).toContain(sale[0]?.status);

    const publish = await call('POST', `/events/${event.id}/publish`, admin.key);
    expect(publish.statusCode).toBe(409);
    expect(publish.json().error.details.reason).toBe('event_cancelled');
    const newDate = await call('POST', `/events/${event.id}/dates`, admin.key, { startsAt: '2027-05-01T00:00:00Z' });
    expect(newDate.statusCode).toBe(409);
  });
});

describe('events: soft delete', () => {
  test('a deleted event is gone from the list and GET (404), with its dates and ticket types, but rows stay', async () => {
    const event = await createEvent(admin.key);
    const date = await addDate(admin.key, event.id);
    const type = await addTicketType(admin.key, event.id, date.id);
    const deleted = await call('DELETE', `/events/${event.id}`, admin.key);
    expect(deleted.statusCode).toBe(200);
    expect((await call('GET', `/events/${event.id}`, admin.key)).statusCode).toBe(404);
    expect((await call('GET', `/events/${event.id}/dates`, admin.key)).statusCode).toBe(404);
    expect((await call('GET', `/ticket-types/${type.id}`, admin.key)).statusCode).toBe(404);
    const list = await call('GET', '/events?limit=100', admin.key);
    expect(list.json().data.map((e: Row) => e.id)).not.toContain(event.id);
    const types = await call('GET', `/ticket-types?event=${event.id}`, admin.key);
    expect(types.json().data).toEqual([]);
    for (const [table, id] of [
      ['events', event.id],
      ['event_dates', date.id],
      ['ticket_types', type.id],
    ] as const) {
      const row = await rawRow(table, id);
      expect(row).toBeDefined();
      expect(row?.deleted_at).not.toBeNull();
    }
  });

  test('an event with a pending or confirmed sale cannot be deleted (409: cancel it instead)', async () => {
    const event = await createEvent(admin.key);
    const date = await addDate(admin.key, event.id);
    await saleFixture(admin, event.id, date.id, 'PENDING');
    const refused = await call('DELETE', `/events/${event.id}`, admin.key);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.details.reason).toBe('event_has_sales');
    expect(refused.json().error.message).toMatch(/cancel/);
    const refusedDate = await call('DELETE', `/events/${event.id}/dates/${date.id}`, admin.key);
    expect(refusedDate.statusCode).toBe(409);
    expect((await rawRow('events', event.id))?.deleted_at).toBeNull();
  });
});

describe('event dates', () => {
  test('POST with one date object answers that date, with the contract defaults', async () => {
    const event = await createEvent(admin.key);
    const response = await call('POST', `/events/${event.id}/dates`, admin.key, {
      startsAt: '2027-03-01T20:00:00-05:00',
      label: 'Noche 1',
    });
    expect(response.statusCode).toBe(201);
    expect(response.json().data).toEqual({
      id: expect.any(String),
      eventId: event.id,
      label: 'Noche 1',
      startsAt: '2027-03-02T01:00:00.000Z',
      endsAt: null,
      timezone: 'America/Bogota',
      salesStartAt: null,
      salesEndAt: null,
      paymentWindowMinutes: 30,
      virtualQueue: false,
      queueAdmissionsPerMinute: 60,
      queueMinActive: null,
      queueMaxActive: null,
      seatMapChartKey: null,
      createdAt: expect.any(String),
    });
  });

  test("a waiting room's floor and ceiling of active buyers are set, patched, and the floor never above the ceiling", async () => {
    const event = await createEvent(admin.key);
    const created = await call('POST', `/events/${event.id}/dates`, admin.key, {
      startsAt: '2027-03-01T20:00:00-05:00',
      virtualQueue: true,
      queueMinActive: 5,
      queueMaxActive: 300,
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().data).toMatchObject({ queueMinActive: 5, queueMaxActive: 300 });
    const refused = await call('POST', `/events/${event.id}/dates`, admin.key, {
      startsAt: '2027-03-01T20:00:00-05:00',
      queueMinActive: 50,
      queueMaxActive: 20,
    });
    expect(refused.statusCode).toBe(422);
    expect(JSON.stringify(refused.json().error.details)).toContain('body.queueMaxActive');
    const dateId = created.json().data.id;
    const lowered = await call('PATCH', `/events/${event.id}/dates/${dateId}`, admin.key, { queueMaxActive: 4 });
    expect(lowered.statusCode).toBe(422);
    const patched = await call('PATCH', `/events/${event.id}/dates/${dateId}`, admin.key, { queueMaxActive: null });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({ queueMinActive: 5, queueMaxActive: null });
  });

  test('POST with { dates: [...] } adds several dates at once', async () => {
    const event = await createEvent(admin.key);
    const response = await call('POST', `/events/${event.id}/dates`, admin.key, {
      dates: [
        { startsAt: '2027-03-01T23:00:00Z', label: 'Día 1' },
        { startsAt: '2027-03-02T23:00:00Z', label: 'Día 2', paymentWindowMinutes: 15, virtualQueue: true },
      ],
    });
    expect(response.statusCode).toBe(201);
    const dates = response.json().data;
    expect(dates.map((d: Row) => d.label)).toEqual(['Día 1', 'Día 2']);
    expect(dates[1]).toMatchObject({ paymentWindowMinutes: 15, virtualQueue: true });
    const list = await call('GET', `/events/${event.id}/dates`, admin.key);
    expect(list.json().data).toHaveLength(2);
  });

  test('a payment window below 10 minutes is refused with 422 naming body.paymentWindowMinutes', async () => {
    const event = await createEvent(admin.key);
    const single = await call('POST', `/events/${event.id}/dates`, admin.key, {
      startsAt: '2027-03-01T23:00:00Z',
      paymentWindowMinutes: 9,
    });
    expect(single.statusCode).toBe(422);
    expect(single.json().error.code).toBe('VALIDATION_FAILED');
    expect(fieldsOf(single)).toEqual(['body.paymentWindowMinutes']);
    const batch = await call('POST', `/events/${event.id}/dates`, admin.key, {
      dates: [{ startsAt: '2027-03-01T23:00:00Z' }, { startsAt: '2027-03-02T23:00:00Z', paymentWindowMinutes: 9 }],
    });
    expect(fieldsOf(batch)).toEqual(['body.dates.1.paymentWindowMinutes']);
    const fractional = await call('POST', `/events/${event.id}/dates`, admin.key, {
      startsAt: '2027-03-01T23:00:00Z',
      paymentWindowMinutes: 12.5,
    });
    expect(fieldsOf(fractional)).toEqual(['body.paymentWindowMinutes']);
    const date = await addDate(admin.key, event.id);
    const patch = await call('PATCH', `/events/${event.id}/dates/${date.id}`, admin.key, { paymentWindowMinutes: 9 });
    expect(patch.statusCode).toBe(422);
    expect(fieldsOf(patch)).toEqual(['body.paymentWindowMinutes']);
    expect((await call('GET', `/events/${event.id}/dates`, admin.key)).json().data).toHaveLength(1);
  });

  test('a missing startsAt, a bad zone and inverted windows are refused naming each field', async () => {
    const event = await createEvent(admin.key);
    const missing = await call('POST', `/events/${event.id}/dates`, admin.key, { label: 'x' });
    expect(fieldsOf(missing)).toEqual(['body.startsAt']);
    const zone = await call('POST', `/events/${event.id}/dates`, admin.key, {
      startsAt: '2027-03-01T23:00:00Z',
      timezone: 'Bogota',
    });
    expect(fieldsOf(zone)).toEqual(['body.timezone']);
    const inverted = await call('POST', `/events/${event.id}/dates`, admin.key, {
      startsAt: '2027-03-01T23:00:00Z',
      endsAt: '2027-03-01T22:00:00Z',
      salesStartAt: '2027-02-01T00:00:00Z',
      salesEndAt: '2027-01-01T00:00:00Z',
    });
    expect(inverted.statusCode).toBe(422);
    expect(fieldsOf(inverted)).toEqual(['body.endsAt', 'body.salesEndAt']);
  });

  test("a date's zone defaults to its venue's zone", async () => {
    const venue = await call('POST', '/venues', admin.key, { name: 'Madison', timezone: 'America/New_York' }).then(
      created,
    );
    const event = await createEvent(admin.key, { venueId: venue.id });
    expect((await addDate(admin.key, event.id)).timezone).toBe('America/New_York');
  });

  test('PATCH of a date is partial and checks the windows on the resulting values', async () => {
    const event = await createEvent(admin.key);
    const date = await addDate(admin.key, event.id, { endsAt: '2027-03-02T03:00:00Z', label: 'Noche' });
    const moved = await call('PATCH', `/events/${event.id}/dates/${date.id}`, admin.key, {
      seatMapChartKey: 'chart-1',
      timezone: 'Europe/Madrid',
    });
    expect(moved.statusCode).toBe(200);
    expect(moved.json().data).toMatchObject({
      label: 'Noche',
      endsAt: '2027-03-02T03:00:00.000Z',
      seatMapChartKey: 'chart-1',
      timezone: 'Europe/Madrid',
    });
    const inverted = await call('PATCH', `/events/${event.id}/dates/${date.id}`, admin.key, {
      startsAt: '2027-03-02T04:00:00Z',
    });
    expect(inverted.statusCode).toBe(422);
    expect(fieldsOf(inverted)).toEqual(['body.endsAt']);
  });

  test('a date is reachable only under its own event; a deleted date is gone from the list', async () => {
    const event = await createEvent(admin.key);
    const other = await createEvent(admin.key);
    const date = await addDate(admin.key, event.id);
    const wrongParent = await call('PATCH', `/events/${other.id}/dates/${date.id}`, admin.key, { label: 'x' });
    expect(wrongParent.statusCode).toBe(404);
    expect((await call('DELETE', `/events/${other.id}/dates/${date.id}`, admin.key)).statusCode).toBe(404);
    expect((await call('DELETE', `/events/${event.id}/dates/${date.id}`, admin.key)).statusCode).toBe(200);
    expect((await call('GET', `/events/${event.id}/dates`, admin.key)).json().data).toEqual([]);
    expect((await call('PATCH', `/events/${event.id}/dates/${date.id}`, admin.key, { label: 'x' })).statusCode).toBe(
      404,
    );
    expect((await rawRow('event_dates', date.id))?.deleted_at).not.toBeNull();
  });

  test('the dates list pages with limit and cursor', async () => {
    const event = await createEvent(admin.key);
    await call('POST', `/events/${event.id}/dates`, admin.key, {
      dates: [1, 2, 3].map((day) => ({ startsAt: `2027-04-0${day}T23:00:00Z`, label: `Día ${day}` })),
    });
    const first = await call('GET', `/events/${event.id}/dates?limit=2`, admin.key);
    expect(first.json().data).toHaveLength(2);
    expect(first.json().page.hasMore).toBe(true);
    const second = await call(
      'GET',
      `/events/${event.id}/dates?limit=2&cursor=${first.json().page.nextCursor}`,
      admin.key,
    );
    expect(second.json().data).toHaveLength(1);
    const seen = [...first.json().data, ...second.json().data].map((d: Row) => d.label).sort();
    expect(seen).toEqual(['Día 1', 'Día 2', 'Día 3']);
  });
});
