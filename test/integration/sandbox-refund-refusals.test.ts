import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { GatewayBClient } from '../../integrations/gateway-b/client.js';
import { gatewayBIntegritySignature } from '../../integrations/gateway-b/signature.js';
import type { SandboxHandle } from '../../sandbox/server.js';
import { at, control, type ReceivedRequest, Receiver, rejectionOf, startTestSandbox } from './sandbox-support.js';

/**
 * The sandbox's refund-refusal mode (`/control/refund-refusals`): a gateway that answers a refund with its final
 * refusal (the merchant's balance cannot cover it) until the refusal is cleared, scoped to a payment or a reference.
 */

let sandbox: SandboxHandle;
let receiver: Receiver;
let gatewayA: GatewayAClient;
let gatewayB: GatewayBClient;
let sequence = 0;

const reference = (): string => `RR-${Date.now().toString(36).toUpperCase()}${++sequence}`;
const nextYear = new Date().getUTCFullYear() + 3;

beforeAll(async () => {
  receiver = await Receiver.start();
  sandbox = await startTestSandbox({ gatewayBWebhookUrl: receiver.url('/webhooks/gateway-b') });
  gatewayA = new GatewayAClient({
    baseUrl: `${sandbox.httpUrl}/gateway-a`,
    accessToken: sandbox.secrets.gatewayA.accessToken,
    publicKey: sandbox.secrets.gatewayA.publicKey,
    timeoutMs: 5000,
  });
  gatewayB = new GatewayBClient({
    baseUrl: `${sandbox.httpUrl}/gateway-b`,
    apiKey: sandbox.secrets.gatewayB.apiKey,
    timeoutMs: 5000,
  });
});

afterEach(async () => {
  await clearRefusals({});
});

afterAll(async () => {
  await sandbox?.close();
  await receiver?.close();
});

/** DELETE with a JSON scope (the shared control helper knows GET, POST and PUT only). */
async function clearRefusals(scope: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${sandbox.httpUrl}/control/refund-refusals`, {
    method: 'DELETE',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(scope),
  });
  return { status: response.status, body: await response.json() };
}

async function chargeA(ref: string) {
  const token = await gatewayA.createCardToken({
    cardNumber: '5031 4332 1540 6351',
    securityCode: '123',
    expirationMonth: 11,
    expirationYear: nextYear,
    cardholderName: 'APRO',
  });
  return gatewayA.createPayment({
    idempotencyKey: `key-${ref}`,
    cardToken: token.id,
    amount: 50_000,
    currency: 'COP',
    description: 'Two tickets',
    payerEmail: 'buyer@example.com',
    externalReference: ref,
    notificationUrl: receiver.url('/webhooks/gateway-a'),
  });
}

async function payB(order: string): Promise<void> {
  const amount = 50_000;
  const secretKey = sandbox.secrets.gatewayB.secretKey;
  const paid = await control(sandbox, 'POST', '/gateway-b/pay', {
    orderId: order,
    amount,
    currency: 'COP',
    integritySignature: gatewayBIntegritySignature({ orderId: order, amount, currency: 'COP', secretKey }),
    apiKey: sandbox.secrets.gatewayB.apiKey,
    expirationDate: String((BigInt(Date.now()) + 15n * 60_000n) * 1_000_000n),
    outcome: 'approved',
  });
  expect(paid.status).toBe(201);
}

describe('refund refusals at gateway A', () => {
  it('refuses refunds of a reference with a final 400 and the reason, then refunds once the refusal is cleared', async () => {
    const ref = reference();
    const payment = await chargeA(ref);
    const set = await control(sandbox, 'POST', '/refund-refusals', { gateway: 'gateway-a', reference: ref });
    expect(set.status).toBe(201);

    const key = `refund-${payment.id}`;
    const refused = await rejectionOf(gatewayA.refundPayment({ paymentId: payment.id, idempotencyKey: key }));
    expect(refused).toMatchObject({ provider: 'gateway-a', status: 400, retryable: false });
    expect(String((refused as Error).message)).toContain('balance');
    // Refused money stays with the merchant: the payment is still approved, nothing refunded.
    expect(await gatewayA.getPayment(payment.id)).toMatchObject({ status: 'approved', amountRefunded: 0 });

    const cleared = await clearRefusals({ gateway: 'gateway-a', reference: ref });
    expect(at(cleared.body, 'data', 'cleared')).toBe(1);
    // The same idempotency key now refunds: a refusal recorded nothing under it.
    await gatewayA.refundPayment({ paymentId: payment.id, idempotencyKey: key });
    expect(await gatewayA.getPayment(payment.id)).toMatchObject({ status: 'refunded', amountRefunded: 50_000 });
  });

  it('scopes a refusal to one payment: another payment of another reference is refunded', async () => {
    const refused = await chargeA(reference());
    const other = await chargeA(reference());
    await control(sandbox, 'POST', '/refund-refusals', {
      gateway: 'gateway-a',
      providerPaymentId: refused.id,
      reason: 'payment under dispute',
    });

    const error = await rejectionOf(
      gatewayA.refundPayment({ paymentId: refused.id, idempotencyKey: `r-${refused.id}` }),
    );
    expect(String((error as Error).message)).toContain('payment under dispute');
    await gatewayA.refundPayment({ paymentId: other.id, idempotencyKey: `r-${other.id}` });
    expect((await gatewayA.getPayment(other.id)).status).toBe('refunded');
    expect((await gatewayA.getPayment(refused.id)).status).toBe('approved');
  });

  it('refuses every refund of the gateway when no scope is given, and lists the rule', async () => {
    const payment = await chargeA(reference());
    await control(sandbox, 'POST', '/refund-refusals', { gateway: 'gateway-a' });
    const listed = await control(sandbox, 'GET', '/refund-refusals');
    expect(at(listed.body, 'data')).toEqual([{ gateway: 'gateway-a' }]);
    const error = await rejectionOf(
      gatewayA.refundPayment({ paymentId: payment.id, idempotencyKey: `r-${payment.id}` }),
    );
    expect(error).toMatchObject({ status: 400, retryable: false });
  });

  it('keeps a declined answer (status rejected) under its idempotency key: the key is declined again after the rule is lifted, a new key refunds', async () => {
    const ref = reference();
    const payment = await chargeA(ref);
    await control(sandbox, 'POST', '/refund-refusals', { gateway: 'gateway-a', reference: ref, answer: 'rejected' });
    const declined = await gatewayA.refundPayment({ paymentId: payment.id, idempotencyKey: `refund-${ref}` });
    expect(declined.status).toBe('rejected');

    await clearRefusals({ gateway: 'gateway-a', reference: ref });
    // As Mercado Pago replays its answer for an X-Idempotency-Key it has seen: the same refusal, nothing refunded.
    const replayed = await gatewayA.refundPayment({ paymentId: payment.id, idempotencyKey: `refund-${ref}` });
    expect(replayed).toMatchObject({ id: declined.id, status: 'rejected' });
    expect(await gatewayA.getPayment(payment.id)).toMatchObject({ status: 'approved', amountRefunded: 0 });
    await gatewayA.refundPayment({ paymentId: payment.id, idempotencyKey: `refund-${ref}-r1` });
    expect(await gatewayA.getPayment(payment.id)).toMatchObject({ status: 'refunded', amountRefunded: 50_000 });
  });

  it('rejects a rule for an unknown gateway with the control API error body', async () => {
    const response = await control(sandbox, 'POST', '/refund-refusals', { gateway: 'gateway-z' });
    expect(response.status).toBe(400);
    expect(at(response.body, 'error', 'code')).toBe('VALIDATION_FAILED');
  });
});

describe('refund refusals at gateway B', () => {
  const voidRejected =
    (order: string) =>
    (request: ReceivedRequest): boolean =>
      at(request.json, 'data', 'metadata', 'reference') === order && at(request.json, 'type') === 'VOID_REJECTED';

  it('refuses a void of a refused reference (VOID_REJECTED webhook, charge still approved), then voids once cleared', async () => {
    const order = reference();
    const untouched = reference();
    await payB(order);
    await payB(untouched);
    await control(sandbox, 'POST', '/refund-refusals', { gateway: 'gateway-b', reference: order });

    const refused = await rejectionOf(gatewayB.voidPayment({ orderId: order, idempotencyKey: `void-${order}` }));
    expect(refused).toMatchObject({ provider: 'gateway-b', status: 422, retryable: false });
    await receiver.waitFor(voidRejected(order));
    expect((await gatewayB.paymentStatus(order)).status).toBe('APPROVED');
    // Another order of the same gateway is not refused.
    expect((await gatewayB.voidPayment({ orderId: untouched, idempotencyKey: `void-${untouched}` })).status).toBe(
      'VOID_APPROVED',
    );

    await clearRefusals({ gateway: 'gateway-b' });
    expect((await gatewayB.voidPayment({ orderId: order, idempotencyKey: `void-${order}` })).status).toBe(
      'VOID_APPROVED',
    );
    expect((await gatewayB.paymentStatus(order)).status).toBe('VOIDED');
  });

  it('declines a void in its answer (200, status REJECTED) with answer rejected, and replays it for the same key', async () => {
    const order = reference();
    await payB(order);
    await control(sandbox, 'POST', '/refund-refusals', { gateway: 'gateway-b', reference: order, answer: 'rejected' });
    expect((await gatewayB.voidPayment({ orderId: order, idempotencyKey: `void-${order}` })).status).toBe('REJECTED');
    await receiver.waitFor(voidRejected(order));

    await clearRefusals({ gateway: 'gateway-b', reference: order });
    expect((await gatewayB.voidPayment({ orderId: order, idempotencyKey: `void-${order}` })).status).toBe('REJECTED');
    expect((await gatewayB.paymentStatus(order)).status).toBe('APPROVED');
    expect((await gatewayB.voidPayment({ orderId: order, idempotencyKey: `void-${order}-r1` })).status).toBe(
      'VOID_APPROVED',
    );
    expect((await gatewayB.paymentStatus(order)).status).toBe('VOIDED');
  });
});
