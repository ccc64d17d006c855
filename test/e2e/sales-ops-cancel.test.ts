/**
 * POST /sales/{id}/cancel (contract part 3, cancel rules 1–4, and 4.8) through the cancellation workflow.
 */
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, publishEvent } from '../support/purchase.js';
import {
  available,
  complimentary,
  control,
  gatewayBSignature,
  openGatewayB,
  payByCard,
  reserve,
  saleOf,
  startFlakyStack,
  ticketsOf,
} from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
let legend: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  legend = await createOrganizer(api.orm.em.fork());
  // Plan and allowlist are operator settings, not organizer API fields: gateway B for this workspace.
  await api.orm.em
    .fork()
    .execute(`update workspaces set plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [legend.workspaceId]);
});
afterAll(async () => {
  await api.close();
});

const cancel = (who: Organizer, saleId: string, payload: Record<string, unknown> = {}) =>
  api.request({ method: 'POST', url: `/api/v1/sales/${saleId}/cancel`, headers: bearer(who.key), payload });

describe('cancel rules (contract part 3)', () => {
  test('rule 4: a PENDING sale with no payment started is cancelled: CANCELLED, stock back', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { order } = await reserve(api, event, 'cancel-pending', 2);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(3);
    const response = await cancel(organizer, order.saleId, { reason: 'duplicate order' });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({
      id: order.saleId,
      status: 'CANCELLED',
      failureReason: 'cancelled by the organizer',
    });
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
    // Repeating the cancel is harmless: 200 again, nothing changes.
    const again = await cancel(organizer, order.saleId);
    expect(again.statusCode).toBe(200);
    expect(again.json().data.status).toBe('CANCELLED');
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
  });

  test('rule 4: a PENDING gateway-A sale with a payment in process is cancelled without acknowledge_open_payment', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'cancel-pending-a');
    const pending = await payByCard(api, token, order.saleId, 'CONT');
    expect(pending.saleStatus).toBe('PENDING');
    const response = await cancel(organizer, order.saleId);
    expect(response.statusCode).toBe(200);
    expect(response.json().data.status).toBe('CANCELLED');
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
  });

  test('rule 1: a sale with a ticket used at the door gets 409 SALE_ALREADY_CHECKED_IN and is not cancelled', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event, 2);
    const [first] = await ticketsOf(api, organizer, sale.id);
    const checkin = await api.request({
      method: 'POST',
      url: `/api/v1/tickets/${first!.code}/checkin`,
      headers: bearer(organizer.key),
    });
    expect(checkin.statusCode).toBe(200);
    const response = await cancel(organizer, sale.id);
    expect(response.statusCode).toBe(409);
    expect(response.json().error).toMatchObject({ code: 'SALE_ALREADY_CHECKED_IN', details: { usedTickets: 1 } });
    expect((await saleOf(api, organizer, sale.id)).status).toBe('CONFIRMED');
    expect(await available(api, organizer, event.ticketTypeId)).toBe(3);
  });

  test('a complimentary CONFIRMED sale is cancelled: CANCELLED, its tickets INVALID, its stock back', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event, 2);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(3);
    const response = await cancel(organizer, sale.id);
    expect(response.statusCode).toBe(200);
    expect(response.json().data.status).toBe('CANCELLED');
    expect((await ticketsOf(api, organizer, sale.id)).map((t) => t.status)).toEqual(['INVALID', 'INVALID']);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
  });

  test('a CONFIRMED sale paid through a gateway gets 409 REFUND_REQUIRED pointing to /refund, and stays CONFIRMED', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'cancel-paid');
    await payByCard(api, token, order.saleId, 'APRO');
    const response = await cancel(organizer, order.saleId);
    expect(response.statusCode).toBe(409);
    expect(response.json().error).toMatchObject({
      code: 'REFUND_REQUIRED',
      details: { refundPath: `/sales/${order.saleId}/refund` },
    });
    expect((await saleOf(api, organizer, order.saleId)).status).toBe('CONFIRMED');
  });

  test('rule 2: a PENDING gateway-B sale the gateway reports approved gets 409 SALE_PAID_AT_GATEWAY and is never cancelled', async () => {
    const event = await publishEvent(api, legend, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'cancel-b-approved');
    const config = await openGatewayB(api, token, order.saleId);
    // An approved charge the service does not accept as this sale's payment (another amount), so the sale stays
    // PENDING while gateway B reports the order approved: exactly the situation rule 2 guards.
    const amount = config.amount + 1_000;
    const paid = await control(api, '/gateway-b/pay', {
      ...config,
      amount,
      integritySignature: gatewayBSignature(api, config.orderId, amount, config.currency),
      outcome: 'approved',
    });
    expect(paid.status).toBe(201);
    for (const payload of [{}, { acknowledge_open_payment: true }]) {
      const response = await cancel(legend, order.saleId, payload);
      expect(response.statusCode).toBe(409);
      expect(response.json().error).toMatchObject({
        code: 'SALE_PAID_AT_GATEWAY',
        details: { livePayment: 'approved', gatewayStatus: 'APPROVED' },
      });
    }
    expect((await saleOf(api, legend, order.saleId)).status).toBe('PENDING');
  });

  test('rule 3: a PENDING gateway-B sale with a payment still open needs acknowledge_open_payment: true', async () => {
    const event = await publishEvent(api, legend, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'cancel-b-open');
    const config = await openGatewayB(api, token, order.saleId);
    const paid = await control(api, '/gateway-b/pay', { ...config, outcome: 'pending' });
    expect(paid.status).toBe(201);
    const refused = await cancel(legend, order.saleId);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({
      code: 'OPEN_PAYMENT_CONFIRMATION_REQUIRED',
      details: { livePayment: 'open', gatewayStatus: 'PROCESSING' },
    });
    expect((await saleOf(api, legend, order.saleId)).status).toBe('PENDING');
    expect(await available(api, legend, event.ticketTypeId)).toBe(4);

    const acknowledged = await cancel(legend, order.saleId, { acknowledge_open_payment: true });
    expect(acknowledged.statusCode).toBe(200);
    expect(acknowledged.json().data.status).toBe('CANCELLED');
    expect(await available(api, legend, event.ticketTypeId)).toBe(5);
  });

  test('rule 3: a gateway-B button opened but not yet paid counts as an open payment', async () => {
    const event = await publishEvent(api, legend, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'cancel-b-opened');
    await openGatewayB(api, token, order.saleId);
    const refused = await cancel(legend, order.saleId);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.code).toBe('OPEN_PAYMENT_CONFIRMATION_REQUIRED');
    expect((await cancel(legend, order.saleId, { acknowledge_open_payment: true })).statusCode).toBe(200);
  });

  test('rule 3: gateway B that cannot be read counts as open (unreadable)', async () => {
    // A private worker whose gateway B is down, so the outage does not reach other tests on the shared sandbox.
    const flaky = await startFlakyStack({ gatewayBDown: true });
    try {
      const event = await publishEvent(api, legend, { capacity: 5 });
      const { token, order } = await reserve(api, event, 'cancel-b-down');
      await openGatewayB(api, token, order.saleId);
      const refused = await flaky.api.request({
        method: 'POST',
        url: `/api/v1/sales/${order.saleId}/cancel`,
        headers: bearer(legend.key),
        payload: {},
      });
      expect(refused.statusCode).toBe(409);
      expect(refused.json().error).toMatchObject({
        code: 'OPEN_PAYMENT_CONFIRMATION_REQUIRED',
        details: { livePayment: 'unreadable' },
      });
      expect((await saleOf(api, legend, order.saleId)).status).toBe('PENDING');
    } finally {
      await flaky.close();
    }
  });

  test('a sale that is no longer PENDING or CONFIRMED (released by its buyer) gets 409 INVALID_STATE', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'cancel-abandoned');
    const released = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/release`,
      headers: { 'x-customer-session': token },
    });
    expect(released.statusCode).toBeLessThan(300);
    const response = await cancel(organizer, order.saleId);
    expect(response.statusCode).toBe(409);
    expect(response.json().error.code).toBe('INVALID_STATE');
  });

  test("another workspace's sale is 404, and a read key gets 403 READ_ONLY_KEY", async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    expect((await cancel(legend, sale.id)).statusCode).toBe(404);
    const readOnly = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${sale.id}/cancel`,
      headers: bearer(organizer.readKey),
      payload: {},
    });
    expect(readOnly.statusCode).toBe(403);
    expect(readOnly.json().error.code).toBe('READ_ONLY_KEY');
  });
});

describe('a cancel racing a payment ends in exactly one consistent outcome', () => {
  test('cancel and the gateway settling the payment fired together: CONFIRMED (cancel refused) or CANCELLED (late payment refunded), never both, never stock lost', async () => {
    const rounds = 6;
    const event = await publishEvent(api, organizer, { capacity: 20 });
    const sales = await Promise.all(
      Array.from({ length: rounds }, async (_, round) => {
        const { token, order } = await reserve(api, event, `race-${round}`);
        const charge = await payByCard(api, token, order.saleId, 'CONT');
        expect(charge.saleStatus).toBe('PENDING');
        return { saleId: order.saleId, paymentId: charge.paymentId };
      }),
    );
    const outcomes = await Promise.all(
      sales.map(async (sale, round) => {
        const settle = () => control(api, `/gateway-a/payments/${sale.paymentId}/settle`, { outcome: 'approved' });
        const fire = () => cancel(organizer, sale.saleId);
        // Alternate which request leaves first, so both orders are exercised.
        const [first, second] = round % 2 === 0 ? [fire(), settle()] : [settle(), fire()];
        const [a, b] = await Promise.all([first, second]);
        const cancelResponse =
          round % 2 === 0 ? (a as Awaited<ReturnType<typeof fire>>) : (b as Awaited<ReturnType<typeof fire>>);
        return { ...sale, cancelStatus: cancelResponse.statusCode, cancelBody: cancelResponse.json() };
      }),
    );
    let confirmed = 0;
    for (const outcome of outcomes) {
      const final = await eventually(
        async () => {
          const sale = await saleOf(api, organizer, outcome.saleId);
          const attempts = (
            await api.request({
              method: 'GET',
              url: `/api/v1/sales/${outcome.saleId}/attempts`,
              headers: bearer(organizer.key),
            })
          ).json().data as Array<{ kind: string }>;
          return { sale, refunded: attempts.some((attempt) => attempt.kind === 'REFUND') };
        },
        ({ sale, refunded }) => sale.status === 'CONFIRMED' || (sale.status === 'CANCELLED' && refunded),
        30_000,
      );
      if (final.sale.status === 'CONFIRMED') {
        confirmed += 1;
        expect(outcome.cancelStatus).toBe(409);
        // Confirmed while the cancel was going through the checkout (INVALID_STATE), or before the cancel looked at
        // the sale (then it is a paid sale: REFUND_REQUIRED). Either way the cancel changed nothing.
        expect(['INVALID_STATE', 'REFUND_REQUIRED']).toContain(outcome.cancelBody.error.code);
        expect(final.refunded).toBe(false);
        expect((await ticketsOf(api, organizer, outcome.saleId)).every((t) => t.status === 'VALID')).toBe(true);
      } else {
        expect(outcome.cancelStatus).toBe(200);
        expect(final.sale.paymentStatus).toBe('FT_LATE_PAYMENT_REFUNDED');
        expect(await ticketsOf(api, organizer, outcome.saleId)).toEqual([]);
      }
    }
    // Stock is exact: every confirmed sale holds one unit, every cancelled one returned its unit.
    expect(await available(api, organizer, event.ticketTypeId)).toBe(20 - confirmed);
  });
});
