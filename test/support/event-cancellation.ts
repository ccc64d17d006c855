/**
 * What the event-cancellation fault tests share: an event of paid sales, the organizer's cancel, the event's
 * cancellation progress, gateway A's sandbox-wide fault switch, and the two ledgers that say each sale was refunded
 * exactly once (the database's records, and the refunds the gateway holds for each seeded payment).
 */
import type pg from 'pg';
import { type SeededSale, seedPaidSales } from '../../bench/lib/cancellation-seed.js';
import { providerUrls } from '../../config/env.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { bearer, type Organizer } from './fixtures.js';
import { type PublishedEvent, publishEvent } from './purchase.js';
import type { TestApi } from './stack.js';

/** A published event of `count` sales, each paid by a real card payment at the sandbox's gateway A. */
export async function eventOfPaidSales(
  api: TestApi,
  organizer: Organizer,
  pool: pg.Pool,
  options: { count: number; price: number },
): Promise<{ event: PublishedEvent; sales: SeededSale[] }> {
  const event = await publishEvent(api, organizer, { capacity: options.count, price: options.price });
  const sales = await seedPaidSales({
    query: async (sql, params) => (await pool.query(sql, params)).rows,
    gatewayA: new GatewayAClient({
      baseUrl: providerUrls(api.env).gatewayA,
      accessToken: api.env.GATEWAY_A_ACCESS_TOKEN,
    }),
    event,
    count: options.count,
    price: options.price,
  });
  return { event, sales };
}

export interface SaleRefundRecords {
  sale_id: string;
  status: string;
  /** Confirmed REFUND records (the gateway's confirmation; the organizer's request row beside it is not counted). */
  refunds: number;
  /** `sale.refunded` events in the outbox. */
  notices: number;
}

/** Each sale's status and its refund records, by the database. */
export async function refundRecordsOf(pool: pg.Pool, saleIds: readonly string[]): Promise<SaleRefundRecords[]> {
  const { rows } = await pool.query<SaleRefundRecords>(
    `select s.id as sale_id, s.status,
            (select count(*)::int from payment_attempts a
              where a.sale_id = s.id and a.kind = 'REFUND' and a.status = 'refunded'
                and a.dedupe_key not like 'refund-request:%') as refunds,
            (select count(*)::int from outbox_events o
              where o.type = 'sale.refunded' and o.payload->>'saleId' = s.id::text) as notices
       from sales s where s.id = any($1::uuid[])`,
    [saleIds],
  );
  return rows;
}

/** The sales not refunded exactly once: not REFUNDED, or with other than one refund record and one notice. */
export const notRefundedOnce = (records: readonly SaleRefundRecords[]): SaleRefundRecords[] =>
  records.filter((row) => row.status !== 'REFUNDED' || row.refunds !== 1 || row.notices !== 1);

export interface CancellationProgress {
  state: string;
  refunded: number;
  refused: number;
  confirmed: number;
  pending: number;
  failures: unknown[];
}

export const cancelEvent = (api: TestApi, organizer: Organizer, eventId: string, reason = 'venue flooded') =>
  api.request({
    method: 'POST',
    url: `/api/v1/events/${eventId}/cancel`,
    headers: bearer(organizer.key),
    payload: { reason },
  });

export async function eventOf(
  api: TestApi,
  organizer: Organizer,
  eventId: string,
): Promise<{ cancellation: CancellationProgress | null }> {
  return (await api.request({ method: 'GET', url: `/api/v1/events/${eventId}`, headers: bearer(organizer.key) })).json()
    .data;
}

/** Gateway A's sandbox-wide fault switch: `down` answers 503, `slow` lags every call by `delayMs`. */
export async function setGatewayA(api: TestApi, mode: 'ok' | 'down' | 'slow', delayMs?: number): Promise<void> {
  const response = await fetch(`${api.env.SANDBOX_URL}/control/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ target: 'gateway-a', mode, ...(delayMs ? { delayMs } : {}) }),
  });
  if (!response.ok) throw new Error(`gateway-a ${mode} → ${response.status}`);
}

/** How many refunds gateway A holds for each seeded sale's payment, by sale id. */
export async function refundsAtGateway(api: TestApi, sales: SeededSale[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < sales.length) {
        const sale = sales[next] as SeededSale;
        next += 1;
        const response = await fetch(`${api.env.SANDBOX_URL}/gateway-a/v1/payments/${sale.paymentId}/refunds`, {
          headers: { authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` },
        });
        counts.set(sale.saleId, ((await response.json()) as unknown[]).length);
      }
    }),
  );
  return counts;
}
