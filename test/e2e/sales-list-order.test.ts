/**
 * "Newest first" is by creation time (issue 31): a sale made with an Idempotency-Key has an id derived from the key,
 * not a time-ordered one, and must not sort above sales made after it (GET /sales, which the CLI's `sales list` and
 * `sales export` page through). Paging with the cursor keeps that order, with no row skipped or repeated.
 */
import { randomUUID } from 'node:crypto';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { publishEvent } from '../support/purchase.js';
import { complimentary } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

/** A storefront order with an Idempotency-Key: its sale id is derived from the key, not from the clock. */
async function keyedSale(event: { eventDateId: string; ticketTypeId: string }): Promise<string> {
  const response = await api.request({
    method: 'POST',
    url: '/api/public/orders',
    headers: { 'idempotency-key': `order-${randomUUID()}` },
    payload: {
      buyerEmail: `keyed-${randomUUID().slice(0, 8)}@buyers.test`,
      buyerName: 'Keyed Buyer',
      items: [{ ticketTypeId: event.ticketTypeId, quantity: 1 }],
    },
  });
  expect(response.statusCode).toBeLessThan(300);
  return response.json().data.orderId;
}

async function page(cursor?: string) {
  const response = await api.request({
    method: 'GET',
    url: `/api/v1/sales?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    headers: bearer(organizer.key),
  });
  expect(response.statusCode).toBe(200);
  return response.json() as { data: Array<{ id: string; createdAt: string }>; page: { nextCursor: string | null } };
}

describe('GET /sales newest first', () => {
  test('keyed sales sit at their creation time, and the cursor pages in that order', async () => {
    const event = await publishEvent(api, organizer, { capacity: 20 });
    const made: string[] = [];
    // Several keyed sales among plain ones: whatever their derived ids, each sorts where it was made.
    for (let i = 0; i < 3; i += 1) {
      made.push(await keyedSale(event));
      made.push((await complimentary(api, organizer, event)).id);
    }
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const answer = await page(cursor);
      listed.push(...answer.data.map((sale) => sale.id));
      cursor = answer.page.nextCursor ?? undefined;
    } while (cursor);
    expect(listed).toEqual([...made].reverse());
  });

  test('sales made within one millisecond still page in order: the cursor compares microseconds', async () => {
    const other = await createOrganizer(api.orm.em.fork());
    organizer = other;
    const event = await publishEvent(api, other, { capacity: 20 });
    const made: string[] = [];
    for (let i = 0; i < 5; i += 1) made.push((await complimentary(api, other, event)).id);
    // The same millisecond, a microsecond apart, in the order they were made.
    for (const [index, id] of made.entries()) {
      await api.orm.em
        .fork()
        .execute(
          `update sales set created_at = timestamptz '2026-11-01 12:00:00.123000+00' + ? * interval '1 microsecond' where id = ?`,
          [index + 1, id],
        );
    }
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const answer = await page(cursor);
      listed.push(...answer.data.map((sale) => sale.id));
      cursor = answer.page.nextCursor ?? undefined;
    } while (cursor);
    expect(listed).toEqual([...made].reverse());
  });
});
