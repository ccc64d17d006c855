/**
 * Numbered-seat fixtures shared by the purchase-session tests: a published event whose date has a fresh chart at the
 * sandbox seat map, a purchase session opened through the customer API, and a client that reads the provider.
 */
import { providerUrls } from '../../config/env.js';
import { SeatMapClient } from '../../integrations/seatmap/client.js';
import type { Organizer } from './fixtures.js';
import { type PublishedEvent, publishEvent, session } from './purchase.js';
import type { TestApi } from './stack.js';

export const SEAT_LABELS = ['A-1', 'A-2', 'A-3', 'A-4', 'A-5', 'A-6'];

export const seatMapOf = (api: TestApi): SeatMapClient =>
  new SeatMapClient({ baseUrl: providerUrls(api.env).seatMap, secretKey: api.env.SEATMAP_SECRET_KEY });

export async function sandboxControl(api: TestApi, path: string, body: unknown): Promise<void> {
  const response = await fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status >= 300) throw new Error(`control ${path} → ${response.status} ${await response.text()}`);
}

/** A published event whose date carries a fresh chart; its only ticket type is numbered (category PLATEA). */
export async function seatedEvent(api: TestApi, organizer: Organizer): Promise<PublishedEvent> {
  const chartKey = `chart-${Math.random().toString(36).slice(2, 10)}`;
  await sandboxControl(api, '/seatmap/charts', {
    chartKey,
    objects: SEAT_LABELS.map((label) => ({ label, categoryKey: 'PLATEA', categoryLabel: 'Platea' })),
  });
  return publishEvent(api, organizer, {
    price: 50_000,
    capacity: SEAT_LABELS.length,
    date: { seatMapChartKey: chartKey },
    ticketType: { name: 'Platea', seatMapCategoryKey: 'PLATEA', seatingSurcharge: 2_000 },
  });
}

export interface OpenedSession {
  id: string;
  holdToken: string;
  expiresAt: string;
  state: string;
}

/** POST /customer/purchase-sessions as the signed-in buyer. */
export async function openPurchaseSession(api: TestApi, token: string, eventDateId: string): Promise<OpenedSession> {
  const response = await api.request({
    method: 'POST',
    url: '/api/v1/customer/purchase-sessions',
    headers: session(token),
    payload: { eventDateId },
  });
  if (response.statusCode !== 201) {
    throw new Error(`POST /customer/purchase-sessions → ${response.statusCode} ${response.body}`);
  }
  return response.json().data as OpenedSession;
}

/** The signed-in buyer's id (GET /customer/me): purchase-session executions are keyed by it. */
export async function buyerIdOf(api: TestApi, token: string): Promise<string> {
  const response = await api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) });
  if (response.statusCode !== 200) throw new Error(`GET /customer/me → ${response.statusCode} ${response.body}`);
  return (response.json().data as { id: string }).id;
}
