/**
 * Money is never stranded: the checkout's money paths under provider faults, against the real stack (the run's
 * Temporal, worker, API on a real port that receives the sandbox's notifications, and the sandbox), plus a fault
 * stack of its own (worker + API processes this file kills).
 *
 * Every scenario ends on three records: the sale's status (our database), the gateway's own record of the payment
 * (gateway A's payment search by reference) and the sale's payment attempts (GET /sales/{id}/attempts). The last test
 * checks that no checkout (or refund) execution of any of these sales failed, was terminated or timed out.
 *
 * The sandbox's fault switches are global: scenarios that share a switch run one after the other; the two that flip
 * different switches (gateway A down, seat map down) run side by side to keep the file short. Every switch is set
 * back to `ok` in `finally` and again after each test and after the file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { saleIdFor } from '../../api/http/checkout.js';
import { createBuyers, publishEvent as publishOnStack } from '../../bench/lib/fixtures.js';
import { checkoutStatusQuery, checkoutWorkflowId, refundWorkflowId } from '../../workflows/definitions.js';
import { replayHistories, showHistory, writeHistory } from '../replay/recorder.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  cardToken,
  confirmAtBank,
  customerOrder,
  eventually,
  inbox,
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
  untilTicketEmailSent,
  waitForMail,
} from '../support/purchase.js';
import { payByCard } from '../support/sales-ops.js';
import { buyerIdOf, openPurchaseSession, seatedEvent, seatMapOf } from '../support/seats.js';
import { startTestApi, type TestApi } from '../support/stack.js';
import { type FaultStack, faultLog, startFaultStack } from './harness.js';

const log = faultLog('money-paths');
const FILE_STARTED_AT = new Date();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;

/** The event date's own window (10 minutes): nothing expires unless a test waits for it. */
let api: TestApi;
/** The gateway A outage: a 3-minute window, far longer than the outage, so only the gateway decides the outcome. */
let outageApi: TestApi;
/** Lost notifications: a 20-second window, shorter than the checkout's first scheduled ask (30 s after opening). */
let deadlineApi: TestApi;
/** Late money (grace deadline, duplicate after a refund): a 2-second window and a 4-second grace period. */
let lateApi: TestApi;
let organizer: Organizer;
let stack: FaultStack | undefined;
/** Every sale this file made: their executions are checked at the end. */
const ourSales = new Set<string>();

const TARGETS = ['gateway-a', 'gateway-b', 'seatmap', 'smtp', 'notifications'] as const;
type Target = (typeof TARGETS)[number];

async function control(path: string, body: unknown): Promise<{ status: number; body: { data?: unknown } }> {
  const response = await fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { data?: unknown } };
}

async function setFault(target: Target, mode: 'down' | 'slow' | 'ok', delayMs?: number): Promise<void> {
  const answer = await control('/faults', { target, mode, ...(delayMs === undefined ? {} : { delayMs }) });
  if (answer.status !== 200)
    throw new Error(`fault ${target} ${mode} → ${answer.status} ${JSON.stringify(answer.body)}`);
}

async function resetFaults(): Promise<void> {
  for (const target of TARGETS) await setFault(target, 'ok').catch(() => undefined);
}

// ------------------------------------------------------------------------------------------------ the gateway's record

interface GatewayPayment {
  id: number;
  status: string;
  status_detail: string;
  transaction_amount: number;
  transaction_amount_refunded: number;
  external_reference: string | null;
}

interface DeliveryRecord {
  kind: string;
  delivered: boolean;
  replayOf: number | null;
  attempts: Array<{ status: number | null; error: string | null }>;
}

const gatewayHeaders = () => ({ authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` });

/** Gateway A's own record: every payment of a sale reference (the search checkout-async.test.ts uses). */
async function gatewayPayments(reference: string): Promise<GatewayPayment[]> {
  const response = await fetch(
    `${api.env.SANDBOX_URL}/gateway-a/v1/payments/search?external_reference=${encodeURIComponent(reference)}`,
    { headers: gatewayHeaders() },
  );
  if (response.status !== 200) throw new Error(`payment search → ${response.status}`);
  return ((await response.json()) as { results: GatewayPayment[] }).results;
}

/** The refunds gateway A recorded for one payment. */
async function gatewayRefunds(paymentId: number | string): Promise<Array<{ id: number; amount: number }>> {
  const response = await fetch(`${api.env.SANDBOX_URL}/gateway-a/v1/payments/${paymentId}/refunds`, {
    headers: gatewayHeaders(),
  });
  if (response.status !== 200) throw new Error(`refunds of ${paymentId} → ${response.status}`);
  return (await response.json()) as Array<{ id: number; amount: number }>;
}

/** What the sandbox sent for a reference (newest first), with each delivery attempt. */
async function notificationsFor(reference: string): Promise<DeliveryRecord[]> {
  const response = await fetch(
    `${api.env.SANDBOX_URL}/control/notifications?gateway=gateway-a&reference=${encodeURIComponent(reference)}`,
  );
  return ((await response.json()) as { data: DeliveryRecord[] }).data;
}

/** The bank settles the sale's PSE transfer; answers with the first delivery of the gateway's notification. */
async function settle(reference: string): Promise<{ payment: GatewayPayment; notification: DeliveryRecord | null }> {
  const settled = await control('/gateway-a/pse/settle', { reference, outcome: 'approved' });
  expect(settled.status).toBe(200);
  return settled.body.data as { payment: GatewayPayment; notification: DeliveryRecord | null };
}

// ------------------------------------------------------------------------------------------------ our records

interface Attempt {
  kind: string;
  status: string | null;
  providerPaymentId: string | null;
  note: string | null;
}

interface SaleView {
  id: string;
  reference: string;
  status: string;
  paymentRef: string | null;
  paymentStatus: string | null;
  confirmedAt: string | null;
  failureReason: string | null;
}

/** The organizer's view of a sale: a plain read (unlike the buyer's, it never asks the checkout to check). */
async function saleOf(saleId: string, key = organizer.key): Promise<SaleView> {
  const response = await api.request({ method: 'GET', url: `/api/v1/sales/${saleId}`, headers: bearer(key) });
  if (response.statusCode !== 200) throw new Error(`GET /sales/${saleId} → ${response.statusCode} ${response.body}`);
  return response.json().data;
}

async function attemptsOf(saleId: string, key = organizer.key): Promise<Attempt[]> {
  const response = await api.request({
    method: 'GET',
    url: `/api/v1/sales/${saleId}/attempts`,
    headers: bearer(key),
  });
  if (response.statusCode !== 200) throw new Error(`attempts of ${saleId} → ${response.statusCode}`);
  return response.json().data;
}

async function availableOf(ticketTypeId: string, key = organizer.key): Promise<number> {
  const response = await api.request({
    method: 'GET',
    url: `/api/v1/ticket-types/${ticketTypeId}`,
    headers: bearer(key),
  });
  return response.json().data.available;
}

const describeAttempts = (attempts: Attempt[]) =>
  attempts.map((a) => `${a.kind}:${a.status ?? '-'}:${a.providerPaymentId ?? '-'}`).join(', ');

// ------------------------------------------------------------------------------------------------ buyers

interface Order {
  saleId: string;
  reference: string;
  total: number;
  expiresAt: string;
}

async function buyerReserves(target: TestApi, event: PublishedEvent, label: string) {
  const token = await signInBuyer(target, email(label));
  const created = await reserveOrder(target, token, orderBody(event));
  expect(created.statusCode).toBe(201);
  const order = created.json().data as Order;
  ourSales.add(order.saleId);
  return { token, order };
}

/**
 * Opens PSE and confirms the transfer on the bank page. The browser is not followed back to the return URL and
 * nothing reads the order: whatever happens next is the gateway's and the checkout's doing.
 */
async function transferAtBank(target: TestApi, token: string, saleId: string): Promise<void> {
  const pse = await target.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment/pse`,
    headers: session(token),
  });
  expect(pse.statusCode).toBe(200);
  const submitted = await confirmAtBank(pse.json().data.redirectUrl);
  expect(submitted.status).toBe(302);
}

// ------------------------------------------------------------------------------------------------ executions

const temporal = (): Client => api.services.temporal;
const FAILED_STATES = new Set(['FAILED', 'TERMINATED', 'TIMED_OUT']);

async function list(query: string): Promise<WorkflowExecutionInfo[]> {
  const found: WorkflowExecutionInfo[] = [];
  for await (const execution of temporal().workflow.list({ query })) found.push(execution);
  return found;
}

/** Every run of one workflow id that visibility knows, oldest first. */
async function runsOf(workflowId: string): Promise<WorkflowExecutionInfo[]> {
  const runs = await list(`WorkflowId = '${workflowId}'`);
  return runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
}

/** The current run has nothing in flight: no workflow task, no activity (it may be waiting on a timer). */
async function quiet(workflowId: string, timeoutMs = 20_000): Promise<void> {
  await eventually(
    async () => {
      const { raw } = await temporal().workflow.getHandle(workflowId).describe();
      return !raw.pendingWorkflowTask && (raw.pendingActivities?.length ?? 0) === 0;
    },
    (idle) => idle,
    timeoutMs,
  );
  await sleep(500);
}

const timestampMs = (at: { seconds?: unknown; nanos?: number | null } | null | undefined): number | null =>
  at ? Number(at.seconds ?? 0) * 1000 + (at.nanos ?? 0) / 1e6 : null;

/** Activities of a workflow's current run that failed for good (every retry spent): their type and last attempt. */
async function activitiesGivenUp(workflowId: string): Promise<Array<{ activity: string; attempt: number }>> {
  const history = await temporal().workflow.getHandle(workflowId).fetchHistory();
  const types = new Map<string, string>();
  const attempts = new Map<string, number>();
  const gaveUp: Array<{ activity: string; attempt: number }> = [];
  for (const event of history.events ?? []) {
    const id = String(event.eventId);
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) types.set(id, scheduled.activityType?.name ?? '?');
    const started = event.activityTaskStartedEventAttributes;
    if (started) attempts.set(id, started.attempt ?? 0);
    const failed = event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes;
    if (failed) {
      gaveUp.push({
        activity: types.get(String(failed.scheduledEventId)) ?? '?',
        attempt: attempts.get(String(failed.startedEventId)) ?? 0,
      });
    }
  }
  return gaveUp;
}

// ------------------------------------------------------------------------------------------------ setup

beforeAll(async () => {
  const [main, outage, deadline, late, faultStack] = await Promise.all([
    startTestApi(),
    startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: String(3 * 60_000) }),
    startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '20000' }),
    startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '2000', LATE_PAYMENT_GRACE_MS: '4000' }),
    startFaultStack('money-paths', { paymentWindowMs: 120_000 }),
  ]);
  api = main;
  outageApi = outage;
  deadlineApi = deadline;
  lateApi = late;
  stack = faultStack;
  organizer = await createOrganizer(api.orm.em.fork());
  await resetFaults();
}, 180_000);

afterEach(async () => {
  await resetFaults();
});

afterAll(async () => {
  if (api) await resetFaults();
  await stack?.stop();
  for (const target of [lateApi, deadlineApi, outageApi, api]) await target?.close();
}, 90_000);

// ------------------------------------------------------------------------------------------------ scenarios

describe('provider outages (gateway A and the seat map, side by side)', () => {
  test.concurrent('an approved payment survives gateway A being down for longer than every retry schedule: CONFIRMED once it is back', async () => {
    const event = await publishEvent(outageApi, organizer, { capacity: 5 });
    const { token, order } = await buyerReserves(outageApi, event, 'outage');
    await transferAtBank(outageApi, token, order.saleId);

    await setFault('gateway-a', 'down');
    const downAt = Date.now();
    try {
      const { notification } = await settle(order.reference);
      // The notification reached our API, which could not re-read the payment and said so (5xx): the gateway
      // will retry it a few times and then give up.
      expect(notification?.attempts[0]?.status).toBeGreaterThanOrEqual(500);
      // The buyer looks at the order: the checkout is asked to check, and its 4-attempt read fails too.
      expect((await customerOrder(outageApi, token, order.saleId)).status).toBe('PENDING');
      // Down for ~40 s: past the gateway's retries (1 s, 5 s, 15 s) and the checkout's read (1 s, 2 s, 4 s).
      while (Date.now() - downAt < 40_000) {
        await sleep(5000);
        expect((await saleOf(order.saleId)).status).toBe('PENDING');
      }
      const sent = (await notificationsFor(order.reference)).find((n) => n.kind === 'payment.updated');
      expect(sent).toBeDefined();
      expect(sent?.delivered).toBe(false);
      expect(sent?.attempts.length).toBe(4);
      for (const attempt of sent?.attempts ?? []) expect(attempt.status).toBeGreaterThanOrEqual(500);
      // The checkout asked too (the buyer's read), spent its 4 attempts and gave up until later.
      expect(await activitiesGivenUp(checkoutWorkflowId(order.saleId))).toContainEqual({
        activity: 'findSalePayments',
        attempt: 4,
      });
    } finally {
      await setFault('gateway-a', 'ok');
    }
    const backAt = Date.now();

    // Nothing will push this payment again; the buyer's page asks the checkout, which pulls the gateway.
    const confirmed = await eventually(
      () => customerOrder(outageApi, token, order.saleId),
      (o) => o.status === 'CONFIRMED',
      45_000,
    );
    log(`outage: CONFIRMED ${Date.now() - backAt} ms after gateway A came back (${backAt - downAt} ms down)`);
    expect(Date.parse(confirmed.confirmedAt)).toBeLessThan(Date.parse(order.expiresAt));
    expect(confirmed.tickets).toHaveLength(1);

    const payments = await gatewayPayments(order.reference);
    expect(payments.map((p) => p.status)).toEqual(['approved']);
    const sale = await saleOf(order.saleId);
    expect(sale).toMatchObject({ status: 'CONFIRMED', paymentRef: String(payments[0]?.id) });
    const attempts = await attemptsOf(order.saleId);
    // The pull found it: a STATUS_CHECK approved; no refund.
    expect(attempts).toContainEqual(
      expect.objectContaining({ kind: 'STATUS_CHECK', status: 'approved', providerPaymentId: String(payments[0]?.id) }),
    );
    expect(attempts.filter((a) => a.kind === 'REFUND')).toEqual([]);
  }, 150_000);

  test.concurrent('a seated reserve while the seat map is down is refused cleanly and promptly: no seat held for it, no PENDING sale', async () => {
    const event = await seatedEvent(api, organizer);
    const token = await signInBuyer(api, email('seats-down'));
    const buyerId = await buyerIdOf(api, token);
    const opened = await openPurchaseSession(api, token, event.eventDateId);
    const seatMap = seatMapOf(api);
    await seatMap.hold({ eventKey: event.eventDateId, labels: ['A-1', 'A-2'], holdToken: opened.holdToken });
    const body = orderBody(event, 2, {
      items: [{ ticketTypeId: event.ticketTypeId, quantity: 2, seats: ['A-1', 'A-2'] }],
      holdToken: opened.holdToken,
    });
    // With an Idempotency-Key the sale id is known in advance (and a client retries with the same key).
    const key = `seats-down-${Math.random().toString(36).slice(2, 10)}`;
    const saleId = saleIdFor({ origin: 'customer-order', idempotencyKey: { scope: `buyer:${buyerId}`, key } });
    ourSales.add(saleId);
    const order = () =>
      api.request({
        method: 'POST',
        url: '/api/v1/customer/orders',
        headers: { ...session(token), 'idempotency-key': key },
        payload: body,
      });

    await setFault('seatmap', 'down');
    const startedAt = Date.now();
    let refused: Awaited<ReturnType<typeof order>>;
    try {
      refused = await order();
    } finally {
      await setFault('seatmap', 'ok');
    }
    const tookMs = Date.now() - startedAt;
    log(`seat map down: the reserve answered ${refused.statusCode} after ${tookMs} ms: ${refused.body}`);
    expect(tookMs).toBeLessThan(60_000);
    expect(refused.statusCode === 409 || refused.statusCode >= 500).toBe(true);
    expect(refused.json().error).toMatchObject({ code: expect.any(String), message: expect.any(String) });

    // No sale row at all, so none PENDING; the stock is whole; the checkout that tried is over.
    const rows = await api.orm.em
      .fork()
      .getConnection()
      .execute<{ id: string; status: string }[]>('select id, status from sales where event_date_id = ?', [
        event.eventDateId,
      ]);
    expect(rows).toEqual([]);
    expect(await availableOf(event.ticketTypeId)).toBe(6);
    const attempt = await temporal().workflow.getHandle(checkoutWorkflowId(saleId)).describe();
    expect(attempt.status.name).toBe('COMPLETED');
    // The seats are held by nothing but the buyer's own purchase session, as before the order; none is booked.
    const seats = await seatMap.objectStatuses(event.eventDateId, ['A-1', 'A-2', 'A-3', 'A-4', 'A-5', 'A-6']);
    for (const seat of seats) {
      if (seat.label === 'A-1' || seat.label === 'A-2') {
        expect(seat).toMatchObject({ status: 'reservedByToken', holdToken: opened.holdToken });
      } else {
        expect(seat.status).toBe('free');
      }
    }

    // Clean means retryable: the same request, once the provider is back, reserves the seats.
    const retried = await order();
    expect(retried.statusCode).toBe(201);
    expect(retried.json().data.saleId).toBe(saleId);
    expect((await saleOf(saleId)).status).toBe('PENDING');
    expect(await availableOf(event.ticketTypeId)).toBe(4);
    const released = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${saleId}/release`,
      headers: session(token),
    });
    expect(released.statusCode).toBe(200);
    expect(await availableOf(event.ticketTypeId)).toBe(6);
    // Payment: none was ever opened. (The gateway may still be down for the scenario running beside this one.)
    const atGateway = await eventually(
      () => gatewayPayments(retried.json().data.reference).catch(() => null),
      (payments) => payments !== null,
      60_000,
    );
    expect(atGateway).toEqual([]);
    expect(await attemptsOf(saleId)).toEqual([]);
  }, 150_000);
});

test('the mail server down when a card payment confirms: the sale is CONFIRMED at once, its email sent once when it is back', async () => {
  const buyer = email('smtp-down');
  const event = await publishEvent(api, organizer);
  const token = await signInBuyer(api, buyer);
  const order = (await reserveOrder(api, token, orderBody(event))).json().data as { saleId: string; reference: string };
  ourSales.add(order.saleId);
  const queueRow = async () =>
    (
      (await api.orm.em
        .fork()
        .execute('select attempts, last_error from ticket_email_queue where sale_id = ?', [order.saleId])) as Array<{
        attempts: number;
        last_error: string | null;
      }>
    )[0] ?? null;
  const ticketEmails = async () =>
    (await inbox(api.env.SANDBOX_URL, buyer)).filter((mail) => mail.subject.includes(order.reference));
  await setFault('smtp', 'down');
  try {
    expect(await payByCard(api, token, order.saleId)).toMatchObject({ status: 'approved', saleStatus: 'CONFIRMED' });
    // The mailer tried, was refused (421) and keeps the email owed with a later attempt.
    const owed = await eventually(queueRow, (row) => (row?.attempts ?? 0) >= 1, 20_000);
    expect(owed?.last_error).toContain('mail');
    expect(await ticketEmails()).toHaveLength(0);
  } finally {
    await setFault('smtp', 'ok');
  }
  const sent = await waitForMail(api.env.SANDBOX_URL, buyer, (mail) => mail.subject.includes(order.reference), 40_000);
  expect(sent.attachments.filter((file) => file.contentType === 'image/png')).toHaveLength(1);
  await untilTicketEmailSent(api, order.saleId);
  await sleep(1000);
  expect(await ticketEmails()).toHaveLength(1);
  const stamped = (await api.orm.em
    .fork()
    .execute('select tickets_emailed_at from sales where id = ?', [order.saleId])) as Array<{
    tickets_emailed_at: Date | null;
  }>;
  expect(stamped[0]?.tickets_emailed_at).not.toBeNull();
}, 90_000);

test('every gateway notification lost: pull reconciliation confirms the sale, never ABANDONED', async () => {
  const event = await publishEvent(api, organizer, { capacity: 5 });
  const polled = await buyerReserves(api, event, 'lost-polled');
  const unpolled = await buyerReserves(deadlineApi, event, 'lost-unpolled');

  await setFault('notifications', 'down');
  try {
    await Promise.all([
      // The buyer keeps their order page open: each read asks the checkout to check the gateway.
      (async () => {
        await transferAtBank(api, polled.token, polled.order.saleId);
        const { notification } = await settle(polled.order.reference);
        expect(notification).toMatchObject({ delivered: false });
        expect(notification?.attempts).toHaveLength(1);
        expect(notification?.attempts[0]?.error).toMatch(/lost/);
        const settledAt = Date.now();
        const confirmed = await eventually(
          () => customerOrder(api, polled.token, polled.order.saleId),
          (o) => o.status === 'CONFIRMED',
          20_000,
        );
        log(`lost notifications, buyer polling: CONFIRMED ${Date.now() - settledAt} ms after the settlement`);
        // Before the checkout's own first scheduled ask (30 s after opening): the buyer's read did it.
        expect(Date.now() - settledAt).toBeLessThan(25_000);
        expect(confirmed.tickets).toHaveLength(1);
      })(),
      // Nobody looks: the checkout asks the gateway once more before closing the sale at its 20-second deadline.
      (async () => {
        await transferAtBank(deadlineApi, unpolled.token, unpolled.order.saleId);
        const { notification } = await settle(unpolled.order.reference);
        expect(notification).toMatchObject({ delivered: false });
        const seen = new Set<string>();
        const sale = await eventually(
          async () => {
            const current = await saleOf(unpolled.order.saleId);
            seen.add(current.status);
            return current;
          },
          (s) => s.status !== 'PENDING',
          45_000,
        );
        log(
          `lost notifications, nobody polling: ${sale.status} at ${sale.confirmedAt}, deadline ${unpolled.order.expiresAt}`,
        );
        expect(sale.status).toBe('CONFIRMED');
        expect([...seen].sort()).toEqual(['CONFIRMED', 'PENDING']);
        // The deadline's own ask did it (the first scheduled ask would have come 10 s after the deadline).
        expect(Date.parse(sale.confirmedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(unpolled.order.expiresAt) - 2000);
      })(),
    ]);
  } finally {
    await setFault('notifications', 'ok');
  }

  for (const { order } of [polled, unpolled]) {
    const payments = await gatewayPayments(order.reference);
    expect(payments.map((p) => p.status)).toEqual(['approved']);
    expect(await saleOf(order.saleId)).toMatchObject({ status: 'CONFIRMED', paymentRef: String(payments[0]?.id) });
    const attempts = await attemptsOf(order.saleId);
    // Confirmed by a pull, inside the window: never a late payment of an ABANDONED sale, never a refund.
    expect(attempts).toContainEqual(
      expect.objectContaining({ kind: 'STATUS_CHECK', status: 'approved', providerPaymentId: String(payments[0]?.id) }),
    );
    expect(attempts.filter((a) => a.kind === 'LATE_PAYMENT' || a.kind === 'REFUND')).toEqual([]);
    expect(attempts.filter((a) => a.kind === 'NOTIFICATION' && a.status === 'approved')).toEqual([]);
  }
}, 120_000);

test('gateway A down when the deadline asks and every notification lost: the owed ask is retried within seconds of its return', async () => {
  const event = await publishEvent(deadlineApi, organizer, { capacity: 5 });
  const { token, order } = await buyerReserves(deadlineApi, event, 'owed-ask');
  await transferAtBank(deadlineApi, token, order.saleId);

  await setFault('notifications', 'down');
  let backAt = 0;
  try {
    // Gateway A goes down before the bank settles (through the sandbox's control API, which faults never touch): a
    // poll of the checkout between the two would otherwise read the approval and confirm the sale.
    await setFault('gateway-a', 'down');
    try {
      const { notification } = await settle(order.reference);
      expect(notification).toMatchObject({ delivered: false });
      // Nobody looks at the order: the deadline's ask spends its 4 attempts on the outage, and the sale is closed
      // unpaid with an answer owed.
      const closed = await eventually(
        () => saleOf(order.saleId),
        (sale) => sale.status !== 'PENDING',
        60_000,
      );
      expect(closed.status).toBe('ABANDONED');
      await eventually(
        () => activitiesGivenUp(checkoutWorkflowId(order.saleId)),
        (gaveUp) => gaveUp.some((step) => step.activity === 'findSalePayments'),
        30_000,
      );
    } finally {
      await setFault('gateway-a', 'ok');
      backAt = Date.now();
    }
  } finally {
    await setFault('notifications', 'ok');
  }

  // The poll interval had grown to a minute by then (the old schedule asked again 60 s after the failure at the
  // earliest); an owed answer is retried on its own short schedule: 5 s, then 10 s, each ask trying for ~7 s.
  const sale = await eventually(
    () => saleOf(order.saleId),
    (current) => current.status === 'CONFIRMED',
    40_000,
  );
  log(`owed ask: CONFIRMED ${Date.now() - backAt} ms after gateway A came back`);
  const payments = await gatewayPayments(order.reference);
  expect(payments.map((p) => p.status)).toEqual(['approved']);
  expect(sale).toMatchObject({ status: 'CONFIRMED', paymentRef: String(payments[0]?.id) });
  const attempts = await attemptsOf(order.saleId);
  expect(attempts).toContainEqual(
    expect.objectContaining({ kind: 'STATUS_CHECK', status: 'approved', providerPaymentId: String(payments[0]?.id) }),
  );
  expect(attempts.filter((a) => a.kind === 'REFUND')).toEqual([]);

  // The owed-ask schedule is a versioned change of the checkout: its history must replay (and is the committed
  // fixture when recording).
  await quiet(checkoutWorkflowId(order.saleId));
  const scratch = mkdtempSync(join(tmpdir(), 'owed-ask-'));
  try {
    const json = showHistory(deadlineApi.env.TEMPORAL_ADDRESS, checkoutWorkflowId(order.saleId));
    const file = writeHistory(json, 'checkout-owed-ask-retry', scratch);
    expect(replayHistories([file]).map((result) => result.ok)).toEqual([true]);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}, 150_000);

test('a notification at the grace deadline is processed, and one after the checkout closed starts a fresh run: both CONFIRMED', async () => {
  const event = await publishEvent(lateApi, organizer, { capacity: 5 });
  const [atDeadline, afterClose] = await Promise.all(
    ['grace-edge', 'grace-after'].map(async (label) => {
      const bought = await buyerReserves(lateApi, event, label);
      await transferAtBank(lateApi, bought.token, bought.order.saleId);
      return bought;
    }),
  );
  const edge = atDeadline!.order;
  const after = afterClose!.order;
  for (const order of [edge, after]) {
    await eventually(
      () => saleOf(order.saleId),
      (s) => s.status === 'ABANDONED',
      15_000,
    );
  }

  await Promise.all([
    // Settled at the very end of the grace period, as the checkout reports it.
    (async () => {
      const handle = temporal().workflow.getHandle(checkoutWorkflowId(edge.saleId));
      const status = await eventually(
        () => handle.query(checkoutStatusQuery),
        (s) => s.lateListeningUntilMs !== null,
        10_000,
      );
      const graceEndsAt = status.lateListeningUntilMs ?? 0;
      await sleep(graceEndsAt - Date.now());
      await settle(edge.reference);
      log(`grace edge: settled ${Date.now() - graceEndsAt} ms after the grace period's end`);
    })(),
    // Settled once the checkout has finished: the notification must start a new run (signal-with-start).
    (async () => {
      const handle = temporal().workflow.getHandle(checkoutWorkflowId(after.saleId));
      const closed = await eventually(
        () => handle.describe(),
        (d) => d.status.name !== 'RUNNING',
        30_000,
      );
      expect(closed.status.name).toBe('COMPLETED');
      await sleep(1000);
      await settle(after.reference);
      const resumed = await eventually(
        () => handle.describe(),
        (d) => d.runId !== closed.runId,
        15_000,
      );
      log(`after close: first run ${closed.runId} completed; notification started run ${resumed.runId}`);
    })(),
  ]);

  for (const order of [edge, after]) {
    const sale = await eventually(
      () => saleOf(order.saleId),
      (s) => s.status !== 'ABANDONED' || s.paymentStatus === 'FT_LATE_PAYMENT_REFUNDED',
      30_000,
    );
    const payments = await gatewayPayments(order.reference);
    const attempts = await attemptsOf(order.saleId);
    const runs = await runsOf(checkoutWorkflowId(order.saleId));
    log(
      `${order.reference}: ${sale.status}, runs ${runs.map((r) => r.status.name).join('/')}, attempts ${describeAttempts(attempts)}`,
    );
    // Stock was available: the late money buys the sale.
    expect(sale).toMatchObject({ status: 'CONFIRMED', paymentRef: String(payments[0]?.id) });
    expect(payments.map((p) => p.status)).toEqual(['approved']);
    expect(attempts).toContainEqual(
      expect.objectContaining({ kind: 'LATE_PAYMENT', status: 'approved', providerPaymentId: String(payments[0]?.id) }),
    );
    expect(attempts.filter((a) => a.kind === 'REFUND')).toEqual([]);
  }
  const afterRuns = await runsOf(checkoutWorkflowId(after.saleId));
  expect(afterRuns.length).toBeGreaterThanOrEqual(2);
  expect(afterRuns[0]?.status.name).toBe('COMPLETED');
  expect(await availableOf(event.ticketTypeId)).toBe(3);
}, 90_000);

test('a duplicate approval after a late refund leaves it refunded: ABANDONED, one refund, the winner still CONFIRMED', async () => {
  const event = await publishEvent(lateApi, organizer, { capacity: 1 });
  // Sale A takes the only unit, its transfer is confirmed at the bank but not settled before the window ends.
  const late = await buyerReserves(lateApi, event, 'late-loser');
  await transferAtBank(lateApi, late.token, late.order.saleId);
  await eventually(
    () => saleOf(late.order.saleId),
    (s) => s.status === 'ABANDONED',
    15_000,
  );
  // Sale B buys the last unit with a card.
  const winner = await buyerReserves(api, event, 'late-winner');
  const opened = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${winner.order.saleId}/payment`,
    headers: session(winner.token),
  });
  expect(opened.statusCode).toBe(200);
  const charged = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${winner.order.saleId}/payment/card`,
    headers: session(winner.token),
    payload: { token: await cardToken(api, 'APRO') },
  });
  expect(charged.json().data).toMatchObject({ status: 'approved', saleStatus: 'CONFIRMED' });

  // Then A's money arrives: no stock left, so it goes back.
  await settle(late.order.reference);
  const refundDone = await eventually(
    () => attemptsOf(late.order.saleId),
    (attempts) => attempts.some((a) => a.kind === 'REFUND' && a.status === 'refunded'),
    30_000,
  );
  const [payment] = await gatewayPayments(late.order.reference);
  expect(payment?.status).toBe('refunded');
  expect(refundDone.filter((a) => a.kind === 'REFUND')).toEqual([
    expect.objectContaining({ status: 'refunded', providerPaymentId: String(payment?.id) }),
  ]);
  await eventually(
    () => saleOf(late.order.saleId),
    (s) => s.paymentStatus === 'FT_LATE_PAYMENT_REFUNDED',
    10_000,
  );

  // The gateway delivers the payment's notification twice more. Its body only names the payment; our API re-reads it.
  const workflowId = checkoutWorkflowId(late.order.saleId);
  for (let i = 0; i < 2; i += 1) {
    const replay = await control('/notifications/replay', { gateway: 'gateway-a', reference: late.order.reference });
    expect(replay.status).toBe(200);
    const record = replay.body.data as DeliveryRecord;
    expect(record.replayOf).not.toBeNull();
    expect(record.attempts[0]?.status).toBe(200);
  }
  await quiet(workflowId);

  const sale = await saleOf(late.order.saleId);
  expect(sale).toMatchObject({ status: 'ABANDONED', paymentStatus: 'FT_LATE_PAYMENT_REFUNDED' });
  const attempts = await attemptsOf(late.order.saleId);
  log(`duplicate after refund: ${describeAttempts(attempts)}`);
  expect(attempts.filter((a) => a.kind === 'REFUND')).toHaveLength(1);
  expect(attempts.filter((a) => a.kind === 'LATE_PAYMENT')).toEqual([]);
  expect((await gatewayPayments(late.order.reference)).map((p) => p.status)).toEqual(['refunded']);
  expect(await gatewayRefunds(payment?.id ?? 0)).toHaveLength(1);

  const winnerSale = await saleOf(winner.order.saleId);
  expect(winnerSale.status).toBe('CONFIRMED');
  const winnerPayments = await gatewayPayments(winner.order.reference);
  expect(winnerPayments.map((p) => p.status)).toEqual(['approved']);
  expect(winnerSale.paymentRef).toBe(String(winnerPayments[0]?.id));
  expect((await attemptsOf(winner.order.saleId)).filter((a) => a.kind === 'REFUND')).toEqual([]);
  expect(await availableOf(event.ticketTypeId)).toBe(0);
}, 90_000);

test('the worker killed while a refund is at the gateway: the sale is REFUNDED once, its tickets INVALID', async () => {
  const current = stack!;
  const key = current.organizerKey;
  const http = current.http;
  const event = await publishOnStack(http, key, { name: 'Money paths refund', capacity: 3 });
  const [buyer] = await createBuyers(current.pool, 'money-paths', 1);
  const headers = { 'x-customer-session': buyer!.token };
  const created = await http.request('POST', '/api/v1/customer/orders', {
    headers,
    body: orderBody({
      eventId: event.eventId,
      slug: '',
      eventDateId: event.eventDateId,
      ticketTypeId: event.ticketTypeId,
    }),
  });
  expect(created.status).toBe(201);
  const order = (created.body as { data: Order }).data;
  ourSales.add(order.saleId);
  expect((await http.request('POST', `/api/v1/customer/orders/${order.saleId}/payment`, { headers })).status).toBe(200);
  const charged = await http.request('POST', `/api/v1/customer/orders/${order.saleId}/payment/card`, {
    headers,
    body: { token: await cardToken(api, 'APRO') },
  });
  expect(charged.body).toMatchObject({ data: { status: 'approved', saleStatus: 'CONFIRMED' } });
  const [payment] = await gatewayPayments(order.reference);

  await setFault('gateway-a', 'slow', 3000);
  let refundAnswer: ReturnType<typeof http.request> | undefined;
  let startedAt: number | null = null;
  try {
    refundAnswer = http.request('POST', `/api/v1/sales/${order.saleId}/refund`, {
      headers: bearer(key),
      body: { reason: 'fault test: worker killed mid-refund' },
      timeoutMs: 120_000,
    });
    // The refund activity posts the refund at once (a first ask reads nothing first; gateway-budget's one request a
    // refund), and the slow gateway holds it 3 s: the kill lands while that refund request is at the gateway.
    const refund = temporal().workflow.getHandle(refundWorkflowId(order.saleId));
    startedAt = await eventually(
      async () => {
        const described = await refund.describe().catch(() => null);
        const step = described?.raw.pendingActivities?.find((a) => a.activityType?.name === 'refundAtGateway');
        return step?.lastStartedTime ? (timestampMs(step.lastStartedTime) ?? Date.now()) : null;
      },
      (at) => at !== null,
      20_000,
    );
    await sleep((startedAt ?? Date.now()) + 1500 - Date.now());
    log(`refund: killing the worker ${Math.round(Date.now() - (startedAt ?? 0))} ms after the gateway step started`);
    await current.restartWorker('SIGKILL');
  } finally {
    await setFault('gateway-a', 'ok');
  }
  // The refund request the dead worker sent is carried out by the gateway; nobody is left to hear the answer.
  await sleep((startedAt ?? Date.now()) + 7000 - Date.now());
  const whileUnknown = await gatewayRefunds(payment?.id ?? 0);
  const ourView = await saleOf(order.saleId, key);
  log(`refund: after the kill the gateway holds ${whileUnknown.length} refund(s); our sale is ${ourView.status}`);
  expect({ refundsAtGateway: whileUnknown.length, ourStatus: ourView.status }).toEqual({
    refundsAtGateway: 1,
    ourStatus: 'CONFIRMED',
  });

  const sale = await eventually(
    () => saleOf(order.saleId, key),
    (s) => s.status === 'REFUNDED',
    90_000,
  );
  const answer = await refundAnswer;
  expect([200, 202]).toContain(answer?.status);
  expect(sale.status).toBe('REFUNDED');
  const tickets = (
    await api.request({ method: 'GET', url: `/api/v1/sales/${order.saleId}/tickets`, headers: bearer(key) })
  ).json().data as Array<{ status: string }>;
  expect(tickets.length).toBe(1);
  expect(tickets.map((t) => t.status)).toEqual(['INVALID']);
  // The gateway refunded the payment exactly once.
  const payments = await gatewayPayments(order.reference);
  expect(payments.map((p) => p.status)).toEqual(['refunded']);
  expect(payments[0]?.transaction_amount_refunded).toBe(payments[0]?.transaction_amount);
  expect(await gatewayRefunds(payment?.id ?? 0)).toHaveLength(1);
  const attempts = await attemptsOf(order.saleId, key);
  log(`refund: ${describeAttempts(attempts)}`);
  // The refund workflow records the request and the gateway's confirmation, each once despite the retried step; the
  // request row is marked refunded once the gateway confirms, so the reconciler never counts it as a refund owed.
  expect(
    attempts
      .filter((a) => a.kind === 'REFUND')
      .map((a) => a.status)
      .sort(),
  ).toEqual(['refunded', 'refunded']);
  expect(await availableOf(event.ticketTypeId, key)).toBe(3);
  // One refund execution, finished (after the buyer's refund notice).
  const refundRun = await eventually(
    () => temporal().workflow.getHandle(refundWorkflowId(order.saleId)).describe(),
    (d) => d.status.name !== 'RUNNING',
    30_000,
  );
  expect(refundRun.status.name).toBe('COMPLETED');
  expect((await runsOf(refundWorkflowId(order.saleId))).length).toBe(1);
}, 150_000);

test('no checkout or refund execution of these sales failed, was terminated or timed out', async () => {
  const broken: string[] = [];
  const record = (execution: { workflowId: string; runId: string; status: { name: string } }) => {
    if (FAILED_STATES.has(execution.status.name)) {
      broken.push(`${execution.workflowId} run ${execution.runId}: ${execution.status.name}`);
    }
  };
  // Every checkout started while this file ran (reserve attempts that never made a sale row included).
  const started = await list(`WorkflowId STARTS_WITH 'checkout/' AND StartTime >= '${FILE_STARTED_AT.toISOString()}'`);
  for (const execution of started) record(execution);
  // And every run of each sale's executions, the current one described directly (visibility may lag behind).
  for (const saleId of ourSales) {
    for (const workflowId of [checkoutWorkflowId(saleId), refundWorkflowId(saleId)]) {
      for (const execution of await runsOf(workflowId)) record(execution);
      const described = await temporal()
        .workflow.getHandle(workflowId)
        .describe()
        .catch(() => null);
      if (described) record(described);
      else if (workflowId.startsWith('checkout/')) broken.push(`${workflowId}: no execution found`);
    }
  }
  log(`executions checked: ${started.length} checkout runs since the file started, ${ourSales.size} sales`);
  expect(started.length).toBeGreaterThanOrEqual(ourSales.size);
  expect(broken).toEqual([]);
}, 60_000);
