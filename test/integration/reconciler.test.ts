/**
 * The reconciler (workflows/reconciler.ts) against the real stack: each test breaks something the way production
 * could (a checkout terminated, a notification lost, a gateway down), runs the reconciler workflow directly with
 * small margins, scoped to a workspace of its own so it never touches other suites' sales, and checks that the sale
 * ends where its own checkout puts it. The worker's Schedule keeps its two-minute margins meanwhile, so it never
 * races these seconds-old sales.
 */
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Redis } from 'ioredis';
import type { Providers } from '../../activities/ports.js';
import {
  checkedKey,
  createReconcilerActivities,
  type OverdueRefundSweep,
  RECONCILER_FIXES_KEY,
} from '../../activities/reconciler.js';
import {
  listOverdueRefunds,
  listUnappliedAdjustments,
  REFUND_OVERDUE_AFTER_MS,
} from '../../activities/reconciler-listings.js';
import { providerUrls } from '../../config/env.js';
import { newId } from '../../entities/ids.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { workerRegistry } from '../../observability/metrics.js';
import { runReconcilerOperator } from '../../scripts/operator-reconciler.js';
import { createProviders } from '../../worker/providers.js';
import { ensureReconcilerSchedule } from '../../worker/schedules.js';
import { checkoutWorkflowId, type PaymentNotification, RECONCILER_SCHEDULE_ID } from '../../workflows/definitions.js';
import type { reconciler } from '../../workflows/reconciler.js';
import type { ReconcilerRunCounts, ReconcilerSettings } from '../../workflows/reconciler-definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { signalsReceived } from '../support/histories.js';
import {
  cardToken,
  eventually,
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { complimentary, payByCard } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
/** Payment windows of a few seconds, so a reservation is overdue within the test. */
let shortApi: TestApi;

beforeAll(async () => {
  api = await startTestApi();
  shortApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '3000' });
});
afterAll(async () => {
  await shortApi?.close();
  await api?.close();
});

const MARGIN_MS = 1000;
const NOTHING_FIXED: ReconcilerRunCounts = {
  expiredPendingClosed: 0,
  unresolvedPaymentsResolved: 0,
  closedSalesChecked: 0,
  confirmedSalesChecked: 0,
  lateMoneyFound: 0,
  refundsOverdue: 0,
  adjustmentsUnapplied: 0,
  errors: 0,
};

/** One reconciler run, as the Schedule starts it, but with margins of a second and only this workspace's sales. */
const reconcile = (workspaceId: string, settings: Partial<ReconcilerSettings> = {}): Promise<ReconcilerRunCounts> => {
  const input: Partial<ReconcilerSettings> = { marginMs: MARGIN_MS, batchSize: 50, workspaceId, ...settings };
  return api.services.temporal.workflow.execute<typeof reconciler>('reconciler', {
    taskQueue: api.env.TEMPORAL_TASK_QUEUE,
    workflowId: `reconciler-test-${randomUUID()}`,
    args: [input],
    workflowExecutionTimeout: '2 minutes',
  });
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const email = (label: string) => `${label}-${randomUUID().slice(0, 8)}@buyers.test`;

const query = <R>(sql: string, params: unknown[] = []): Promise<R[]> => api.orm.em.fork().execute<R[]>(sql, params);

/** Raw rows: timestamps come back as ISO strings. */
interface SaleRow {
  status: string;
  payment_ref: string | null;
  expires_at: string | null;
  closed_at: string | null;
}
const saleRow = async (saleId: string): Promise<SaleRow> => {
  const [row] = await query<SaleRow>('select status, payment_ref, expires_at, closed_at from sales where id = ?', [
    saleId,
  ]);
  if (!row) throw new Error(`sale ${saleId} not found`);
  return row;
};
const availableStock = async (ticketTypeId: string): Promise<number> => {
  const [row] = await query<{ available: number }>(
    'select coalesce(sum(available), 0)::int as available from ticket_stock where ticket_type_id = ?',
    [ticketTypeId],
  );
  return Number(row?.available ?? 0);
};
const fixesCounted = async (kind: string): Promise<number> =>
  Number((await api.services.redis.hget(RECONCILER_FIXES_KEY, kind)) ?? 0);

/** Waits until `at` plus the margin has passed, so the reconciler counts the item as overdue. */
const pastMargin = async (at: string | null): Promise<void> => {
  const wait = (at ? Date.parse(at) : Date.now()) + MARGIN_MS + 250 - Date.now();
  if (wait > 0) await sleep(wait);
};

async function reserve(target: TestApi, event: PublishedEvent, label: string, quantity = 1) {
  const token = await signInBuyer(target, email(label));
  const created = await reserveOrder(target, token, orderBody(event, quantity));
  expect(created.statusCode).toBe(201);
  return { token, order: created.json().data as { saleId: string; reference: string; total: number } };
}

/**
 * An approved gateway A charge for the sale whose notification never reaches us (the gateway posts it to an address
 * nobody listens on): the money is at the gateway and our side never heard of it.
 */
async function chargeWithLostNotification(reference: string, amount: number): Promise<string> {
  const gateway = new GatewayAClient({
    baseUrl: providerUrls(api.env).gatewayA,
    accessToken: api.env.GATEWAY_A_ACCESS_TOKEN,
  });
  const payment = await gateway.createPayment({
    idempotencyKey: `reconciler-test-${randomUUID()}`,
    cardToken: await cardToken(api, 'APRO'),
    amount,
    currency: 'COP',
    description: `Lost notification ${reference}`,
    payerEmail: 'buyer@example.test',
    externalReference: reference,
    notificationUrl: 'http://127.0.0.1:9/lost-notifications',
  });
  expect(payment.status).toBe('approved');
  return payment.id;
}

/** The paymentNotification signals a checkout execution received, decoded with the client's own codec. */
const notificationsReceived = (saleId: string): Promise<PaymentNotification[]> =>
  signalsReceived<PaymentNotification>(api, saleId, 'paymentNotification');

const control = (path: string, body: unknown) =>
  fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** A row of the sale's payment history as a checkout step writes it, `agoMs` before now. */
async function recordAttempt(
  saleId: string,
  attempt: { kind: string; providerPaymentId: string | null; status: string; statusDetail?: string; agoMs?: number },
): Promise<void> {
  await query(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, status_detail, amount,
       dedupe_key, note, created_at)
     values (?, ?, 'GATEWAY_A', ?, ?, ?, ?, null, ?, 'reconciler test', now() - ? * interval '1 millisecond')`,
    [
      newId(),
      saleId,
      attempt.kind,
      attempt.providerPaymentId,
      attempt.status,
      attempt.statusDetail ?? null,
      `reconciler-test:${randomUUID()}`,
      attempt.agoMs ?? 10_000,
    ],
  );
}

const gatewayA = () =>
  new GatewayAClient({ baseUrl: providerUrls(api.env).gatewayA, accessToken: api.env.GATEWAY_A_ACCESS_TOKEN });

/** A sale reserved on the short-window API, a payment opened for it, and its window run out: ABANDONED. */
async function abandonedAfterOpening(organizer: Organizer, label: string) {
  const event = await publishEvent(shortApi, organizer, { capacity: 5 });
  const { token, order } = await reserve(shortApi, event, label);
  const opened = await shortApi.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${order.saleId}/payment`,
    headers: session(token),
  });
  expect(opened.statusCode).toBe(200);
  const abandoned = await eventually(
    () => saleRow(order.saleId),
    (sale) => sale.status === 'ABANDONED',
    60_000,
  );
  return { event, order, abandoned };
}

describe('the reconciler closes overdue reservations whose checkout is gone', () => {
  let organizer: Organizer;
  beforeAll(async () => {
    organizer = await createOrganizer(api.orm.em.fork());
  });

  test('a PENDING sale past its deadline whose checkout is gone ends ABANDONED with its stock back', async () => {
    const event = await publishEvent(shortApi, organizer, { capacity: 5 });
    const { order } = await reserve(shortApi, event, 'overdue', 2);
    // The checkout ends before its timer fires (cancelled here; a bug or an operator could do the same), so nothing
    // would ever return these two tickets. Cancelled, not terminated: the suite asserts no execution is terminated.
    const doomed = api.services.temporal.workflow.getHandle(checkoutWorkflowId(order.saleId));
    await doomed.cancel();
    await doomed.result().catch(() => undefined);
    expect(await availableStock(event.ticketTypeId)).toBe(3);
    const before = await saleRow(order.saleId);
    expect(before.status).toBe('PENDING');
    await pastMargin(before.expires_at);
    const fixedBefore = await fixesCounted('expired_pending_closed');

    const counts = await reconcile(organizer.workspaceId);

    expect(counts).toEqual({ ...NOTHING_FIXED, expiredPendingClosed: 1 });
    // Closed by the checkout's own compensation, which the reconciler started again.
    const closed = await eventually(
      () => saleRow(order.saleId),
      (sale) => sale.status !== 'PENDING',
      60_000,
    );
    expect(closed.status).toBe('ABANDONED');
    expect(closed.closed_at).not.toBeNull();
    expect(await availableStock(event.ticketTypeId)).toBe(5);
    expect(await fixesCounted('expired_pending_closed')).toBeGreaterThanOrEqual(fixedBefore + 1);

    // Nothing is left for the next run.
    expect(await reconcile(organizer.workspaceId)).toEqual(NOTHING_FIXED);
  }, 120_000);
});

describe('the reconciler hands stranded approved payments to their checkout', () => {
  test('an approved payment recorded but neither confirming the sale nor refunded confirms the sale', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { order } = await reserve(api, event, 'stranded');
    const paymentId = await chargeWithLostNotification(order.reference, order.total);
    // The checkout recorded the card's answer, then lost it (a crash between recording and confirming).
    await query(
      `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, status_detail, amount,
         dedupe_key, note, created_at)
       values (?, ?, 'GATEWAY_A', 'CARD', ?, 'approved', 'accredited', ?, ?, 'reconciler test', now() - interval '10 seconds')`,
      [newId(), order.saleId, paymentId, order.total, `reconciler-test:${paymentId}`],
    );
    expect((await saleRow(order.saleId)).status).toBe('PENDING');

    const counts = await reconcile(organizer.workspaceId);

    expect(counts).toEqual({ ...NOTHING_FIXED, unresolvedPaymentsResolved: 1 });
    const signals = await eventually(
      () => notificationsReceived(order.saleId),
      (found) => found.some((n) => n.eventType === 'reconciler'),
    );
    expect(signals.find((n) => n.eventType === 'reconciler')).toMatchObject({
      gateway: 'GATEWAY_A',
      providerPaymentId: paymentId,
      dedupeKey: expect.stringMatching(new RegExp(`^reconcile:${paymentId}:\\d+$`)),
    });
    const confirmed = await eventually(
      () => saleRow(order.saleId),
      (sale) => sale.status === 'CONFIRMED',
      60_000,
    );
    expect(confirmed.payment_ref).toBe(paymentId);

    // Paid by that payment now: nothing stranded is left.
    expect((await reconcile(organizer.workspaceId)).unresolvedPaymentsResolved).toBe(0);
  }, 120_000);
});

describe('the stranded-payment sweep is bounded and still reaches every payment, however old', () => {
  test('fresh money first, then the walk over older records goes on from where the last run stopped', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    // Three sales paid at the gateway whose checkout recorded the card's answer and then lost it: two hours ago and
    // three hours ago (older than the head that follows new records), and just now.
    const stranded: { saleId: string; paymentId: string }[] = [];
    for (const [label, agoMs] of [
      ['three-hours', 3 * 3_600_000],
      ['two-hours', 2 * 3_600_000],
      ['just-now', 5_000],
    ] as const) {
      const { order } = await reserve(api, event, label);
      const paymentId = await chargeWithLostNotification(order.reference, order.total);
      await recordAttempt(order.saleId, { kind: 'CARD', providerPaymentId: paymentId, status: 'approved', agoMs });
      stranded.push({ saleId: order.saleId, paymentId });
    }
    const [threeHours, twoHours, justNow] = stranded as [
      (typeof stranded)[0],
      (typeof stranded)[0],
      (typeof stranded)[0],
    ];
    await pastMargin(null);
    const handedOver = async (saleId: string) =>
      (await notificationsReceived(saleId)).some((n) => n.eventType === 'reconciler');
    const cursor = async (name: string) =>
      (
        await query<{ item_id: string }>('select item_id from reconciler_cursors where name = ?', [
          `${name}:${organizer.workspaceId}`,
        ])
      )[0]?.item_id;
    const attemptOf = async (saleId: string) =>
      (await query<{ id: string }>("select id from payment_attempts where sale_id = ? and kind = 'CARD'", [saleId]))[0]
        ?.id;
    // The test stack's own reconciler (every minute, all workspaces) may hand one of these over between the runs
    // below, so the order is judged by this scope's cursors and each run by its bound, not by who handed what over.
    const oneAtATime = async () => {
      const run = await reconcile(organizer.workspaceId, { batchSize: 1 });
      expect(run).toMatchObject({ errors: 0 });
      expect(run.unresolvedPaymentsResolved).toBeLessThanOrEqual(1);
    };

    // The head (new records) is read first: the payment of a moment ago, before older ones.
    await oneAtATime();
    await eventually(
      () => handedOver(justNow.saleId),
      (yes) => yes,
    );
    expect(await cursor('stranded-payments-head')).toBe(await attemptOf(justNow.saleId));

    // Then the full walk, oldest first, one a run, each run after the last one's.
    await oneAtATime();
    await eventually(
      () => handedOver(threeHours.saleId),
      (yes) => yes,
    );
    expect(await cursor('stranded-payments')).toBe(await attemptOf(threeHours.saleId));
    await oneAtATime();
    await eventually(
      () => handedOver(twoHours.saleId),
      (yes) => yes,
    );

    // Each confirms its sale; then nothing stranded is left, however often the walk comes by.
    for (const { saleId, paymentId } of stranded) {
      const sale = await eventually(
        () => saleRow(saleId),
        (row) => row.status === 'CONFIRMED',
        60_000,
      );
      expect(sale.payment_ref).toBe(paymentId);
    }
    expect((await reconcile(organizer.workspaceId)).unresolvedPaymentsResolved).toBe(0);
  }, 180_000);
});

describe('the reconciler asks the gateway about sales closed unpaid', () => {
  test('money that reached the gateway after the sale closed, with its notification lost, confirms the sale', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(shortApi, organizer, { capacity: 5 });
    const { token, order } = await reserve(shortApi, event, 'late-money');
    const opened = await shortApi.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(opened.statusCode).toBe(200);
    const abandoned = await eventually(
      () => saleRow(order.saleId),
      (sale) => sale.status === 'ABANDONED',
      60_000,
    );
    const paymentId = await chargeWithLostNotification(order.reference, order.total);
    await pastMargin(abandoned.closed_at);

    const counts = await reconcile(organizer.workspaceId);

    expect(counts).toEqual({ ...NOTHING_FIXED, closedSalesChecked: 1, lateMoneyFound: 1 });
    const confirmed = await eventually(
      () => saleRow(order.saleId),
      (sale) => sale.status === 'CONFIRMED',
      60_000,
    );
    expect(confirmed.payment_ref).toBe(paymentId);
    expect(await availableStock(event.ticketTypeId)).toBe(4);
  }, 120_000);

  test('a gateway that is down fails no run: the sale is counted as an error and checked by the next run', async () => {
    // Gateway B, on a workspace of its own: the outage window is a few hundred milliseconds of a provider that other
    // suites never call directly.
    const organizer = await createOrganizer(api.orm.em.fork());
    await api.orm.em
      .fork()
      .execute(`update workspaces set plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [
        organizer.workspaceId,
      ]);
    const event = await publishEvent(shortApi, organizer, { capacity: 5 });
    const { token, order } = await reserve(shortApi, event, 'gateway-down');
    const opened = await shortApi.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(opened.statusCode).toBe(200);
    const [attempt] = await query<{ gateway: string }>(
      `select gateway from payment_attempts where sale_id = ? and kind = 'OPEN'`,
      [order.saleId],
    );
    expect(attempt?.gateway).toBe('GATEWAY_B');
    const abandoned = await eventually(
      () => saleRow(order.saleId),
      (sale) => sale.status === 'ABANDONED',
      60_000,
    );
    await pastMargin(abandoned.closed_at);

    let during: ReconcilerRunCounts;
    expect((await control('/faults', { target: 'gateway-b', mode: 'down' })).status).toBe(200);
    try {
      during = await reconcile(organizer.workspaceId);
    } finally {
      await control('/faults', { target: 'gateway-b', mode: 'ok' });
    }
    // The run completed (execute returned its counts): the outage is an error of one sale, not of the run.
    expect(during).toEqual({ ...NOTHING_FIXED, errors: 1 });

    expect(await reconcile(organizer.workspaceId)).toEqual({ ...NOTHING_FIXED, closedSalesChecked: 1 });
    // Checked since it closed: not asked again.
    expect(await reconcile(organizer.workspaceId)).toEqual(NOTHING_FIXED);
    expect((await saleRow(order.saleId)).status).toBe('ABANDONED');
  }, 120_000);
});

describe('the reconciler settles every approved payment, not only the first', () => {
  /**
   * A sale confirmed by a second card while its first card, left in process by the gateway (its charge answer
   * recorded), is approved later with its notification lost.
   */
  async function confirmedBesideCardInProcess(label: string) {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, label);
    const first = await chargeWithLostNotification(order.reference, order.total);
    await recordAttempt(order.saleId, {
      kind: 'CARD',
      providerPaymentId: first,
      status: 'in_process',
      statusDetail: 'pending_contingency',
    });
    const paid = await payByCard(api, token, order.saleId);
    expect(paid.saleStatus).toBe('CONFIRMED');
    return { organizer, order, first, paid };
  }

  /** The sale's payment window has run out (moved back here rather than waited for), and the margin has passed. */
  async function endPaymentWindow(saleId: string): Promise<void> {
    await query('update sales set expires_at = confirmed_at where id = ?', [saleId]);
    await pastMargin((await saleRow(saleId)).expires_at);
  }

  /** The REFUND records of a payment, once the checkout marked them done (right after the gateway reports it). */
  const refundRecordsOnceDone = (saleId: string, providerPaymentId: string) =>
    eventually(
      () =>
        query<{ status: string; status_detail: string }>(
          `select status, status_detail from payment_attempts
            where sale_id = ? and kind = 'REFUND' and provider_payment_id = ?`,
          [saleId, providerPaymentId],
        ),
      (rows) => rows.length > 0 && rows.every((row) => row.status === 'refunded'),
      30_000,
    );

  test('an approved payment found by asking the gateway (STATUS_CHECK) and left unsettled is handed to its checkout', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { order } = await reserve(api, event, 'status-check');
    const paymentId = await chargeWithLostNotification(order.reference, order.total);
    // The checkout's pull recorded the payment approved, then its execution was lost before judging it.
    await recordAttempt(order.saleId, { kind: 'STATUS_CHECK', providerPaymentId: paymentId, status: 'approved' });

    const counts = await reconcile(organizer.workspaceId);

    expect(counts).toEqual({ ...NOTHING_FIXED, unresolvedPaymentsResolved: 1 });
    const confirmed = await eventually(
      () => saleRow(order.saleId),
      (sale) => sale.status === 'CONFIRMED',
      60_000,
    );
    expect(confirmed.payment_ref).toBe(paymentId);
  }, 120_000);

  test('a second payment approved after another confirmed the sale, its notification lost, is refunded', async () => {
    const { organizer, order, first, paid } = await confirmedBesideCardInProcess('second-payment');
    await endPaymentWindow(order.saleId);

    // Within the gateway's settlement lag (15 minutes by default) the sale is not asked about yet.
    expect(await reconcile(organizer.workspaceId)).toEqual(NOTHING_FIXED);

    const counts = await reconcile(organizer.workspaceId, { settlementLagMs: 0 });

    expect(counts).toEqual({ ...NOTHING_FIXED, confirmedSalesChecked: 1, lateMoneyFound: 1 });
    const refunded = await eventually(
      () => gatewayA().getPayment(first),
      (payment) => payment.status === 'refunded',
      60_000,
    );
    expect(refunded.status).toBe('refunded');
    expect(await gatewayA().getPayment(paid.paymentId)).toMatchObject({ status: 'approved' });
    const sale = await saleRow(order.saleId);
    expect(sale).toMatchObject({ status: 'CONFIRMED', payment_ref: paid.paymentId });
    const refunds = await refundRecordsOnceDone(order.saleId, first);
    expect(refunds).toEqual([{ status: 'refunded', status_detail: 'second_charge' }]);

    // Asked about once its window and lag had passed: not again.
    expect(await reconcile(organizer.workspaceId, { settlementLagMs: 0 })).toEqual(NOTHING_FIXED);
  }, 120_000);

  test('a second payment of a sale refunded since (its event cancelled, say), its notification lost, is refunded too', async () => {
    const { organizer, order, first, paid } = await confirmedBesideCardInProcess('refunded-second-payment');
    // The organizer refunds the sale: that gives back the payment that confirmed it, and nothing of the other one.
    const refund = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${order.saleId}/refund`,
      headers: bearer(organizer.key),
      payload: { reason: 'event cancelled', notifyBuyer: false },
    });
    // 200 once the gateway confirmed within the request, 202 while it works on it.
    expect([200, 202]).toContain(refund.statusCode);
    await eventually(
      () => saleRow(order.saleId),
      (sale) => sale.status === 'REFUNDED',
      60_000,
    );
    expect(await gatewayA().getPayment(first)).toMatchObject({ status: 'approved' });
    await endPaymentWindow(order.saleId);

    const counts = await reconcile(organizer.workspaceId, { settlementLagMs: 0 });

    expect(counts).toEqual({ ...NOTHING_FIXED, confirmedSalesChecked: 1, lateMoneyFound: 1 });
    await eventually(
      () => gatewayA().getPayment(first),
      (payment) => payment.status === 'refunded',
      60_000,
    );
    const refunds = await refundRecordsOnceDone(order.saleId, first);
    expect(refunds).toEqual([{ status: 'refunded', status_detail: 'sale_refunded' }]);
    expect(await saleRow(order.saleId)).toMatchObject({ status: 'REFUNDED', payment_ref: paid.paymentId });
    expect(await reconcile(organizer.workspaceId, { settlementLagMs: 0 })).toEqual(NOTHING_FIXED);
  }, 120_000);

  test('a CONFIRMED sale paid by its only card is not asked about', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { token, order } = await reserve(api, event, 'one-card');
    expect((await payByCard(api, token, order.saleId)).saleStatus).toBe('CONFIRMED');
    await endPaymentWindow(order.saleId);

    expect(await reconcile(organizer.workspaceId, { settlementLagMs: 0 })).toEqual(NOTHING_FIXED);
  }, 120_000);
});

describe('the reconciler counts only refunds the gateway confirmed as money given back', () => {
  test('a refund only requested, whose checkout is gone, is seen through: the payment goes back to the buyer', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const { order } = await abandonedAfterOpening(organizer, 'refund-requested');
    // The checkout ends before it gave the late payment back (cancelled here; a lost worker or a bug could do it).
    const gone = api.services.temporal.workflow.getHandle(checkoutWorkflowId(order.saleId));
    await gone.cancel();
    await gone.result().catch(() => undefined);
    const paymentId = await chargeWithLostNotification(order.reference, order.total);
    // What it had recorded: the late payment approved, and its refund asked for, never made.
    await recordAttempt(order.saleId, { kind: 'NOTIFICATION', providerPaymentId: paymentId, status: 'approved' });
    await recordAttempt(order.saleId, {
      kind: 'REFUND',
      providerPaymentId: paymentId,
      status: 'requested',
      statusDetail: 'late_no_stock',
    });
    await pastMargin((await saleRow(order.saleId)).closed_at);

    const counts = await reconcile(organizer.workspaceId);

    // Handed to the checkout as stranded; the gateway check finds the same payment already recorded for the sale.
    expect(counts).toEqual({ ...NOTHING_FIXED, unresolvedPaymentsResolved: 1, closedSalesChecked: 1 });
    const refunded = await eventually(
      () => gatewayA().getPayment(paymentId),
      (payment) => payment.status === 'refunded',
      60_000,
    );
    expect(refunded.status).toBe('refunded');
    expect((await saleRow(order.saleId)).status).toBe('ABANDONED');
    await eventually(
      () =>
        query<{ status: string }>(
          `select status from payment_attempts where sale_id = ? and kind = 'REFUND' and status = 'refunded'`,
          [order.saleId],
        ),
      (rows) => rows.length === 1,
      30_000,
    );
    // Given back for good: nothing stranded, nothing overdue.
    expect(await reconcile(organizer.workspaceId)).toEqual(NOTHING_FIXED);
  }, 120_000);

  test('a refund the gateway refused for good is left to the operator: listed as overdue, not handed over again', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const { order } = await reserve(api, event, 'refund-refused');
    const paymentId = await chargeWithLostNotification(order.reference, order.total);
    await recordAttempt(order.saleId, { kind: 'NOTIFICATION', providerPaymentId: paymentId, status: 'approved' });
    // Its checkout gave up after the gateway's refusals and parked, waiting for an operator's retry.
    await recordAttempt(order.saleId, {
      kind: 'REFUND',
      providerPaymentId: paymentId,
      status: 'refund_refused',
      statusDetail: 'second_charge',
      agoMs: REFUND_OVERDUE_AFTER_MS + 60_000,
    });

    expect(await reconcile(organizer.workspaceId)).toEqual({ ...NOTHING_FIXED, refundsOverdue: 1 });
    expect(await notificationsReceived(order.saleId)).not.toContainEqual(
      expect.objectContaining({ eventType: 'reconciler' }),
    );
  }, 120_000);

  test('a run over every workspace sets the overdue-refund gauges to what it found', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    await recordAttempt(sale.id, {
      kind: 'REFUND',
      providerPaymentId: `reconciler-test-${randomUUID()}`,
      status: 'requested',
      agoMs: REFUND_OVERDUE_AFTER_MS + 60_000,
    });
    const sweeps = createReconcilerActivities({
      env: api.env,
      orm: api.orm,
      redis: api.services.redis,
      // Reports read the database only.
      providers: {} as Providers,
      temporal: api.services.temporal,
    });
    const found: OverdueRefundSweep = await new MockActivityEnvironment().run(sweeps.reportOverdueRefunds, {
      marginMs: MARGIN_MS,
      limit: 50,
      workspaceId: null,
    });
    expect(found.overdue).toBeGreaterThanOrEqual(1);
    const gauge = async (name: string) => (await workerRegistry.getSingleMetric(name)?.get())?.values[0]?.value;
    expect(await gauge('ticketing_refunds_overdue')).toBe(found.overdue);
    expect(await gauge('ticketing_refunds_overdue_oldest_seconds')).toBe(Math.floor(found.oldestAgeMs / 1000));
    expect(found.oldestAgeMs).toBeGreaterThan(REFUND_OVERDUE_AFTER_MS);
  }, 120_000);

  test('refunds asked for over an hour ago and not confirmed are listed and counted until a done refund is recorded', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const overdue = await complimentary(api, organizer, event);
    const recent = await complimentary(api, organizer, event);
    const overduePayment = `reconciler-test-${randomUUID()}`;
    await recordAttempt(overdue.id, {
      kind: 'REFUND',
      providerPaymentId: overduePayment,
      status: 'requested',
      statusDetail: 'second_charge',
      agoMs: REFUND_OVERDUE_AFTER_MS + 60_000,
    });
    // Asked for half an hour ago: its checkout is still on it.
    await recordAttempt(recent.id, {
      kind: 'REFUND',
      providerPaymentId: `reconciler-test-${randomUUID()}`,
      status: 'requested',
      statusDetail: 'second_charge',
      agoMs: 30 * 60_000,
    });

    expect(await reconcile(organizer.workspaceId)).toEqual({ ...NOTHING_FIXED, refundsOverdue: 1 });
    const listed = await listOverdueRefunds(api.orm.em.fork(), {
      workspaceId: organizer.workspaceId,
      olderThanMs: REFUND_OVERDUE_AFTER_MS,
      limit: 10,
    });
    expect(listed).toEqual([
      expect.objectContaining({
        saleId: overdue.id,
        reference: overdue.reference,
        providerPaymentId: overduePayment,
        refundStatus: 'requested',
        reason: 'second_charge',
      }),
    ]);

    // An operator sees the same list.
    const printed: string[] = [];
    const listing = ['refunds-overdue', '--workspace', organizer.workspaceId];
    expect(await runReconcilerOperator(listing, { orm: api.orm, print: (line) => printed.push(line) })).toBe(0);
    expect(printed[0]).toMatch(/^1 refund\(s\)/);
    expect(printed[1]).toContain(overdue.reference);
    expect(printed[1]).toContain('status=requested');

    // Refused for good is not done either.
    await query(`update payment_attempts set status = 'refund_refused' where provider_payment_id = ?`, [
      overduePayment,
    ]);
    expect((await reconcile(organizer.workspaceId)).refundsOverdue).toBe(1);

    await recordAttempt(overdue.id, { kind: 'REFUND', providerPaymentId: overduePayment, status: 'refunded' });
    expect(await reconcile(organizer.workspaceId)).toEqual(NOTHING_FIXED);
  }, 120_000);
});

describe('the reconciler lists refunds a sent settlement paid out that no later settlement carries', () => {
  test('a refund after the settlement was sent is counted until a settlement applies its adjustment', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    const settlement = async (status: string) => {
      const id = newId();
      await query(
        `insert into settlements (id, created_at, updated_at, workspace_id, reference, label, status, amount,
           currency, figures, allocations, sent_at)
         values (?, now(), now(), ?, ?, 'reconciler test', ?, 45000, 'COP', '{}', '[]', now())`,
        [id, organizer.workspaceId, `ST-${randomUUID().slice(0, 8)}`, status],
      );
      return id;
    };
    const sent = await settlement('SENT');
    await query('insert into settlement_sales (settlement_id, sale_id, net) values (?, ?, 45000)', [sent, sale.id]);
    // Refunded after the settlement paid it out.
    await query(`update sales set status = 'REFUNDED', closed_at = now() where id = ?`, [sale.id]);

    expect(await reconcile(organizer.workspaceId)).toEqual({ ...NOTHING_FIXED, adjustmentsUnapplied: 1 });
    expect(
      await listUnappliedAdjustments(api.orm.em.fork(), { workspaceId: organizer.workspaceId, limit: 10 }),
    ).toEqual([expect.objectContaining({ saleId: sale.id, settlementId: sent, amount: -45000, currency: 'COP' })]);

    const printed: string[] = [];
    const listing = ['adjustments-unapplied', '--workspace', organizer.workspaceId];
    expect(await runReconcilerOperator(listing, { orm: api.orm, print: (line) => printed.push(line) })).toBe(0);
    expect(printed).toEqual([expect.stringMatching(/^1 refund\(s\)/), expect.stringContaining(`${sale.reference}`)]);
    expect(printed[1]).toContain('-45000 COP');

    // A later settlement of the workspace carries it.
    const later = await settlement('REVIEW');
    await query(
      `insert into settlement_adjustments (id, created_at, updated_at, workspace_id, sale_id, origin_settlement_id,
         applied_settlement_id, amount, reason) values (?, now(), now(), ?, ?, ?, ?, -45000, 'reconciler test')`,
      [newId(), organizer.workspaceId, sale.id, sent, later],
    );
    expect(await reconcile(organizer.workspaceId)).toEqual(NOTHING_FIXED);
  }, 120_000);
});

describe('the gateway check reaches every sale, however many closed', () => {
  test('a sale older than the newest 5,000 closed ones is still asked about', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const { order, abandoned } = await abandonedAfterOpening(organizer, 'oldest');
    const paymentId = await chargeWithLostNotification(order.reference, order.total);
    // A big sale's worth of sales closed after it, each with a payment opened, each already asked about by earlier
    // runs (marked as the sweep marks them).
    const columns = (
      await query<{ column_name: string }>(
        `select column_name from information_schema.columns where table_name = 'sales' and table_schema = current_schema()`,
      )
    ).map((row) => row.column_name);
    const replaced: Record<string, string> = {
      id: 'gen_random_uuid()',
      reference: `'RC' || lpad(n::text, 6, '0') || substr(md5(random()::text), 1, 8)`,
      closed_at: `s.closed_at + n * interval '1 millisecond'`,
      created_at: 'now()',
      updated_at: 'now()',
    };
    const followers = 5_001;
    await query(
      `insert into sales (${columns.map((c) => `"${c}"`).join(', ')})
       select ${columns.map((c) => replaced[c] ?? `s."${c}"`).join(', ')}
         from sales s, generate_series(1, ?) n where s.id = ?`,
      [followers, order.saleId],
    );
    await query(
      `insert into payment_attempts (id, sale_id, gateway, kind, status, created_at)
       select gen_random_uuid(), s.id, 'GATEWAY_A', 'OPEN', 'opened', now()
         from sales s where s.workspace_id = ? and s.id <> ?`,
      [organizer.workspaceId, order.saleId],
    );
    const marked = await query<{ id: string; closed_at: string }>(
      'select id, closed_at from sales where workspace_id = ? and id <> ?',
      [organizer.workspaceId, order.saleId],
    );
    expect(marked).toHaveLength(followers);
    const marks = api.services.redis.pipeline();
    for (const sale of marked)
      marks.set(checkedKey(sale.id), String(new Date(sale.closed_at).getTime()), 'PX', 600_000);
    await marks.exec();
    await pastMargin(new Date(Date.parse(abandoned.closed_at ?? '') + followers).toISOString());

    const counts = await reconcile(organizer.workspaceId);

    expect(counts).toEqual({ ...NOTHING_FIXED, closedSalesChecked: 1, lateMoneyFound: 1 });
    const confirmed = await eventually(
      () => saleRow(order.saleId),
      (sale) => sale.status === 'CONFIRMED',
      60_000,
    );
    expect(confirmed.payment_ref).toBe(paymentId);
    // The walk went on to the newest and starts over from the oldest next time: nothing is left unasked.
    expect(await reconcile(organizer.workspaceId)).toEqual(NOTHING_FIXED);
  }, 180_000);

  test('each run goes on from where the previous one stopped', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const sales: Awaited<ReturnType<typeof abandonedAfterOpening>>[] = [];
    for (const label of ['walk-1', 'walk-2', 'walk-3']) sales.push(await abandonedAfterOpening(organizer, label));
    await pastMargin(sales.at(-1)?.abandoned.closed_at ?? null);
    const checkedNow = async () => {
      const marks = await api.services.redis.mget(sales.map(({ order }) => checkedKey(order.saleId)));
      return marks.map((mark) => mark !== null);
    };
    const cursor = async () =>
      (
        await query<{ item_id: string }>('select item_id from reconciler_cursors where name = ?', [
          `gateway-check:${organizer.workspaceId}`,
        ])
      )[0]?.item_id;
    const oneAtATime = () => reconcile(organizer.workspaceId, { batchSize: 1 });

    // One sale per run, oldest first, each run going on after the last one's.
    expect(await oneAtATime()).toEqual({ ...NOTHING_FIXED, closedSalesChecked: 1 });
    expect(await checkedNow()).toEqual([true, false, false]);
    expect(await oneAtATime()).toEqual({ ...NOTHING_FIXED, closedSalesChecked: 1 });
    expect(await checkedNow()).toEqual([true, true, false]);
    expect(await cursor()).toBe(sales[1]?.order.saleId);
    expect(await oneAtATime()).toEqual({ ...NOTHING_FIXED, closedSalesChecked: 1 });
    expect(await checkedNow()).toEqual([true, true, true]);
    // Past the newest, the walk starts over from the oldest: all asked about, nothing to do.
    expect(await oneAtATime()).toEqual(NOTHING_FIXED);
  }, 180_000);
});

describe("a Redis outage degrades the reconciler's dedupe, never its sweeps", () => {
  let down: Redis;
  beforeAll(async () => {
    // A Redis client of this test's own, pointing at a port nothing listens on: Redis is down for it alone.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    down = new Redis({
      host: '127.0.0.1',
      port,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      retryStrategy: () => 1000,
    });
    down.on('error', () => undefined);
  });
  afterAll(() => down?.disconnect());

  test('with Redis down, the gateway check and the stranded-payment sweep still find and hand over the money', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const providers = createProviders(api.env);
    const sweeps = createReconcilerActivities({
      env: api.env,
      orm: api.orm,
      redis: down,
      providers,
      temporal: api.services.temporal,
    });
    const scope = { marginMs: MARGIN_MS, limit: 50, workspaceId: organizer.workspaceId };
    try {
      // Late money on a sale closed unpaid, its notification lost.
      const late = await abandonedAfterOpening(organizer, 'redis-down-late');
      const latePayment = await chargeWithLostNotification(late.order.reference, late.order.total);
      await pastMargin(late.abandoned.closed_at);
      const checked = await new MockActivityEnvironment().run(sweeps.checkClosedSalesAtGateway, {
        ...scope,
        lookbackMs: 60 * 60_000,
        settlementLagMs: 0,
      });
      expect(checked).toMatchObject({ checked: 1, lateMoneyFound: 1, errors: 0 });
      const confirmed = await eventually(
        () => saleRow(late.order.saleId),
        (sale) => sale.status === 'CONFIRMED',
        60_000,
      );
      expect(confirmed.payment_ref).toBe(latePayment);

      // A recorded approved payment left unsettled.
      const event = await publishEvent(api, organizer, { capacity: 5 });
      const { order } = await reserve(api, event, 'redis-down-stranded');
      const stranded = await chargeWithLostNotification(order.reference, order.total);
      await recordAttempt(order.saleId, { kind: 'CARD', providerPaymentId: stranded, status: 'approved' });
      const handed = await new MockActivityEnvironment().run(sweeps.resolveStrandedPayments, scope);
      expect(handed).toMatchObject({ signalled: 1, errors: 0 });
      const paid = await eventually(
        () => saleRow(order.saleId),
        (sale) => sale.status === 'CONFIRMED',
        60_000,
      );
      expect(paid.payment_ref).toBe(stranded);
    } finally {
      providers.close();
    }
  }, 180_000);
});

describe('the reconciler Schedule', () => {
  test('the worker registered it at start-up: every 60 s, overlapping runs skipped, on the task queue', async () => {
    const handle = api.services.temporal.schedule.getHandle(RECONCILER_SCHEDULE_ID);
    const expectRegistered = async () => {
      const schedule = await handle.describe();
      expect(schedule.spec.intervals).toEqual([expect.objectContaining({ every: 60_000 })]);
      expect(schedule.policies.overlap).toBe('SKIP');
      expect(schedule.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: 'reconciler',
        workflowId: 'reconciler',
        taskQueue: api.env.TEMPORAL_TASK_QUEUE,
      });
      expect(schedule.state.paused).toBe(false);
    };
    await expectRegistered();
    // Every worker start ensures it again: the same settings update the one Schedule in place.
    expect(await ensureReconcilerSchedule(api.services.temporal, api.env)).toBe('updated');
    await expectRegistered();
  });

  test('a trigger (as `temporal schedule trigger --schedule-id reconciler` does) runs one sweep now', async () => {
    const handle = api.services.temporal.schedule.getHandle(RECONCILER_SCHEDULE_ID);
    const before = (await handle.describe()).info.numActionsTaken;
    await handle.trigger();
    // The server's scheduler takes the trigger on its own turn: seconds on a box busy with the rest of the suite.
    const taken = await eventually(
      () => handle.describe(),
      (schedule) => schedule.info.numActionsTaken > before,
      60_000,
    );
    const started = taken.info.recentActions.at(-1)?.action.workflow;
    expect(started?.workflowId).toMatch(/^reconciler-/);
    // The scheduled run sweeps every workspace with the real margins; whatever it finds, it completes.
    const counts: ReconcilerRunCounts = await api.services.temporal.workflow
      .getHandle(started?.workflowId ?? '', started?.firstExecutionRunId)
      .result();
    expect(Object.keys(counts).sort()).toEqual(Object.keys(NOTHING_FIXED).sort());
  });

  test('RECONCILER_ENABLED=false pauses it, saying why; enabled again, it resumes', async () => {
    const handle = api.services.temporal.schedule.getHandle(RECONCILER_SCHEDULE_ID);
    try {
      expect(await ensureReconcilerSchedule(api.services.temporal, { ...api.env, RECONCILER_ENABLED: false })).toBe(
        'paused',
      );
      const paused = await handle.describe();
      expect(paused.state).toMatchObject({ paused: true, note: expect.stringContaining('RECONCILER_ENABLED=false') });
    } finally {
      expect(await ensureReconcilerSchedule(api.services.temporal, api.env)).toBe('updated');
    }
    expect((await handle.describe()).state.paused).toBe(false);
  });

  test("an operator's pause survives a worker start", async () => {
    const handle = api.services.temporal.schedule.getHandle(RECONCILER_SCHEDULE_ID);
    await handle.pause('operator: gateway maintenance');
    try {
      expect(await ensureReconcilerSchedule(api.services.temporal, api.env)).toBe('updated');
      expect((await handle.describe()).state).toMatchObject({ paused: true, note: 'operator: gateway maintenance' });
    } finally {
      await handle.unpause('reconciler test done');
    }
    expect((await handle.describe()).state.paused).toBe(false);
  });
});
