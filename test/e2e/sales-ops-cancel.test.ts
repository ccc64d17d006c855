/**
 * POST /sales/{id}/cancel (contract part 3, cancel rules 1–4, and 4.8) through the cancellation workflow.
 */
import type { LightMyRequestResponse } from 'fastify';
import { cancellationWorkflowId, checkoutWorkflowId } from '../../workflows/definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { privateTaskQueue, startPrivateWorker } from '../support/private-stack.js';
import { eventually, publishEvent } from '../support/purchase.js';
import {
  available,
  complimentary,
  control,
  openGatewayB,
  payByCard,
  reserve,
  saleOf,
  sleep,
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
    // The buyer paid and gateway B reports the order approved, but its webhook has not reached us yet, so the sale
    // is still PENDING: exactly the situation rule 2 guards (the checkout's own pull confirms it later).
    const paid = await control(api, '/gateway-b/pay', { ...config, outcome: 'approved', deliverWebhook: false });
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

describe('a cancel while another cancel of the same sale is running (4.8)', () => {
  test('same options join the running cancellation; other options get 409 INVALID_STATE cancellation_in_progress; the execution has no timeout to outlive', async () => {
    // An API whose workflows go to a queue no worker polls yet: the first cancel stays running for as long as the
    // test needs, as a cancel waiting out a long provider outage would.
    const taskQueue = privateTaskQueue('cancel-held');
    const held = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue });
    let worker: { close(): Promise<void> } | null = null;
    try {
      const event = await publishEvent(api, organizer, { capacity: 5 });
      const sale = await complimentary(api, organizer, event);
      const send = (payload: Record<string, unknown>) =>
        held.request({
          method: 'POST',
          url: `/api/v1/sales/${sale.id}/cancel`,
          headers: bearer(organizer.key),
          payload,
        });
      const first = send({ reason: 'duplicate order' });
      const handle = held.services.temporal.workflow.getHandle(cancellationWorkflowId(sale.id));
      const running = await eventually(
        () => handle.describe().catch(() => null),
        (described) => described?.status.name === 'RUNNING',
      );
      // Rule: the execution is not cut short by a timeout shorter than its retries could take.
      // Unset or zero: Temporal's "no limit".
      const limitSeconds = (duration: { seconds?: unknown } | null | undefined) => Number(duration?.seconds ?? 0);
      expect(limitSeconds(running?.raw.executionConfig?.workflowExecutionTimeout)).toBe(0);
      expect(limitSeconds(running?.raw.executionConfig?.workflowRunTimeout)).toBe(0);

      for (const other of [
        { reason: 'another reason' },
        { reason: 'duplicate order', acknowledge_open_payment: true },
      ]) {
        const refused = await send(other);
        expect(refused.statusCode).toBe(409);
        expect(refused.json().error).toMatchObject({
          code: 'INVALID_STATE',
          details: {
            reason: 'cancellation_in_progress',
            runningRequest: { acknowledge_open_payment: false, reason: 'duplicate order' },
          },
        });
      }
      // The same options join the running execution: no answer until it ends, and no second execution.
      const joined = send({ reason: 'duplicate order' });
      const early = await Promise.race([joined.then(() => 'answered'), sleep(1_500).then(() => 'waiting')]);
      expect(early).toBe('waiting');

      worker = await startPrivateWorker(taskQueue);
      const answers: LightMyRequestResponse[] = await Promise.all([first, joined]);
      for (const answer of answers) {
        expect(answer.statusCode).toBe(200);
        expect(answer.json().data).toMatchObject({
          id: sale.id,
          status: 'CANCELLED',
          failureReason: 'duplicate order',
        });
      }
      const runs = [];
      for await (const execution of held.services.temporal.workflow.list({
        query: `WorkflowId = '${cancellationWorkflowId(sale.id)}'`,
      })) {
        runs.push(execution);
      }
      expect(runs).toHaveLength(1);
      expect(runs[0]?.status.name).toBe('COMPLETED');
      expect(await available(api, organizer, event.ticketTypeId)).toBe(5);
    } finally {
      await worker?.close();
      await held.close();
    }
  }, 120_000);
});

/**
 * The rule: a cancel and the gateway's settlement of the same PENDING sale end in exactly one outcome, and whichever
 * it is, nothing is lost — CONFIRMED (the cancel refused, tickets valid, the money kept, no refund) or CANCELLED (the
 * cancel answered 200, the late money refunded at the gateway, no tickets). Stock is exact either way.
 *
 * Left to chance, the race may produce only one outcome run after run, and a broken path for the other would go
 * unnoticed. So two rounds fix the order through the checkout's own serialization: `payment_first` waits until the
 * checkout has received the gateway's notification before the cancel is sent (the checkout handles what it received
 * first, so the sale must be CONFIRMED), and `cancel_first` waits for the cancel's answer before the gateway settles
 * (the sale must be CANCELLED and the payment refunded). The other rounds fire both together and are held to the
 * invariant of whichever outcome they produced. The test fails unless both outcomes occur.
 */
describe('a cancel racing a payment ends in exactly one consistent outcome', () => {
  type Order = 'payment_first' | 'cancel_first' | 'together';

  const notificationsReceived = async (saleId: string): Promise<number> => {
    const history = await api.services.temporal.workflow.getHandle(checkoutWorkflowId(saleId)).fetchHistory();
    return (history.events ?? []).filter(
      (event) => event.workflowExecutionSignaledEventAttributes?.signalName === 'paymentNotification',
    ).length;
  };

  test('each round ends CONFIRMED (cancel refused, money kept) or CANCELLED (money refunded); both outcomes occur', async () => {
    const plan: Order[] = ['payment_first', 'cancel_first', 'together', 'together', 'together', 'together'];
    const event = await publishEvent(api, organizer, { capacity: 20 });
    const sales = await Promise.all(
      plan.map(async (order, round) => {
        const { token, order: created } = await reserve(api, event, `race-${round}`);
        const charge = await payByCard(api, token, created.saleId, 'CONT');
        expect(charge.saleStatus).toBe('PENDING');
        return { order, saleId: created.saleId, paymentId: charge.paymentId };
      }),
    );
    const outcomes = await Promise.all(
      sales.map(async (sale, round) => {
        const settle = async () => {
          const response = await control(api, `/gateway-a/payments/${sale.paymentId}/settle`, { outcome: 'approved' });
          expect(response.status).toBe(200);
        };
        const fire = () => cancel(organizer, sale.saleId);
        let response: LightMyRequestResponse;
        if (sale.order === 'payment_first') {
          const before = await notificationsReceived(sale.saleId);
          await settle();
          await eventually(
            () => notificationsReceived(sale.saleId),
            (count) => count > before,
          );
          response = await fire();
        } else if (sale.order === 'cancel_first') {
          response = await fire();
          await settle();
        } else {
          // Alternate which request leaves first.
          if (round % 2 === 0) {
            const cancelling = fire();
            const settling = settle();
            [response] = await Promise.all([cancelling, settling]);
          } else {
            const settling = settle();
            const cancelling = fire();
            [, response] = await Promise.all([settling, cancelling]);
          }
        }
        return { ...sale, cancelStatus: response.statusCode, cancelBody: response.json() };
      }),
    );

    let confirmed = 0;
    const seen = new Set<string>();
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
          const payment = await api.services.gatewayA.getPayment(outcome.paymentId);
          return { sale, refunds: attempts.filter((attempt) => attempt.kind === 'REFUND').length, payment };
        },
        // The refund, its record and the sale's paymentStatus are separate steps of the checkout: wait for all three.
        ({ sale, refunds, payment }) =>
          sale.status === 'CONFIRMED' ||
          (sale.status === 'CANCELLED' &&
            refunds > 0 &&
            payment.status === 'refunded' &&
            sale.paymentStatus === 'FT_LATE_PAYMENT_REFUNDED'),
        30_000,
      );
      seen.add(final.sale.status);
      if (outcome.order === 'payment_first') expect(final.sale.status).toBe('CONFIRMED');
      if (outcome.order === 'cancel_first') expect(final.sale.status).toBe('CANCELLED');
      if (final.sale.status === 'CONFIRMED') {
        confirmed += 1;
        expect(outcome.cancelStatus).toBe(409);
        // Confirmed while the cancel was going through the checkout (INVALID_STATE), or before the cancel looked at
        // the sale (then it is a paid sale: REFUND_REQUIRED). Either way the cancel changed nothing.
        expect(['INVALID_STATE', 'REFUND_REQUIRED']).toContain(outcome.cancelBody.error.code);
        expect(final.refunds).toBe(0);
        expect(final.payment.status).toBe('approved');
        const tickets = await ticketsOf(api, organizer, outcome.saleId);
        expect(tickets.length).toBe(1);
        expect(tickets.every((t) => t.status === 'VALID')).toBe(true);
      } else {
        expect(final.sale.status).toBe('CANCELLED');
        expect(outcome.cancelStatus).toBe(200);
        expect(final.sale.paymentStatus).toBe('FT_LATE_PAYMENT_REFUNDED');
        expect(final.refunds).toBe(1);
        expect(final.payment.status).toBe('refunded');
        expect(await ticketsOf(api, organizer, outcome.saleId)).toEqual([]);
      }
    }
    expect([...seen].sort()).toEqual(['CANCELLED', 'CONFIRMED']);
    // Stock is exact: every confirmed sale holds one unit, every cancelled one returned its unit.
    expect(await available(api, organizer, event.ticketTypeId)).toBe(20 - confirmed);
  }, 120_000);
});
