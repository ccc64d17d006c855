/**
 * Contract 4.3: payment POSTs accept the session that created the order as long as no other session was opened
 * since; PURCHASE_SESSION_EXPIRED is for a map clock that ran out before the order was created. A general-admission
 * order therefore makes its session ORDERED, as a seated one does: the session's own 15-minute clock no longer
 * refuses the order's payment, its expiry follows the order, and its hold token (which no checkout takes) is expired.
 */
import { randomUUID } from 'node:crypto';
import { openPurchaseSessionUpdate, purchaseSessionWorkflowId, SA } from '../../workflows/definitions.js';
import type { purchaseSession } from '../../workflows/purchase-session.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, orderBody, publishEvent, session, signInBuyer } from '../support/purchase.js';
import { buyerIdOf, openPurchaseSession, seatMapOf } from '../support/seats.js';
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

const email = () => `ga-session-${Math.random().toString(36).slice(2, 9)}@buyers.test`;

const placeOrder = (token: string, purchaseSessionId: string, body: ReturnType<typeof orderBody>) =>
  api.request({
    method: 'POST',
    url: '/api/v1/customer/orders',
    headers: { ...session(token), 'x-purchase-session': purchaseSessionId },
    payload: body,
  });

const openPayment = (token: string, saleId: string, purchaseSessionId: string) =>
  api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment`,
    headers: { ...session(token), 'x-purchase-session': purchaseSessionId },
  });

const readSession = async (token: string, id: string) =>
  (
    await api.request({ method: 'GET', url: `/api/v1/customer/purchase-sessions/${id}`, headers: session(token) })
  ).json().data as { state: string; expiresAt: string; holdToken: string };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("a general-admission order is paid with its session after the session's own clock ran out", async () => {
  const event = await publishEvent(api, organizer, { capacity: 5 });
  const token = await signInBuyer(api, email());
  const buyerId = await buyerIdOf(api, token);
  // The buyer's execution, with a session whose map clock is 3 seconds instead of the API's 15 minutes.
  const execution = await api.services.temporal.workflow.start<typeof purchaseSession>('purchaseSession', {
    workflowId: purchaseSessionWorkflowId(buyerId),
    taskQueue: api.env.TEMPORAL_TASK_QUEUE,
    args: [{ workspaceId: organizer.workspaceId, buyerId }],
    typedSearchAttributes: [{ key: SA.workspaceId, value: organizer.workspaceId }],
  });
  const sessionId = randomUUID();
  const opened = await execution.executeUpdate(openPurchaseSessionUpdate, {
    args: [{ sessionId, eventDateId: event.eventDateId, expiresInMinutes: 0.05, workspaceId: organizer.workspaceId }],
  });

  const placed = await placeOrder(token, sessionId, orderBody(event));
  expect(placed.statusCode).toBe(201);
  const order = placed.json().data as { saleId: string; expiresAt: string };
  const ordered = await readSession(token, sessionId);
  expect(ordered.state).toBe('ORDERED');
  expect(ordered.expiresAt).toBe(order.expiresAt);

  await sleep(Math.max(0, opened.expiresAtMs - Date.now()) + 1_000);
  expect(Date.parse(order.expiresAt)).toBeGreaterThan(Date.now());
  const payment = await openPayment(token, order.saleId, sessionId);
  expect(payment.statusCode).toBe(200);
  expect((await readSession(token, sessionId)).state).toBe('ORDERED');

  // A newer session still supersedes it, as for seated orders.
  await openPurchaseSession(api, token, event.eventDateId);
  const superseded = await openPayment(token, order.saleId, sessionId);
  expect(superseded.statusCode).toBe(409);
  expect(superseded.json().error.code).toBe('PURCHASE_SESSION_SUPERSEDED');
});

test('the session of a general-admission order places no second order, and its unused hold token is expired', async () => {
  const event = await publishEvent(api, organizer, { capacity: 10 });
  const token = await signInBuyer(api, email());
  const opened = await openPurchaseSession(api, token, event.eventDateId);
  expect(await seatMapOf(api).getHoldToken(opened.holdToken)).not.toBeNull();

  const placed = await placeOrder(token, opened.id, orderBody(event));
  expect(placed.statusCode).toBe(201);
  expect((await readSession(token, opened.id)).state).toBe('ORDERED');
  // Expired at once, not at the end of its 15 minutes: nothing can be bought with it any more.
  await eventually(
    () => seatMapOf(api).getHoldToken(opened.holdToken),
    (held) => held === null,
  );

  const again = await placeOrder(token, opened.id, orderBody(event));
  expect(again.statusCode).toBe(409);
  expect(again.json().error).toMatchObject({
    code: 'PURCHASE_SESSION_EXPIRED',
    details: { reason: 'purchase_session_used' },
  });
});
