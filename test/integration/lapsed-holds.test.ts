/**
 * The deadline itself frees the stock: a reservation whose payment window has passed no longer keeps its units from
 * other buyers, whether or not its checkout has closed it yet. Two ways, against the real PostgreSQL:
 * - a buyer short of units reclaims lapsed holds of that ticket type in their own transaction;
 * - the worker's sweep closes lapsed holds in batches (worker/lapsed-hold-sweep.ts), one replica at a time.
 * Either way the close is the checkout's own (PENDING → ABANDONED, stock and discount use back, once).
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { releaseLapsedHolds, takeStockInOrder } from '../../entities/stock.js';
import { startLapsedHoldSweep } from '../../worker/lapsed-hold-sweep.js';
import { createEventFixture, daysFromNow, holdStock, inventoryOf } from '../support/catalog-fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
});

async function eventWith(capacities: number[]) {
  const created = await createEventFixture(api.orm.em.fork(), {
    dates: [{ startsAt: daysFromNow(10), types: capacities.map((capacity) => ({ price: 10_000, capacity })) }],
  });
  const date = created.dates[0]!;
  return {
    workspaceId: created.workspaceId,
    eventId: created.eventId,
    eventDateId: date.id,
    typeIds: date.typeIds,
  };
}

type Event = Awaited<ReturnType<typeof eventWith>>;

async function hold(event: Event, ticketTypeId: string, quantity: number): Promise<string> {
  return holdStock(api.orm.em, { ...event, ticketTypeId, quantity, status: 'PENDING' });
}

/** The payment window of these sales ends `msAgo` milliseconds ago (their checkout timers have not fired). */
async function lapse(saleIds: string[], msAgo = 1000): Promise<void> {
  await api.orm.em
    .fork()
    .execute(`update sales set expires_at = now() - (? * interval '1 millisecond') where id in (?)`, [msAgo, saleIds]);
}

async function statusOf(saleId: string): Promise<{ status: string; failure_reason: string | null }> {
  const [row] = await api.orm.em
    .fork()
    .execute<{ status: string; failure_reason: string | null }[]>(
      'select status, failure_reason from sales where id = ?',
      [saleId],
    );
  return row!;
}

/** A new PENDING sale row that takes `quantity` units in its own transaction, as the reserve step does. */
async function buy(event: Event, ticketTypeId: string, quantity: number): Promise<{ soldOut: string } | null> {
  const saleId = randomUUID();
  return api.orm.em.fork().transactional(async (tx) => {
    await tx.execute(
      `insert into sales (id, workspace_id, reference, status, origin, event_id, event_date_id, buyer_name, buyer_email,
         subtotal, discount_amount, service_fee, iva, total, currency, expires_at, created_at, updated_at, channel)
       values (?, ?, ?, 'PENDING', 'PUBLIC', ?, ?, 'Luis Comprador', 'luis@example.test', 0, 0, 0, 0, 0, 'COP',
         now() + interval '10 minutes', now(), now(), 'WEB')`,
      [saleId, event.workspaceId, saleId.slice(0, 16), event.eventId, event.eventDateId],
    );
    return takeStockInOrder(tx, saleId, [{ ticketTypeId, quantity }]);
  });
}

describe('a buyer short of units reclaims lapsed holds of that type', () => {
  test('sold out by holds whose window passed: the next buyer gets them, the lapsed sales are ABANDONED', async () => {
    const event = await eventWith([3]);
    const type = event.typeIds[0]!;
    const first = await hold(event, type, 2);
    const second = await hold(event, type, 1);
    expect(await buy(event, type, 1)).toEqual({ soldOut: type });

    await lapse([first]);
    expect(await buy(event, type, 2)).toBeNull();
    expect(await statusOf(first)).toEqual({ status: 'ABANDONED', failure_reason: 'payment window expired' });
    expect((await statusOf(second)).status).toBe('PENDING');
    expect(await inventoryOf(api.orm.em.fork(), type)).toEqual({ available: 0, sold: 0, reserved: 3 });
  });

  test('only as many lapsed holds as the buyer needs are closed, oldest first', async () => {
    const event = await eventWith([3]);
    const type = event.typeIds[0]!;
    const holds = [await hold(event, type, 1), await hold(event, type, 1), await hold(event, type, 1)];
    await lapse([holds[0]!], 3000);
    await lapse([holds[1]!], 2000);
    await lapse([holds[2]!], 1000);
    expect(await buy(event, type, 1)).toBeNull();
    expect((await Promise.all(holds.map(statusOf))).map((row) => row.status)).toEqual([
      'ABANDONED',
      'PENDING',
      'PENDING',
    ]);
  });

  test('a hold whose window has not passed is never taken, and a sale being confirmed is skipped', async () => {
    const event = await eventWith([2]);
    const type = event.typeIds[0]!;
    const live = await hold(event, type, 1);
    const confirming = await hold(event, type, 1);
    await lapse([confirming]);
    // The checkout's confirmation holds the sale's row while it confirms: the buyer does not wait for it, nor take it.
    const em = api.orm.em.fork();
    await em.begin();
    try {
      await em.execute('select 1 from sales where id = ? for update', [confirming]);
      expect(await buy(event, type, 1)).toEqual({ soldOut: type });
    } finally {
      await em.rollback();
    }
    expect((await statusOf(live)).status).toBe('PENDING');
    expect((await statusOf(confirming)).status).toBe('PENDING');
  });

  test('the discount use of a reclaimed hold goes back', async () => {
    const event = await eventWith([1]);
    const type = event.typeIds[0]!;
    const discountId = randomUUID();
    const em = api.orm.em.fork();
    await em.execute(
      `insert into discounts (id, workspace_id, code, type, value, uses, active, created_at, updated_at)
       values (?, ?, ?, 'PERCENT', 10, 1, true, now(), now())`,
      [discountId, event.workspaceId, `LAPSE${randomUUID().slice(0, 6)}`],
    );
    const lapsed = await hold(event, type, 1);
    await em.execute('update sales set discount_id = ? where id = ?', [discountId, lapsed]);
    await lapse([lapsed]);
    expect(await buy(event, type, 1)).toBeNull();
    const [row] = await em.execute<{ uses: number }[]>('select uses from discounts where id = ?', [discountId]);
    expect(Number(row!.uses)).toBe(0);
  });
});

describe('the lapsed-hold sweep', () => {
  test('closes every lapsed hold, of any number of types, and gives each unit back exactly once', async () => {
    const event = await eventWith([5, 5]);
    const [typeA, typeB] = [event.typeIds[0]!, event.typeIds[1]!];
    const lapsedA = await hold(event, typeA, 2);
    const live = await hold(event, typeA, 1);
    // A sale of both types: only the sweep frees it (a buyer of one type leaves it, see takeStock).
    const both = randomUUID();
    await api.orm.em.fork().transactional(async (tx) => {
      await tx.execute(
        `insert into sales (id, workspace_id, reference, status, origin, event_id, event_date_id, buyer_name, buyer_email,
           subtotal, discount_amount, service_fee, iva, total, currency, expires_at, created_at, updated_at, channel)
         values (?, ?, ?, 'PENDING', 'PUBLIC', ?, ?, 'Eva', 'eva@example.test', 0, 0, 0, 0, 0, 'COP', now(), now(), now(), 'WEB')`,
        [both, event.workspaceId, both.slice(0, 16), event.eventId, event.eventDateId],
      );
      expect(
        await takeStockInOrder(tx, both, [
          { ticketTypeId: typeB, quantity: 3 },
          { ticketTypeId: typeA, quantity: 1 },
        ]),
      ).toBeNull();
    });
    await lapse([lapsedA, both]);

    const swept = await api.orm.em
      .fork()
      .transactional((tx) => releaseLapsedHolds(tx, 100, { workspaceId: event.workspaceId }));
    expect(swept.sales).toBeGreaterThanOrEqual(2);
    expect((await statusOf(lapsedA)).status).toBe('ABANDONED');
    expect((await statusOf(both)).status).toBe('ABANDONED');
    expect((await statusOf(live)).status).toBe('PENDING');
    expect(await inventoryOf(api.orm.em.fork(), typeA)).toEqual({ available: 4, sold: 0, reserved: 1 });
    expect(await inventoryOf(api.orm.em.fork(), typeB)).toEqual({ available: 5, sold: 0, reserved: 0 });

    const again = await api.orm.em
      .fork()
      .transactional((tx) => releaseLapsedHolds(tx, 100, { workspaceId: event.workspaceId }));
    expect(await inventoryOf(api.orm.em.fork(), typeA)).toEqual({ available: 4, sold: 0, reserved: 1 });
    expect(again.units).toBe(0);
  });

  test('the checkout closing a sale the sweep already closed gives nothing back twice', async () => {
    const event = await eventWith([2]);
    const type = event.typeIds[0]!;
    const lapsed = await hold(event, type, 2);
    await lapse([lapsed]);
    await api.orm.em.fork().transactional((tx) => releaseLapsedHolds(tx, 100, { workspaceId: event.workspaceId }));
    const [row] = await api.orm.em
      .fork()
      .execute<{ id: string }[]>(
        `update sales set status = 'ABANDONED' where id = ? and status = 'PENDING' returning id`,
        [lapsed],
      );
    expect(row).toBeUndefined();
    expect(await inventoryOf(api.orm.em.fork(), type)).toEqual({ available: 2, sold: 0, reserved: 0 });
  });

  test('two replicas sweeping at once: one sweeps, the other skips; 3,000 holds lapsing together are back in one go', async () => {
    const event = await eventWith([3000]);
    const type = event.typeIds[0]!;
    await api.orm.em.fork().execute(
      `with made as (
         insert into sales (id, workspace_id, reference, status, origin, event_id, event_date_id, buyer_name, buyer_email,
           subtotal, discount_amount, service_fee, iva, total, currency, expires_at, created_at, updated_at, channel)
         select gen_random_uuid(), ?, substr(md5(random()::text), 1, 16), 'PENDING', 'PUBLIC', ?, ?, 'Crowd', 'crowd@example.test',
           0, 0, 0, 0, 0, 'COP', now() - interval '1 second', now(), now(), 'WEB'
           from generate_series(1, 3000)
         returning id),
       numbered as (select id, row_number() over () as n from made),
       taken as (update ticket_stock set available = 0 where ticket_type_id = ? returning shard, 1)
       insert into sale_stock_allocations (sale_id, ticket_type_id, shard, quantity)
       select id, ?, (n % 8)::smallint, 1 from numbered`,
      [event.workspaceId, event.eventId, event.eventDateId, type, type],
    );
    expect(await inventoryOf(api.orm.em.fork(), type)).toEqual({ available: 0, sold: 0, reserved: 3000 });

    const logger = pino({ level: 'silent' });
    const sweeps = [1, 2].map(() =>
      startLapsedHoldSweep({
        orm: api.orm,
        logger,
        intervalMs: 60_000,
        batchSize: 5000,
        workspaceId: event.workspaceId,
      }),
    );
    try {
      const closed = await Promise.all(sweeps.map((sweep) => sweep.sweepOnce()));
      // Each hold closed by exactly one of them.
      expect(closed.reduce((sum, count) => sum + count, 0)).toBe(3000);
      expect(await inventoryOf(api.orm.em.fork(), type)).toEqual({ available: 3000, sold: 0, reserved: 0 });
    } finally {
      await Promise.all(sweeps.map((sweep) => sweep.stop()));
    }
  });
});
