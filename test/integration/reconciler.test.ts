/**
 * The reconciler (workflows/reconciler.ts) against the real stack: each test breaks something the way production
 * could (a checkout terminated, a notification lost, a gateway down), runs the reconciler workflow directly with
 * small margins, scoped to a workspace of its own so it never touches other suites' sales, and checks that the sale
 * ends where its own checkout puts it. The worker's Schedule keeps its two-minute margins meanwhile, so it never
 * races these seconds-old sales.
 */
import { randomUUID } from 'node:crypto';
import { RECONCILER_FIXES_KEY } from '../../activities/reconciler.js';
import { providerUrls } from '../../config/env.js';
import { newId } from '../../entities/ids.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { ensureReconcilerSchedule } from '../../worker/schedules.js';
import {
  checkoutWorkflowId,
  type PaymentNotification,
  RECONCILER_SCHEDULE_ID,
  type ReconcilerCounts,
  type ReconcilerInput,
} from '../../workflows/definitions.js';
import type { reconciler } from '../../workflows/reconciler.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
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
const NOTHING_FIXED: ReconcilerCounts = {
  expiredPendingClosed: 0,
  unresolvedPaymentsResolved: 0,
  closedSalesChecked: 0,
  lateMoneyFound: 0,
  errors: 0,
};

/** One reconciler run, as the Schedule starts it, but with margins of a second and only this workspace's sales. */
const reconcile = (workspaceId: string): Promise<ReconcilerCounts> => {
  const input: Partial<ReconcilerInput> = { marginMs: MARGIN_MS, batchSize: 50, workspaceId };
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

    let during: ReconcilerCounts;
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
    const taken = await eventually(
      () => handle.describe(),
      (schedule) => schedule.info.numActionsTaken > before,
    );
    const started = taken.info.recentActions.at(-1)?.action.workflow;
    expect(started?.workflowId).toMatch(/^reconciler-/);
    // The scheduled run sweeps every workspace with the real margins; whatever it finds, it completes.
    const counts: ReconcilerCounts = await api.services.temporal.workflow
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
