/**
 * Money is never stranded after a sale is paid: a second payment that approves after the sale was CONFIRMED, with
 * its notification lost, is found and refunded; a refund the gateway keeps refusing is recorded `refund_refused`,
 * listed for operators and parked (no timer, no history growth) until an operator retries it, which refunds it once.
 *
 * Against the real stack (the run's Temporal, worker and sandbox) through the HTTP API as a buyer pays: a PSE
 * transfer opened and left pending at the bank, then a card approved (sale CONFIRMED), then the bank settles the
 * transfer while the gateway's notifications are lost. The sandbox's `notifications` switch is global, so this file
 * runs in the serial fault phase; refund refusals are scoped to each test's own sale reference.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import {
  checkoutWorkflowId,
  type RefundResult,
  refundStatusQuery,
  refundWorkflowId,
} from '../../workflows/definitions.js';
import { replayHistories, showHistory, writeHistory } from '../replay/recorder.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  cardToken,
  confirmAtBank,
  eventually,
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { operatorCommand, refusedRefundsListing } from '../support/refused-refunds.js';
import { payByCard, reserve, ticketsOf } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

/**
 * A 20-second window (the first ask after it is the one that finds the second payment) and a 5-second grace, which
 * also caps the settlement lag the checkout waits after the window.
 */
let api: TestApi;
let organizer: Organizer;
let event: PublishedEvent;
const ourSales = new Set<string>();
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-refusals-'));

/**
 * Writes one finished execution's history (a committed fixture when RECORD_WORKFLOW_HISTORIES=1) and replays it
 * against today's workflow code: the new paths are deterministic, and their fixtures keep them so.
 */
async function recordAndReplay(workflowId: string, name: string, runId?: string): Promise<void> {
  const handle = temporal().workflow.getHandle(workflowId, runId);
  await handle.result().catch(() => undefined);
  const file = writeHistory(showHistory(api.env.TEMPORAL_ADDRESS, workflowId, runId), name, scratch);
  expect(replayHistories([file]).map((result) => result.ok)).toEqual([true]);
}

const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;
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

const notifications = (mode: 'down' | 'ok') => control('POST', '/faults', { target: 'notifications', mode });

interface GatewayPayment {
  id: number;
  status: string;
  payment_type_id: string;
  transaction_amount_refunded: number;
}

const gatewayHeaders = () => ({ authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` });

/** Gateway A's own record: every payment of a sale reference. */
async function gatewayPayments(reference: string): Promise<GatewayPayment[]> {
  const response = await fetch(
    `${api.env.SANDBOX_URL}/gateway-a/v1/payments/search?external_reference=${encodeURIComponent(reference)}`,
    { headers: gatewayHeaders() },
  );
  return ((await response.json()) as { results: GatewayPayment[] }).results;
}

async function gatewayRefunds(paymentId: number): Promise<unknown[]> {
  const response = await fetch(`${api.env.SANDBOX_URL}/gateway-a/v1/payments/${paymentId}/refunds`, {
    headers: gatewayHeaders(),
  });
  return (await response.json()) as unknown[];
}

interface Attempt {
  kind: string;
  status: string | null;
  providerPaymentId: string | null;
}

async function attemptsOf(saleId: string): Promise<Attempt[]> {
  const response = await api.request({
    method: 'GET',
    url: `/api/v1/sales/${saleId}/attempts`,
    headers: bearer(organizer.key),
  });
  return response.json().data;
}

async function saleOf(saleId: string): Promise<{ status: string; paymentRef: string | null }> {
  const response = await api.request({ method: 'GET', url: `/api/v1/sales/${saleId}`, headers: bearer(organizer.key) });
  return response.json().data;
}

const refusedListing = () => refusedRefundsListing(api, organizer.key);

const operator = (...argv: string[]) => operatorCommand(api, ...argv);

/**
 * The buyer's double payment: a PSE transfer confirmed at the bank and left pending there, then a card that pays the
 * sale; the bank then settles the transfer while every notification is lost. Returns the two gateway payments.
 */
async function payTwiceWithTheTransferNewsLost(
  label: string,
  beforeTheTransferSettles?: (reference: string) => Promise<unknown>,
) {
  const token = await signInBuyer(api, email(label));
  const created = await reserveOrder(api, token, orderBody(event));
  expect(created.statusCode).toBe(201);
  const order = created.json().data as { saleId: string; reference: string };
  ourSales.add(order.saleId);

  const pse = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${order.saleId}/payment/pse`,
    headers: session(token),
  });
  expect(pse.statusCode).toBe(200);
  expect((await confirmAtBank(pse.json().data.redirectUrl)).status).toBe(302);
  const [transfer] = await gatewayPayments(order.reference);
  expect(transfer?.status).toBe('pending');

  await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${order.saleId}/payment`,
    headers: session(token),
  });
  const charged = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
    headers: session(token),
    payload: { token: await cardToken(api, 'APRO') },
  });
  expect(charged.json().data.saleStatus).toBe('CONFIRMED');
  const cardPaymentId = String(charged.json().data.paymentId);

  await beforeTheTransferSettles?.(order.reference);
  await notifications('down');
  try {
    const settled = (await control('POST', '/gateway-a/pse/settle', {
      reference: order.reference,
      outcome: 'approved',
    })) as { payment: { id: number; status: string }; notification: { delivered: boolean } | null };
    expect(settled.payment.status).toBe('approved');
    expect(settled.notification?.delivered ?? false).toBe(false);
  } finally {
    await notifications('ok');
  }
  return { order, transferId: String(transfer?.id), cardPaymentId };
}

beforeAll(async () => {
  api = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '20000', LATE_PAYMENT_GRACE_MS: '5000' });
  organizer = await createOrganizer(api.orm.em.fork());
  event = await publishEvent(api, organizer, { capacity: 50 });
}, 120_000);

afterAll(async () => {
  if (api) {
    await notifications('ok').catch(() => undefined);
    await control('DELETE', '/refund-refusals', { gateway: 'gateway-a' }).catch(() => undefined);
    await api.close();
  }
  rmSync(scratch, { recursive: true, force: true });
});

describe('a second payment approved after the sale was confirmed, its notification lost', () => {
  it('is found by asking the gateway after the window and refunded: one CONFIRMED sale, one payment kept', async () => {
    const { order, transferId, cardPaymentId } = await payTwiceWithTheTransferNewsLost('second-payment');

    const refunded = await eventually(
      () => gatewayPayments(order.reference),
      (payments) => payments.find((p) => String(p.id) === transferId)?.status === 'refunded',
      90_000,
    );
    expect(refunded.find((p) => String(p.id) === cardPaymentId)?.status).toBe('approved');
    expect(await gatewayRefunds(Number(transferId))).toHaveLength(1);
    expect(await gatewayRefunds(Number(cardPaymentId))).toHaveLength(0);

    const sale = await saleOf(order.saleId);
    expect(sale).toMatchObject({ status: 'CONFIRMED', paymentRef: cardPaymentId });
    const refunds = await eventually(
      async () => (await attemptsOf(order.saleId)).filter((a) => a.kind === 'REFUND'),
      (rows) => rows.every((a) => a.status === 'refunded'),
    );
    expect(refunds.map((a) => a.providerPaymentId)).toEqual([transferId]);
    await recordAndReplay(checkoutWorkflowId(order.saleId), 'checkout-second-payment-asked-after-confirm');
  }, 150_000);
});

describe('a refund the gateway keeps refusing', () => {
  it('is recorded refund_refused, listed, parked without a timer, and refunded exactly once after an operator retry', async () => {
    const { order, transferId, cardPaymentId } = await payTwiceWithTheTransferNewsLost('refused-refund', (reference) =>
      control('POST', '/refund-refusals', { gateway: 'gateway-a', reference }),
    );

    const refused = await eventually(
      () => attemptsOf(order.saleId),
      (attempts) => attempts.some((a) => a.kind === 'REFUND' && a.status === 'refund_refused'),
      150_000,
    );
    expect(refused.filter((a) => a.kind === 'REFUND').map((a) => a.providerPaymentId)).toEqual([transferId]);
    expect((await gatewayPayments(order.reference)).map((p) => p.status).sort()).toEqual(['approved', 'approved']);
    expect(await refusedListing()).toContainEqual(
      expect.objectContaining({ saleId: order.saleId, providerPaymentId: transferId }),
    );
    const listed = await operator('refunds-refused', 'list');
    expect(listed.code).toBe(0);
    expect(listed.output).toContain(order.saleId);

    // Parked: the checkout runs on, with nothing in flight and no timer left to fire; only a signal moves it.
    const handle = temporal().workflow.getHandle(checkoutWorkflowId(order.saleId));
    const parked = await eventually(
      () => handle.describe(),
      (d) => !d.raw.pendingWorkflowTask && (d.raw.pendingActivities?.length ?? 0) === 0,
    );
    expect(parked.status.name).toBe('RUNNING');
    const history = await handle.fetchHistory();
    const started = new Set<string>();
    for (const e of history.events ?? []) {
      if (e.timerStartedEventAttributes?.timerId) started.add(e.timerStartedEventAttributes.timerId);
      const ended = e.timerFiredEventAttributes?.timerId ?? e.timerCanceledEventAttributes?.timerId;
      if (ended) started.delete(ended);
    }
    expect([...started]).toEqual([]);

    await control('DELETE', '/refund-refusals', { gateway: 'gateway-a', reference: order.reference });
    const retried = await operator('refunds-refused', 'retry', order.saleId);
    expect(retried).toMatchObject({ code: 0 });

    await eventually(
      () => gatewayPayments(order.reference),
      (payments) => payments.find((p) => String(p.id) === transferId)?.status === 'refunded',
      60_000,
    );
    expect(await gatewayRefunds(Number(transferId))).toHaveLength(1);
    expect(await gatewayRefunds(Number(cardPaymentId))).toHaveLength(0);
    await eventually(
      () => attemptsOf(order.saleId),
      (attempts) => attempts.filter((a) => a.kind === 'REFUND').every((a) => a.status === 'refunded'),
    );
    expect(await saleOf(order.saleId)).toMatchObject({ status: 'CONFIRMED', paymentRef: cardPaymentId });
    expect((await refusedListing()).map((row) => row.saleId)).not.toContain(order.saleId);
    await recordAndReplay(checkoutWorkflowId(order.saleId), 'checkout-refund-refused-parked-then-retried');
  }, 300_000);

  it('declined in its answer (status rejected, replayed per key): the operator retry asks under a key of its own and refunds once', async () => {
    const { order, transferId, cardPaymentId } = await payTwiceWithTheTransferNewsLost('declined-second', (reference) =>
      control('POST', '/refund-refusals', { gateway: 'gateway-a', reference, answer: 'rejected' }),
    );
    await eventually(
      () => attemptsOf(order.saleId),
      (attempts) => attempts.some((a) => a.kind === 'REFUND' && a.status === 'refund_refused'),
      150_000,
    );
    expect((await gatewayPayments(order.reference)).map((p) => p.status).sort()).toEqual(['approved', 'approved']);

    // Lifted, but gateway A answers every key it declined with the same refusal: only a new key is asked afresh.
    await control('DELETE', '/refund-refusals', { gateway: 'gateway-a', reference: order.reference });
    expect(await operator('refunds-refused', 'retry', order.saleId)).toMatchObject({ code: 0 });
    await eventually(
      () => gatewayPayments(order.reference),
      (payments) => payments.find((p) => String(p.id) === transferId)?.status === 'refunded',
      60_000,
    );
    expect(await gatewayRefunds(Number(transferId))).toHaveLength(1);
    expect(await gatewayRefunds(Number(cardPaymentId))).toHaveLength(0);
    await eventually(
      () => attemptsOf(order.saleId),
      (attempts) => attempts.filter((a) => a.kind === 'REFUND').every((a) => a.status === 'refunded'),
    );
    expect(await saleOf(order.saleId)).toMatchObject({ status: 'CONFIRMED', paymentRef: cardPaymentId });
    await recordAndReplay(checkoutWorkflowId(order.saleId), 'checkout-refund-declined-retried-own-key');
  }, 300_000);

  it("ends the organizer's refund with refund_refused (tickets valid again), and an operator retry refunds it once", async () => {
    const { token, order } = await reserve(api, event, 'organizer-refund');
    ourSales.add(order.saleId);
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    const paid = await payByCard(api, token, order.saleId);
    expect(paid.saleStatus).toBe('CONFIRMED');
    await control('POST', '/refund-refusals', { gateway: 'gateway-a', reference: order.reference });

    const requested = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${order.saleId}/refund`,
      headers: bearer(organizer.key),
      payload: { reason: 'event moved', notifyBuyer: false },
    });
    expect(requested.statusCode).toBe(202);
    const first = temporal().workflow.getHandle(refundWorkflowId(order.saleId));
    const firstRunId = (await first.describe()).runId;
    const refused = (await first.result()) as RefundResult;
    expect(refused).toMatchObject({
      ok: false,
      code: 'SALE_NOT_REFUNDABLE',
      details: { reason: 'refund_refused', refusals: 5, gatewayAttempts: 5 },
    });
    expect(await first.query(refundStatusQuery)).toEqual({ phase: 'failed', gatewayAttempts: 5 });
    expect(await saleOf(order.saleId)).toMatchObject({ status: 'CONFIRMED', paymentRef: paid.paymentId });
    expect((await ticketsOf(api, organizer, order.saleId)).map((ticket) => ticket.status)).toEqual(['VALID']);
    expect((await attemptsOf(order.saleId)).filter((a) => a.kind === 'REFUND').map((a) => a.status)).toEqual([
      'refund_refused',
    ]);
    expect(await refusedListing()).toContainEqual(expect.objectContaining({ saleId: order.saleId }));
    expect((await operator('refunds-refused', 'list')).output).toContain(order.saleId);
    await recordAndReplay(refundWorkflowId(order.saleId), 'refund-refused-bounded', firstRunId);

    await control('DELETE', '/refund-refusals', { gateway: 'gateway-a', reference: order.reference });
    expect(await operator('refunds-refused', 'retry', order.saleId)).toMatchObject({ code: 0 });
    const retried = temporal().workflow.getHandle(refundWorkflowId(order.saleId));
    expect(await retried.result()).toMatchObject({ ok: true, saleStatus: 'REFUNDED', changed: true });
    expect(await retried.query(refundStatusQuery)).toEqual({ phase: 'done', gatewayAttempts: 1 });
    const [payment] = await gatewayPayments(order.reference);
    expect(payment?.status).toBe('refunded');
    expect(await gatewayRefunds(Number(paid.paymentId))).toHaveLength(1);
    expect((await attemptsOf(order.saleId)).filter((a) => a.kind === 'REFUND').map((a) => a.status)).toEqual([
      'refunded',
      'refunded',
    ]);
    expect((await refusedListing()).map((row) => row.saleId)).not.toContain(order.saleId);
  }, 300_000);
});

describe('a refund the gateway takes and then declines (status rejected, not an error)', () => {
  it("ends the organizer's refund with refund_refused instead of retrying it forever, and a retry after it lifts refunds it once", async () => {
    const { token, order } = await reserve(api, event, 'declined-refund');
    ourSales.add(order.saleId);
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    const paid = await payByCard(api, token, order.saleId);
    expect(paid.saleStatus).toBe('CONFIRMED');
    // Gateway A answers the refund request 201 with the refund already `rejected`: before refunds read that answer
    // as a refusal, the refund activity took it for "not confirmed yet" and retried it without end, the sale neither
    // refunded nor recorded refused.
    await control('POST', '/refund-refusals', { gateway: 'gateway-a', reference: order.reference, answer: 'rejected' });

    const requested = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${order.saleId}/refund`,
      headers: bearer(organizer.key),
      payload: { reason: 'event moved', notifyBuyer: false },
    });
    expect(requested.statusCode).toBe(202);
    const first = temporal().workflow.getHandle(refundWorkflowId(order.saleId));
    // Five refusals take 75 s of waits between them; a refund still retrying after 150 s never ends.
    const refused = (await Promise.race([
      first.result(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('the refund never ended')), 150_000)),
    ])) as RefundResult;
    expect(refused).toMatchObject({
      ok: false,
      code: 'SALE_NOT_REFUNDABLE',
      details: { reason: 'refund_refused', refusals: 5 },
    });
    expect(await saleOf(order.saleId)).toMatchObject({ status: 'CONFIRMED', paymentRef: paid.paymentId });
    expect((await ticketsOf(api, organizer, order.saleId)).map((ticket) => ticket.status)).toEqual(['VALID']);
    expect((await attemptsOf(order.saleId)).filter((a) => a.kind === 'REFUND').map((a) => a.status)).toEqual([
      'refund_refused',
    ]);
    expect(await refusedListing()).toContainEqual(expect.objectContaining({ saleId: order.saleId }));
    const [stillPaid] = await gatewayPayments(order.reference);
    expect(stillPaid?.status).toBe('approved');

    await control('DELETE', '/refund-refusals', { gateway: 'gateway-a', reference: order.reference });
    expect(await operator('refunds-refused', 'retry', order.saleId)).toMatchObject({ code: 0 });
    const retried = temporal().workflow.getHandle(refundWorkflowId(order.saleId));
    expect(await retried.result()).toMatchObject({ ok: true, saleStatus: 'REFUNDED', changed: true });
    const [payment] = await gatewayPayments(order.reference);
    expect(payment?.status).toBe('refunded');
    expect(await gatewayRefunds(Number(paid.paymentId))).toHaveLength(1);
  }, 300_000);
});

describe('executions', () => {
  it('no checkout or refund of these sales failed, was terminated or timed out', async () => {
    for (const saleId of ourSales) {
      const runs = [];
      const ids = `WorkflowId = '${checkoutWorkflowId(saleId)}' or WorkflowId = '${refundWorkflowId(saleId)}'`;
      for await (const run of temporal().workflow.list({ query: ids })) runs.push(run.status.name);
      expect(runs.filter((status) => ['FAILED', 'TERMINATED', 'TIMED_OUT'].includes(status))).toEqual([]);
    }
  });
});
