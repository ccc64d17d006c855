/**
 * Path 2 of "Money is never stranded" (API half): a buyer reading a PENDING order that has an open payment attempt
 * asks the sale's checkout to pull the gateway now (signal `checkPayment`), at most once per 10 seconds per sale.
 */
import { jest } from '@jest/globals';
import { PAYMENT_CHECK_INTERVAL_MS } from '../../api/http/payment-check.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { orderBody, publishEvent, reserveOrder, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;

async function checkPaymentSignals(saleId: string): Promise<number> {
  const history = await api.services.temporal.workflow.getHandle(checkoutWorkflowId(saleId)).fetchHistory();
  return (history.events ?? []).filter(
    (event) => event.workflowExecutionSignaledEventAttributes?.signalName === 'checkPayment',
  ).length;
}

/** The nudge runs beside the read; give it time to land, then count what landed. */
async function signalsAfterSettling(saleId: string, atLeast: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  while ((await checkPaymentSignals(saleId)) < atLeast && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return checkPaymentSignals(saleId);
}

const forgetRateLimit = (saleId: string) => api.services.redis.del(`payment-check:${saleId}`);

describe('reading a pending order asks the checkout to check the payment (path 2)', () => {
  test('two GET /customer/orders/{id} in a row on a sale with an open PSE payment send one checkPayment signal', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, email('pse-reader'));
    const saleId = (await reserveOrder(api, token, orderBody(event, 1))).json().data.saleId as string;
    const pse = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${saleId}/payment/pse`,
      headers: session(token),
    });
    expect(pse.statusCode).toBe(200);

    const read = () =>
      api.request({ method: 'GET', url: `/api/v1/customer/orders/${saleId}`, headers: session(token) });
    const [first, second] = [await read(), await read()];
    expect(first.statusCode).toBe(200);
    expect(second.statusCode).toBe(200);
    expect(second.json().data.status).toBe('PENDING');
    expect(await signalsAfterSettling(saleId, 1)).toBe(1);

    // The window is the only thing between reads and signals: once it has passed, the next read asks again.
    expect(PAYMENT_CHECK_INTERVAL_MS).toBe(10_000);
    await forgetRateLimit(saleId);
    expect((await read()).statusCode).toBe(200);
    expect(await signalsAfterSettling(saleId, 2)).toBe(2);
  });

  test('a pending sale with no payment attempt opened is read without asking the gateway', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, email('no-attempt'));
    const saleId = (await reserveOrder(api, token, orderBody(event, 1))).json().data.saleId as string;
    for (let i = 0; i < 2; i += 1) {
      const read = await api.request({
        method: 'GET',
        url: `/api/v1/customer/orders/${saleId}`,
        headers: session(token),
      });
      expect(read.statusCode).toBe(200);
    }
    expect(await signalsAfterSettling(saleId, 0)).toBe(0);
  });

  test('two GET /api/public/orders/{id} in a row on an order with its payment link open send one signal', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const created = await api.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: {
        buyerEmail: email('anon-reader'),
        buyerName: 'Anónimo Lector',
        items: [{ ticketTypeId: event.ticketTypeId, quantity: 1 }],
      },
    });
    expect(created.statusCode).toBe(200);
    const orderId = created.json().data.orderId as string;
    const read = () => api.request({ method: 'GET', url: `/api/public/orders/${orderId}` });
    expect((await read()).json().data.status).toBe('pending');
    expect((await read()).json().data.status).toBe('pending');
    expect(await signalsAfterSettling(orderId, 1)).toBe(1);
  });

  test('failures of Redis or Temporal while asking never fail the read, which answers from the database', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, email('unreachable'));
    const saleId = (await reserveOrder(api, token, orderBody(event, 1))).json().data.saleId as string;
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${saleId}/payment/pse`,
      headers: session(token),
    });
    const read = () =>
      api.request({ method: 'GET', url: `/api/v1/customer/orders/${saleId}`, headers: session(token) });

    const redisDown = jest.spyOn(api.services.redis, 'set').mockRejectedValue(new Error('redis is down'));
    try {
      const response = await read();
      expect(response.statusCode).toBe(200);
      expect(response.json().data).toMatchObject({ id: saleId, status: 'PENDING' });
    } finally {
      redisDown.mockRestore();
    }

    const temporalDown = jest.spyOn(api.services.temporal.workflow, 'getHandle').mockImplementation(() => {
      throw new Error('temporal is down');
    });
    try {
      const response = await read();
      expect(response.statusCode).toBe(200);
      expect(response.json().data).toMatchObject({ id: saleId, status: 'PENDING' });
      // The nudge runs beside the read; let it fail while the stub is still in place.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      temporalDown.mockRestore();
    }
    expect(await signalsAfterSettling(saleId, 0)).toBe(0);
  });
});
