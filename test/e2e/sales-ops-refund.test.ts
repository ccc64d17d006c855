/**
 * POST /sales/{id}/refund through the refund workflow: full refund at the sale's gateway, retried until the gateway
 * confirms, then REFUNDED, tickets INVALID, stock back; never issued twice.
 */
import type { Connection } from '@temporalio/client';
import { connectTemporalClient } from '../../config/temporal.js';
import { refundWorkflowId } from '../../workflows/definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, publishEvent, waitForMail } from '../support/purchase.js';
import {
  available,
  complimentary,
  control,
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
  await api.orm.em
    .fork()
    .execute(`update workspaces set plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [legend.workspaceId]);
});
afterAll(async () => {
  await api.close();
});

const refund = (who: Organizer, saleId: string, payload: Record<string, unknown> = { reason: 'event moved' }) =>
  api.request({ method: 'POST', url: `/api/v1/sales/${saleId}/refund`, headers: bearer(who.key), payload });

async function gatewayARefunds(paymentId: string): Promise<unknown[]> {
  const response = await fetch(`${api.env.SANDBOX_URL}/gateway-a/v1/payments/${paymentId}/refunds`, {
    headers: { authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` },
  });
  return (await response.json()) as unknown[];
}

async function attemptsOf(who: Organizer, saleId: string) {
  return (
    await api.request({ method: 'GET', url: `/api/v1/sales/${saleId}/attempts`, headers: bearer(who.key) })
  ).json().data as Array<{ kind: string; status: string | null }>;
}

describe('refund (POST /sales/{id}/refund)', () => {
  test('gateway A: the card payment is refunded once; sale REFUNDED, tickets INVALID, stock back, buyer told', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { email, token, order } = await reserve(api, event, 'refund-a', 2);
    const charge = await payByCard(api, token, order.saleId, 'APRO');
    expect(charge.saleStatus).toBe('CONFIRMED');
    expect(await available(api, organizer, event.ticketTypeId)).toBe(3);

    const response = await refund(organizer, order.saleId, { reason: 'the buyer cannot attend' });
    expect(response.statusCode).toBe(200);
    const body = response.json().data;
    expect(body.sale).toMatchObject({ id: order.saleId, status: 'REFUNDED', paymentStatus: 'refunded' });
    expect(body.refund).toMatchObject({
      status: 'completed',
      alreadyRefunded: false,
      gateway: 'GATEWAY_A',
      reason: 'the buyer cannot attend',
    });
    expect((await ticketsOf(api, organizer, order.saleId)).map((t) => t.status)).toEqual(['INVALID', 'INVALID']);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
    expect(
      (await attemptsOf(organizer, order.saleId)).filter((a) => a.kind === 'REFUND').length,
    ).toBeGreaterThanOrEqual(1);
    await waitForMail(api.env.SANDBOX_URL, email, (m) => m.subject.startsWith(`Refund of ${order.reference}`));

    // Asking again refunds nothing more: the sale is already REFUNDED and the gateway holds one refund.
    const again = await refund(organizer, order.saleId, { reason: 'double click' });
    expect(again.statusCode).toBe(200);
    expect(again.json().data.refund).toMatchObject({ status: 'completed', alreadyRefunded: true });
    expect(await gatewayARefunds(charge.paymentId)).toHaveLength(1);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
  });

  test('concurrent refund requests for one sale issue exactly one refund at the gateway', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'refund-concurrent');
    const charge = await payByCard(api, token, order.saleId, 'APRO');
    const responses = await Promise.all([1, 2, 3].map(() => refund(organizer, order.saleId)));
    for (const response of responses) expect(response.statusCode).toBe(200);
    expect(await gatewayARefunds(charge.paymentId)).toHaveLength(1);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
  });

  test('gateway B: the approved charge is voided; sale REFUNDED', async () => {
    const event = await publishEvent(api, legend, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'refund-b');
    const config = await openGatewayB(api, token, order.saleId);
    expect((await control(api, '/gateway-b/pay', { ...config, outcome: 'approved' })).status).toBe(201);
    await eventually(
      () => saleOf(api, legend, order.saleId),
      (sale) => sale.status === 'CONFIRMED',
    );
    const response = await refund(legend, order.saleId);
    expect(response.statusCode).toBe(200);
    expect(response.json().data.sale).toMatchObject({ status: 'REFUNDED', paymentStatus: 'VOIDED' });
    expect(response.json().data.refund.gateway).toBe('GATEWAY_B');
    const status = await fetch(`${api.env.SANDBOX_URL}/gateway-b/v2/payment-voucher/${order.reference}`, {
      headers: { authorization: `x-api-key ${api.env.GATEWAY_B_API_KEY}` },
    });
    expect(JSON.stringify(await status.json())).toContain('VOIDED');
    expect(await available(api, legend, event.ticketTypeId)).toBe(5);
  });

  test('a gateway that fails twice before succeeding: the refund keeps retrying and completes once it is back', async () => {
    // The outage is this test's own (a worker on a private task queue whose gateway A fails twice), not the shared
    // sandbox's fault switch, which would take gateway A down for every other test running on the stack.
    const flaky = await startFlakyStack({ gatewayAFailures: 2 });
    const { client, connection } = await connectTemporalClient(api.env);
    try {
      const event = await publishEvent(api, organizer, { capacity: 5 });
      const { token, order } = await reserve(api, event, 'refund-retry');
      const charge = await payByCard(api, token, order.saleId, 'APRO');
      const response = await flaky.api.request({
        method: 'POST',
        url: `/api/v1/sales/${order.saleId}/refund`,
        headers: bearer(organizer.key),
        payload: { reason: 'gateway outage test' },
      });
      expect([200, 202]).toContain(response.statusCode);
      await eventually(
        () => saleOf(api, organizer, order.saleId),
        (sale) => sale.status === 'REFUNDED',
        30_000,
      );
      // The gateway step ran three times: two failures, then the refund.
      const history = await client.workflow.getHandle(refundWorkflowId(order.saleId)).fetchHistory();
      const attempts = (history.events ?? [])
        .map((e) => e.activityTaskStartedEventAttributes?.attempt)
        .filter((attempt): attempt is number => typeof attempt === 'number');
      expect(Math.max(...attempts)).toBe(3);
      // The gateway refund ran on the rate-limited provider queue, never in the checkouts' slots.
      const refundStep = (history.events ?? [])
        .map((e) => e.activityTaskScheduledEventAttributes)
        .find((scheduled) => scheduled?.activityType?.name === 'refundAtGateway');
      expect(refundStep?.taskQueue?.name).toMatch(/-providers$/);
      expect(await gatewayARefunds(charge.paymentId)).toHaveLength(1);
      expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
    } finally {
      await (connection as Connection).close();
      await flaky.close();
    }
  });

  test('a complimentary sale with a ticket used at the door is refunded offline: REFUNDED, nothing at a gateway', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event, 2);
    const [ticket] = await ticketsOf(api, organizer, sale.id);
    const checkin = await api.request({
      method: 'POST',
      url: `/api/v1/tickets/${ticket!.code}/checkin`,
      headers: bearer(organizer.key),
    });
    expect(checkin.statusCode).toBe(200);
    // Cancel refuses a sale used at the door (contract part 3, rule 1) ...
    const cancelled = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${sale.id}/cancel`,
      headers: bearer(organizer.key),
      payload: {},
    });
    expect(cancelled.json().error.code).toBe('SALE_ALREADY_CHECKED_IN');
    // ... and refund undoes it.
    const response = await refund(organizer, sale.id, { reason: 'guest list mistake' });
    expect(response.statusCode).toBe(200);
    expect(response.json().data.sale).toMatchObject({ status: 'REFUNDED', paymentStatus: 'FT_REFUNDED_OFFLINE' });
    expect(response.json().data.refund).toMatchObject({ status: 'completed', gateway: null, refundId: null });
    expect((await ticketsOf(api, organizer, sale.id)).map((t) => t.status)).toEqual(['INVALID', 'INVALID']);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
    expect((await attemptsOf(organizer, sale.id)).filter((a) => a.kind === 'REFUND')).toEqual([]);
  });

  test('a PENDING sale gets 409 SALE_NOT_REFUNDABLE (not_confirmed)', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { order } = await reserve(api, event, 'refund-pending');
    const response = await refund(organizer, order.saleId);
    expect(response.statusCode).toBe(409);
    expect(response.json().error).toMatchObject({ code: 'SALE_NOT_REFUNDABLE', details: { reason: 'not_confirmed' } });
  });

  test('a checked-in card sale is refunded without any force flag (contract part 3, rule 1: use refund instead)', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'refund-used');
    const charge = await payByCard(api, token, order.saleId, 'APRO');
    const [ticket] = await ticketsOf(api, organizer, order.saleId);
    await api.request({
      method: 'POST',
      url: `/api/v1/tickets/${ticket!.code}/checkin`,
      headers: bearer(organizer.key),
    });
    const refunded = await refund(organizer, order.saleId, { reason: 'show cancelled midway' });
    expect(refunded.statusCode).toBe(200);
    expect(refunded.json().data.sale.status).toBe('REFUNDED');
    expect((await ticketsOf(api, organizer, order.saleId))[0]!.status).toBe('INVALID');
    expect(await gatewayARefunds(charge.paymentId)).toHaveLength(1);
  });

  test('the reason is required (3–300 characters): 422 VALIDATION_FAILED', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const response = await refund(organizer, sale.id, {});
    expect(response.statusCode).toBe(422);
    expect(response.json().error.code).toBe('VALIDATION_FAILED');
  });
});
