import type { InjectOptions } from 'fastify';
import { newId } from '../../entities/ids.js';
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

const uniqueCode = (prefix = 'promo') => `${prefix}${newId().slice(-8)}`;

const createDiscount = (payload: object = {}, key = admin.key) =>
  call('POST', '/discounts', key, { code: uniqueCode(), type: 'PERCENT', value: 10, ...payload }).then(created);

describe('discounts: create and update', () => {
  test("a discount has exactly the contract's fields; its code is stored upper-case", async () => {
    const code = uniqueCode('verano');
    const discount = await createDiscount({ code, type: 'FIXED', value: 5000, maxUses: 100 });
    expect(discount).toEqual({
      id: expect.any(String),
      code: code.toUpperCase(),
      type: 'FIXED',
      value: 5000,
      eventId: null,
      active: true,
      maxUses: 100,
      uses: 0,
      startsAt: null,
      endsAt: null,
      createdAt: expect.any(String),
    });
  });

  test('a code is unique per workspace among non-deleted discounts, whatever its case (409 ALREADY_EXISTS)', async () => {
    const code = uniqueCode('dup');
    const first = await createDiscount({ code });
    const duplicate = await call('POST', '/discounts', admin.key, {
      code: code.toUpperCase(),
      type: 'PERCENT',
      value: 5,
    });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().error.code).toBe('ALREADY_EXISTS');
    expect(fieldsOf(duplicate)).toEqual(['body.code']);
    // Another workspace may use the same code.
    const other = await createOrganizer(api.orm.em.fork());
    await createDiscount({ code }, other.key);
    // Renaming onto a taken code is refused too.
    const second = await createDiscount();
    expect((await call('PATCH', `/discounts/${second.id}`, admin.key, { code })).statusCode).toBe(409);
    // Once deleted, the code is free again.
    expect((await call('DELETE', `/discounts/${first.id}`, admin.key)).statusCode).toBe(200);
    expect((await createDiscount({ code })).code).toBe(code.toUpperCase());
  });

  test('PERCENT values are over 0 up to 100 with two decimals, FIXED whole minor units ≥ 1 (422 body.value)', async () => {
    for (const [type, value] of [
      ['PERCENT', 0],
      ['PERCENT', 101],
      ['PERCENT', 12.345],
      ['FIXED', 0],
      ['FIXED', -5],
      ['FIXED', 99.5],
    ] as const) {
      const response = await call('POST', '/discounts', admin.key, { code: uniqueCode(), type, value });
      expect(response.statusCode).toBe(422);
      expect(fieldsOf(response)).toEqual(['body.value']);
    }
    const fixed = await createDiscount({ type: 'FIXED', value: 250000 });
    const toPercent = await call('PATCH', `/discounts/${fixed.id}`, admin.key, { type: 'PERCENT' });
    expect(toPercent.statusCode).toBe(422);
    expect(fieldsOf(toPercent)).toEqual(['body.value']);
    const both = await call('PATCH', `/discounts/${fixed.id}`, admin.key, { type: 'PERCENT', value: 100 });
    expect(both.json().data).toMatchObject({ type: 'PERCENT', value: 100 });
    // The contract types value as a number: a fractional percentage is kept exactly and read back as a number.
    const fractional = await createDiscount({ type: 'PERCENT', value: 12.5 });
    expect(fractional).toMatchObject({ type: 'PERCENT', value: 12.5 });
    const read = await call('GET', '/discounts', admin.key);
    expect(read.json().data.find((d: { id: string }) => d.id === fractional.id)?.value).toBe(12.5);
  });

  test('a FIXED value the column cannot hold is refused with 422, never a 500; the largest order subtotal is taken', async () => {
    for (const value of [300_000_001, 10_000_000_000, 1_000_000_000_000]) {
      const response = await call('POST', '/discounts', admin.key, { code: uniqueCode(), type: 'FIXED', value });
      expect(response.statusCode).toBe(422);
      expect(fieldsOf(response)).toEqual(['body.value']);
    }
    const largest = await createDiscount({ type: 'FIXED', value: 300_000_000 });
    expect(largest).toMatchObject({ type: 'FIXED', value: 300_000_000 });
    const patched = await call('PATCH', `/discounts/${largest.id}`, admin.key, { value: 10_000_000_000 });
    expect(patched.statusCode).toBe(422);
  });

  test('a code with spaces or symbols, an unknown event and an inverted window are refused naming the field', async () => {
    const badCode = await call('POST', '/discounts', admin.key, { code: 'NO SPACES!', type: 'PERCENT', value: 5 });
    expect(fieldsOf(badCode)).toEqual(['body.code']);
    const unknownEvent = await call('POST', '/discounts', admin.key, {
      code: uniqueCode(),
      type: 'PERCENT',
      value: 5,
      eventId: newId(),
    });
    expect(unknownEvent.statusCode).toBe(422);
    expect(fieldsOf(unknownEvent)).toEqual(['body.eventId']);
    const inverted = await call('POST', '/discounts', admin.key, {
      code: uniqueCode(),
      type: 'PERCENT',
      value: 5,
      startsAt: '2027-02-01T00:00:00Z',
      endsAt: '2027-01-01T00:00:00Z',
    });
    expect(fieldsOf(inverted)).toEqual(['body.endsAt']);
  });

  test('PATCH is partial; maxUses below the uses already counted is refused with 409', async () => {
    const discount = await createDiscount({ value: 15, maxUses: 50, startsAt: '2027-01-01T00:00:00Z' });
    const patched = await call('PATCH', `/discounts/${discount.id}`, admin.key, { active: false });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({
      code: discount.code,
      value: 15,
      maxUses: 50,
      active: false,
      startsAt: '2027-01-01T00:00:00.000Z',
    });
    // Uses are counted by checkout; set them directly as a fixture.
    await api.orm.em.fork().getConnection().execute('update discounts set uses = 3 where id = ?', [discount.id]);
    const below = await call('PATCH', `/discounts/${discount.id}`, admin.key, { maxUses: 2 });
    expect(below.statusCode).toBe(409);
    expect(below.json().error.details).toMatchObject({ reason: 'max_uses_below_uses', uses: 3 });
    const unlimited = await call('PATCH', `/discounts/${discount.id}`, admin.key, { maxUses: null });
    expect(unlimited.json().data).toMatchObject({ maxUses: null, uses: 3 });
  });
});

describe('discounts: lists (contract 4.13)', () => {
  test('the list filters by event and active and pages with limit and cursor', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const event = await call('POST', '/events', owner.key, { name: 'Con descuento' }).then(created);
    const general = await createDiscount({}, owner.key);
    const forEvent = await createDiscount({ eventId: event.id }, owner.key);
    const inactive = await createDiscount({ active: false }, owner.key);

    const all = await call('GET', '/discounts', owner.key);
    expect(all.json().data.map((d: Row) => d.id)).toEqual([inactive.id, forEvent.id, general.id]);
    const byEvent = await call('GET', `/discounts?event=${event.id}`, owner.key);
    expect(byEvent.json().data.map((d: Row) => d.id)).toEqual([forEvent.id]);
    const active = await call('GET', '/discounts?active=true', owner.key);
    expect(active.json().data.map((d: Row) => d.id)).toEqual([forEvent.id, general.id]);
    const notActive = await call('GET', '/discounts?active=false', owner.key);
    expect(notActive.json().data.map((d: Row) => d.id)).toEqual([inactive.id]);
    const page1 = await call('GET', '/discounts?limit=2', owner.key);
    const page2 = await call('GET', `/discounts?limit=2&cursor=${page1.json().page.nextCursor}`, owner.key);
    expect(page2.json().data.map((d: Row) => d.id)).toEqual([general.id]);
    expect(page2.json().page).toEqual({ nextCursor: null, hasMore: false });
    const badActive = await call('GET', '/discounts?active=yes', owner.key);
    expect(badActive.statusCode).toBe(422);
    expect(fieldsOf(badActive)).toEqual(['querystring.active']);
  });

  test('discounts need the ADMIN role, reads included (contract 4.13, 5.4)', async () => {
    for (const role of ['VIEWER', 'STAFF'] as const) {
      const member = await createOrganizer(api.orm.em.fork(), { role });
      const response = await call('GET', '/discounts', member.key);
      expect(response.statusCode).toBe(403);
      expect(response.json().error.code).toBe('INSUFFICIENT_ROLE');
    }
  });
});

describe('discounts: soft delete', () => {
  test('a deleted discount is gone from the list, cannot be patched (404), and its row stays', async () => {
    const discount = await createDiscount();
    const deleted = await call('DELETE', `/discounts/${discount.id}`, admin.key);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().data.id).toBe(discount.id);
    const list = await call('GET', '/discounts?limit=100', admin.key);
    expect(list.json().data.map((d: Row) => d.id)).not.toContain(discount.id);
    expect((await call('PATCH', `/discounts/${discount.id}`, admin.key, { active: false })).statusCode).toBe(404);
    expect((await call('DELETE', `/discounts/${discount.id}`, admin.key)).statusCode).toBe(404);
    const rows = await api.orm.em
      .fork()
      .getConnection()
      .execute<{ deleted_at: Date | null }[]>('select deleted_at from discounts where id = ?', [discount.id]);
    expect(rows[0]?.deleted_at).not.toBeNull();
  });
});
