import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ProviderError } from '../../integrations/errors.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { verifyGatewayANotification } from '../../integrations/gateway-a/signature.js';
import type { SandboxHandle } from '../../sandbox/server.js';
import { at, control, type ReceivedRequest, Receiver, rejectionOf, startTestSandbox } from './sandbox-support.js';

let sandbox: SandboxHandle;
let receiver: Receiver;
let client: GatewayAClient;
let sequence = 0;

const nextYear = new Date().getUTCFullYear() + 3;
const reference = (): string => `FT-A${Date.now().toString(36).toUpperCase()}${++sequence}`;

beforeAll(async () => {
  receiver = await Receiver.start();
  sandbox = await startTestSandbox();
  client = new GatewayAClient({
    baseUrl: `${sandbox.httpUrl}/gateway-a`,
    accessToken: sandbox.secrets.gatewayA.accessToken,
    publicKey: sandbox.secrets.gatewayA.publicKey,
    timeoutMs: 5000,
  });
});

afterAll(async () => {
  await sandbox?.close();
  await receiver?.close();
});

function cardToken(cardholderName: string) {
  return client.createCardToken({
    cardNumber: '5031 4332 1540 6351',
    securityCode: '123',
    expirationMonth: 11,
    expirationYear: nextYear,
    cardholderName,
  });
}

async function charge(cardholderName: string, ref = reference(), idempotencyKey = `key-${ref}`) {
  const token = await cardToken(cardholderName);
  return client.createPayment({
    idempotencyKey,
    cardToken: token.id,
    amount: 50_000,
    currency: 'COP',
    description: 'Two tickets',
    payerEmail: 'buyer@example.com',
    externalReference: ref,
    notificationUrl: receiver.url('/webhooks/gateway-a'),
  });
}

const notificationFor =
  (paymentId: string, action?: string) =>
  (request: ReceivedRequest): boolean =>
    request.query.get('data.id') === paymentId && (action === undefined || at(request.json, 'action') === action);

function authentic(request: ReceivedRequest): boolean {
  return verifyGatewayANotification({
    xSignature: request.headers['x-signature'] as string | undefined,
    xRequestId: request.headers['x-request-id'] as string | undefined,
    dataId: request.query.get('data.id'),
    secret: sandbox.secrets.gatewayA.webhookSecret,
    maxAgeSeconds: 60,
  });
}

describe('gateway A cards', () => {
  it('approves an APRO card and sends a signed notification that names the payment only', async () => {
    const ref = reference();
    const payment = await charge('APRO', ref);
    expect(payment).toMatchObject({
      status: 'approved',
      statusDetail: 'accredited',
      amount: 50_000,
      currency: 'COP',
      externalReference: ref,
      payerEmail: 'buyer@example.com',
      paymentTypeId: 'credit_card',
      paymentMethodId: 'master',
    });

    const notification = await receiver.waitFor(notificationFor(payment.id, 'payment.created'));
    expect(notification.path).toBe('/webhooks/gateway-a');
    expect(notification.query.get('type')).toBe('payment');
    expect(notification.json).toMatchObject({ type: 'payment', api_version: 'v1', data: { id: payment.id } });
    expect(notification.rawBody).not.toContain('approved');
    expect(authentic(notification)).toBe(true);

    // The receiver learns the status only by re-reading the payment.
    const reread = await client.getPayment(String(at(notification.json, 'data', 'id')));
    expect(reread.status).toBe('approved');
    expect(reread.externalReference).toBe(ref);
  });

  it.each([
    ['OTHE', 'cc_rejected_other_reason'],
    ['FUND', 'cc_rejected_insufficient_amount'],
    ['SECU', 'cc_rejected_bad_filled_security_code'],
    ['CALL', 'cc_rejected_call_for_authorize'],
  ])('rejects a %s card with status_detail %s', async (name, detail) => {
    const payment = await charge(name);
    expect(payment.status).toBe('rejected');
    expect(payment.statusDetail).toBe(detail);
    expect((await client.getPayment(payment.id)).status).toBe('rejected');
  });

  it('keeps a CONT card in_process until the gateway resolves it, then notifies the change', async () => {
    const payment = await charge('CONT');
    expect(payment).toMatchObject({ status: 'in_process', statusDetail: 'pending_contingency' });
    expect((await client.getPayment(payment.id)).status).toBe('in_process');

    const settled = await control(sandbox, 'POST', `/gateway-a/payments/${payment.id}/settle`, { outcome: 'approved' });
    expect(settled.status).toBe(200);
    expect(at(settled.body, 'data', 'notification', 'delivered')).toBe(true);
    const update = await receiver.waitFor(notificationFor(payment.id, 'payment.updated'));
    expect(authentic(update)).toBe(true);
    expect((await client.getPayment(payment.id)).status).toBe('approved');
  });

  it('returns the same payment for a repeated X-Idempotency-Key and never charges twice', async () => {
    const ref = reference();
    const token = await cardToken('APRO');
    const input = {
      idempotencyKey: `idem-${ref}`,
      cardToken: token.id,
      amount: 50_000,
      currency: 'COP' as const,
      description: 'Two tickets',
      payerEmail: 'buyer@example.com',
      externalReference: ref,
      notificationUrl: receiver.url('/webhooks/gateway-a'),
    };
    const [first, second] = await Promise.all([client.createPayment(input), client.createPayment(input)]);
    const third = await client.createPayment(input);
    expect(second.id).toBe(first.id);
    expect(third.id).toBe(first.id);
    const found = await client.searchPaymentsByReference(ref);
    expect(found.map((p) => p.id)).toEqual([first.id]);
  });

  it('refuses a card token that was already used for another payment', async () => {
    const token = await cardToken('APRO');
    const ref = reference();
    const base = {
      cardToken: token.id,
      amount: 10_000,
      currency: 'COP' as const,
      description: 'x',
      payerEmail: 'buyer@example.com',
      externalReference: ref,
      notificationUrl: receiver.url('/webhooks/gateway-a'),
    };
    await client.createPayment({ ...base, idempotencyKey: `${ref}-1` });
    const error = await rejectionOf(client.createPayment({ ...base, idempotencyKey: `${ref}-2` }));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ provider: 'gateway-a', status: 400, retryable: false, code: '3003' });
  });

  it('lists the payments of a reference newest first', async () => {
    const ref = reference();
    const rejected = await charge('FUND', ref, `${ref}-a`);
    const approved = await charge('APRO', ref, `${ref}-b`);
    const found = await client.searchPaymentsByReference(ref);
    expect(found.map((p) => [p.id, p.status])).toEqual([
      [approved.id, 'approved'],
      [rejected.id, 'rejected'],
    ]);
  });

  it('answers 401 to a wrong access token', async () => {
    const intruder = new GatewayAClient({ baseUrl: `${sandbox.httpUrl}/gateway-a`, accessToken: 'TEST-wrong' });
    const error = await rejectionOf(intruder.getPayment('1'));
    expect(error).toMatchObject({ provider: 'gateway-a', status: 401, retryable: false });
  });
});

describe('gateway A refunds', () => {
  it('refunds an approved payment once per idempotency key and notifies the change', async () => {
    const payment = await charge('APRO');
    const first = await client.refundPayment({ paymentId: payment.id, idempotencyKey: `refund-${payment.id}` });
    const again = await client.refundPayment({ paymentId: payment.id, idempotencyKey: `refund-${payment.id}` });
    expect(first).toMatchObject({ paymentId: payment.id, status: 'approved', amountMajor: 50_000 });
    expect(again.id).toBe(first.id);

    const after = await client.getPayment(payment.id);
    expect(after).toMatchObject({ status: 'refunded', statusDetail: 'refunded', amountRefunded: 50_000 });
    const update = await receiver.waitFor(notificationFor(payment.id, 'payment.updated'));
    expect(authentic(update)).toBe(true);

    const second = await rejectionOf(
      client.refundPayment({ paymentId: payment.id, idempotencyKey: `other-${payment.id}` }),
    );
    expect(second).toMatchObject({ status: 400, retryable: false });
  });

  it('refunds part of a payment and keeps it approved', async () => {
    const payment = await charge('APRO');
    await client.refundPayment({
      paymentId: payment.id,
      idempotencyKey: `partial-${payment.id}`,
      partial: { amount: 20_000, currency: 'COP' },
    });
    expect(await client.getPayment(payment.id)).toMatchObject({
      status: 'approved',
      statusDetail: 'partially_refunded',
      amountRefunded: 20_000,
    });
  });

  it('refuses to refund a rejected payment', async () => {
    const payment = await charge('OTHE');
    const error = await rejectionOf(client.refundPayment({ paymentId: payment.id, idempotencyKey: `r-${payment.id}` }));
    expect(error).toMatchObject({ provider: 'gateway-a', status: 400, retryable: false });
  });
});

describe('gateway A PSE', () => {
  async function preference(ref: string, expiresAt = new Date(Date.now() + 30 * 60_000)) {
    return client.createPsePreference({
      title: 'Concert · 2 tickets',
      amount: 80_000,
      currency: 'COP',
      reference: ref,
      payerEmail: 'buyer@example.com',
      notificationUrl: receiver.url('/webhooks/gateway-a'),
      returnUrl: 'http://shop.test/return',
      backUrls: { failure: 'http://shop.test/failed' },
      expiresAt,
    });
  }

  async function submit(redirectUrl: string, form: Record<string, string>): Promise<Response> {
    return fetch(redirectUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
      redirect: 'manual',
    });
  }

  it('takes the browser through the bank page, back to the shop, and settles asynchronously', async () => {
    const ref = reference();
    const pref = await preference(ref);
    expect(pref.redirectUrl).toBe(`${sandbox.httpUrl}/gateway-a/pse/checkout/${encodeURIComponent(pref.id)}`);

    const page = await fetch(pref.redirectUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    for (const id of ['id="bank"', 'id="confirm"', 'id="reject"', ref]) expect(html).toContain(id);

    const back = await submit(pref.redirectUrl, { bank: '1007', entity_type: 'individual', decision: 'confirm' });
    expect(back.status).toBe(302);
    const location = new URL(back.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe('http://shop.test/return');
    expect(location.searchParams.get('status')).toBe('pending');
    expect(location.searchParams.get('external_reference')).toBe(ref);
    expect(location.searchParams.get('preference_id')).toBe(pref.id);
    const paymentId = location.searchParams.get('payment_id') ?? '';

    const pending = await client.getPayment(paymentId);
    expect(pending).toMatchObject({
      status: 'pending',
      statusDetail: 'pending_waiting_transfer',
      paymentMethodId: 'pse',
      paymentTypeId: 'bank_transfer',
      financialInstitution: '1007',
      amount: 80_000,
      externalReference: ref,
    });
    expect(authentic(await receiver.waitFor(notificationFor(paymentId, 'payment.created')))).toBe(true);

    const settled = await control(sandbox, 'POST', '/gateway-a/pse/settle', { reference: ref, outcome: 'approved' });
    expect(settled.status).toBe(200);
    expect(at(settled.body, 'data', 'payment', 'status')).toBe('approved');
    expect(at(settled.body, 'data', 'notification', 'delivered')).toBe(true);

    const update = await receiver.waitFor(notificationFor(paymentId, 'payment.updated'));
    expect(authentic(update)).toBe(true);
    expect((await client.getPayment(paymentId)).status).toBe('approved');

    const nothingLeft = await control(sandbox, 'POST', '/gateway-a/pse/settle', {
      reference: ref,
      outcome: 'approved',
    });
    expect(nothingLeft.status).toBe(404);
  });

  it('sends the browser to the failure URL when the buyer cancels at the bank', async () => {
    const ref = reference();
    const pref = await preference(ref);
    const back = await submit(pref.redirectUrl, { decision: 'reject' });
    expect(back.status).toBe(302);
    const location = new URL(back.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe('http://shop.test/failed');
    expect(location.searchParams.get('status')).toBe('rejected');
    expect((await client.getPayment(location.searchParams.get('payment_id') ?? '')).status).toBe('rejected');
  });

  it('asks again when no bank was chosen, creating no payment', async () => {
    const ref = reference();
    const pref = await preference(ref);
    const response = await submit(pref.redirectUrl, { decision: 'confirm' });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('id="error"');
    expect(await client.searchPaymentsByReference(ref)).toEqual([]);
  });

  it('refuses an expired checkout', async () => {
    const pref = await preference(reference(), new Date(Date.now() - 1000));
    const page = await fetch(pref.redirectUrl);
    expect(page.status).toBe(410);
    expect(await page.text()).toContain('id="expired"');
  });

  it('settles by itself when auto-settle is on (demos)', async () => {
    const on = await control(sandbox, 'POST', '/gateway-a/pse/auto-settle', { outcome: 'approved' });
    expect(on.status).toBe(200);
    try {
      const ref = reference();
      const pref = await preference(ref);
      const back = await submit(pref.redirectUrl, { bank: '1051', decision: 'confirm' });
      const location = new URL(back.headers.get('location') ?? '');
      expect(location.searchParams.get('status')).toBe('approved');
      expect((await client.getPayment(location.searchParams.get('payment_id') ?? '')).status).toBe('approved');
    } finally {
      await control(sandbox, 'POST', '/gateway-a/pse/auto-settle', { outcome: 'off' });
    }
  });

  it('returns the same preference for a repeated idempotency key', async () => {
    const ref = reference();
    const input = {
      idempotencyKey: `pref-${ref}`,
      title: 'Concert',
      amount: 80_000,
      currency: 'COP' as const,
      reference: ref,
      payerEmail: 'buyer@example.com',
      notificationUrl: receiver.url('/webhooks/gateway-a'),
      returnUrl: 'http://shop.test/return',
    };
    const first = await client.createPsePreference(input);
    const second = await client.createPsePreference(input);
    expect(second.id).toBe(first.id);
  });
});

describe('gateway A notification authenticity', () => {
  it('rejects a notification whose data.id, request id or signature was forged', async () => {
    const payment = await charge('APRO');
    const real = await receiver.waitFor(notificationFor(payment.id));
    const secret = sandbox.secrets.gatewayA.webhookSecret;
    const xSignature = real.headers['x-signature'] as string;
    const xRequestId = real.headers['x-request-id'] as string;
    expect(verifyGatewayANotification({ xSignature, xRequestId, dataId: payment.id, secret })).toBe(true);
    expect(verifyGatewayANotification({ xSignature, xRequestId, dataId: String(Number(payment.id) + 1), secret })).toBe(
      false,
    );
    expect(verifyGatewayANotification({ xSignature, xRequestId: 'forged', dataId: payment.id, secret })).toBe(false);
    expect(
      verifyGatewayANotification({
        xSignature: xSignature.replace(/v1=([0-9a-f])/, (_m, c: string) => `v1=${c === '0' ? '1' : '0'}`),
        xRequestId,
        dataId: payment.id,
        secret,
      }),
    ).toBe(false);
    expect(verifyGatewayANotification({ xSignature, xRequestId, dataId: payment.id, secret: 'not-the-secret' })).toBe(
      false,
    );
  });
});
