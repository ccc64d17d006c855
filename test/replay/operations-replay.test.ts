/**
 * Replay of the workflows around the checkout: cancellation, refund, purchase session, the webhook dispatcher and the
 * ticket mailer.
 * Fresh executions of each flow must replay deterministically against today's code, and
 * `RECORD_WORKFLOW_HISTORIES=1 npm test -- test/replay/operations-replay.test.ts -t '<scenario>'` commits their
 * histories as fixtures (new files only; see recorder.ts). The committed fixtures themselves are replayed with every
 * other committed history by checkout-replay.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cancellationWorkflowId,
  purchaseSessionWorkflowId,
  refundWorkflowId,
  ticketMailerWorkflowId,
  WEBHOOK_DISPATCHER_WORKFLOW_ID,
} from '../../workflows/definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  eventually,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
  untilTicketEmailSent,
} from '../support/purchase.js';
import { complimentary, payByCard, reserve } from '../support/sales-ops.js';
import { buyerIdOf, openPurchaseSession, seatedEvent, seatMapOf } from '../support/seats.js';
import { startTestApi, type TestApi } from '../support/stack.js';
import { exportHistory, replayHistories } from './recorder.js';

let api: TestApi;
let organizer: Organizer;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
  rmSync(scratch, { recursive: true, force: true });
});

const record = (workflowId: string, name: string, runId?: string) =>
  exportHistory({ address: api.env.TEMPORAL_ADDRESS, workflowId, name, scratchDir: scratch, runId });

const cancel = (saleId: string) =>
  api.request({
    method: 'POST',
    url: `/api/v1/sales/${saleId}/cancel`,
    headers: bearer(organizer.key),
    payload: { reason: 'replay fixture' },
  });

test('cancellation executions replay deterministically (a complimentary sale, a PENDING sale)', async () => {
  const event = await publishEvent(api, organizer, { capacity: 10 });
  const comp = await complimentary(api, organizer, event);
  expect((await cancel(comp.id)).statusCode).toBe(200);
  const { order } = await reserve(api, event, 'replay-cancel');
  expect((await cancel(order.saleId)).statusCode).toBe(200);
  const files = [
    record(cancellationWorkflowId(comp.id), 'cancellation-complimentary'),
    record(cancellationWorkflowId(order.saleId), 'cancellation-pending'),
  ];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true, true]);
}, 120_000);

test('refund executions replay deterministically (a card payment refunded at gateway A)', async () => {
  const event = await publishEvent(api, organizer, { capacity: 10 });
  const { token, order } = await reserve(api, event, 'replay-refund');
  await payByCard(api, token, order.saleId, 'APRO');
  const refunded = await api.request({
    method: 'POST',
    url: `/api/v1/sales/${order.saleId}/refund`,
    headers: bearer(organizer.key),
    payload: { reason: 'replay fixture', notifyBuyer: false },
  });
  expect(refunded.statusCode).toBe(200);
  const files = [record(refundWorkflowId(order.saleId), 'refund-card')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);

test('refund executions replay deterministically (a complimentary sale refunded offline)', async () => {
  const event = await publishEvent(api, organizer, { capacity: 10 });
  const comp = await complimentary(api, organizer, event);
  const refunded = await api.request({
    method: 'POST',
    url: `/api/v1/sales/${comp.id}/refund`,
    headers: bearer(organizer.key),
    payload: { reason: 'replay fixture' },
  });
  expect(refunded.statusCode).toBe(200);
  const files = [record(refundWorkflowId(comp.id), 'refund-offline')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);

test('purchase-session executions replay deterministically (opened, superseded, released)', async () => {
  const event = await seatedEvent(api, organizer);
  const token = await signInBuyer(api, `replay-seats-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
  const first = await openPurchaseSession(api, token, event.eventDateId);
  await seatMapOf(api).hold({ eventKey: event.eventDateId, labels: ['A-1'], holdToken: first.holdToken });
  const second = await openPurchaseSession(api, token, event.eventDateId);
  const released = await api.request({
    method: 'POST',
    url: `/api/v1/customer/purchase-sessions/${second.id}/release`,
    headers: session(token),
  });
  expect(released.statusCode).toBe(200);
  const workflowId = purchaseSessionWorkflowId(await buyerIdOf(api, token));
  const files = [record(workflowId, 'purchase-session-superseded-released')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);

test('purchase-session executions per buyer replay deterministically (ordered, superseded from another workspace)', async () => {
  const here = await seatedEvent(api, organizer);
  const there = await seatedEvent(api, await createOrganizer(api.orm.em.fork()));
  const token = await signInBuyer(api, `replay-buyer-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
  const first = await openPurchaseSession(api, token, here.eventDateId);
  await seatMapOf(api).hold({ eventKey: here.eventDateId, labels: ['A-1'], holdToken: first.holdToken });
  const ordered = await reserveOrder(
    api,
    token,
    orderBody(here, 1, {
      items: [{ ticketTypeId: here.ticketTypeId, quantity: 1, seats: ['A-1'] }],
      holdToken: first.holdToken,
    }),
  );
  expect(ordered.statusCode).toBe(201);
  const second = await openPurchaseSession(api, token, there.eventDateId);
  const released = await api.request({
    method: 'POST',
    url: `/api/v1/customer/purchase-sessions/${second.id}/release`,
    headers: session(token),
  });
  expect(released.statusCode).toBe(200);
  const workflowId = purchaseSessionWorkflowId(await buyerIdOf(api, token));
  const files = [record(workflowId, 'purchase-session-per-buyer-ordered-superseded')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);

test('purchase-session executions that continued as new replay deterministically (both runs)', async () => {
  const event = await seatedEvent(api, organizer);
  const token = await signInBuyer(api, `replay-can-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
  const workflowId = purchaseSessionWorkflowId(await buyerIdOf(api, token));
  const started = await api.services.temporal.workflow.start('purchaseSession', {
    workflowId,
    taskQueue: api.env.TEMPORAL_TASK_QUEUE,
    args: [{ workspaceId: organizer.workspaceId, buyerId: await buyerIdOf(api, token), continueAsNewAfter: 2 }],
  });
  for (let open = 0; open < 3; open += 1) await openPurchaseSession(api, token, event.eventDateId);
  const handle = api.services.temporal.workflow.getHandle(workflowId);
  await eventually(
    async () => (await handle.describe()).runId,
    (runId) => runId !== started.firstExecutionRunId,
  );
  const files = [
    record(workflowId, 'purchase-session-continued-as-new-first-run', started.firstExecutionRunId),
    record(workflowId, 'purchase-session-continued-as-new-next-run'),
  ];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true, true]);
}, 120_000);

test('the webhook dispatcher replays deterministically', async () => {
  const files = [record(WEBHOOK_DISPATCHER_WORKFLOW_ID, 'webhook-dispatcher')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);

test('the ticket mailer replays deterministically, after mailing a purchase', async () => {
  const event = await publishEvent(api, organizer);
  const token = await signInBuyer(api, `replay-mailer-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
  const order = (await reserveOrder(api, token, orderBody(event))).json().data as { saleId: string };
  await payByCard(api, token, order.saleId);
  await untilTicketEmailSent(api, order.saleId);
  const files = [record(ticketMailerWorkflowId(api.env.TEMPORAL_TASK_QUEUE), 'ticket-mailer')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);
