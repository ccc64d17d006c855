/**
 * What the event-cancellation fault tests share: the organizer's cancel, the event's cancellation progress, gateway A's
 * sandbox-wide fault switch and the refunds the gateway holds for each seeded payment.
 */
import type { SeededSale } from '../../bench/lib/cancellation-seed.js';
import { bearer, type Organizer } from './fixtures.js';
import type { TestApi } from './stack.js';

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
