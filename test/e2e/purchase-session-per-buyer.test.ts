import { purchaseSessionWorkflowId, SA } from '../../workflows/definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  customerOrder,
  orderBody,
  type PublishedEvent,
  publishEvent,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { buyerIdOf, openPurchaseSession, seatedEvent, seatMapOf } from '../support/seats.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let first: Organizer;
let second: Organizer;
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  first = await createOrganizer(api.orm.em.fork());
  second = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const email = () => `per-buyer-${Math.random().toString(36).slice(2, 9)}@buyers.test`;

const seatOrder = (event: PublishedEvent, label: string, holdToken: string) =>
  orderBody(event, 1, { items: [{ ticketTypeId: event.ticketTypeId, quantity: 1, seats: [label] }], holdToken });

const readSession = async (token: string, id: string) =>
  (
    await api.request({ method: 'GET', url: `/api/v1/customer/purchase-sessions/${id}`, headers: session(token) })
  ).json().data as { state: string };

const openPayment = (token: string, saleId: string, purchaseSessionId: string) =>
  api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment`,
    headers: { ...session(token), 'x-purchase-session': purchaseSessionId },
  });

const seatStatus = async (event: PublishedEvent, label: string) =>
  (await seatMapOf(api).objectStatuses(event.eventDateId, [label]))[0]?.status;

test('a newer session supersedes one that already placed its order; the order keeps its reservation and seat', async () => {
  const event = await seatedEvent(api, first);
  const token = await signInBuyer(api, email());
  const older = await openPurchaseSession(api, token, event.eventDateId);
  await seatMapOf(api).hold({ eventKey: event.eventDateId, labels: ['A-1'], holdToken: older.holdToken });
  const placed = await api.request({
    method: 'POST',
    url: '/api/v1/customer/orders',
    headers: { ...session(token), 'x-purchase-session': older.id },
    payload: seatOrder(event, 'A-1', older.holdToken),
  });
  expect(placed.statusCode).toBe(201);
  const order = placed.json().data as { saleId: string; expiresAt: string };
  expect((await readSession(token, older.id)).state).toBe('ORDERED');
  // Until another session is opened, the session that created the order may open its payment.
  expect((await openPayment(token, order.saleId, older.id)).statusCode).toBe(200);

  const newer = await openPurchaseSession(api, token, event.eventDateId);
  expect((await readSession(token, older.id)).state).toBe('SUPERSEDED');
  const refused = await openPayment(token, order.saleId, older.id);
  expect(refused.statusCode).toBe(409);
  expect(refused.json().error).toMatchObject({
    code: 'PURCHASE_SESSION_SUPERSEDED',
    details: { reason: 'purchase_session_superseded' },
  });

  // The order is untouched: still pending on its own clock, its seat still held for it, payable under the live one.
  const pending = await customerOrder(api, token, order.saleId);
  expect(pending).toMatchObject({ status: 'PENDING', expiresAt: order.expiresAt });
  expect(await seatStatus(event, 'A-1')).toBe('reservedByToken');
  expect((await openPayment(token, order.saleId, newer.id)).statusCode).toBe(200);
});

test("a session opened in another workspace supersedes the buyer's live one and frees its seats", async () => {
  const here = await seatedEvent(api, first);
  const there = await seatedEvent(api, second);
  const token = await signInBuyer(api, email());
  const buyerId = await buyerIdOf(api, token);
  const older = await openPurchaseSession(api, token, here.eventDateId);
  await seatMapOf(api).hold({ eventKey: here.eventDateId, labels: ['A-2'], holdToken: older.holdToken });

  const newer = await openPurchaseSession(api, token, there.eventDateId);
  expect(newer.state).toBe('ACTIVE');
  expect((await readSession(token, older.id)).state).toBe('SUPERSEDED');
  expect(await seatStatus(here, 'A-2')).toBe('free');
  const stale = await api.request({
    method: 'POST',
    url: '/api/v1/customer/orders',
    headers: { ...session(token), 'x-purchase-session': older.id },
    payload: seatOrder(here, 'A-2', older.holdToken),
  });
  expect(stale.statusCode).toBe(409);
  expect(stale.json().error.code).toBe('PURCHASE_SESSION_SUPERSEDED');

  // One execution for the buyer, found in the Temporal UI under the workspace of its live session.
  const described = await api.services.temporal.workflow.getHandle(purchaseSessionWorkflowId(buyerId)).describe();
  expect(described.typedSearchAttributes.get(SA.workspaceId)).toBe(second.workspaceId);
});

test('general admission: a newer session in another workspace supersedes the one an order was placed with', async () => {
  const strict = await createOrganizer(api.orm.em.fork());
  await api.orm.em
    .fork()
    .execute('update workspaces set requires_purchase_session = true where id = ?', [strict.workspaceId]);
  const event = await publishEvent(api, strict, { capacity: 5 });
  const elsewhere = await seatedEvent(api, second);
  const token = await signInBuyer(api, email());
  const opened = await openPurchaseSession(api, token, event.eventDateId);
  const placed = await api.request({
    method: 'POST',
    url: '/api/v1/customer/orders',
    headers: { ...session(token), 'x-purchase-session': opened.id },
    payload: orderBody(event),
  });
  expect(placed.statusCode).toBe(201);
  const saleId = placed.json().data.saleId as string;
  await openPurchaseSession(api, token, elsewhere.eventDateId);
  const refused = await openPayment(token, saleId, opened.id);
  expect(refused.statusCode).toBe(409);
  expect(refused.json().error.code).toBe('PURCHASE_SESSION_SUPERSEDED');
});
