/**
 * Bench-only variants of the stock step, to measure what would lift it (entities/stock.ts is unchanged):
 *
 * `takeStockWaitOne` keeps takeStock's fast path (a random shard with enough, skip locked) but, when every shard is
 * busy, waits on ONE random shard that has enough instead of locking all shards in order; only when no single shard
 * has enough does it take the all-shards path. Under a flash crowd with more concurrent takers than shards, the
 * product code's "every shard busy" fallback locks all of them and serializes every buyer behind it.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { type ShardTake, takeStock } from '../../entities/stock.js';

export async function takeStockWaitOne(
  em: EntityManager,
  input: { saleId: string; ticketTypeId: string; quantity: number },
): Promise<ShardTake[] | null> {
  const { saleId, ticketTypeId, quantity } = input;
  for (const wait of [false, true, true]) {
    // Without FOR UPDATE in the subselect the outer UPDATE waits for the row lock and re-checks `available` on the
    // latest version (READ COMMITTED), so a shard drained meanwhile yields no row and the loop tries another.
    const rows = await em.execute<{ shard: number }[]>(
      `update ticket_stock set available = available - ?
        where ticket_type_id = ? and available >= ? and shard = (
          select shard from ticket_stock where ticket_type_id = ? and available >= ?
          order by random() limit 1 ${wait ? '' : 'for update skip locked'})
        returning shard`,
      [quantity, ticketTypeId, quantity, ticketTypeId, quantity],
    );
    const shard = rows[0]?.shard;
    if (shard !== undefined) {
      await em.execute(
        'insert into sale_stock_allocations (sale_id, ticket_type_id, shard, quantity) values (?, ?, ?, ?)',
        [saleId, ticketTypeId, shard, quantity],
      );
      return [{ shard, quantity }];
    }
  }
  // No single shard has enough (the last units are spread): the product code's all-shards path.
  return takeStock(em, input);
}
