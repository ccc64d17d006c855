/**
 * What a flash sale needs before the doors open: a published event (through the organizer API), thousands of
 * signed-in buyers, and tokenized test cards.
 *
 * Buyer sessions are inserted directly — buyer + session rows with the token hashed by the API's own
 * `hashSessionToken` — because signing thousands of buyers in through the real code flow would mail thousands of
 * codes through the sandbox SMTP inbox and measure that instead of the sale.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { hashSessionToken } from '../../api/plugins/customer-auth.js';
import { newId } from '../../entities/ids.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { type HttpClient, runPool } from './http.js';

export interface BenchEvent {
  eventId: string;
  eventDateId: string;
  ticketTypeId: string;
  capacity: number;
}

export async function publishEvent(
  http: HttpClient,
  apiKey: string,
  options: {
    name: string;
    capacity: number;
    price?: number;
    maxPerOrder?: number;
    /** More fields of the date (a waiting room: virtualQueue, queueMinActive, queueMaxActive). */
    date?: Record<string, unknown>;
  },
): Promise<BenchEvent> {
  const headers = { authorization: `Bearer ${apiKey}` };
  const call = async (path: string, body: unknown) => {
    const result = await http.request('POST', path, { headers, body });
    if (result.status >= 300) throw new Error(`POST ${path} → ${result.status} ${JSON.stringify(result.body)}`);
    return (result.body as { data: { id: string } }).data;
  };
  const event = await call('/api/v1/events', { name: options.name });
  const date = await call(`/api/v1/events/${event.id}/dates`, {
    startsAt: new Date(Date.now() + 30 * 24 * 3600 * 1000).toISOString(),
    paymentWindowMinutes: 30,
    ...options.date,
  });
  const type = await call('/api/v1/ticket-types', {
    eventId: event.id,
    eventDateId: date.id,
    name: 'General',
    price: options.price ?? 80_000,
    capacity: options.capacity,
    maxPerOrder: options.maxPerOrder ?? 4,
  });
  await call(`/api/v1/events/${event.id}/publish`, {});
  return { eventId: event.id, eventDateId: date.id, ticketTypeId: type.id, capacity: options.capacity };
}

export interface BenchBuyer {
  buyerId: string;
  email: string;
  token: string;
}

/** Inserts `count` buyers, each with a live session; returns their session tokens. */
export async function createBuyers(pool: pg.Pool, label: string, count: number): Promise<BenchBuyer[]> {
  const buyers: BenchBuyer[] = Array.from({ length: count }, (_, i) => ({
    buyerId: newId(),
    email: `${label}-${i}-${randomBytes(3).toString('hex')}@bench.test`,
    token: randomBytes(32).toString('base64url'),
  }));
  for (let offset = 0; offset < buyers.length; offset += 2000) {
    const batch = buyers.slice(offset, offset + 2000);
    await pool.query(
      `insert into buyers (id, created_at, updated_at, email)
       select unnest($1::uuid[]), now(), now(), unnest($2::text[])`,
      [batch.map((b) => b.buyerId), batch.map((b) => b.email)],
    );
    await pool.query(
      `insert into buyer_sessions (id, buyer_id, token_hash, expires_at, created_at)
       select unnest($1::uuid[]), unnest($2::uuid[]), unnest($3::text[]), now() + interval '1 day', now()`,
      [batch.map(() => newId()), batch.map((b) => b.buyerId), batch.map((b) => hashSessionToken(b.token))],
    );
  }
  return buyers;
}

export const orderBody = (event: BenchEvent, quantity = 1) => ({
  eventDateId: event.eventDateId,
  items: [{ ticketTypeId: event.ticketTypeId, quantity }],
  buyer: { name: 'Bench Buyer', phone: '+57 300 000 0000', idType: 'CC', idNumber: '1020304050' },
  returnUrl: 'http://127.0.0.1/thanks',
});

/** Tokenizes `count` approved test cards at the sandbox's gateway A (each token pays once). */
export async function cardTokens(
  env: Record<string, string>,
  count: number,
  holder = 'APRO',
  concurrency = 32,
): Promise<string[]> {
  const client = new GatewayAClient({
    baseUrl: `${env.SANDBOX_URL}/gateway-a`,
    accessToken: env.GATEWAY_A_ACCESS_TOKEN ?? 'TEST-4010000000000000-000000-sandbox-access-token-dev',
    publicKey: env.GATEWAY_A_PUBLIC_KEY ?? 'TEST-sandbox-public-key-dev',
  });
  const tokens = await runPool(count, concurrency, Date.now() + 10 * 60_000, async () => {
    const token = await client.createCardToken({
      cardNumber: '5031755734530604',
      securityCode: '123',
      expirationMonth: 11,
      expirationYear: 2030,
      cardholderName: holder,
      identification: { type: 'CC', number: '1020304050' },
    });
    return token.id;
  });
  return tokens.filter((t): t is string => typeof t === 'string');
}
