/**
 * The stock step under a crowd larger than its shards, against the real PostgreSQL: more concurrent transactions
 * than stock rows makes buyers wait on busy shards, and the last units end up spread over rows. Whatever the
 * interleaving, the units taken are exactly the units that left stock, no take fails other than "sold out", and the
 * last unit is sold.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { initOrm } from '../../entities/orm.js';
import { STOCK_SHARDS } from '../../entities/stock.js';
import { createEventFixture, daysFromNow, holdStock, inventoryOf } from '../support/catalog-fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

/** Connections the crowd's transactions run on at once: three times the stock rows, so buyers do wait on rows. */
const CROWD_CONNECTIONS = 3 * STOCK_SHARDS;
const CROWD_ROUNDS = 20;

let api: TestApi;
let crowdOrm: MikroORM;
beforeAll(async () => {
  api = await startTestApi();
  crowdOrm = await initOrm({ databaseUrl: api.env.DATABASE_URL, poolMax: CROWD_CONNECTIONS });
});
afterAll(async () => {
  await crowdOrm.close();
  await api.close();
});

const SOLD_OUT = /only fewer than/;

async function crowd(capacity: number, quantities: number[]) {
  const created = await createEventFixture(api.orm.em.fork(), {
    dates: [{ startsAt: daysFromNow(10), types: [{ price: 10_000, capacity }] }],
  });
  const ids = {
    workspaceId: created.workspaceId,
    eventId: created.eventId,
    eventDateId: created.dates[0]!.id,
    ticketTypeId: created.dates[0]!.typeIds[0]!,
  };
  const outcomes = await Promise.allSettled(
    quantities.map((quantity) => holdStock(crowdOrm.em, { ...ids, quantity, status: 'PENDING' })),
  );
  return { ids, outcomes };
}

describe('takeStock with more buyers than stock rows', () => {
  test('one unit each: exactly the capacity is taken, every other buyer is told it is sold out', async () => {
    const capacity = 37;
    const { ids, outcomes } = await crowd(
      capacity,
      Array.from({ length: 90 }, () => 1),
    );
    const failures = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(failures.map((f) => String(f.reason)).filter((reason) => !SOLD_OUT.test(reason))).toEqual([]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(capacity);
    expect(await inventoryOf(api.orm.em.fork(), ids.ticketTypeId)).toEqual({
      available: 0,
      sold: 0,
      reserved: capacity,
    });
  });

  // Rounds, because a deadlock between takers needs a rare interleaving (a row's newer version failing the re-check
  // while another buyer waits): the shared stock step deadlocked about once in ten rounds before every attempt got
  // its savepoint.
  test.each(Array.from({ length: CROWD_ROUNDS }, (_, round) => round + 1))(
    'mixed quantities, round %i: units taken equal units gone from stock; what is left is less than any refused request',
    async () => {
      const capacity = 53;
      const quantities = Array.from({ length: 80 }, (_, i) => 1 + ((i * 7) % 4));
      const { ids, outcomes } = await crowd(capacity, quantities);
      const failures = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(failures.map((f) => String(f.reason)).filter((reason) => !SOLD_OUT.test(reason))).toEqual([]);
      const taken = quantities.reduce(
        (sum, quantity, i) => sum + (outcomes[i]?.status === 'fulfilled' ? quantity : 0),
        0,
      );
      const inventory = await inventoryOf(api.orm.em.fork(), ids.ticketTypeId);
      expect(inventory).toEqual({ available: capacity - taken, sold: 0, reserved: taken });
      const smallestRefused = Math.min(...quantities.filter((_, i) => outcomes[i]?.status === 'rejected'));
      expect(inventory.available).toBeLessThan(smallestRefused);
      const rows = await api.orm.em
        .fork()
        .execute<{ available: number }[]>('select available from ticket_stock where ticket_type_id = ?', [
          ids.ticketTypeId,
        ]);
      expect(rows.every((row) => row.available >= 0)).toBe(true);
    },
  );
});

/** The statements the stock step sends through `execute`, recorded on the way to the real transaction. */
function recordingStatements(statements: string[]) {
  return (tx: EntityManager): EntityManager =>
    new Proxy(tx, {
      get(target, name, receiver) {
        if (name === 'execute') {
          return (sql: string, params?: unknown[]) => {
            statements.push(sql.trim().replace(/\s+/g, ' '));
            return target.execute(sql, params);
          };
        }
        const value: unknown = Reflect.get(target, name, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
}

/** Statements that wait for a busy stock row: a random shard chosen without skipping the locked ones. */
const waitsForARow = (statements: string[]) =>
  statements.filter((sql) => sql.includes('order by random()') && !sql.includes('skip locked'));

describe('takeStock when no single stock row has enough', () => {
  test('nobody waits on a row: the last units spread over rows are taken across them, and a refusal is immediate', async () => {
    const created = await createEventFixture(api.orm.em.fork(), {
      dates: [{ startsAt: daysFromNow(10), types: [{ price: 10_000, capacity: STOCK_SHARDS }] }],
    });
    const ids = {
      workspaceId: created.workspaceId,
      eventId: created.eventId,
      eventDateId: created.dates[0]!.id,
      ticketTypeId: created.dates[0]!.typeIds[0]!,
    };
    // One unit per row: an order of three finds no row with three.
    const spreadTake: string[] = [];
    await holdStock(api.orm.em, { ...ids, quantity: 3, status: 'PENDING' }, recordingStatements(spreadTake));
    expect(waitsForARow(spreadTake)).toEqual([]);
    expect(spreadTake.some((sql) => sql.startsWith('select shard, available'))).toBe(true);
    expect(await inventoryOf(api.orm.em.fork(), ids.ticketTypeId)).toEqual({ available: 5, sold: 0, reserved: 3 });

    const refused: string[] = [];
    await expect(
      holdStock(api.orm.em, { ...ids, quantity: 6, status: 'PENDING' }, recordingStatements(refused)),
    ).rejects.toThrow(SOLD_OUT);
    expect(waitsForARow(refused)).toEqual([]);
    expect(await inventoryOf(api.orm.em.fork(), ids.ticketTypeId)).toEqual({ available: 5, sold: 0, reserved: 3 });
  });
});
