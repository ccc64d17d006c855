import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Returns `quantity` units of one ticket type that a sale holds to stock, and shrinks the sale's allocation by as
 * much, in the caller's transaction (a ticket reassigned to another type or date gives its old unit back). The
 * allocation rows are locked first, so two moves of the same sale cannot return the same unit twice. Returns the
 * units actually returned (fewer when the sale holds fewer).
 */
export async function returnUnits(
  em: EntityManager,
  input: { saleId: string; ticketTypeId: string; quantity: number },
): Promise<number> {
  const rows = await em.execute<{ shard: number; quantity: number }[]>(
    `select shard, quantity from sale_stock_allocations where sale_id = ? and ticket_type_id = ?
      order by shard for update`,
    [input.saleId, input.ticketTypeId],
  );
  let missing = input.quantity;
  for (const row of rows) {
    if (missing === 0) break;
    const back = Math.min(Number(row.quantity), missing);
    if (back <= 0) continue;
    if (back === Number(row.quantity)) {
      await em.execute('delete from sale_stock_allocations where sale_id = ? and ticket_type_id = ? and shard = ?', [
        input.saleId,
        input.ticketTypeId,
        row.shard,
      ]);
    } else {
      await em.execute(
        'update sale_stock_allocations set quantity = quantity - ? where sale_id = ? and ticket_type_id = ? and shard = ?',
        [back, input.saleId, input.ticketTypeId, row.shard],
      );
    }
    await em.execute('update ticket_stock set available = available + ? where ticket_type_id = ? and shard = ?', [
      back,
      input.ticketTypeId,
      row.shard,
    ]);
    missing -= back;
  }
  return input.quantity - missing;
}
