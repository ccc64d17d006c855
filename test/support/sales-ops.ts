import { createHash } from 'node:crypto';
import { bearer, type Organizer } from './fixtures.js';
import { privateTaskQueue, startPrivateWorker } from './private-stack.js';
import { cardToken, orderBody, type PublishedEvent, session, signInBuyer } from './purchase.js';
import { startTestApi, type TestApi } from './stack.js';

export const uniqueEmail = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;

export async function control(api: TestApi, path: string, body: unknown): Promise<Response> {
  return fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

export async function available(api: TestApi, organizer: Organizer, ticketTypeId: string): Promise<number> {
  const response = await api.request({
    method: 'GET',
    url: `/api/v1/ticket-types/${ticketTypeId}`,
    headers: bearer(organizer.key),
  });
  return response.json().data.available;
}

export async function saleOf(api: TestApi, organizer: Organizer, saleId: string) {
  const response = await api.request({ method: 'GET', url: `/api/v1/sales/${saleId}`, headers: bearer(organizer.key) });
  return response.json().data;
}

export async function ticketsOf(
  api: TestApi,
  organizer: Organizer,
  saleId: string,
): Promise<Array<{ id: string; code: string; status: string; ticketTypeId: string; checkedInAt: string | null }>> {
  const response = await api.request({
    method: 'GET',
    url: `/api/v1/sales/${saleId}/tickets`,
    headers: bearer(organizer.key),
  });
  return response.json().data;
}

/** A complimentary (or box-office) sale: CONFIRMED at once, no gateway. */
export async function complimentary(
  api: TestApi,
  organizer: Organizer,
  event: PublishedEvent,
  quantity = 1,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; reference: string }> {
  const response = await api.request({
    method: 'POST',
    url: '/api/v1/sales',
    headers: bearer(organizer.key),
    payload: {
      eventDateId: event.eventDateId,
      ticketTypeId: event.ticketTypeId,
      quantity,
      complimentary: true,
      buyer: { name: 'Guest Person', email: uniqueEmail('guest') },
      ...extra,
    },
  });
  if (response.statusCode !== 201) throw new Error(`POST /sales → ${response.statusCode} ${response.body}`);
  return response.json().data;
}

/** A buyer reserves `quantity` tickets through the headless flow: a PENDING sale. */
export async function reserve(api: TestApi, event: PublishedEvent, label: string, quantity = 1) {
  const email = uniqueEmail(label);
  const token = await signInBuyer(api, email);
  const created = await api.request({
    method: 'POST',
    url: '/api/v1/customer/orders',
    headers: session(token),
    payload: orderBody(event, quantity),
  });
  if (created.statusCode !== 201) throw new Error(`POST /customer/orders → ${created.statusCode} ${created.body}`);
  const order = created.json().data as { saleId: string; reference: string; total: number; expiresAt: string };
  return { email, token, order };
}

/** Charges a gateway A test card; the cardholder name picks the outcome (APRO approved, CONT pending, OTHE rejected). */
export async function payByCard(api: TestApi, token: string, saleId: string, holder = 'APRO') {
  const charged = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment/card`,
    headers: session(token),
    payload: { token: await cardToken(api, holder) },
  });
  if (charged.statusCode !== 200) throw new Error(`payment/card → ${charged.statusCode} ${charged.body}`);
  return charged.json().data as { paymentId: string; status: string; saleStatus: string };
}

/** Opens gateway B's button for a sale and returns its configuration. */
export async function openGatewayB(api: TestApi, token: string, saleId: string) {
  const opened = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment`,
    headers: session(token),
  });
  if (opened.statusCode !== 200) throw new Error(`payment → ${opened.statusCode} ${opened.body}`);
  return opened.json().data as { orderId: string; amount: number; currency: string; integritySignature: string };
}

/** Gateway B's integrity signature for any amount (the sandbox checks it like the real gateway). */
export const gatewayBSignature = (api: TestApi, orderId: string, amount: number, currency: string) =>
  createHash('sha256').update(`${orderId}${amount}${currency}${api.env.GATEWAY_B_SECRET_KEY}`).digest('hex');

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts `test/support/flaky-worker.ts` on a private task queue (a child process, like the shared worker) and an
 * in-process API that starts its workflows there, so one test's provider outage stays its own.
 */
export async function startFlakyStack(options: {
  gatewayAFailures?: number;
  gatewayBDown?: boolean;
}): Promise<{ api: TestApi; close(): Promise<void> }> {
  const taskQueue = privateTaskQueue('flaky');
  const worker = await startPrivateWorker(taskQueue, {
    FLAKY_GATEWAY_A_FAILURES: String(options.gatewayAFailures ?? 0),
    FLAKY_GATEWAY_B_DOWN: options.gatewayBDown ? 'true' : 'false',
  });
  const api = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue });
  return {
    api,
    async close() {
      await api.close();
      await worker.close();
    },
  };
}
