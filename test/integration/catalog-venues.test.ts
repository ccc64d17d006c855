import type { InjectOptions } from 'fastify';
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

const call = (method: InjectOptions['method'], url: string, key: string, payload?: object) =>
  api.request({ method, url: `/api/v1${url}`, headers: bearer(key), ...(payload ? { payload } : {}) });

const createVenue = async (key: string, payload: object = {}) => {
  const response = await call('POST', '/venues', key, { name: 'Movistar Arena', ...payload });
  expect(response.statusCode).toBe(201);
  return response.json().data as { id: string; name: string; [field: string]: unknown };
};

describe('venues: create, read, update', () => {
  test('an ADMIN creates a venue; defaults are country CO and zone America/Bogota', async () => {
    const response = await call('POST', '/venues', admin.key, { name: 'Teatro Colón', city: 'Bogotá' });
    expect(response.statusCode).toBe(201);
    const venue = response.json().data;
    expect(venue).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Teatro Colón',
      address: null,
      city: 'Bogotá',
      country: 'CO',
      timezone: 'America/Bogota',
      capacity: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const fetched = await call('GET', `/venues/${venue.id}`, admin.readKey);
    expect(fetched.statusCode).toBe(200);
    expect(fetched.json().data).toEqual(venue);
  });

  test('PATCH is partial: only the fields sent change, and null clears a nullable field', async () => {
    const venue = await createVenue(admin.key, { city: 'Medellín', capacity: 5000, address: 'Calle 1' });
    const response = await call('PATCH', `/venues/${venue.id}`, admin.key, { capacity: 6000, address: null });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({ name: venue.name, city: 'Medellín', capacity: 6000, address: null });
  });

  test('a time zone outside the IANA database is refused with 422 naming body.timezone', async () => {
    for (const timezone of ['Mars/Olympus', '+05:00', 'not a zone']) {
      const response = await call('POST', '/venues', admin.key, { name: 'X', timezone });
      expect(response.statusCode).toBe(422);
      expect(response.json().error.code).toBe('VALIDATION_FAILED');
      expect(response.json().error.details.fields.map((f: { field: string }) => f.field)).toContain('body.timezone');
    }
    const canonical = await createVenue(admin.key, { timezone: 'america/new_york' });
    expect(canonical.timezone).toBe('America/New_York');
  });

  test('a path id that is not a UUID is 404 NOT_FOUND, never a database error', async () => {
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const response = await call(
        method,
        '/venues/not-a-uuid',
        admin.key,
        method === 'PATCH' ? { name: 'x' } : undefined,
      );
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('NOT_FOUND');
    }
  });
});

describe('venues: lists', () => {
  test('the list pages newest first with limit and cursor, never repeating a row', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const created = [];
    for (const name of ['One', 'Two', 'Three']) created.push(await createVenue(owner.key, { name }));
    const first = await call('GET', '/venues?limit=2', owner.readKey);
    expect(first.statusCode).toBe(200);
    expect(first.json().data.map((v: { name: string }) => v.name)).toEqual(['Three', 'Two']);
    expect(first.json().page).toEqual({ nextCursor: expect.any(String), hasMore: true });
    expect(first.json().warnings).toBeUndefined();
    const second = await call('GET', `/venues?limit=2&cursor=${first.json().page.nextCursor}`, owner.readKey);
    expect(second.json().data.map((v: { name: string }) => v.name)).toEqual(['One']);
    expect(second.json().page).toEqual({ nextCursor: null, hasMore: false });
  });

  test('the list filters by q (part of the name, any case) and city', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    await createVenue(owner.key, { name: 'Estadio El Campín', city: 'Bogotá' });
    await createVenue(owner.key, { name: 'Estadio Atanasio Girardot', city: 'Medellín' });
    await createVenue(owner.key, { name: 'Teatro 100%', city: 'Bogotá' });
    const byName = await call('GET', '/venues?q=estadio', owner.readKey);
    expect(
      byName
        .json()
        .data.map((v: { name: string }) => v.name)
        .sort(),
    ).toEqual(['Estadio Atanasio Girardot', 'Estadio El Campín']);
    const literalPercent = await call('GET', `/venues?q=${encodeURIComponent('100%')}`, owner.readKey);
    expect(literalPercent.json().data.map((v: { name: string }) => v.name)).toEqual(['Teatro 100%']);
    const byCity = await call('GET', `/venues?city=${encodeURIComponent('medellín')}`, owner.readKey);
    expect(byCity.json().data.map((v: { name: string }) => v.name)).toEqual(['Estadio Atanasio Girardot']);
  });

  test('limit outside 1–100 and a forged cursor are refused with 422 naming the parameter', async () => {
    const tooMany = await call('GET', '/venues?limit=101', admin.readKey);
    expect(tooMany.statusCode).toBe(422);
    expect(tooMany.json().error.details.fields[0].field).toBe('querystring.limit');
    const forged = await call('GET', '/venues?cursor=abc', admin.readKey);
    expect(forged.statusCode).toBe(422);
    expect(forged.json().error.details.fields[0].field).toBe('cursor');
  });
});

describe('venues: soft delete', () => {
  test('a deleted venue is gone from the list and GET (404) but its row stays in the database', async () => {
    const venue = await createVenue(admin.key, { name: 'To delete' });
    const deleted = await call('DELETE', `/venues/${venue.id}`, admin.key);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().data.id).toBe(venue.id);
    expect((await call('GET', `/venues/${venue.id}`, admin.key)).statusCode).toBe(404);
    const list = await call('GET', '/venues?limit=100', admin.key);
    expect(list.json().data.map((v: { id: string }) => v.id)).not.toContain(venue.id);
    const rows = await api.orm.em
      .fork()
      .getConnection()
      .execute<{ deleted_at: Date | null }[]>('select deleted_at from venues where id = ?', [venue.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.deleted_at).not.toBeNull();
    expect((await call('DELETE', `/venues/${venue.id}`, admin.key)).statusCode).toBe(404);
  });

  test('a venue an event uses cannot be deleted (409) until the event moves', async () => {
    const venue = await createVenue(admin.key, { name: 'In use' });
    const event = await call('POST', '/events', admin.key, { name: 'Concierto', venueId: venue.id });
    expect(event.statusCode).toBe(201);
    const refused = await call('DELETE', `/venues/${venue.id}`, admin.key);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.details.reason).toBe('venue_in_use');
    await call('PATCH', `/events/${event.json().data.id}`, admin.key, { venueId: null });
    expect((await call('DELETE', `/venues/${venue.id}`, admin.key)).statusCode).toBe(200);
  });
});
