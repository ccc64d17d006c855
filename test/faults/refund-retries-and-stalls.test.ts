/**
 * The organizer's refund never leaves money stranded behind a key, a gateway B refusal or a terminated execution:
 *
 * - an operator retry of a refund gateway A refused asks under a key of its own: the sandbox, like Mercado Pago,
 *   replays a declined answer for a key it has seen, so a retry under the first key would be declined again; two
 *   operators retrying at once are one retry (one execution, one key, one refund);
 * - a gateway B void declined in its answer (status REJECTED, not an error) is counted as a refusal and parked
 *   `refund_refused` after the bounded number, instead of being asked about every few minutes without end;
 * - a refund execution terminated after the gateway refunded and before the database write is found by the
 *   reconciler within its margin and recorded once (REFUNDED, REFUND record, `sale.refunded`), not an hour later,
 *   and the buyer gets the courtesy email the organizer asked for, once.
 *
 * Against the real stack. Gateway A is made slow for a few seconds in the last case (a global switch), so this file
 * runs in the serial fault phase; refusal rules are scoped to each test's own sale reference.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { onPurpose } from '../../scripts/support/terminations.js';
import { type RefundResult, refundStatusQuery, refundWorkflowId } from '../../workflows/definitions.js';
import type { reconciler } from '../../workflows/reconciler.js';
import { replayHistories, showHistory, writeHistory } from '../replay/recorder.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  eventually,
  type InboxMessage,
  inbox,
  type PublishedEvent,
  publishEvent,
  session,
  waitForMail,
} from '../support/purchase.js';
import { operatorCommand, refusedRefundsListing } from '../support/refused-refunds.js';
import { openGatewayB, payByCard, reserve, sleep, ticketsOf } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
let legend: Organizer;
let event: PublishedEvent;
let legendEvent: PublishedEvent;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-refund-retries-'));

const temporal = (): Client => api.services.temporal;

async function control(method: 'POST' | 'DELETE', path: string, body: unknown) {
  const response = await fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as { data?: unknown };
  if (response.status >= 300) throw new Error(`${method} ${path} → ${response.status} ${JSON.stringify(json)}`);
  return json.data;
}

const gatewayHeaders = () => ({ authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` });

async function gatewayAPayment(paymentId: string): Promise<{ status: string }> {
  const response = await fetch(`${api.env.SANDBOX_URL}/gateway-a/v1/payments/${paymentId}`, {
    headers: gatewayHeaders(),
  });
  return (await response.json()) as { status: string };
}

async function gatewayARefunds(paymentId: string): Promise<unknown[]> {
  const response = await fetch(`${api.env.SANDBOX_URL}/gateway-a/v1/payments/${paymentId}/refunds`, {
    headers: gatewayHeaders(),
  });
  return (await response.json()) as unknown[];
}

async function gatewayBStatus(reference: string): Promise<string> {
  const response = await fetch(`${api.env.SANDBOX_URL}/gateway-b/v2/payment-voucher/${reference}`, {
    headers: { authorization: `x-api-key ${api.env.GATEWAY_B_API_KEY}` },
  });
  return ((await response.json()) as { payment_status: string }).payment_status;
}

const query = <R>(sql: string, params: unknown[] = []): Promise<R[]> => api.orm.em.fork().execute<R[]>(sql, params);

async function saleOf(who: Organizer, saleId: string): Promise<{ status: string; paymentRef: string | null }> {
  const response = await api.request({ method: 'GET', url: `/api/v1/sales/${saleId}`, headers: bearer(who.key) });
  return response.json().data;
}

async function refundRows(saleId: string) {
  return query<{ dedupe_key: string; status: string | null; status_detail: string | null }>(
    `select dedupe_key, status, status_detail from payment_attempts where sale_id = ? and kind = 'REFUND'
      order by created_at, dedupe_key`,
    [saleId],
  );
}

const refusedListing = (who: Organizer) => refusedRefundsListing(api, who.key);

const operator = (...argv: string[]) => operatorCommand(api, ...argv);

const requestRefund = (who: Organizer, saleId: string, notifyBuyer = false) =>
  api.request({
    method: 'POST',
    url: `/api/v1/sales/${saleId}/refund`,
    headers: bearer(who.key),
    payload: { reason: 'event moved', notifyBuyer },
  });

/** Five refusals take 75 s of waits between them; a refund still going after 150 s never ends. */
async function parkedWithin150s(saleId: string): Promise<RefundResult> {
  const handle = temporal().workflow.getHandle(refundWorkflowId(saleId));
  let timer: NodeJS.Timeout | undefined;
  try {
    return (await Promise.race([
      handle.result(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('the refund was still retrying after 150 s')), 150_000);
      }),
    ])) as RefundResult;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Writes one finished execution's history (a committed fixture when RECORD_WORKFLOW_HISTORIES=1) and replays it
 * against today's workflow code.
 */
async function recordAndReplay(workflowId: string, name: string, runId?: string): Promise<void> {
  await temporal()
    .workflow.getHandle(workflowId, runId)
    .result()
    .catch(() => undefined);
  const file = writeHistory(showHistory(api.env.TEMPORAL_ADDRESS, workflowId, runId), name, scratch);
  expect(replayHistories([file]).map((result) => result.ok)).toEqual([true]);
}

beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  legend = await createOrganizer(api.orm.em.fork());
  await api.orm.em
    .fork()
    .execute(`update workspaces set plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [legend.workspaceId]);
  event = await publishEvent(api, organizer, { capacity: 20 });
  legendEvent = await publishEvent(api, legend, { capacity: 20 });
}, 120_000);

afterAll(async () => {
  await control('POST', '/faults', { target: 'gateway-a', mode: 'ok' }).catch(() => undefined);
  await api?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('an operator retry of a refund gateway A declined', () => {
  it('asks under a key of its own (the declined answer is replayed for the old key), and two retries at once refund once', async () => {
    const { token, order } = await reserve(api, event, 'retry-fresh-key');
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    const paid = await payByCard(api, token, order.saleId);
    expect(paid.saleStatus).toBe('CONFIRMED');
    await control('POST', '/refund-refusals', { gateway: 'gateway-a', reference: order.reference, answer: 'rejected' });

    expect((await requestRefund(organizer, order.saleId)).statusCode).toBe(202);
    const firstRunId = (await temporal().workflow.getHandle(refundWorkflowId(order.saleId)).describe()).runId;
    expect(await parkedWithin150s(order.saleId)).toMatchObject({
      ok: false,
      details: { reason: 'refund_refused', refusals: 5 },
    });
    expect(await refusedListing(organizer)).toContainEqual(expect.objectContaining({ saleId: order.saleId }));
    await recordAndReplay(refundWorkflowId(order.saleId), 'refund-refused-key-per-ask', firstRunId);

    // The merchant's balance is back. Gateway A still answers the first request's key with the refusal it gave.
    await control('DELETE', '/refund-refusals', { gateway: 'gateway-a', reference: order.reference });
    const [one, two] = await Promise.all([
      operator('refunds-refused', 'retry', order.saleId),
      operator('refunds-refused', 'retry', order.saleId),
    ]);
    // Both operators started (or joined) the one retry; neither failed.
    expect([one?.code, two?.code]).toEqual([0, 0]);
    const retried = temporal().workflow.getHandle(refundWorkflowId(order.saleId));
    const retriedRunId = (await retried.describe()).runId;
    // Before retries asked under a key of their own, the retry met the replayed refusal and parked again.
    expect(await parkedWithin150s(order.saleId)).toMatchObject({ ok: true, saleStatus: 'REFUNDED', changed: true });
    expect(await retried.query(refundStatusQuery)).toEqual({ phase: 'done', gatewayAttempts: 1 });
    expect((await gatewayAPayment(paid.paymentId)).status).toBe('refunded');
    expect(await gatewayARefunds(paid.paymentId)).toHaveLength(1);
    const rows = await refundRows(order.saleId);
    expect(rows.map((row) => [row.dedupe_key, row.status])).toEqual(
      expect.arrayContaining([
        [`refund-request:${order.saleId}`, 'refunded'],
        [`refund:${order.saleId}`, 'refunded'],
      ]),
    );
    expect(rows.find((row) => row.dedupe_key === `refund-request:${order.saleId}`)?.status_detail).toBe('retry 1');
    expect((await refusedListing(organizer)).map((row) => row.saleId)).not.toContain(order.saleId);
    await recordAndReplay(refundWorkflowId(order.saleId), 'refund-operator-retry-own-key', retriedRunId);
  }, 360_000);
});

describe('a gateway B void declined in its answer (status REJECTED)', () => {
  it('is parked refund_refused after the bounded refusals, listed, and an operator retry voids it once', async () => {
    const { token, order } = await reserve(api, legendEvent, 'void-rejected');
    const config = await openGatewayB(api, token, order.saleId);
    const paid = await fetch(`${api.env.SANDBOX_URL}/control/gateway-b/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...config, outcome: 'approved' }),
    });
    expect(paid.status).toBe(201);
    await eventually(
      () => saleOf(legend, order.saleId),
      (sale) => sale.status === 'CONFIRMED',
    );
    await control('POST', '/refund-refusals', { gateway: 'gateway-b', reference: order.reference, answer: 'rejected' });

    expect((await requestRefund(legend, order.saleId)).statusCode).toBe(202);
    // Before a declined void counted as a refusal, the refund retried it without end and this timed out.
    const refused = await parkedWithin150s(order.saleId);
    expect(refused).toMatchObject({
      ok: false,
      code: 'SALE_NOT_REFUNDABLE',
      details: { reason: 'refund_refused', gateway: 'GATEWAY_B', refusals: 5 },
    });
    expect(await saleOf(legend, order.saleId)).toMatchObject({ status: 'CONFIRMED' });
    expect((await ticketsOf(api, legend, order.saleId)).map((ticket) => ticket.status)).toEqual(['VALID']);
    expect((await refundRows(order.saleId)).map((row) => row.status)).toEqual(['refund_refused']);
    expect(await refusedListing(legend)).toContainEqual(expect.objectContaining({ saleId: order.saleId }));
    expect((await operator('refunds-refused', 'list')).output).toContain(order.saleId);
    expect(await gatewayBStatus(order.reference)).toBe('APPROVED');
    await recordAndReplay(refundWorkflowId(order.saleId), 'refund-gateway-b-void-rejected-parked');

    await control('DELETE', '/refund-refusals', { gateway: 'gateway-b', reference: order.reference });
    expect(await operator('refunds-refused', 'retry', order.saleId)).toMatchObject({ code: 0 });
    expect(await parkedWithin150s(order.saleId)).toMatchObject({ ok: true, saleStatus: 'REFUNDED', changed: true });
    expect(await gatewayBStatus(order.reference)).toBe('VOIDED');
  }, 360_000);
});

describe('a refund execution terminated between the gateway refund and the database write', () => {
  it('is found by the reconciler within its margin and recorded once: REFUNDED, one REFUND record, one notice, the buyer emailed once', async () => {
    const { email, token, order } = await reserve(api, event, 'refund-stalled');
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    const paid = await payByCard(api, token, order.saleId);
    expect(paid.saleStatus).toBe('CONFIRMED');

    // Gateway A lags 3 s per call: the refund step (read the payment, then refund it) takes about 6 s, time enough to
    // terminate the execution while the step is on its way. The gateway still carries the refund out.
    await control('POST', '/faults', { target: 'gateway-a', mode: 'slow', delayMs: 3000 });
    let answered: ReturnType<typeof requestRefund> | null = null;
    try {
      // The organizer asks for the buyer's courtesy email.
      answered = requestRefund(organizer, order.saleId, true);
      const handle = temporal().workflow.getHandle(refundWorkflowId(order.saleId));
      await eventually(
        () => handle.query(refundStatusQuery).catch(() => ({ phase: 'not yet', gatewayAttempts: 0 })),
        (status) => status.phase === 'refunding_at_gateway',
        20_000,
      );
      await handle.terminate(onPurpose('the refund execution dies after asking the gateway'));
      await eventually(
        () => gatewayAPayment(paid.paymentId),
        (payment) => payment.status === 'refunded',
        30_000,
      );
    } finally {
      await control('POST', '/faults', { target: 'gateway-a', mode: 'ok' });
    }
    // The organizer is told the refund is in progress (it is: the reconciler will see it through), not a 500.
    expect((await answered)?.statusCode).toBe(202);
    // Stranded: the buyer has the money back, and the sale says CONFIRMED with the refund still owed.
    expect(await saleOf(organizer, order.saleId)).toMatchObject({ status: 'CONFIRMED' });
    expect((await refundRows(order.saleId)).map((row) => row.status)).toEqual(['requested']);

    // A reconciler run as the Schedule starts it, with a margin of a second and only this workspace's sales.
    await sleep(1500);
    const reconcilerId = `reconciler-test-${randomUUID()}`;
    await temporal().workflow.execute<typeof reconciler>('reconciler', {
      taskQueue: api.env.TEMPORAL_TASK_QUEUE,
      workflowId: reconcilerId,
      args: [{ marginMs: 1000, batchSize: 50, workspaceId: organizer.workspaceId }],
      workflowExecutionTimeout: '2 minutes',
    });

    // Well inside the overdue listing's hour: before, the sale stayed CONFIRMED until an operator looked.
    const sale = await eventually(
      () => saleOf(organizer, order.saleId),
      (current) => current.status === 'REFUNDED',
      30_000,
    );
    expect(sale.status).toBe('REFUNDED');
    const redriven = temporal().workflow.getHandle(refundWorkflowId(order.saleId));
    expect(await redriven.result()).toMatchObject({ ok: true, saleStatus: 'REFUNDED', changed: true });
    // Exactly once at the gateway and in the database.
    expect(await gatewayARefunds(paid.paymentId)).toHaveLength(1);
    expect((await refundRows(order.saleId)).map((row) => [row.dedupe_key, row.status])).toEqual(
      expect.arrayContaining([
        [`refund-request:${order.saleId}`, 'refunded'],
        [`refund:${order.saleId}`, 'refunded'],
      ]),
    );
    expect(await refundRows(order.saleId)).toHaveLength(2);
    const notices = await query<{ count: string }>(
      `select count(*) as count from outbox_events where type = 'sale.refunded' and payload->>'saleId' = ?`,
      [order.saleId],
    );
    expect(Number(notices[0]?.count)).toBe(1);
    expect((await ticketsOf(api, organizer, order.saleId)).map((ticket) => ticket.status)).toEqual(['INVALID']);
    // The organizer's choice was kept with the request: the buyer is told, once. Before, the refund started again
    // always had notifyBuyer false and no email came.
    const isRefundNotice = (message: InboxMessage) => message.subject.startsWith(`Refund of ${order.reference}`);
    await waitForMail(api.env.SANDBOX_URL, email, isRefundNotice);
    await sleep(2000);
    expect((await inbox(api.env.SANDBOX_URL, email)).filter(isRefundNotice)).toHaveLength(1);

    await recordAndReplay(refundWorkflowId(order.saleId), 'refund-redriven-after-terminate');
    await recordAndReplay(reconcilerId, 'reconciler-redrives-stalled-refunds');
  }, 240_000);
});
