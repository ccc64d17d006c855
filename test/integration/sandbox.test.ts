import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { verifyGatewayANotification } from '../../integrations/gateway-a/signature.js';
import { gatewayBIntegritySignature, verifyGatewayBWebhook } from '../../integrations/gateway-b/signature.js';
import { SeatMapClient } from '../../integrations/seatmap/client.js';
import type { SandboxHandle } from '../../sandbox/server.js';
import { at, control, type ReceivedRequest, Receiver, rejectionOf, startTestSandbox } from './sandbox-support.js';

let sandbox: SandboxHandle;
let receiver: Receiver;
let gatewayA: GatewayAClient;
let seatmap: SeatMapClient;
let sequence = 0;

const reference = (): string => `FT-C${Date.now().toString(36).toUpperCase()}${++sequence}`;

beforeAll(async () => {
  receiver = await Receiver.start();
  sandbox = await startTestSandbox({
    gatewayBWebhookUrl: receiver.url('/webhooks/gateway-b'),
    notificationRetryDelaysMs: [300],
  });
  gatewayA = new GatewayAClient({
    baseUrl: `${sandbox.httpUrl}/gateway-a`,
    accessToken: sandbox.secrets.gatewayA.accessToken,
    timeoutMs: 3000,
  });
  seatmap = new SeatMapClient({ baseUrl: `${sandbox.httpUrl}/seatmap`, secretKey: sandbox.secrets.seatmap.secretKey });
});

afterAll(async () => {
  await sandbox?.close();
  await receiver?.close();
});

async function approvedPayment(ref: string) {
  const token = await gatewayA.createCardToken({
    cardNumber: '4509953566233704',
    securityCode: '123',
    expirationMonth: 11,
    expirationYear: new Date().getUTCFullYear() + 2,
    cardholderName: 'APRO',
  });
  return gatewayA.createPayment({
    idempotencyKey: `k-${ref}`,
    cardToken: token.id,
    amount: 30_000,
    currency: 'COP',
    description: 'ticket',
    payerEmail: 'buyer@example.com',
    externalReference: ref,
    notificationUrl: receiver.url('/webhooks/gateway-a'),
  });
}

const forData = (id: string) => (request: ReceivedRequest) => request.query.get('data.id') === id;

describe('sandbox control API', () => {
  it('reports health with its ports', async () => {
    const health = await control(sandbox, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', httpUrl: sandbox.httpUrl, smtpPort: sandbox.smtpPort });
  });

  it('rejects malformed control calls with VALIDATION_FAILED', async () => {
    const response = await control(sandbox, 'POST', '/gateway-a/pse/settle', { reference: 'FT-1', outcome: 'maybe' });
    expect(response.status).toBe(400);
    expect(at(response.body, 'error', 'code')).toBe('VALIDATION_FAILED');
  });

  it('makes a provider answer 503 while down, as a retryable ProviderError, and recovers', async () => {
    const payment = await approvedPayment(reference());
    const down = await control(sandbox, 'POST', '/faults', { target: 'gateway-a', mode: 'down' });
    expect(down.status).toBe(200);
    try {
      const error = await rejectionOf(gatewayA.getPayment(payment.id));
      expect(error).toMatchObject({ provider: 'gateway-a', status: 503, retryable: true });
      // Other providers and the control API are unaffected.
      expect((await seatmap.createHoldToken()).holdToken).toBeTruthy();
    } finally {
      await control(sandbox, 'POST', '/faults', { target: 'gateway-a', mode: 'ok' });
    }
    expect((await gatewayA.getPayment(payment.id)).status).toBe('approved');
  });

  it('makes a provider lag while slow, so a client deadline fires as a retryable TIMEOUT', async () => {
    await control(sandbox, 'POST', '/faults', { target: 'seatmap', mode: 'slow', delayMs: 1500 });
    try {
      const impatient = new SeatMapClient({
        baseUrl: `${sandbox.httpUrl}/seatmap`,
        secretKey: sandbox.secrets.seatmap.secretKey,
        timeoutMs: 300,
      });
      const started = Date.now();
      const error = await rejectionOf(impatient.createHoldToken());
      expect(error).toMatchObject({ provider: 'seatmap', status: null, code: 'TIMEOUT', retryable: true });
      expect(Date.now() - started).toBeLessThan(1200);
      const faults = await control(sandbox, 'GET', '/faults');
      expect(at(faults.body, 'data', 'seatmap')).toEqual({ mode: 'slow', delayMs: 1500 });
    } finally {
      await control(sandbox, 'POST', '/faults', { target: 'seatmap', mode: 'ok' });
    }
  });

  it('replays the last gateway A notification of a reference with a fresh valid signature', async () => {
    const ref = reference();
    const payment = await approvedPayment(ref);
    const original = await receiver.waitFor(forData(payment.id));
    const replayed = await control(sandbox, 'POST', '/notifications/replay', { gateway: 'gateway-a', reference: ref });
    expect(replayed.status).toBe(200);
    expect(at(replayed.body, 'data', 'delivered')).toBe(true);

    const copies = receiver.matching(forData(payment.id));
    expect(copies).toHaveLength(2);
    const duplicate = copies[1] as ReceivedRequest;
    expect(duplicate.rawBody).toBe(original.rawBody);
    expect(
      verifyGatewayANotification({
        xSignature: duplicate.headers['x-signature'] as string,
        xRequestId: duplicate.headers['x-request-id'] as string,
        dataId: duplicate.query.get('data.id'),
        secret: sandbox.secrets.gatewayA.webhookSecret,
      }),
    ).toBe(true);
  });

  it('replays the last gateway B webhook byte for byte', async () => {
    const orderId = reference();
    const secretKey = sandbox.secrets.gatewayB.secretKey;
    await control(sandbox, 'POST', '/gateway-b/pay', {
      orderId,
      amount: 70_000,
      currency: 'COP',
      integritySignature: gatewayBIntegritySignature({ orderId, amount: 70_000, currency: 'COP', secretKey }),
      outcome: 'approved',
    });
    const byOrder = (request: ReceivedRequest) => at(request.json, 'data', 'metadata', 'reference') === orderId;
    const original = await receiver.waitFor(byOrder);
    const replayed = await control(sandbox, 'POST', '/notifications/replay', {
      gateway: 'gateway-b',
      reference: orderId,
    });
    expect(replayed.status).toBe(200);
    const copies = receiver.matching(byOrder);
    expect(copies).toHaveLength(2);
    expect(copies[1]?.rawBody).toBe(original.rawBody);
    expect(copies[1]?.headers['x-bold-signature']).toBe(original.headers['x-bold-signature']);
    expect(
      verifyGatewayBWebhook(copies[1]?.rawBody ?? '', copies[1]?.headers['x-bold-signature'] as string, secretKey),
    ).toBe(true);
  });

  it('answers 404 when there is nothing to replay', async () => {
    const response = await control(sandbox, 'POST', '/notifications/replay', {
      gateway: 'gateway-a',
      reference: 'FT-NONE',
    });
    expect(response.status).toBe(404);
  });

  it('retries a notification the receiver refused, and records every attempt', async () => {
    receiver.status = 500;
    const ref = reference();
    let paymentId = '';
    try {
      paymentId = (await approvedPayment(ref)).id;
      await receiver.waitFor(forData(paymentId));
    } finally {
      receiver.status = 200;
    }
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(receiver.matching(forData(paymentId)).length).toBe(2);
    const log = await control<{ data: Array<{ delivered: boolean; attempts: Array<{ status: number }> }> }>(
      sandbox,
      'GET',
      `/notifications?gateway=gateway-a&reference=${ref}`,
    );
    expect(log.body.data).toHaveLength(1);
    expect(log.body.data[0]?.delivered).toBe(true);
    expect(log.body.data[0]?.attempts.map((a) => a.status)).toEqual([500, 200]);
  });

  it('points gateway B webhooks elsewhere on request', async () => {
    const before = await control(sandbox, 'GET', '/gateway-b/webhook');
    expect(at(before.body, 'data', 'url')).toBe(receiver.url('/webhooks/gateway-b'));
    const changed = await control(sandbox, 'PUT', '/gateway-b/webhook', { url: receiver.url('/elsewhere') });
    expect(at(changed.body, 'data', 'url')).toBe(receiver.url('/elsewhere'));
    await control(sandbox, 'PUT', '/gateway-b/webhook', { url: receiver.url('/webhooks/gateway-b') });
  });

  it('forgets everything on reset', async () => {
    const payment = await approvedPayment(reference());
    await control(sandbox, 'POST', '/seatmap/charts', { chartKey: 'reset-chart', objects: [{ label: 'A-1' }] });
    await control(sandbox, 'POST', '/faults', { target: 'gateway-b', mode: 'down' });

    const reset = await control(sandbox, 'POST', '/reset');
    expect(reset.status).toBe(200);

    expect(await rejectionOf(gatewayA.getPayment(payment.id))).toMatchObject({ status: 404, retryable: false });
    expect(await rejectionOf(seatmap.createEvent({ chartKey: 'reset-chart', eventKey: 'e1' }))).toMatchObject({
      code: 'CHART_NOT_FOUND',
    });
    expect(at((await control(sandbox, 'GET', '/faults')).body, 'data', 'gateway-b', 'mode')).toBe('ok');
    expect(at((await control(sandbox, 'GET', '/notifications')).body, 'data')).toEqual([]);
  });
});
