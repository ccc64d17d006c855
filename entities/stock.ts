import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../domain/errors.js';

/**
 * Stock of a ticket type is split over STOCK_SHARDS rows of `ticket_stock`. Concurrent buyers of one hot type
 * lock different rows, so a flash sale does not serialize on one row; the per-row CHECK (available >= 0) makes
 * overselling impossible whatever the application does. Every function here is one statement or one locked
 * transaction; callers pass the EntityManager whose transaction the change must join.
 */
export const STOCK_SHARDS = 8;

export function splitCapacity(capacity: number, shards = STOCK_SHARDS): number[] {
  const base = Math.floor(capacity / shards);
  const remainder = capacity % shards;
  return Array.from({ length: shards }, (_, shard) => base + (shard < remainder ? 1 : 0));
}

/** Creates the stock rows of a new ticket type (call in the transaction that inserts the type). */
export async function createStock(em: EntityManager, ticketTypeId: string, capacity: number): Promise<void> {
  const parts = splitCapacity(capacity);
  const values = parts.map((_, shard) => `(?, ${shard}, ?)`).join(', ');
  await em.execute(
    `insert into ticket_stock (ticket_type_id, shard, available) values ${values}`,
    parts.flatMap((available) => [ticketTypeId, available]),
  );
}

export interface ShardTake {
  shard: number;
  quantity: number;
}

/**
 * Whether one stock row has `quantity` units, as committed now (no lock). Asked in a separate statement: folding it
 * into the skip-locked UPDATE (as a CTE) made concurrent takers deadlock in the bench.
 */
async function someShardHasEnough(em: EntityManager, ticketTypeId: string, quantity: number): Promise<boolean> {
  const rows = await em.execute<{ found: boolean }[]>(
    'select exists (select 1 from ticket_stock where ticket_type_id = ? and available >= ?) as found',
    [ticketTypeId, quantity],
  );
  return rows[0]?.found === true;
}

/**
 * Takes `quantity` units of a ticket type for a sale and records them as the sale's allocation. Returns null when
 * fewer units are left (sold out).
 *
 * 1. One conditional UPDATE on a random shard that has enough and that no other buyer holds (skip locked).
 * 2. When every such shard is busy (more buyers than shards), wait on one random shard that has enough, at most
 *    twice: the UPDATE re-checks `available` on the row it waited for, so a shard drained meanwhile yields nothing
 *    and the next try picks another. Waiting on one row keeps buyers spread over the shards; locking them all here
 *    queued every buyer behind one. When no single shard has enough, there is nothing to wait for (in a sold-out
 *    storm, every refused buyer would wait twice for nothing): step 3 decides at once.
 * 3. When no single shard has enough (the last units are spread), lock all shards in a fixed order and take across.
 *
 * An attempt that takes nothing may still hold a row: PostgreSQL keeps the lock on a row whose newer version failed
 * the re-check, in the skip-locked step as in a wait. Holding it while waiting on another row, or while locking all
 * rows in step 3, is how two buyers deadlock. So every attempt runs after one savepoint, and a failed attempt rolls
 * back to it, which lets go of whatever it locked.
 */
export async function takeStock(
  em: EntityManager,
  input: { saleId: string; ticketTypeId: string; quantity: number },
): Promise<ShardTake[] | null> {
  let takes: ShardTake[] | null = null;
  await em.execute('savepoint take_stock');
  for (const wait of [false, true, true]) {
    const taken = await em.execute<{ shard: number }[]>(
      `update ticket_stock set available = available - ?
        where ticket_type_id = ? and available >= ? and shard = (
          select shard from ticket_stock where ticket_type_id = ? and available >= ?
          order by random() limit 1 ${wait ? '' : 'for update skip locked'})
        returning shard`,
      [input.quantity, input.ticketTypeId, input.quantity, input.ticketTypeId, input.quantity],
    );
    if (taken[0]) {
      takes = [{ shard: taken[0].shard, quantity: input.quantity }];
      break;
    }
    await em.execute('rollback to savepoint take_stock');
    if (!wait && !(await someShardHasEnough(em, input.ticketTypeId, input.quantity))) break;
  }
  if (takes === null) {
    const shards = await em.execute<{ shard: number; available: number }[]>(
      'select shard, available from ticket_stock where ticket_type_id = ? order by shard for update',
      [input.ticketTypeId],
    );
    let total = shards.reduce((sum, row) => sum + row.available, 0);
    if (total < input.quantity) {
      // Units held by reservations whose payment window has passed are on sale again: the deadline frees them,
      // whether or not their checkout has closed them yet (it finds them closed and does the bookkeeping).
      const freed = await reclaimLapsedHoldsOfType(em, input.ticketTypeId, input.quantity - total);
      if (freed.length === 0) return null;
      for (const unit of freed) {
        const row = shards.find((each) => each.shard === unit.shard);
        if (row) row.available += unit.quantity;
      }
      total = shards.reduce((sum, row) => sum + row.available, 0);
      if (total < input.quantity) return null;
    }
    const spread: ShardTake[] = [];
    let missing = input.quantity;
    for (const row of shards) {
      if (missing === 0) break;
      const take = Math.min(row.available, missing);
      if (take > 0) {
        spread.push({ shard: row.shard, quantity: take });
        missing -= take;
      }
    }
    for (const take of spread) {
      await em.execute('update ticket_stock set available = available - ? where ticket_type_id = ? and shard = ?', [
        take.quantity,
        input.ticketTypeId,
        take.shard,
      ]);
    }
    takes = spread;
  }
  await em.execute('release savepoint take_stock');
  const values = takes.map(() => '(?, ?, ?, ?)').join(', ');
  await em.execute(
    `insert into sale_stock_allocations (sale_id, ticket_type_id, shard, quantity) values ${values}
       on conflict (sale_id, ticket_type_id, shard) do update set quantity = sale_stock_allocations.quantity + excluded.quantity`,
    takes.flatMap((take) => [input.saleId, input.ticketTypeId, take.shard, take.quantity]),
  );
  return takes;
}

/** What a sale takes of one ticket type. */
export interface StockRequest {
  ticketTypeId: string;
  quantity: number;
}

/**
 * Takes the stock of every item of a sale, in the caller's transaction. Returns null when all was taken, or the
 * first ticket type short of units; the caller then rolls the transaction back, so nothing stays reserved.
 *
 * Types are taken in ticket type id order, whatever the order's item order. A transaction only ever waits for a
 * stock row while holding rows of lower ticket type ids (takeStock lets go of a row it waited for in vain, and
 * spreads over one type's shards in shard order), so two orders naming the same types in opposite orders queue
 * behind each other instead of deadlocking.
 */
export async function takeStockInOrder(
  em: EntityManager,
  saleId: string,
  items: readonly StockRequest[],
): Promise<{ soldOut: string } | null> {
  const units = new Map<string, number>();
  for (const item of items) units.set(item.ticketTypeId, (units.get(item.ticketTypeId) ?? 0) + item.quantity);
  const ordered = [...units.keys()].sort();
  for (const ticketTypeId of ordered) {
    const taken = await takeStock(em, { saleId, ticketTypeId, quantity: units.get(ticketTypeId) ?? 0 });
    if (!taken) return { soldOut: ticketTypeId };
  }
  return null;
}

/**
 * The first ticket type, in takeStockInOrder's order, that it would find sold out now, read as committed and without
 * locking a row: fewer units on sale than asked, and none held by a reservation whose deadline has passed (the stock
 * step would take those back). Null when every type has enough, or may have once lapsed holds are taken back.
 */
export async function firstSoldOutType(em: EntityManager, items: readonly StockRequest[]): Promise<string | null> {
  const units = new Map<string, number>();
  for (const item of items) units.set(item.ticketTypeId, (units.get(item.ticketTypeId) ?? 0) + item.quantity);
  if (units.size === 0) return null;
  const rows = await em.execute<{ ticket_type_id: string; available: string; lapsed: boolean }[]>(
    `select t.ticket_type_id, sum(t.available) as available,
            exists (select 1 from sale_stock_allocations a join sales s on s.id = a.sale_id
                     where a.ticket_type_id = t.ticket_type_id and s.status = 'PENDING' and s.expires_at <= now()) as lapsed
       from ticket_stock t where t.ticket_type_id in (?) group by t.ticket_type_id`,
    [[...units.keys()]],
  );
  const stock = new Map(rows.map((row) => [row.ticket_type_id, row]));
  for (const ticketTypeId of [...units.keys()].sort()) {
    const row = stock.get(ticketTypeId);
    if (!row || (Number(row.available) < (units.get(ticketTypeId) ?? 0) && !row.lapsed)) return ticketTypeId;
  }
  return null;
}

/**
 * Returns every unit a sale holds to stock and forgets the allocation, in one statement. Running it again returns
 * nothing more (the allocation rows are gone), which is what makes release, expiry, cancel and refund idempotent.
 * Returns the number of units returned.
 */
export async function releaseStock(em: EntityManager, saleId: string): Promise<number> {
  // The update below touches its rows in no set order; locking them first in the order takeStockInOrder takes them
  // keeps a release of a several-type sale from deadlocking with an order taking the same types.
  await em.execute(
    `select 1 from ticket_stock s join sale_stock_allocations a on a.ticket_type_id = s.ticket_type_id and a.shard = s.shard
      where a.sale_id = ? order by s.ticket_type_id, s.shard for update of s`,
    [saleId],
  );
  const rows = await em.execute<{ quantity: number }[]>(
    `with released as (
       delete from sale_stock_allocations where sale_id = ? returning ticket_type_id, shard, quantity)
     update ticket_stock s set available = s.available + r.quantity
       from released r where s.ticket_type_id = r.ticket_type_id and s.shard = r.shard
     returning r.quantity`,
    [saleId],
  );
  return rows.reduce((sum, row) => sum + Number(row.quantity), 0);
}

/**
 * What closing a lapsed hold writes, besides the stock: the sale leaves PENDING as its checkout would close it at the
 * deadline, and its discount use goes back. `closed` names the CTE of the closed sales (id, discount_id).
 */
const LAPSED_SALE_CLOSE = `update sales s set status = 'ABANDONED', closed_at = now(), updated_at = now(),
       failure_reason = coalesce(s.failure_reason, 'payment window expired')
      from lapsed l where s.id = l.id and s.status = 'PENDING' returning s.id, s.discount_id`;
const LAPSED_DISCOUNT_RETURN = `update discounts d set uses = greatest(d.uses - n.uses, 0)
      from (select discount_id, count(*)::int as uses from closed where discount_id is not null group by discount_id) n
     where d.id = n.discount_id returning d.id`;

/**
 * Closes reservations of one ticket type whose payment window has passed, oldest first, until `wanted` units are
 * back in the shards (already locked by the caller, who is short of them). Only sales holding nothing but this type
 * are taken here: touching another type's rows while holding these could deadlock with an order taking both; the
 * sweep (releaseLapsedHolds) frees the others. Sales another transaction holds (a payment confirming) are skipped.
 */
async function reclaimLapsedHoldsOfType(em: EntityManager, ticketTypeId: string, wanted: number): Promise<ShardTake[]> {
  const rows = await em.execute<{ shard: number; quantity: number }[]>(
    `with candidates as (
       select a.sale_id, s.expires_at, sum(a.quantity) as units
         from sale_stock_allocations a join sales s on s.id = a.sale_id
        where a.ticket_type_id = ? and s.status = 'PENDING' and s.expires_at <= now()
          and not exists (select 1 from sale_stock_allocations o where o.sale_id = a.sale_id and o.ticket_type_id <> a.ticket_type_id)
        group by a.sale_id, s.expires_at),
     oldest_first as (
       select sale_id, sum(units) over (order by expires_at, sale_id) - units as units_before from candidates),
     lapsed as (
       select s.id from sales s
        where s.id in (select sale_id from oldest_first where units_before < ?)
        for update of s skip locked),
     closed as (${LAPSED_SALE_CLOSE}),
     released as (
       delete from sale_stock_allocations a using closed c where a.sale_id = c.id
       returning a.shard, a.quantity),
     per_shard as (select shard, sum(quantity)::int as quantity from released group by shard),
     restocked as (
       update ticket_stock t set available = t.available + p.quantity
         from per_shard p where t.ticket_type_id = ? and t.shard = p.shard returning p.shard, p.quantity),
     discounts as (${LAPSED_DISCOUNT_RETURN})
     select shard, quantity from restocked`,
    [ticketTypeId, wanted, ticketTypeId],
  );
  return rows.map((row) => ({ shard: Number(row.shard), quantity: Number(row.quantity) }));
}

export interface LapsedHoldsReleased {
  sales: number;
  units: number;
}

/**
 * The sweep: closes up to `limit` reservations whose payment window has passed and puts their units back on sale, in
 * one transaction. Their checkouts, when their timers fire, find them closed and only do the bookkeeping (ask the
 * gateway, release numbered seats); a payment that still arrives is late money: confirmed if the stock can be taken
 * again, else refunded. Stock rows are locked in (ticket type, shard) order, like every other writer of them.
 */
export async function releaseLapsedHolds(
  em: EntityManager,
  limit: number,
  scope: { workspaceId?: string } = {},
): Promise<LapsedHoldsReleased> {
  // One workspace only when asked (tests sharing a database, an operator sweeping one tenant).
  const lapsed = await em.execute<{ id: string }[]>(
    `select id from sales where status = 'PENDING' and expires_at <= now() ${scope.workspaceId ? 'and workspace_id = ?' : ''}
      order by expires_at limit ? for update skip locked`,
    scope.workspaceId ? [scope.workspaceId, limit] : [limit],
  );
  if (lapsed.length === 0) return { sales: 0, units: 0 };
  // One parameter for the whole batch, however large it is.
  const ids = lapsed.map((row) => row.id).join(',');
  await em.execute(
    `select 1 from ticket_stock t
      where (t.ticket_type_id, t.shard) in (select ticket_type_id, shard from sale_stock_allocations
                                       where sale_id = any(string_to_array(?, ',')::uuid[]))
      order by t.ticket_type_id, t.shard for update of t`,
    [ids],
  );
  const rows = await em.execute<{ sales: string; units: string }[]>(
    `with lapsed as (select unnest(string_to_array(?, ',')::uuid[]) as id),
     closed as (${LAPSED_SALE_CLOSE}),
     released as (
       delete from sale_stock_allocations a using closed c where a.sale_id = c.id
       returning a.ticket_type_id, a.shard, a.quantity),
     per_shard as (select ticket_type_id, shard, sum(quantity)::int as quantity from released group by ticket_type_id, shard),
     restocked as (
       update ticket_stock t set available = t.available + p.quantity
         from per_shard p where t.ticket_type_id = p.ticket_type_id and t.shard = p.shard returning p.quantity),
     discounts as (${LAPSED_DISCOUNT_RETURN})
     select (select count(*) from closed) as sales, (select coalesce(sum(quantity), 0) from restocked) as units`,
    [ids],
  );
  return { sales: Number(rows[0]?.sales ?? 0), units: Number(rows[0]?.units ?? 0) };
}

/** Units a sale currently holds, per ticket type (0 rows: it holds nothing). */
export async function heldBySale(em: EntityManager, saleId: string): Promise<Map<string, number>> {
  const rows = await em.execute<{ ticket_type_id: string; quantity: string }[]>(
    'select ticket_type_id, sum(quantity) as quantity from sale_stock_allocations where sale_id = ? group by ticket_type_id',
    [saleId],
  );
  return new Map(rows.map((row) => [row.ticket_type_id, Number(row.quantity)]));
}

export interface StockLevels {
  available: number;
  sold: number;
  reserved: number;
}

/**
 * Units left to sell per ticket type, as committed now (no lock): Σ of its stock shards, which the stock invariant
 * keeps equal to capacity − sold − reserved. A type without stock rows is absent (it has nothing to sell).
 */
export async function availableUnits(em: EntityManager, ticketTypeIds: string[]): Promise<Map<string, number>> {
  if (ticketTypeIds.length === 0) return new Map();
  // `in (?)` with an array expands to a quoted list; `= any(?)` would not (MikroORM inlines array parameters).
  const rows = await em.execute<{ ticket_type_id: string; available: string }[]>(
    'select ticket_type_id, sum(available) as available from ticket_stock where ticket_type_id in (?) group by ticket_type_id',
    [ticketTypeIds],
  );
  return new Map(rows.map((row) => [row.ticket_type_id, Math.max(0, Number(row.available))]));
}

/** available = Σ shards; sold/reserved = units held by CONFIRMED / PENDING sales. */
export async function stockLevels(em: EntityManager, ticketTypeIds: string[]): Promise<Map<string, StockLevels>> {
  const levels = new Map<string, StockLevels>(ticketTypeIds.map((id) => [id, { available: 0, sold: 0, reserved: 0 }]));
  if (ticketTypeIds.length === 0) return levels;
  for (const [ticketTypeId, available] of await availableUnits(em, ticketTypeIds)) {
    const entry = levels.get(ticketTypeId);
    if (entry) entry.available = available;
  }
  const held = await em.execute<{ ticket_type_id: string; status: string; quantity: string }[]>(
    `select a.ticket_type_id, s.status, sum(a.quantity) as quantity
       from sale_stock_allocations a join sales s on s.id = a.sale_id
      where a.ticket_type_id in (?) group by a.ticket_type_id, s.status`,
    [ticketTypeIds],
  );
  for (const row of held) {
    const entry = levels.get(row.ticket_type_id);
    if (!entry) continue;
    if (row.status === 'CONFIRMED') entry.sold += Number(row.quantity);
    else entry.reserved += Number(row.quantity);
  }
  return levels;
}

/**
 * Changes the capacity of a ticket type by `delta` units. Growing adds to shard 0; shrinking takes from the shards
 * under lock and refuses (409) when it would go below what is already sold or reserved.
 */
export async function adjustCapacity(em: EntityManager, ticketTypeId: string, delta: number): Promise<void> {
  if (delta === 0) return;
  if (delta > 0) {
    await em.execute('update ticket_stock set available = available + ? where ticket_type_id = ? and shard = 0', [
      delta,
      ticketTypeId,
    ]);
    return;
  }
  const shards = await em.execute<{ shard: number; available: number }[]>(
    'select shard, available from ticket_stock where ticket_type_id = ? order by shard for update',
    [ticketTypeId],
  );
  let missing = -delta;
  const free = shards.reduce((sum, row) => sum + row.available, 0);
  if (free < missing) {
    throw new AppError('CONFLICT', `Capacity cannot shrink by ${-delta}: only ${free} unsold units are left`, {
      details: { reason: 'capacity_below_sold', unsellableUnits: missing - free },
    });
  }
  for (const row of shards) {
    if (missing === 0) break;
    const take = Math.min(row.available, missing);
    if (take > 0) {
      await em.execute('update ticket_stock set available = available - ? where ticket_type_id = ? and shard = ?', [
        take,
        ticketTypeId,
        row.shard,
      ]);
      missing -= take;
    }
  }
}
