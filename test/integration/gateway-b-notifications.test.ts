/**
 * Gateway B notifications against the real API and Temporal: a signed event is only acted on while fresh, and only
 * for a sale that pays through gateway B. "No signal" is read from the checkout's own history, the only place a
 * paymentNotification could land.
 */
import { randomUUID } from 'node:crypto';
import { signGatewayBWebhook } from '../../integrations/gateway-b/signature.js';
import type { PaymentNotification } from '../../workflows/definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { signalsReceived } from '../support/histories.js';
import {
  eventually,
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizerA: Organizer;
let legendB: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  organizerA = await createOrganizer(api.orm.em.fork());
  legendB = await createOrganizer(api.orm.em.fork());
  // Plan and allowlist are operator settings, not organizer API fields.
  await api.orm.em
    .fork()
    .execute(`update workspaces set plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [legendB.workspaceId]);
});
afterAll(async () => {
  await api?.close();
});

const email = (label: string) => `${label}-${randomUUID().slice(0, 8)}@buyers.test`;

async function reserve(event: PublishedEvent, label: string) {
  const token = await signInBuyer(api, email(label));
  const created = await reserveOrder(api, token, orderBody(event, 1));
  expect(created.statusCode).toBe(201);
  return { token, order: created.json().data as { saleId: string; reference: string; total: number } };
}

/** A gateway B webhook body as the gateway (and sandbox/gateway-b.ts) sends it, `time` in POSIX nanoseconds. */
function gatewayBEvent(reference: string, total: number, emittedAtMs: number, type = 'SALE_REJECTED'): string {
  return JSON.stringify({
    id: `evt-${randomUUID()}`,
    type,
    subject: `tx-${randomUUID()}`,
    source: '/payments',
    spec_version: '1.0',
    time: emittedAtMs * 1_000_000,
    data: {
      payment_id: `tx-${randomUUID()}`,
      merchant_id: null,
      created_at: new Date(emittedAtMs).toISOString(),
      amount: { total, currency: 'COP' },
      metadata: { reference },
      payer_email: 'buyer@example.test',
      payment_method: 'CARD',
    },
  });
}

const postSigned = (body: string) =>
  api.request({
    method: 'POST',
    url: '/api/v1/webhooks/gateway-b',
    headers: {
      'content-type': 'application/json',
      'x-bold-signature': signGatewayBWebhook(body, api.env.GATEWAY_B_SECRET_KEY),
    },
    payload: body,
  });

/** The paymentNotification signals the sale's checkout received, decoded with the client's own codec. */
const notificationsReceived = (saleId: string): Promise<PaymentNotification[]> =>
  signalsReceived<PaymentNotification>(api, saleId, 'paymentNotification');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('gateway B notification replay window (15 minutes, 5 minutes of clock skew, as for gateway A)', () => {
  test.each([
    ['stale (a 2020 timestamp)', Date.parse('2020-01-01T00:00:00Z')],
    ['stale (16 minutes old)', Date.now() - 16 * 60_000],
    ['future (6 minutes ahead)', Date.now() + 6 * 60_000],
  ])(
    'a correctly signed but %s event gets 401 with the error body and never reaches the checkout',
    async (_label, at) => {
      const event = await publishEvent(api, legendB);
      const { order } = await reserve(event, 'b-stale');
      const response = await postSigned(gatewayBEvent(order.reference, order.total, at));
      expect(response.statusCode).toBe(401);
      const error = response.json().error;
      expect(Object.keys(error).sort()).toEqual(['code', 'details', 'message', 'retryable']);
      expect(error).toMatchObject({ code: expect.any(String), message: expect.any(String), retryable: false });
      await sleep(500);
      expect(await notificationsReceived(order.saleId)).toEqual([]);

      // Control: the same sale takes a fresh event, so the empty history above is not an artefact of the harness.
      const fresh = await postSigned(gatewayBEvent(order.reference, order.total, Date.now()));
      expect(fresh.statusCode).toBe(200);
      expect(fresh.json()).toEqual({ received: true });
      const received = await eventually(
        () => notificationsReceived(order.saleId),
        (list) => list.length > 0,
      );
      expect(received[0]).toMatchObject({ gateway: 'GATEWAY_B' });
    },
  );
});

describe('gateway B notification for a sale paying through gateway A (gateway mismatch)', () => {
  test('a signed, fresh gateway B event naming a gateway A sale is ignored and signals nothing', async () => {
    const event = await publishEvent(api, organizerA);
    const { token, order } = await reserve(event, 'a-sale');
    const opened = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(opened.statusCode).toBe(200);
    expect(opened.json().data).not.toHaveProperty('integritySignature');

    const response = await postSigned(gatewayBEvent(order.reference, order.total, Date.now(), 'SALE_APPROVED'));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ received: true, ignored: 'gateway mismatch' });
    await sleep(500);
    expect(await notificationsReceived(order.saleId)).toEqual([]);
  });

  test('a gateway A sale with no payment attempt yet is judged by the rail it would be offered: still ignored', async () => {
    const event = await publishEvent(api, organizerA);
    const { order } = await reserve(event, 'a-sale-unopened');
    const response = await postSigned(gatewayBEvent(order.reference, order.total, Date.now(), 'SALE_APPROVED'));
    expect(response.json()).toEqual({ received: true, ignored: 'gateway mismatch' });
    await sleep(500);
    expect(await notificationsReceived(order.saleId)).toEqual([]);
  });
});
