/** GET /sales (contract 4.7): every filter and keyset paging. */
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { type PublishedEvent, publishEvent } from '../support/purchase.js';
import { reserve, sleep } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
let concert: PublishedEvent;
let theatre: PublishedEvent;
const created: Array<{
  id: string;
  reference: string;
  status: string;
  channel: string;
  buyerName: string;
  createdAt: string;
}> = [];
let pendingSaleId: string;

async function sale(event: PublishedEvent, channel: 'ADMIN' | 'POS', name: string, email: string) {
  const response = await api.request({
    method: 'POST',
    url: '/api/v1/sales',
    headers: bearer(organizer.key),
    payload: {
      eventDateId: event.eventDateId,
      ticketTypeId: event.ticketTypeId,
      quantity: 1,
      channel,
      complimentary: channel === 'ADMIN',
      buyer: { name, email },
    },
  });
  expect(response.statusCode).toBe(201);
  created.push(response.json().data);
  await sleep(5);
}

beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  concert = await publishEvent(api, organizer, { capacity: 50 });
  theatre = await publishEvent(api, organizer, { capacity: 50 });
  await sale(concert, 'ADMIN', 'Alicia Keys', 'alicia@example.test');
  await sale(concert, 'POS', 'Bruno Mars', 'bruno@example.test');
  await sale(concert, 'ADMIN', 'Carla Bruni', 'carla@music.test');
  await sale(theatre, 'POS', 'Diego Luna', 'diego@example.test');
  await sale(theatre, 'ADMIN', 'Eva Alicia Green', 'eva@example.test');
  pendingSaleId = (await reserve(api, theatre, 'list-pending')).order.saleId;
});
afterAll(async () => {
  await api.close();
});

const list = async (query: string) => {
  const response = await api.request({
    method: 'GET',
    url: `/api/v1/sales?${query}`,
    headers: bearer(organizer.readKey),
  });
  expect(response.statusCode).toBe(200);
  return response.json() as {
    data: Array<{ id: string; status: string }>;
    page: { nextCursor: string | null; hasMore: boolean };
  };
};
const ids = (body: { data: Array<{ id: string }> }) => body.data.map((row) => row.id).sort();

describe('GET /sales filters (contract 4.7)', () => {
  test('status filters by sale status', async () => {
    expect(ids(await list('status=PENDING'))).toEqual([pendingSaleId]);
    expect((await list('status=CONFIRMED')).data).toHaveLength(5);
  });

  test('channel filters by WEB, POS or ADMIN', async () => {
    expect((await list('channel=POS')).data).toHaveLength(2);
    expect((await list('channel=ADMIN')).data).toHaveLength(3);
    expect(ids(await list('channel=WEB'))).toEqual([pendingSaleId]);
  });

  test('event and eventDate filter by the event and its date', async () => {
    expect((await list(`event=${concert.eventId}`)).data).toHaveLength(3);
    expect((await list(`eventDate=${theatre.eventDateId}`)).data).toHaveLength(3);
    expect((await list('event=not-an-id')).data).toHaveLength(0);
  });

  test('reference matches part of the sale reference, case-insensitively', async () => {
    const target = created[1]!;
    const part = target.reference.slice(3, 8).toLowerCase();
    expect(ids(await list(`reference=${part}`))).toContain(target.id);
  });

  test('buyer matches part of the buyer name or email', async () => {
    expect((await list('buyer=alicia')).data).toHaveLength(2);
    expect(ids(await list('buyer=music.test'))).toEqual([created[2]!.id]);
  });

  test('from and to bound createdAt', async () => {
    const third = created[2]!;
    const fourth = created[3]!;
    const between = await list(
      `from=${encodeURIComponent(third.createdAt)}&to=${encodeURIComponent(fourth.createdAt)}`,
    );
    expect(ids(between)).toEqual([third.id, fourth.id].sort());
  });

  test('filters combine', async () => {
    expect((await list(`channel=ADMIN&event=${theatre.eventId}`)).data).toHaveLength(1);
  });
});

describe('GET /sales paging', () => {
  test('cursor pages walk every sale newest first, without repeats or gaps', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const body = await list(`limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...body.data.map((row) => row.id));
      cursor = body.page.nextCursor;
      expect(body.page.hasMore).toBe(cursor !== null);
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(6);
    expect(new Set(seen).size).toBe(6);
    expect([...seen]).toEqual([...seen].sort().reverse());
  });

  test('a cursor that is not one of ours is 422 VALIDATION_FAILED', async () => {
    const response = await api.request({
      method: 'GET',
      url: '/api/v1/sales?cursor=garbage',
      headers: bearer(organizer.key),
    });
    expect(response.statusCode).toBe(422);
  });
});
