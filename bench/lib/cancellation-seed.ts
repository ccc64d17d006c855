/**
 * Paid sales for the event-cancellation fault test and bench, made fast: buying thousands through the API would take
 * longer than the cancellation being measured. Each sale is paid for real at the sandbox's gateway A (a card token
 * and an approved card payment, so the refund is a real refund of a real payment), then written as the checkout
 * would have confirmed it: CONFIRMED with its payment, one sale item, one VALID ticket, its stock taken from the
 * ticket type's shards, and its approved CARD payment attempt.
 */
import { randomUUID } from 'node:crypto';
import type { GatewayAClient } from '../../integrations/gateway-a/client.js';

/** Runs one SQL statement with `$n` parameters and returns its rows (pg.Pool#query, adapted). */
export type SqlQuery = <R>(sql: string, params: unknown[]) => Promise<R[]>;

export interface SeededSale {
  saleId: string;
  reference: string;
  paymentId: string;
}

const APPROVED_CARD = {
  cardNumber: '5031 7557 3453 0604',
  securityCode: '123',
  expirationMonth: 11,
  expirationYear: 2030,
  cardholderName: 'APRO',
} as const;

async function inLanes<T>(count: number, lanes: number, work: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(lanes, count) }, async () => {
      while (next < count) {
        const index = next;
        next += 1;
        results[index] = await work(index);
      }
    }),
  );
  return results;
}

/**
 * `count` CONFIRMED sales of one ticket each on the event's ticket type, each paid at gateway A. `price` in minor
 * units of COP (the ticket type's price). Payments are created `lanes` at once.
 */
export async function seedPaidSales(options: {
  query: SqlQuery;
  gatewayA: GatewayAClient;
  event: { eventId: string; eventDateId: string; ticketTypeId: string };
  count: number;
  price: number;
  lanes?: number;
}): Promise<SeededSale[]> {
  const { query, gatewayA, event, count, price } = options;
  const tag = randomUUID().replace(/-/g, '').slice(0, 6).toUpperCase();
  const references = Array.from({ length: count }, (_, i) => `EV${tag}${String(i).padStart(6, '0')}`);
  const paymentIds = await inLanes(count, options.lanes ?? 16, async (i) => {
    const token = await gatewayA.createCardToken(APPROVED_CARD);
    const payment = await gatewayA.createPayment({
      idempotencyKey: `seed-${references[i]}`,
      cardToken: token.id,
      amount: price,
      currency: 'COP',
      description: 'event cancellation seed',
      payerEmail: `buyer-${references[i]?.toLowerCase()}@seed.test`,
      externalReference: references[i] as string,
      notificationUrl: 'http://127.0.0.1:9/unused',
    });
    if (payment.status !== 'approved') throw new Error(`seed payment ${payment.id} is ${payment.status}`);
    return payment.id;
  });
  const saleIds = references.map(() => randomUUID());
  const [stock] = await query<{ available: number }>(
    'select coalesce(sum(available), 0)::int as available from ticket_stock where ticket_type_id = $1',
    [event.ticketTypeId],
  );
  if ((stock?.available ?? 0) < count)
    throw new Error(`ticket type holds ${stock?.available} units for ${count} sales`);
  await query(
    `with seed as (
       select * from unnest($1::uuid[], $2::text[], $3::text[]) with ordinality as t(id, reference, payment_id, n)),
     -- One unit of stock per sale, taken shard by shard from what each shard holds.
     units as (
       select k.shard, row_number() over (order by k.shard, g) as n
         from ticket_stock k, generate_series(1, k.available) g where k.ticket_type_id = $6),
     placed as (select seed.n, units.shard from seed join units on units.n = seed.n),
     event_row as (select workspace_id from events where id = $4),
     sales_in as (
       insert into sales (id, created_at, updated_at, workspace_id, reference, status, channel, origin, event_id,
                          event_date_id, buyer_name, buyer_email, subtotal, discount_amount, service_fee, iva, total,
                          currency, payment_provider, payment_ref, payment_status, confirmed_at)
       select seed.id, now(), now(), event_row.workspace_id, seed.reference, 'CONFIRMED', 'WEB', 'CUSTOMER', $4, $5,
              'Seed buyer ' || seed.n, 'buyer-' || lower(seed.reference) || '@seed.test', $7, 0, 0, 0, $7, 'COP',
              'GATEWAY_A', seed.payment_id, 'approved', now()
         from seed, event_row returning id),
     items_in as (
       insert into sale_items (id, sale_id, ticket_type_id, ticket_type_name, quantity, unit_price, unit_service_fee,
                               unit_iva)
       select gen_random_uuid(), seed.id, $6, 'General', 1, $7, 0, 0 from seed returning 1),
     tickets_in as (
       insert into tickets (id, created_at, updated_at, workspace_id, sale_id, ticket_type_id, event_id, event_date_id,
                            code, ordinal, status)
       select gen_random_uuid(), now(), now(), event_row.workspace_id, seed.id, $6, $4, $5, md5(seed.id::text), 1, 'VALID'
         from seed, event_row returning 1),
     allocations_in as (
       insert into sale_stock_allocations (sale_id, ticket_type_id, shard, quantity)
       select seed.id, $6, placed.shard, 1 from seed join placed on placed.n = seed.n returning shard),
     attempts_in as (
       insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, created_at)
       select gen_random_uuid(), seed.id, 'GATEWAY_A', 'CARD', seed.payment_id, 'approved', $7, now() from seed
       returning 1)
     update ticket_stock s set available = s.available - taken.quantity
       from (select shard, count(*)::int as quantity from placed group by 1) taken
      where s.ticket_type_id = $6 and s.shard = taken.shard`,
    [saleIds, references, paymentIds, event.eventId, event.eventDateId, event.ticketTypeId, price],
  );
  return saleIds.map((saleId, i) => ({
    saleId,
    reference: references[i] as string,
    paymentId: paymentIds[i] as string,
  }));
}
