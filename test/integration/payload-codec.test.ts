/**
 * Buyer personal data in workflow histories: a real purchase through the API leaves the buyer's name, email and ID
 * number nowhere in the checkout's history (the payload codec encrypts every payload the API and the worker send),
 * and operators read them back through the codec endpoint (`/codec/decode`, Temporal's codec-server protocol) with
 * the operator token: the Temporal UI from its origin (CORS with credentials), the Temporal CLI with `--codec-auth`.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.js';
import { REDACTED_PATHS } from '../../config/logger.js';
import { temporalBinary } from '../../scripts/support/temporal.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer } from '../support/fixtures.js';
import {
  cardToken,
  customerOrder,
  eventually,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const TOKEN = `codec-operator-${randomBytes(24).toString('hex')}`;
const UI_ORIGIN = 'http://127.0.0.1:8233';
const ENCRYPTED = Buffer.from('binary/encrypted').toString('base64');
const suffix = randomBytes(4).toString('hex');
const buyer = {
  name: `Zoe Cifrado ${suffix}`,
  email: `zoe.cifrado.${suffix}@buyers.test`,
  idNumber: `55${String(randomBytes(4).readUInt32BE()).padStart(10, '0')}`,
};
const piiValues = Object.values(buyer);

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

/** The history's JSON plus the base64 decoding of every string in it: plain payloads are base64 in the export. */
function searchable(json: string): string {
  const parts: string[] = [json];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      if (value.length >= 8 && /^[A-Za-z0-9+/]+={0,2}$/.test(value)) {
        parts.push(Buffer.from(value, 'base64').toString('utf8'));
      }
    } else if (Array.isArray(value)) {
      value.forEach(walk);
    } else if (value !== null && typeof value === 'object') {
      Object.values(value).forEach(walk);
    }
  };
  walk(JSON.parse(json));
  return parts.join('\n');
}

/** Every payload of the history the codec encrypted. */
function encryptedPayloads(json: string): JsonPayload[] {
  const found: JsonPayload[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) {
      value.forEach(walk);
    } else if (value !== null && typeof value === 'object') {
      const candidate = value as JsonPayload;
      if (candidate.metadata?.encoding === ENCRYPTED)
        found.push({ metadata: candidate.metadata, data: candidate.data });
      else Object.values(value).forEach(walk);
    }
  };
  walk(JSON.parse(json));
  return found;
}

const operator = (extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${TOKEN}`,
  'x-namespace': 'default',
  ...extra,
});

let api: TestApi;
/** The same app on a real port with a capturing logger: for the Temporal CLI and to read what gets logged. */
let served: FastifyInstance;
let codecUrl: string;
const logged: string[] = [];
let saleId: string;
let history: string;

const historyArgs = () => [
  'workflow',
  'show',
  '--workflow-id',
  checkoutWorkflowId(saleId),
  '--address',
  api.env.TEMPORAL_ADDRESS,
  '--output',
  'json',
];

beforeAll(async () => {
  api = await startTestApi({ CODEC_OPERATOR_TOKEN: TOKEN });
  served = await buildApp(api.services, {
    logger: {
      level: 'trace',
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      stream: { write: (line: string) => void logged.push(line) },
    },
  });
  await served.listen({ host: '127.0.0.1', port: 0 });
  codecUrl = `http://127.0.0.1:${(served.server.address() as AddressInfo).port}/codec`;

  const organizer = await createOrganizer(api.orm.em.fork());
  const event = await publishEvent(api, organizer);
  const token = await signInBuyer(api, buyer.email);
  const order = await reserveOrder(
    api,
    token,
    orderBody(event, 1, {
      buyer: { name: buyer.name, phone: '+57 301 555 0101', idType: 'CC', idNumber: buyer.idNumber },
    }),
  );
  expect(order.statusCode).toBe(201);
  saleId = order.json().data.saleId;
  await api.request({ method: 'POST', url: `/api/v1/customer/orders/${saleId}/payment`, headers: session(token) });
  const charged = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment/card`,
    headers: session(token),
    payload: { token: await cardToken(api, 'APRO') },
  });
  expect(charged.json().data.saleStatus).toBe('CONFIRMED');
  await eventually(
    async () => await customerOrder(api, token, saleId),
    (o) => o.status === 'CONFIRMED',
  );
  history = execFileSync(temporalBinary(), historyArgs(), { encoding: 'utf8' });
}, 120_000);

afterAll(async () => {
  await served?.close();
  await api?.close();
});

describe('buyer data in the checkout history', () => {
  test('control: the search finds buyer data in a plain payload, as Temporal stores one without the codec', () => {
    const encoded = (text: string) => Buffer.from(text).toString('base64');
    const plain = JSON.stringify({
      events: [
        {
          workflowExecutionStartedEventAttributes: {
            input: {
              payloads: [
                {
                  metadata: { encoding: encoded('json/plain') },
                  data: encoded(JSON.stringify({ buyer: { name: 'Ana Buyer', email: 'ana@example.com' } })),
                },
              ],
            },
          },
        },
      ],
    });
    expect(plain).not.toContain('Ana Buyer');
    expect(searchable(plain)).toContain('Ana Buyer');
  });

  test("the buyer's email, name and ID number appear nowhere in the exported history", () => {
    const text = searchable(history);
    for (const value of piiValues) expect(text).not.toContain(value);
    expect(encryptedPayloads(history).length).toBeGreaterThan(5);
  });

  test('operators decode them with POST /codec/decode and the operator token', async () => {
    const payloads = encryptedPayloads(history);
    const response = await api.request({
      method: 'POST',
      url: '/codec/decode',
      headers: operator(),
      payload: { payloads },
    });
    expect(response.statusCode).toBe(200);
    const decoded = response.json().payloads as JsonPayload[];
    expect(decoded).toHaveLength(payloads.length);
    expect(decoded.every((p) => p.metadata?.encoding !== ENCRYPTED)).toBe(true);
    const text = decoded.map((p) => Buffer.from(p.data ?? '', 'base64').toString('utf8')).join('\n');
    for (const value of piiValues) expect(text).toContain(value);
  });

  test('the Temporal CLI decodes the history through the endpoint (--codec-endpoint, --codec-auth)', async () => {
    // Asynchronous: the CLI calls back into this process's server, which a synchronous child would block.
    const { stdout } = await promisify(execFile)(
      temporalBinary(),
      [...historyArgs(), '--codec-endpoint', codecUrl, '--codec-auth', `Bearer ${TOKEN}`],
      { timeout: 60_000 },
    );
    const decoded = searchable(stdout);
    for (const value of piiValues) expect(decoded).toContain(value);
  });

  test('logs name the operation and counts, never the token or the decoded data', async () => {
    const response = await served.inject({
      method: 'POST',
      url: '/codec/decode',
      headers: operator(),
      payload: { payloads: encryptedPayloads(history) },
    });
    expect(response.statusCode).toBe(200);
    const lines = logged.join('\n');
    expect(lines).toContain('"codec":"decode"');
    for (const secret of [TOKEN, ...piiValues]) expect(lines).not.toContain(secret);
  });
});

describe('codec endpoint protocol and access', () => {
  test('without operator credentials → 401 with the contract error body; a wrong token → 401 too', async () => {
    const payloads = encryptedPayloads(history).slice(0, 1);
    const anonymous = await api.request({
      method: 'POST',
      url: '/codec/decode',
      headers: { 'x-namespace': 'default' },
      payload: { payloads },
    });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toEqual({
      error: { code: 'UNAUTHENTICATED', message: expect.any(String), retryable: false, details: null },
    });
    for (const value of piiValues) expect(anonymous.body).not.toContain(value);
    const wrong = await api.request({
      method: 'POST',
      url: '/codec/decode',
      headers: { authorization: `Bearer ${TOKEN}x` },
      payload: { payloads },
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error.code).toBe('UNAUTHENTICATED');
    const organizer = await createOrganizer(api.orm.em.fork(), { role: 'SUPER_ADMIN' });
    const apiKey = await api.request({
      method: 'POST',
      url: '/codec/decode',
      headers: { authorization: `Bearer ${organizer.key}` },
      payload: { payloads },
    });
    expect(apiKey.statusCode).toBe(401);
  });

  test('the CORS preflight from the Temporal UI origin allows credentials and the headers the UI sends', async () => {
    const preflight = await api.request({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: {
        origin: UI_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-namespace',
      },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(UI_ORIGIN);
    expect(preflight.headers['access-control-allow-credentials']).toBe('true');
    expect(String(preflight.headers['access-control-allow-methods'])).toContain('POST');
    const allowed = String(preflight.headers['access-control-allow-headers']).toLowerCase();
    for (const header of ['authorization', 'x-namespace', 'content-type']) expect(allowed).toContain(header);

    const localhost = await api.request({
      method: 'OPTIONS',
      url: '/codec/encode',
      headers: { origin: 'http://localhost:8233', 'access-control-request-method': 'POST' },
    });
    expect(localhost.headers['access-control-allow-origin']).toBe('http://localhost:8233');

    const foreign = await api.request({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    expect(foreign.headers['access-control-allow-credentials']).toBeUndefined();
  });

  test('the UI flow: GET /codec/login asks for Basic credentials; the remembered token decodes cross-origin', async () => {
    const challenge = await api.request({ method: 'GET', url: '/codec/login' });
    expect(challenge.statusCode).toBe(401);
    expect(challenge.headers['www-authenticate']).toMatch(/^Basic realm=/);
    const basic = `Basic ${Buffer.from(`operator:${TOKEN}`).toString('base64')}`;
    const signedIn = await api.request({ method: 'GET', url: '/codec/login', headers: { authorization: basic } });
    expect(signedIn.statusCode).toBe(200);

    const decoded = await api.request({
      method: 'POST',
      url: '/codec/decode',
      headers: { authorization: basic, origin: UI_ORIGIN, 'x-namespace': 'default' },
      payload: { payloads: encryptedPayloads(history) },
    });
    expect(decoded.statusCode).toBe(200);
    expect(decoded.headers['access-control-allow-origin']).toBe(UI_ORIGIN);
    expect(decoded.headers['access-control-allow-credentials']).toBe('true');
    expect(decoded.headers['cache-control']).toBe('no-store');
    const text = (decoded.json().payloads as JsonPayload[])
      .map((p) => Buffer.from(p.data ?? '', 'base64').toString('utf8'))
      .join('\n');
    expect(text).toContain(buyer.email);
  });

  test('encode then decode gives the payloads back; plain payloads pass through decode as sent; {} is no payloads', async () => {
    const plain = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: 'eyJhIjoxfQ==' };
    const encoded = await api.request({
      method: 'POST',
      url: '/codec/encode',
      headers: operator(),
      payload: { payloads: [plain] },
    });
    expect(encoded.statusCode).toBe(200);
    const [ciphertext] = encoded.json().payloads as JsonPayload[];
    expect(ciphertext?.metadata?.encoding).toBe(ENCRYPTED);
    expect(Buffer.from(ciphertext?.metadata?.['encryption-key-id'] ?? '', 'base64').toString()).toBe(
      api.env.PAYLOAD_CODEC_ACTIVE_KEY,
    );
    const decoded = await api.request({
      method: 'POST',
      url: '/codec/decode',
      headers: operator(),
      payload: { payloads: [ciphertext, plain] },
    });
    expect(decoded.json().payloads).toEqual([plain, plain]);
    // Protobuf JSON leaves an empty list out: the CLI sends `{}` for a field without payloads.
    const empty = await api.request({ method: 'POST', url: '/codec/decode', headers: operator(), payload: {} });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ payloads: [] });
  });

  test('a tampered payload → 400 naming the payload; another namespace → 400; Idempotency-Key is not stored', async () => {
    const [first] = encryptedPayloads(history);
    const data = Buffer.from(first?.data ?? '', 'base64');
    data[data.length - 1] = (data[data.length - 1] ?? 0) ^ 0xff;
    const tampered = await api.request({
      method: 'POST',
      url: '/codec/decode',
      headers: operator(),
      payload: { payloads: [first, { ...first, data: data.toString('base64') }] },
    });
    expect(tampered.statusCode).toBe(400);
    expect(tampered.json().error).toMatchObject({ code: 'BAD_REQUEST', details: { index: 1 } });
    expect(tampered.json().error.message).toMatch(/payloads\[1\].*failed authentication/);

    const otherNamespace = await api.request({
      method: 'POST',
      url: '/codec/decode',
      headers: operator({ 'x-namespace': 'someone-else' }),
      payload: { payloads: [first] },
    });
    expect(otherNamespace.statusCode).toBe(400);

    const key = `codec-${suffix}`;
    const once = await api.request({
      method: 'POST',
      url: '/codec/decode',
      headers: operator({ 'idempotency-key': key }),
      payload: { payloads: [first] },
    });
    expect(once.statusCode).toBe(200);
    const rows = (await api.orm.em
      .fork()
      .execute('select count(*)::int as n from idempotency_records where key = ?', [key])) as Array<{ n: number }>;
    expect(rows[0]?.n).toBe(0);
  });

  test('the codec endpoint is not part of the OpenAPI documents', async () => {
    const documents = await Promise.all(
      ['/api/v1/openapi.json', '/api/public/openapi.json'].map((url) => api.request({ method: 'GET', url })),
    );
    for (const document of documents) {
      expect(document.statusCode).toBe(200);
      expect(document.body).not.toContain('/codec');
    }
  });
});
