/**
 * What finishes an event cancellation when its own run cannot: the reconciler finds a CANCELLED event whose sales
 * still hold money and no cancellation running (the process stopped between the commit and the workflow start, a
 * run the server terminated, one that failed) and starts it again; and a refund the gateway refuses for good is
 * counted as refused on the event, not retried in a loop, while the other sales are refunded and the cancellation
 * finishes.
 */
import { refundWorkflowId } from '../../workflows/definitions.js';
import {
  eventCancellationProgressQuery,
  eventCancellationWorkflowId,
} from '../../workflows/event-cancellation-definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, publishEvent } from '../support/purchase.js';
import { payByCard, reserve, saleOf } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi({ EVENT_CANCELLATION_FINAL_SWEEP_MS: '1000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const getEvent = async (eventId: string) =>
  (await api.request({ method: 'GET', url: `/api/v1/events/${eventId}`, headers: bearer(organizer.key) })).json().data;

async function gatewayARefunds(paymentId: string): Promise<unknown[]> {
  const response = await fetch(`${api.env.SANDBOX_URL}/gateway-a/v1/payments/${paymentId}/refunds`, {
    headers: { authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` },
  });
  return (await response.json()) as unknown[];
}

async function refuseRefundsOf(providerPaymentId: string): Promise<void> {
  const response = await fetch(`${api.env.SANDBOX_URL}/control/refund-refusals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ gateway: 'gateway-a', providerPaymentId, reason: 'insufficient merchant balance' }),
  });
  if (response.status !== 201) throw new Error(`refund refusal → ${response.status} ${await response.text()}`);
}

test('the reconciler resumes the refunds of a CANCELLED event whose cancellation is not running', async () => {
  const event = await publishEvent(api, organizer, { capacity: 10 });
  const paid = await reserve(api, event, 'evc-resume-paid');
  const charge = await payByCard(api, paid.token, paid.order.saleId, 'APRO');
  expect(charge.saleStatus).toBe('CONFIRMED');
  // The event was cancelled but no cancellation runs for it (as after a crash right after the commit, or a run the
  // server terminated at its history limit).
  await api.orm.em
    .fork()
    .execute(`update events set status = 'CANCELLED', cancelled_at = now() - interval '1 minute' where id = ?`, [
      event.eventId,
    ]);

  await api.services.temporal.workflow.execute('reconciler', {
    taskQueue: api.env.TEMPORAL_TASK_QUEUE,
    workflowId: `reconciler-test-${event.eventId}`,
    args: [{ marginMs: 0, workspaceId: organizer.workspaceId }],
  });
  const described = await api.services.temporal.workflow
    .getHandle(eventCancellationWorkflowId(event.eventId))
    .describe();
  expect(described.type).toBe('eventCancellation');

  const done = await eventually(
    () => getEvent(event.eventId),
    (current) => current.cancellation?.state === 'DONE',
    60_000,
  );
  expect(done.cancellation).toMatchObject({ confirmed: 0, refunded: 1, refused: 0 });
  expect(await saleOf(api, organizer, paid.order.saleId)).toMatchObject({ status: 'REFUNDED' });
  // The Temporal UI shows the same counts: the memo, and the `progress` query. (The run the reconciler started waits
  // the worker's final-sweep delay before it completes, so it is read while it waits.)
  const handle = api.services.temporal.workflow.getHandle(eventCancellationWorkflowId(event.eventId));
  const withCounts = await eventually(
    () => handle.describe(),
    (current) => (current.memo?.cancellation as { refunded?: number } | undefined)?.refunded === 1,
    30_000,
  );
  expect(withCounts.memo?.cancellation).toMatchObject({ refunded: 1, confirmed: 0, refused: 0 });
  const progress = await eventually(
    () => handle.query(eventCancellationProgressQuery),
    (current) => current.stage === 'final_sweep',
    30_000,
  );
  expect(progress).toMatchObject({ counts: { refunded: 1, confirmed: 0 } });
  expect(await gatewayARefunds(charge.paymentId)).toHaveLength(1);
}, 120_000);

test('a refund the gateway refuses for good is counted as refused and not looped on; the other sales are refunded', async () => {
  const event = await publishEvent(api, organizer, { capacity: 10 });
  const refused = await reserve(api, event, 'evc-refused');
  const refusedCharge = await payByCard(api, refused.token, refused.order.saleId, 'APRO');
  const fine = await reserve(api, event, 'evc-refunded');
  const fineCharge = await payByCard(api, fine.token, fine.order.saleId, 'APRO');
  await refuseRefundsOf(refusedCharge.paymentId);

  const cancelled = await api.request({
    method: 'POST',
    url: `/api/v1/events/${event.eventId}/cancel`,
    headers: bearer(organizer.key),
    payload: { reason: 'storm' },
  });
  expect(cancelled.statusCode).toBe(200);
  // The sale's refund workflow asks the refusing gateway five times (waits of 5, 10, 20 and 40 s) before it records
  // the refund refused for good, which is when the cancellation counts it.
  const done = await eventually(
    () => getEvent(event.eventId),
    (current) => current.cancellation?.state === 'DONE',
    240_000,
  );
  expect(done.cancellation).toMatchObject({
    confirmed: 1,
    refunded: 1,
    refused: 1,
    failures: [expect.objectContaining({ saleId: refused.order.saleId })],
  });
  // The cancellation itself finishes: it does not wait on, or loop over, the refused refund.
  const result = await api.services.temporal.workflow.getHandle(eventCancellationWorkflowId(event.eventId)).result();
  expect(result).toMatchObject({ refunded: 1, failures: 1 });
  expect(await saleOf(api, organizer, refused.order.saleId)).toMatchObject({ status: 'CONFIRMED' });
  expect(await gatewayARefunds(refusedCharge.paymentId)).toHaveLength(0);
  expect(await gatewayARefunds(fineCharge.paymentId)).toHaveLength(1);
  // The refusal went to the sale's own refund workflow, which records it for the operator.
  const refund = await api.services.temporal.workflow.getHandle(refundWorkflowId(refused.order.saleId)).describe();
  expect(refund.type).toBe('refund');
}, 300_000);
