/**
 * What operators and the checkout see of the sales operations: every cancellation, refund and purchase-session
 * execution is found in Temporal by the sale's search attributes, and a sale's checkout is told when a refund or an
 * organizer's cancel moves a sale it had already settled.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import {
  cancellationWorkflowId,
  checkoutWorkflowId,
  purchaseSessionWorkflowId,
  refundWorkflowId,
  SA,
} from '../../workflows/definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { signalsReceived } from '../support/histories.js';
import { privateTaskQueue } from '../support/private-stack.js';
import { eventually, publishEvent, signInBuyer } from '../support/purchase.js';
import { complimentary, payByCard, reserve } from '../support/sales-ops.js';
import { buyerIdOf, openPurchaseSession } from '../support/seats.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const attributesOf = async (workflowId: string) => {
  const described = await api.services.temporal.workflow.getHandle(workflowId).describe();
  const attributes = described.typedSearchAttributes;
  return {
    saleReference: attributes.get(SA.saleReference),
    workspaceId: attributes.get(SA.workspaceId),
    eventDateId: attributes.get(SA.eventDateId),
    saleStatus: attributes.get(SA.saleStatus),
  };
};

/** The saleStatusChanged signals the sale's checkout received, decoded (payloads pass the service's codec). */
const statusSignals = (saleId: string): Promise<unknown[]> =>
  signalsReceived<unknown>(api, saleId, 'saleStatusChanged');

describe('search attributes on every sales-operation execution (SaleReference, WorkspaceId, EventDateId, SaleStatus)', () => {
  test('a cancellation carries the sale and ends with SaleStatus CANCELLED; operators find it by SaleReference', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const cancelled = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${sale.id}/cancel`,
      headers: bearer(organizer.key),
      payload: {},
    });
    expect(cancelled.statusCode).toBe(200);
    expect(await attributesOf(cancellationWorkflowId(sale.id))).toEqual({
      saleReference: sale.reference,
      workspaceId: organizer.workspaceId,
      eventDateId: event.eventDateId,
      saleStatus: 'CANCELLED',
    });
    const listed = await eventually(
      async () => {
        const ids: string[] = [];
        for await (const run of api.services.temporal.workflow.list({
          query: `SaleReference = '${sale.reference}' AND WorkflowType = 'cancellation'`,
        })) {
          ids.push(run.workflowId);
        }
        return ids;
      },
      (ids) => ids.length > 0,
    );
    expect(listed).toEqual([cancellationWorkflowId(sale.id)]);
  });

  test('a refund carries the sale and ends with SaleStatus REFUNDED', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'visible-refund');
    await payByCard(api, token, order.saleId, 'APRO');
    const refunded = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${order.saleId}/refund`,
      headers: bearer(organizer.key),
      payload: { reason: 'search attributes', notifyBuyer: false },
    });
    expect(refunded.statusCode).toBe(200);
    expect(await attributesOf(refundWorkflowId(order.saleId))).toEqual({
      saleReference: order.reference,
      workspaceId: organizer.workspaceId,
      eventDateId: event.eventDateId,
      saleStatus: 'REFUNDED',
    });
  });

  test('a purchase session carries its WorkspaceId', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, `visible-${Math.random().toString(36).slice(2, 9)}@buyers.test`);
    await openPurchaseSession(api, token, event.eventDateId);
    const workflowId = purchaseSessionWorkflowId(await buyerIdOf(api, token));
    expect((await attributesOf(workflowId)).workspaceId).toBe(organizer.workspaceId);
  });
});

describe("the checkout's view follows sales moved by other workflows (saleStatusChanged)", () => {
  /**
   * A confirmed sale's checkout may already have ended (it ends once its tickets are mailed). To see what the sales
   * operations send to `checkout/<saleId>`, a stand-in execution then takes that id on a queue no worker polls: the
   * signals it receives stay in its history for the test to read.
   */
  async function listenAsCheckout(saleId: string): Promise<void> {
    const handle = api.services.temporal.workflow.getHandle(checkoutWorkflowId(saleId));
    const status = await eventually(
      async () => (await handle.describe()).status.name,
      (name) => name !== 'RUNNING',
      15_000,
    ).catch(() => 'RUNNING');
    if (status === 'RUNNING') return;
    try {
      await api.services.temporal.workflow.start('checkoutStandIn', {
        workflowId: checkoutWorkflowId(saleId),
        taskQueue: privateTaskQueue('checkout-stand-in'),
        args: [],
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }

  test('a completed refund tells the running checkout REFUNDED (source refund)', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'tell-refund');
    await payByCard(api, token, order.saleId, 'APRO');
    await listenAsCheckout(order.saleId);
    const refunded = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${order.saleId}/refund`,
      headers: bearer(organizer.key),
      payload: { reason: 'checkout view', notifyBuyer: false },
    });
    expect(refunded.statusCode).toBe(200);
    expect(await statusSignals(order.saleId)).toEqual([{ status: 'REFUNDED', source: 'refund' }]);
  });

  test('cancelling a complimentary sale tells the running checkout CANCELLED (source cancellation); a repeat sends nothing new', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    await listenAsCheckout(sale.id);
    const cancel = () =>
      api.request({
        method: 'POST',
        url: `/api/v1/sales/${sale.id}/cancel`,
        headers: bearer(organizer.key),
        payload: {},
      });
    expect((await cancel()).statusCode).toBe(200);
    expect(await statusSignals(sale.id)).toEqual([{ status: 'CANCELLED', source: 'cancellation' }]);
    // A repeat finds the sale CANCELLED in the rules and stops before any step that would tell the checkout again.
    expect((await cancel()).statusCode).toBe(200);
    expect(await statusSignals(sale.id)).toEqual([{ status: 'CANCELLED', source: 'cancellation' }]);
  });

  test('with the checkout finished, the cancel still completes: a checkout that is gone has nothing to correct', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const checkout = api.services.temporal.workflow.getHandle(checkoutWorkflowId(sale.id));
    await eventually(
      async () => (await checkout.describe()).status.name,
      (name) => name !== 'RUNNING',
      30_000,
    );
    const cancelled = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${sale.id}/cancel`,
      headers: bearer(organizer.key),
      payload: {},
    });
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json().data.status).toBe('CANCELLED');
    const cancellation = await api.services.temporal.workflow.getHandle(cancellationWorkflowId(sale.id)).describe();
    expect(cancellation.status.name).toBe('COMPLETED');
    expect(await statusSignals(sale.id)).toEqual([]);
  });
});
