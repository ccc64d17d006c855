/**
 * Bench-only variant of the stock step, kept to show in the same run what entities/stock.ts gained:
 *
 * `takeStockLockAll` is the earlier product code. Its fast path is the same (a random shard with enough, skip
 * locked), but when every shard is busy it locks all shards in order and takes across them, so under a flash crowd
 * with more concurrent takers than shards every buyer queues behind one. takeStock now waits on one shard instead.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ShardTake } from '../../entities/stock.js';

export async function takeStockLockAll(
  em: EntityManager,
  input: { saleId: string; ticketTypeId: string; quantity: number },
): Promise<ShardTake[] | null> {
  const fast = await em.execute<{ shard: number }[]>(
    `update ticket_stock set available = available - ?
      where ticket_type_id = ? and shard = (
        select shard from ticket_stock where ticket_type_id = ? and available >= ?
        order by random() limit 1 for update skip locked)
      returning shard`,
    [input.quantity, input.ticketTypeId, input.ticketTypeId, input.quantity],
  );
  const takes: ShardTake[] = [];
  if (fast[0]) {
    takes.push({ shard: fast[0].shard, quantity: input.quantity });
  } else {
    const shards = await em.execute<{ shard: number; available: number }[]>(
      'select shard, available from ticket_stock where ticket_type_id = ? order by shard for update',
      [input.ticketTypeId],
    );
    if (shards.reduce((sum, row) => sum + row.available, 0) < input.quantity) return null;
    let missing = input.quantity;
    for (const row of shards) {
      const take = Math.min(row.available, missing);
      if (take === 0) continue;
      takes.push({ shard: row.shard, quantity: take });
      missing -= take;
      await em.execute('update ticket_stock set available = available - ? where ticket_type_id = ? and shard = ?', [
        take,
        input.ticketTypeId,
        row.shard,
      ]);
      if (missing === 0) break;
    }
  }
  await em.execute(
    `insert into sale_stock_allocations (sale_id, ticket_type_id, shard, quantity) values ${takes.map(() => '(?, ?, ?, ?)').join(', ')}
       on conflict (sale_id, ticket_type_id, shard) do update set quantity = sale_stock_allocations.quantity + excluded.quantity`,
    takes.flatMap((take) => [input.saleId, input.ticketTypeId, take.shard, take.quantity]),
  );
  return takes;
}
