import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GatewayBClient, parseGatewayBWebhook } from '../../integrations/gateway-b/client.js';
import { gatewayBIntegritySignature, verifyGatewayBWebhook } from '../../integrations/gateway-b/signature.js';
import type { SandboxHandle } from '../../sandbox/server.js';
import { at, control, type ReceivedRequest, Receiver, rejectionOf, startTestSandbox } from './sandbox-support.js';

let sandbox: SandboxHandle;
let receiver: Receiver;
let client: GatewayBClient;
let secretKey: string;
let sequence = 0;

const orderId = (): string => `FT-B${Date.now().toString(36).toUpperCase()}${++sequence}`;

beforeAll(async () => {
  receiver = await Receiver.start();
  sandbox = await startTestSandbox({ gatewayBWebhookUrl: receiver.url('/webhooks/gateway-b') });
  secretKey = sandbox.secrets.gatewayB.secretKey;
  client = new GatewayBClient({
    baseUrl: `${sandbox.httpUrl}/gateway-b`,
    apiKey: sandbox.secrets.gatewayB.apiKey,
    timeoutMs: 5000,
  });
});

afterAll(async () => {
  await sandbox?.close();
  await receiver?.close();
});

/** What the buyer's browser submits through the button: the server-computed configuration plus an outcome. */
function button(order: string, amount = 50_000, extra: Record<string, unknown> = {}) {
  return {
    orderId: order,
    amount,
    currency: 'COP',
    integritySignature: gatewayBIntegritySignature({ orderId: order, amount, currency: 'COP', secretKey }),
    apiKey: sandbox.secrets.gatewayB.apiKey,
    expirationDate: String((BigInt(Date.now()) + 15n * 60_000n) * 1_000_000n),
    redirectionUrl: 'http://shop.test/return',
    ...extra,
  };
}

const webhooksFor =
  (order: string, type?: string) =>
  (request: ReceivedRequest): boolean =>
    at(request.json, 'data', 'metadata', 'reference') === order &&
    (type === undefined || at(request.json, 'type') === type);

const signed = (request: ReceivedRequest): boolean =>
  verifyGatewayBWebhook(request.rawBody, request.headers['x-bold-signature'] as string | undefined, secretKey);

describe('gateway B payment button', () => {
  it('reports NO_TRANSACTION_FOUND before the buyer pays', async () => {
    const status = await client.paymentStatus(orderId());
    expect(status).toMatchObject({ status: 'NO_TRANSACTION_FOUND', transactionId: null, amount: null });
  });

  it('charges a correctly signed button, posts a signed SALE_APPROVED webhook and reports APPROVED', async () => {
    const order = orderId();
    const paid = await control(sandbox, 'POST', '/gateway-b/pay', { ...button(order), outcome: 'approved' });
    expect(paid.status).toBe(201);
    expect(at(paid.body, 'data', 'status')).toBe('APPROVED');
    expect(at(paid.body, 'data', 'webhook', 'delivered')).toBe(true);
    const redirect = new URL(String(at(paid.body, 'data', 'redirectUrl')));
    expect(redirect.searchParams.get('bold-order-id')).toBe(order);
    expect(redirect.searchParams.get('bold-tx-status')).toBe('approved');

    const webhook = await receiver.waitFor(webhooksFor(order, 'SALE_APPROVED'));
    expect(webhook.path).toBe('/webhooks/gateway-b');
    expect(signed(webhook)).toBe(true);
    const event = parseGatewayBWebhook(webhook.rawBody);
    expect(event).toMatchObject({
      type: 'SALE_APPROVED',
      reference: order,
      amount: 50_000,
      currency: 'COP',
      source: '/payments',
      specVersion: '1.0',
    });
    // POSIX nanoseconds, within the last minute.
    expect(event.time).toBeGreaterThan((Date.now() - 60_000) * 1e6);
    expect(event.time).toBeLessThanOrEqual((Date.now() + 1000) * 1e6);

    const status = await client.paymentStatus(order);
    expect(status).toMatchObject({
      status: 'APPROVED',
      transactionId: event.paymentId,
      amount: 50_000,
      currency: 'COP',
    });
  });

  it('detects a webhook whose body was changed after signing', async () => {
    const order = orderId();
    await control(sandbox, 'POST', '/gateway-b/pay', { ...button(order), outcome: 'approved' });
    const webhook = await receiver.waitFor(webhooksFor(order));
    const header = webhook.headers['x-bold-signature'] as string;
    expect(verifyGatewayBWebhook(webhook.rawBody.replace('"total":50000', '"total":5'), header, secretKey)).toBe(false);
    // Re-serialising the parsed body changes the bytes: the signature must be checked on the raw body.
    expect(verifyGatewayBWebhook(JSON.stringify(JSON.parse(webhook.rawBody), null, 2), header, secretKey)).toBe(false);
    expect(verifyGatewayBWebhook(webhook.rawBody, header, secretKey)).toBe(true);
    expect(verifyGatewayBWebhook(webhook.rawBody, header, 'another-secret')).toBe(false);
  });

  it('refuses a button whose amount does not match its integrity signature, and records nothing', async () => {
    const order = orderId();
    const tampered = { ...button(order, 50_000), amount: 5_000, outcome: 'approved' };
    const response = await control(sandbox, 'POST', '/gateway-b/pay', tampered);
    expect(response.status).toBe(422);
    expect(at(response.body, 'error', 'code')).toBe('INTEGRITY_SIGNATURE_MISMATCH');
    expect((await client.paymentStatus(order)).status).toBe('NO_TRANSACTION_FOUND');
    expect(receiver.matching(webhooksFor(order))).toEqual([]);
  });

  it('refuses an expired button (expiration in epoch nanoseconds)', async () => {
    const order = orderId();
    const expired = String((BigInt(Date.now()) - 1000n) * 1_000_000n);
    const response = await control(sandbox, 'POST', '/gateway-b/pay', {
      ...button(order, 50_000, { expirationDate: expired }),
      outcome: 'approved',
    });
    expect(response.status).toBe(422);
    expect(at(response.body, 'error', 'code')).toBe('PAYMENT_LINK_EXPIRED');
    expect((await client.paymentStatus(order)).status).toBe('NO_TRANSACTION_FOUND');
  });

  it('refuses an unknown identity key', async () => {
    const response = await control(sandbox, 'POST', '/gateway-b/pay', {
      ...button(orderId(), 50_000, { apiKey: 'someone-else' }),
      outcome: 'approved',
    });
    expect(response.status).toBe(401);
  });

  it('lets the buyer retry after a rejection, but never pays an order twice', async () => {
    const order = orderId();
    const rejected = await control(sandbox, 'POST', '/gateway-b/pay', { ...button(order), outcome: 'rejected' });
    expect(at(rejected.body, 'data', 'status')).toBe('REJECTED');
    expect(signed(await receiver.waitFor(webhooksFor(order, 'SALE_REJECTED')))).toBe(true);
    expect((await client.paymentStatus(order)).status).toBe('REJECTED');

    const approved = await control(sandbox, 'POST', '/gateway-b/pay', { ...button(order), outcome: 'approved' });
    expect(approved.status).toBe(201);
    expect((await client.paymentStatus(order)).status).toBe('APPROVED');

    const twice = await control(sandbox, 'POST', '/gateway-b/pay', { ...button(order), outcome: 'approved' });
    expect(twice.status).toBe(409);
    expect(at(twice.body, 'error', 'code')).toBe('ORDER_ALREADY_PAID');
  });

  it('keeps a payment PROCESSING without a webhook until the bank answers', async () => {
    const order = orderId();
    await control(sandbox, 'POST', '/gateway-b/pay', { ...button(order), outcome: 'pending' });
    expect((await client.paymentStatus(order)).status).toBe('PROCESSING');
    expect(receiver.matching(webhooksFor(order))).toEqual([]);

    const settled = await control(sandbox, 'POST', '/gateway-b/settle', { orderId: order, outcome: 'approved' });
    expect(settled.status).toBe(200);
    expect(signed(await receiver.waitFor(webhooksFor(order, 'SALE_APPROVED')))).toBe(true);
    expect((await client.paymentStatus(order)).status).toBe('APPROVED');
  });

  it('answers 401 to a wrong identity key on the status API', async () => {
    const intruder = new GatewayBClient({ baseUrl: `${sandbox.httpUrl}/gateway-b`, apiKey: 'wrong' });
    expect(await rejectionOf(intruder.paymentStatus(orderId()))).toMatchObject({
      provider: 'gateway-b',
      status: 401,
      retryable: false,
    });
  });
});

describe('gateway B voids and re-notifications', () => {
  it('voids an approved charge once per key: VOID_APPROVED webhook, status VOIDED', async () => {
    const order = orderId();
    await control(sandbox, 'POST', '/gateway-b/pay', { ...button(order), outcome: 'approved' });
    const first = await client.voidPayment({ orderId: order, idempotencyKey: `void-${order}` });
    const again = await client.voidPayment({ orderId: order, idempotencyKey: `void-${order}` });
    expect(first.status).toBe('VOID_APPROVED');
    expect(again).toEqual(first);

    const webhook = await receiver.waitFor(webhooksFor(order, 'VOID_APPROVED'));
    expect(signed(webhook)).toBe(true);
    expect(parseGatewayBWebhook(webhook.rawBody).paymentId).toBe(first.transactionId);
    expect((await client.paymentStatus(order)).status).toBe('VOIDED');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.matching(webhooksFor(order, 'VOID_APPROVED'))).toHaveLength(1);
  });

  it('refuses to void an order that was never paid', async () => {
    const error = await rejectionOf(client.voidPayment({ orderId: orderId(), idempotencyKey: 'v' }));
    expect(error).toMatchObject({ provider: 'gateway-b', status: 404, code: 'NO_TRANSACTION_FOUND', retryable: false });
  });

  it('re-sends SALE_APPROVED for an approved charge as a new event about the same transaction', async () => {
    const order = orderId();
    await control(sandbox, 'POST', '/gateway-b/pay', { ...button(order), outcome: 'approved' });
    const original = parseGatewayBWebhook((await receiver.waitFor(webhooksFor(order, 'SALE_APPROVED'))).rawBody);

    const renotified = await control(sandbox, 'POST', '/gateway-b/renotify', { orderId: order });
    expect(renotified.status).toBe(200);
    const events = receiver.matching(webhooksFor(order, 'SALE_APPROVED'));
    expect(events).toHaveLength(2);
    const second = parseGatewayBWebhook(events[1]?.rawBody ?? '');
    expect(signed(events[1] as ReceivedRequest)).toBe(true);
    expect(second.id).not.toBe(original.id);
    expect(second.paymentId).toBe(original.paymentId);

    const fallback = await client.notificationsForReference(order);
    expect(fallback.map((e) => e.id)).toEqual([second.id, original.id]);
  });

  it('refuses to re-notify an order without an approved charge', async () => {
    const response = await control(sandbox, 'POST', '/gateway-b/renotify', { orderId: orderId() });
    expect(response.status).toBe(409);
  });
});
