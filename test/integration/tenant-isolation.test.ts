/**
 * Tenant isolation of the catalog: whatever workspace A owns is invisible to workspace B. B's ADMIN gets 404 for
 * every id of A (never 200), B's lists never show A's rows, B cannot link its rows to A's, and naming A in
 * X-Workspace-Id does not help B (the header is ignored with a warning, contract 5.5).
 */
import type { InjectOptions } from 'fastify';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let a: Organizer;
let b: Organizer;
/** One of each catalog resource, created in workspace A through the API. */
const ids = { venue: '', event: '', date: '', ticketType: '', discount: '', plan: '' };

const call = (
  method: InjectOptions['method'],
  url: string,
  key: string,
  payload?: object,
  headers: Record<string, string> = {},
) =>
  api.request({
    method,
    url: `/api/v1${url}`,
    headers: { ...bearer(key), ...headers },
    ...(payload ? { payload } : {}),
  });

const create = async (url: string, key: string, payload: object): Promise<string> => {
  const response = await call('POST', url, key, payload);
  if (response.statusCode !== 201) throw new Error(`POST ${url}: ${response.statusCode} ${response.body}`);
  return response.json().data.id;
};

beforeAll(async () => {
  api = await startTestApi();
  a = await createOrganizer(api.orm.em.fork(), { role: 'ADMIN' });
  b = await createOrganizer(api.orm.em.fork(), { role: 'ADMIN' });
  ids.venue = await create('/venues', a.key, { name: 'Venue of A' });
  ids.event = await create('/events', a.key, { name: 'Event of A', venueId: ids.venue });
  ids.date = await create(`/events/${ids.event}/dates`, a.key, { startsAt: '2027-06-01T23:00:00Z' });
  ids.ticketType = await create('/ticket-types', a.key, {
    eventId: ids.event,
    eventDateId: ids.date,
    name: 'Type of A',
    price: 10000,
    capacity: 10,
  });
  ids.discount = await create('/discounts', a.key, { code: `A${ids.event.slice(-8)}`, type: 'PERCENT', value: 10 });
  ids.plan = await create('/membership-plans', a.key, { name: 'Plan of A', price: 1000, period: 'MONTHLY' });
});
afterAll(async () => {
  await api.close();
});

/** Every operation on one of A's ids, with a body that would be valid in A's own workspace. */
const operationsOnA = (): Array<[InjectOptions['method'], string, object?]> => [
  ['GET', `/venues/${ids.venue}`],
  ['PATCH', `/venues/${ids.venue}`, { name: 'hijacked' }],
  ['DELETE', `/venues/${ids.venue}`],
  ['GET', `/events/${ids.event}`],
  ['PATCH', `/events/${ids.event}`, { name: 'hijacked' }],
  ['DELETE', `/events/${ids.event}`],
  ['POST', `/events/${ids.event}/publish`],
  ['POST', `/events/${ids.event}/cancel`],
  ['GET', `/events/${ids.event}/dates`],
  ['POST', `/events/${ids.event}/dates`, { startsAt: '2027-07-01T23:00:00Z' }],
  ['PATCH', `/events/${ids.event}/dates/${ids.date}`, { label: 'hijacked' }],
  ['DELETE', `/events/${ids.event}/dates/${ids.date}`],
  ['GET', `/ticket-types/${ids.ticketType}`],
  ['PATCH', `/ticket-types/${ids.ticketType}`, { capacity: 0 }],
  ['DELETE', `/ticket-types/${ids.ticketType}`],
  ['PATCH', `/discounts/${ids.discount}`, { active: false }],
  ['DELETE', `/discounts/${ids.discount}`],
  ['GET', `/membership-plans/${ids.plan}`],
  ['PATCH', `/membership-plans/${ids.plan}`, { name: 'hijacked' }],
  ['DELETE', `/membership-plans/${ids.plan}`],
  ['GET', `/membership-plans/${ids.plan}/subscribers`],
];

/** A's resources as A sees them; compared before and after B's attempts. */
async function snapshotOfA() {
  const read = async (url: string) => {
    const response = await call('GET', url, a.key);
    return { status: response.statusCode, data: response.json().data };
  };
  const discounts = await call('GET', '/discounts?limit=100', a.key);
  return {
    venue: await read(`/venues/${ids.venue}`),
    event: await read(`/events/${ids.event}`),
    dates: await read(`/events/${ids.event}/dates`),
    ticketType: await read(`/ticket-types/${ids.ticketType}`),
    discount: discounts.json().data.find((d: { id: string }) => d.id === ids.discount),
    plan: await read(`/membership-plans/${ids.plan}`),
  };
}

const idsOf = (response: Awaited<ReturnType<typeof call>>): string[] =>
  response.json().data.map((row: { id: string }) => row.id);

describe('tenant isolation of the catalog', () => {
  test("B's ADMIN gets 404 for every id of A, nested ones included, and A's data is untouched", async () => {
    const before = await snapshotOfA();
    expect(before.event.status).toBe(200);
    const outcomes = [];
    for (const [method, url, payload] of operationsOnA()) {
      const response = await call(method, url, b.key, payload);
      outcomes.push({ request: `${method} ${url}`, status: response.statusCode, code: response.json().error?.code });
    }
    expect(outcomes).toEqual(
      operationsOnA().map(([method, url]) => ({ request: `${method} ${url}`, status: 404, code: 'NOT_FOUND' })),
    );
    expect(await snapshotOfA()).toEqual(before);
  });

  test("B cannot link its own rows to A's (422 naming the field), and nothing is created", async () => {
    const event = await call('POST', '/events', b.key, { name: 'B event', venueId: ids.venue });
    expect(event.statusCode).toBe(422);
    expect(event.json().error.details.fields[0].field).toBe('body.venueId');
    const type = await call('POST', '/ticket-types', b.key, {
      eventId: ids.event,
      eventDateId: ids.date,
      name: 'B type',
      price: 1,
      capacity: 1,
    });
    expect(type.statusCode).toBe(422);
    expect(type.json().error.details.fields[0].field).toBe('body.eventId');
    const discount = await call('POST', '/discounts', b.key, {
      code: 'BLINK',
      type: 'PERCENT',
      value: 5,
      eventId: ids.event,
    });
    expect(discount.statusCode).toBe(422);
    expect(discount.json().error.details.fields[0].field).toBe('body.eventId');
    const own = await create('/events', b.key, { name: 'B own event' });
    const relink = await call('PATCH', `/events/${own}`, b.key, { venueId: ids.venue });
    expect(relink.statusCode).toBe(422);
    expect((await call('GET', `/ticket-types?event=${ids.event}`, a.key)).json().data).toHaveLength(1);
  });

  test("B's lists never contain A's ids, filtered by A's ids or not", async () => {
    await create('/venues', b.key, { name: 'Venue of B' });
    const aIds = Object.values(ids);
    for (const url of [
      '/venues?limit=100',
      '/events?limit=100',
      `/events?limit=100&venue=${ids.venue}`,
      '/ticket-types?limit=100',
      `/ticket-types?event=${ids.event}`,
      `/ticket-types?eventDate=${ids.date}`,
      '/discounts?limit=100',
      `/discounts?event=${ids.event}`,
      '/membership-plans?limit=100',
    ]) {
      const response = await call('GET', url, b.key);
      expect({ url, status: response.statusCode }).toEqual({ url, status: 200 });
      expect({ url, leaked: idsOf(response).filter((id) => aIds.includes(id)) }).toEqual({ url, leaked: [] });
    }
    expect(idsOf(await call('GET', '/venues?limit=100', b.key))).toHaveLength(1);
  });

  test("X-Workspace-Id naming A is ignored with a warning: B's key still cannot see A", async () => {
    const header = { 'x-workspace-id': a.workspaceId };
    const list = await call('GET', '/events?limit=100', b.key, undefined, header);
    expect(list.statusCode).toBe(200);
    expect(idsOf(list)).not.toContain(ids.event);
    expect(list.json().warnings).toEqual([
      expect.objectContaining({
        code: 'WORKSPACE_NOT_ACCESSIBLE',
        field: 'X-Workspace-Id',
        activeWorkspaceId: b.workspaceId,
      }),
    ]);
    for (const [method, url, payload] of [
      ['GET', `/events/${ids.event}`],
      ['PATCH', `/events/${ids.event}`, { name: 'hijacked' }],
      ['GET', `/events/${ids.event}/dates`],
      ['GET', `/ticket-types/${ids.ticketType}`],
      ['DELETE', `/membership-plans/${ids.plan}`],
    ] as Array<[InjectOptions['method'], string, object?]>) {
      const response = await call(method, url, b.key, payload, header);
      expect({ request: `${method} ${url}`, status: response.statusCode }).toEqual({
        request: `${method} ${url}`,
        status: 404,
      });
    }
    const types = await call('GET', `/ticket-types?event=${ids.event}`, b.key, undefined, header);
    expect(types.json().data).toEqual([]);
    expect(types.json().warnings?.[0]?.code).toBe('WORKSPACE_NOT_ACCESSIBLE');
  });
});
