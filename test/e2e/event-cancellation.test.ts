/**
 * POST /events/{id}/cancel runs the event-cancellation workflow: the event stops selling at once, its PENDING sales
 * are cancelled, its gateway-paid sales refunded (once, even when the organizer had already asked), complimentary
 * sales cancelled, and GET /events/{id} shows the progress.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { providerUrls } from '../../config/env.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { refundWorkflowId } from '../../workflows/definitions.js';
import { eventCancellationWorkflowId } from '../../workflows/event-cancellation-definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, orderBody, publishEvent, session } from '../support/purchase.js';
import { available, complimentary, payByCard, reserve, saleOf, ticketsOf } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  // The last look for late confirmations comes a second after the sales are undone instead of an hour.
  api = await startTestApi({ EVENT_CANCELLATION_FINAL_SWEEP_MS: '1000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const cancelEvent = (eventId: string, payload?: Record<string, unknown>) =>
  api.request({
    method: 'POST',
    url: `/api/v1/events/${eventId}/cancel`,
    headers: bearer(organizer.key),
    ...(payload ? { payload } : {}),
  });

const getEvent = async (eventId: string) =>
  (await api.request({ method: 'GET', url: `/api/v1/events/${eventId}`, headers: bearer(organizer.key) })).json().data;

async function gatewayARefunds(paymentId: string): Promise<unknown[]> {
  const response = await fetch(`${api.env.SANDBOX_URL}/gateway-a/v1/payments/${paymentId}/refunds`, {
    headers: { authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` },
  });
  return (await response.json()) as unknown[];
}

async function outboxEvents(saleId: string): Promise<string[]> {
  const rows = await api.orm.em
    .fork()
    .execute<{ type: string }[]>(`select type from outbox_events where payload->>'saleId' = ? order by created_at`, [
      saleId,
    ]);
  return rows.map((row) => row.type);
}

describe('event cancellation (POST /events/{id}/cancel)', () => {
  test('every sale is undone: paid refunded once, pending cancelled, complimentary cancelled; progress on the event', async () => {
    const event = await publishEvent(api, organizer, { capacity: 20 });
    const paid = await reserve(api, event, 'evc-paid', 2);
    const charge = await payByCard(api, paid.token, paid.order.saleId, 'APRO');
    expect(charge.saleStatus).toBe('CONFIRMED');
    const paidEarlier = await reserve(api, event, 'evc-early', 1);
    const earlierCharge = await payByCard(api, paidEarlier.token, paidEarlier.order.saleId, 'APRO');
    const pending = await reserve(api, event, 'evc-pending', 1);
    const comp = await complimentary(api, organizer, event, 3);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(20 - 2 - 1 - 1 - 3);

    // The organizer already refunded one sale by hand: the event's cancellation must not refund it again.
    const manual = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${paidEarlier.order.saleId}/refund`,
      headers: bearer(organizer.key),
      payload: { reason: 'asked before' },
    });
    expect(manual.statusCode).toBe(200);

    const response = await cancelEvent(event.eventId, { reason: 'artist ill' });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({ id: event.eventId, status: 'CANCELLED' });
    expect(response.json().data.cancelledAt).toEqual(expect.any(String));

    // No new sale once the request returned.
    const another = await api.request({
      method: 'POST',
      url: '/api/v1/customer/orders',
      headers: session(paid.token),
      payload: orderBody(event, 1),
    });
    expect(another.statusCode).toBe(409);

    const done = await eventually(
      () => getEvent(event.eventId),
      (current) => current.cancellation?.state === 'DONE',
      60_000,
    );
    expect(done.cancellation).toMatchObject({
      state: 'DONE',
      pending: 0,
      confirmed: 0,
      refunded: 2,
      cancelled: 2,
      failures: [],
      finishedAt: expect.any(String),
    });

    expect(await saleOf(api, organizer, paid.order.saleId)).toMatchObject({ status: 'REFUNDED' });
    expect(await saleOf(api, organizer, pending.order.saleId)).toMatchObject({ status: 'CANCELLED' });
    expect(await saleOf(api, organizer, comp.id)).toMatchObject({ status: 'CANCELLED' });
    expect((await ticketsOf(api, organizer, comp.id)).every((ticket) => ticket.status === 'INVALID')).toBe(true);
    expect(await gatewayARefunds(charge.paymentId)).toHaveLength(1);
    expect(await gatewayARefunds(earlierCharge.paymentId)).toHaveLength(1);
    expect(await available(api, organizer, event.ticketTypeId)).toBe(20);
    // Each refunded buyer's integrations hear about it through the signed webhook outbox, once.
    expect((await outboxEvents(paid.order.saleId)).filter((type) => type === 'sale.refunded')).toHaveLength(1);

    // The final sweep, a second after DONE, finds no late sale: the organizer still sees the cancellation DONE, and
    // done when it first was (the sweep neither shows RUNNING nor moves finishedAt).
    await api.services.temporal.workflow.getHandle(eventCancellationWorkflowId(event.eventId)).result();
    expect((await getEvent(event.eventId)).cancellation).toMatchObject({
      state: 'DONE',
      finishedAt: done.cancellation?.finishedAt,
    });
    // Repeating the cancel changes nothing and refunds nothing more.
    const again = await cancelEvent(event.eventId);
    expect(again.statusCode).toBe(200);
    expect(again.json().data.cancellation).toMatchObject({ state: 'DONE', finishedAt: done.cancellation?.finishedAt });
    expect(await gatewayARefunds(charge.paymentId)).toHaveLength(1);
  });

  test('a payment refunded at the gateway outside this service is recorded refunded, not refused, and not refunded again', async () => {
    // The cancellation's first ask sends the refund without reading the payment first (one request a refund, for the
    // gateway's budget). Gateway A answers a refund of a payment refunded already, under another key, with a final
    // 400: read then, that answer is the refund done, not a refusal parked for the operator.
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const paid = await reserve(api, event, 'evc-outside', 1);
    const charge = await payByCard(api, paid.token, paid.order.saleId, 'APRO');
    expect(charge.saleStatus).toBe('CONFIRMED');
    const gateway = new GatewayAClient({
      baseUrl: providerUrls(api.env).gatewayA,
      accessToken: api.env.GATEWAY_A_ACCESS_TOKEN,
    });
    await gateway.refundPayment({
      paymentId: charge.paymentId,
      idempotencyKey: `dashboard-${paid.order.saleId}`,
    });

    expect((await cancelEvent(event.eventId, { reason: 'artist ill' })).statusCode).toBe(200);
    const done = await eventually(
      () => getEvent(event.eventId),
      (current) => current.cancellation?.state === 'DONE',
      60_000,
    );
    expect(done.cancellation).toMatchObject({ state: 'DONE', confirmed: 0, refunded: 1, refused: 0, failures: [] });
    expect(await saleOf(api, organizer, paid.order.saleId)).toMatchObject({ status: 'REFUNDED' });
    expect(await gatewayARefunds(charge.paymentId)).toHaveLength(1);
    // Settled by the page at the gateway's first answer: no refusal handed over to the sale's refund workflow (which
    // would ask again under a key of its own, read first, and get there only after a refusal's wait).
    await expect(
      api.services.temporal.workflow.getHandle(refundWorkflowId(paid.order.saleId)).describe(),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });

  test('a cancelled event with no sales is done at once; an unknown event is 404', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    expect((await cancelEvent(event.eventId)).statusCode).toBe(200);
    const done = await eventually(
      () => getEvent(event.eventId),
      (current) => current.cancellation?.state === 'DONE',
      30_000,
    );
    expect(done.cancellation).toMatchObject({ pending: 0, confirmed: 0, refunded: 0, cancelled: 0 });
    expect((await cancelEvent('00000000-0000-7000-8000-000000000000')).statusCode).toBe(404);
  });

  test('a reason longer than 300 characters is refused with 422 and the event stays on sale', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const response = await cancelEvent(event.eventId, { reason: 'x'.repeat(301) });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.code).toBe('VALIDATION_FAILED');
    expect((await getEvent(event.eventId)).status).toBe('PUBLISHED');
  });
});
