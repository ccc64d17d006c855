/**
 * Fixtures that go through the same HTTP API a user would: an organizer publishes an event, a buyer signs in
 * with the code the sandbox inbox received, and the sandbox's control API plays the gateways' side.
 */

import { providerUrls } from '../../config/env.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import type { ReserveRequest } from '../../workflows/definitions.js';
import { bearer, type Organizer, uniqueClientAddress } from './fixtures.js';
import type { TestApi } from './stack.js';

export interface PublishedEvent {
  eventId: string;
  slug: string;
  eventDateId: string;
  ticketTypeId: string;
}

export async function publishEvent(
  api: TestApi,
  organizer: Organizer,
  options: {
    price?: number;
    capacity?: number;
    maxPerOrder?: number;
    name?: string;
    ticketType?: Record<string, unknown>;
    date?: Record<string, unknown>;
    event?: Record<string, unknown>;
  } = {},
): Promise<PublishedEvent> {
  const headers = bearer(organizer.key);
  const call = async (method: 'POST', url: string, payload: unknown) => {
    const response = await api.request({ method, url, headers, payload: payload as object });
    if (response.statusCode >= 300) throw new Error(`${method} ${url} → ${response.statusCode} ${response.body}`);
    return response.json().data;
  };
  const event = await call('POST', '/api/v1/events', {
    name: options.name ?? `Concert ${Math.random().toString(36).slice(2, 8)}`,
    ...options.event,
  });
  const date = await call('POST', `/api/v1/events/${event.id}/dates`, {
    startsAt: new Date(Date.now() + 30 * 24 * 3600 * 1000).toISOString(),
    paymentWindowMinutes: 10,
    ...options.date,
  });
  const ticketType = await call('POST', '/api/v1/ticket-types', {
    eventId: event.id,
    eventDateId: date.id,
    name: 'General',
    price: options.price ?? 50_000,
    capacity: options.capacity ?? 100,
    maxPerOrder: options.maxPerOrder ?? 10,
    ...options.ticketType,
  });
  await call('POST', `/api/v1/events/${event.id}/publish`, {});
  return { eventId: event.id, slug: event.slug, eventDateId: date.id, ticketTypeId: ticketType.id };
}

export interface InboxMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  attachments: Array<{ filename: string; contentType: string; size: number }>;
  receivedAt: string;
}

export async function inbox(sandboxUrl: string, to: string): Promise<InboxMessage[]> {
  const response = await fetch(`${sandboxUrl}/control/mail?to=${encodeURIComponent(to)}`);
  const body = (await response.json()) as { data: InboxMessage[] };
  return body.data;
}

export async function waitForMail(
  sandboxUrl: string,
  to: string,
  matches: (message: InboxMessage) => boolean,
  timeoutMs = 20_000,
): Promise<InboxMessage> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const found = (await inbox(sandboxUrl, to)).find(matches);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no mail to ${to} matched within ${timeoutMs} ms`);
}

/** Signs a buyer in as a front end would: request a code, read it from the sandbox inbox, verify it. */
export async function signInBuyer(api: TestApi, email: string): Promise<string> {
  // A client address of its own for each sign-in: the per-address sign-in limit (30 per 10 minutes) is shared by
  // every suite of a run. A counter from the worker's pid gave every test file of one jest worker the same addresses
  // (each file gets a fresh module registry, so the counter restarted), and one address reached 30 in CI.
  const remoteAddress = uniqueClientAddress();
  const requested = await api.request({
    method: 'POST',
    url: '/api/v1/customer/auth/request',
    payload: { email },
    remoteAddress,
  });
  if (requested.statusCode !== 202) throw new Error(`auth/request → ${requested.statusCode} ${requested.body}`);
  const mail = await waitForMail(api.env.SANDBOX_URL, email, (m) => /sign-in code/i.test(m.subject));
  const code = /(\d{6})/.exec(mail.subject)?.[1];
  const verified = await api.request({
    method: 'POST',
    url: '/api/v1/customer/auth/verify',
    payload: { email, code },
    remoteAddress,
  });
  if (verified.statusCode !== 200) throw new Error(`auth/verify → ${verified.statusCode} ${verified.body}`);
  return verified.json().data.session_token;
}

export const session = (token: string): Record<string, string> => ({ 'x-customer-session': token });

/** The buyer confirms a transfer on the sandbox's PSE bank page, as its form does; the page answers 302 back to us. */
export const confirmAtBank = (pageUrl: string, email = 'buyer@example.test'): Promise<Response> =>
  fetch(pageUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ bank: '1007', entity_type: 'individual', email, decision: 'confirm' }),
    redirect: 'manual',
  });

export const orderBody = (event: PublishedEvent, quantity = 1, extra: Record<string, unknown> = {}) => ({
  eventDateId: event.eventDateId,
  items: [{ ticketTypeId: event.ticketTypeId, quantity }],
  buyer: { name: 'Ana Buyer', phone: '+57 300 000 0000', idType: 'CC', idNumber: '1020304050' },
  returnUrl: 'http://localhost:5173/thanks',
  ...extra,
});

/** Tokenizes a test card at gateway A; the cardholder name picks the outcome (APRO, OTHE, FUND, CONT…). */
export async function cardToken(api: TestApi, holder: string): Promise<string> {
  const client = new GatewayAClient({
    baseUrl: providerUrls(api.env).gatewayA,
    accessToken: api.env.GATEWAY_A_ACCESS_TOKEN,
    publicKey: api.env.GATEWAY_A_PUBLIC_KEY,
  });
  const token = await client.createCardToken({
    cardNumber: '5031755734530604',
    securityCode: '123',
    expirationMonth: 11,
    expirationYear: 2030,
    cardholderName: holder,
    identification: { type: 'CC', number: '1020304050' },
  });
  return token.id;
}

export async function eventually<T>(
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!accept(last)) {
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    last = await read();
  }
  return last;
}

/** POST /customer/orders as the signed-in buyer. */
export const reserveOrder = (api: TestApi, token: string, body: unknown) =>
  api.request({ method: 'POST', url: '/api/v1/customer/orders', headers: session(token), payload: body as object });

/** GET /customer/orders/{id}: the authoritative status the buyer sees. */
export const customerOrder = async (api: TestApi, token: string, idOrReference: string) =>
  (
    await api.request({ method: 'GET', url: `/api/v1/customer/orders/${idOrReference}`, headers: session(token) })
  ).json().data;

/**
 * One unit of a storefront order as `reserveThroughCheckout` takes it, for tests that reserve past the HTTP layer
 * (the route would refuse what they send, or would not let them race).
 */
export const storefrontReserveRequest = (
  event: PublishedEvent,
  buyerEmail: string,
  buyerName = 'Storefront Buyer',
): Omit<ReserveRequest, 'paymentWindowMs'> => ({
  origin: 'PUBLIC',
  channel: 'WEB',
  pinnedWorkspaceId: null,
  eventDateId: event.eventDateId,
  ticketTypeId: event.ticketTypeId,
  quantity: 1,
  seats: null,
  holdToken: null,
  discountCode: null,
  buyerId: null,
  buyerEmail,
  buyer: { name: buyerName, phone: null, idType: null, idNumber: null, nitDigit: null },
  returnUrl: null,
  confirmImmediately: false,
  complimentary: false,
});

/** Waits until the ticket mailer has sent the sale's ticket email: its row has left the queue. */
export async function untilTicketEmailSent(api: TestApi, saleId: string): Promise<void> {
  const owed = () =>
    api.orm.em
      .fork()
      .execute<{ n: number }[]>('select count(*)::int as n from ticket_email_queue where sale_id = ?', [saleId]);
  await eventually(owed, (rows) => rows[0]?.n === 0);
}
