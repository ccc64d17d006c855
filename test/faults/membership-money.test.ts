/**
 * Memberships never strand money: a payment that reaches gateway A after the membership's execution stopped asking
 * for it, with its notification lost, ends as a paid period or a refund the gateway reports done. Against the real
 * stack (the run's Temporal, worker, API and sandbox), through the HTTP API as a buyer would, with the sandbox's
 * control API losing notifications and taking gateway A down (its switches are global: the scenarios run one after
 * the other, and every switch is set back to `ok` after each).
 *
 * Each scenario ends on the gateway's own record (gateway A's payment search by reference), and the last test checks
 * that no membership execution of this file failed, was terminated or timed out.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { providerUrls } from '../../config/env.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { membershipWorkflowId, retryRefusedRefundSignal } from '../../workflows/membership-definitions.js';
import type { reconciler } from '../../workflows/reconciler.js';
import { replayHistories, showHistory, writeHistory } from '../replay/recorder.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { cardToken, confirmAtBank, eventually, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

/** A signup link open for 5 s. */
let brief: TestApi;
/** Periods of 24 s, the renewal asked 16 s before the end. */
let periods: TestApi;
let organizer: Organizer;
const scratch = mkdtempSync(join(tmpdir(), 'membership-money-'));
/** Every membership execution this file started: checked at the end. */
const ourWorkflows = new Set<string>();

const TARGETS = ['gateway-a', 'notifications'] as const;

beforeAll(async () => {
  brief = await startTestApi({ MEMBERSHIP_SIGNUP_WINDOW_MS: '5000', MEMBERSHIP_PAYMENT_POLL_MS: '2000' });
  periods = await startTestApi({
    MEMBERSHIP_PERIOD_MS: '24000',
    MEMBERSHIP_RENEWAL_NOTICE_MS: '16000',
    MEMBERSHIP_REMINDER_INTERVAL_MS: '6000',
    MEMBERSHIP_PAYMENT_POLL_MS: '2000',
  });
  organizer = await createOrganizer(brief.orm.em.fork());
});
afterEach(resetFaults);
afterAll(async () => {
  await resetFaults();
  await brief.close();
  await periods.close();
  rmSync(scratch, { recursive: true, force: true });
});

// ------------------------------------------------------------------------------------------------ the sandbox

async function control(path: string, body: unknown): Promise<{ status: number; body: { data?: unknown } }> {
  const response = await fetch(`${brief.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { data?: unknown } };
}

async function setFault(target: (typeof TARGETS)[number], mode: 'down' | 'ok'): Promise<void> {
  const answer = await control('/faults', { target, mode });
  if (answer.status !== 200) throw new Error(`fault ${target} ${mode} → ${answer.status}`);
}

async function resetFaults(): Promise<void> {
  for (const target of TARGETS) await setFault(target, 'ok').catch(() => undefined);
}

interface GatewayPayment {
  id: number;
  status: string;
  transaction_amount: number;
  transaction_amount_refunded: number;
}

/** Gateway A's own record: every payment of a membership reference. */
async function gatewayPayments(reference: string): Promise<GatewayPayment[]> {
  const response = await fetch(
    `${brief.env.SANDBOX_URL}/gateway-a/v1/payments/search?external_reference=${encodeURIComponent(reference)}`,
    { headers: { authorization: `Bearer ${brief.env.GATEWAY_A_ACCESS_TOKEN}` } },
  );
  if (response.status !== 200) throw new Error(`payment search → ${response.status}`);
  return ((await response.json()) as { results: GatewayPayment[] }).results;
}

/** The buyer pays on the gateway's page by card; the cardholder name picks the outcome (CONT: in process). */
const payByCardAt = (pageUrl: string, holder: string): Promise<Response> =>
  fetch(pageUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ decision: 'card', cardholder_name: holder, email: 'member@buyers.test' }),
    redirect: 'manual',
  });

// ------------------------------------------------------------------------------------------------ the buyer

interface MembershipView {
  status: string;
  renewalState: string;
  periodNumber: number;
  payment: { reference: string; amount: number; checkoutUrl: string | null; periodNumber: number } | null;
}

const unique = () => Math.random().toString(36).slice(2, 8);
const PLAN_PRICE = 25_000;

async function createPlan(target: TestApi): Promise<string> {
  const response = await target.request({
    method: 'POST',
    url: '/api/v1/membership-plans',
    headers: bearer(organizer.key),
    payload: { name: `Never stranded ${unique()}`, price: PLAN_PRICE, period: 'MONTHLY' },
  });
  expect(response.statusCode).toBe(201);
  return response.json().data.id;
}

async function buyer(target: TestApi, label: string) {
  const email = `${label}-${unique()}@buyers.test`;
  const token = await signInBuyer(target, email);
  const me = await target.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) });
  const workflowId = membershipWorkflowId(organizer.workspaceId, me.json().data.id);
  ourWorkflows.add(workflowId);
  return { email, token, workflowId };
}

async function membershipOf(target: TestApi, token: string): Promise<MembershipView | null> {
  const response = await target.request({
    method: 'GET',
    url: `/api/v1/customer/membership?workspaceId=${organizer.workspaceId}`,
    headers: session(token),
  });
  expect(response.statusCode).toBe(200);
  return response.json().data;
}

async function signUp(target: TestApi, token: string, planId: string) {
  const created = await target.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions',
    headers: session(token),
    payload: { planId },
  });
  expect(created.statusCode).toBe(201);
  return created.json().data as { checkoutUrl: string; subscriptionId: string };
}

/** Signs up and pays the signup by PSE (notifications working): the membership is ACTIVE, period 1. */
async function activeMember(target: TestApi, label: string) {
  const who = await buyer(target, label);
  const planId = await createPlan(target);
  const { checkoutUrl } = await signUp(target, who.token, planId);
  const pending = await membershipOf(target, who.token);
  expect((await confirmAtBank(checkoutUrl, who.email)).status).toBe(302);
  expect(
    (await control('/gateway-a/pse/settle', { reference: pending!.payment!.reference, outcome: 'approved' })).status,
  ).toBe(200);
  await eventually(
    () => membershipOf(target, who.token),
    (m) => m?.status === 'ACTIVE',
  );
  return who;
}

/** Waits for the renewal request and its gateway link. */
const renewalDue = (target: TestApi, token: string) =>
  eventually(
    () => membershipOf(target, token),
    (m) => m?.payment?.periodNumber === 2 && Boolean(m.payment.checkoutUrl),
    40_000,
  );

/** The payment ends as money back: the gateway reports it refunded in full. */
const refundedInFull = (payment: GatewayPayment | undefined) =>
  payment !== undefined &&
  payment.status === 'refunded' &&
  payment.transaction_amount_refunded === payment.transaction_amount;

const sql = <T>(query: string, params: unknown[]) => brief.orm.em.fork().getConnection().execute<T[]>(query, params);

async function referenceOfSignup(email: string): Promise<string> {
  const [row] = await sql<{ reference: string }>(
    `select p.reference from membership_payments p join membership_subscriptions s on s.id = p.subscription_id
       join buyers b on b.id = s.buyer_id where b.email = ? and p.period_number = 1 and p.status = 'APPROVED'`,
    [email],
  );
  return row!.reference;
}

const paymentRow = async (providerPaymentId: string) =>
  (
    await sql<{ id: string; status: string }>(
      'select id, status from membership_payments where provider_payment_id = ?',
      [providerPaymentId],
    )
  )[0] ?? null;

/** A card charge on a membership reference made through gateway A's API (a retried charge, another integration). */
async function chargeThroughApi(reference: string, amount: number, email: string) {
  const client = new GatewayAClient({
    baseUrl: providerUrls(brief.env).gatewayA,
    accessToken: brief.env.GATEWAY_A_ACCESS_TOKEN,
    publicKey: brief.env.GATEWAY_A_PUBLIC_KEY,
  });
  return client.createPayment({
    idempotencyKey: `extra-${reference}-${unique()}`,
    cardToken: await cardToken(brief, 'APRO'),
    amount,
    currency: 'COP',
    description: 'membership charge',
    payerEmail: email,
    externalReference: reference,
    notificationUrl: `${brief.env.GATEWAY_NOTIFICATION_ORIGIN ?? brief.env.PUBLIC_ORIGIN}/api/v1/webhooks/gateway-a`,
  });
}

/** Keeps the scenario's histories; with RECORD_WORKFLOW_HISTORIES=1 they become replay fixtures. */
function keepHistories(target: TestApi, workflowId: string, name: string): string[] {
  return [writeHistory(showHistory(target.env.TEMPORAL_ADDRESS, workflowId), name, scratch)];
}

// ------------------------------------------------------------------------------------------------ the scenarios

test('a PSE signup that settles after the signup window, its notification lost, ends refunded (or ACTIVE)', async () => {
  const who = await buyer(brief, 'late-pse');
  const { checkoutUrl } = await signUp(brief, who.token, await createPlan(brief));
  const pending = await membershipOf(brief, who.token);
  const reference = pending!.payment!.reference;
  // The buyer confirms the transfer at the bank in time; the bank takes longer than the window to settle it, and
  // none of the gateway's notifications about it arrive.
  await setFault('notifications', 'down');
  expect((await confirmAtBank(checkoutUrl, who.email)).status).toBe(302);
  await eventually(
    () => membershipOf(brief, who.token),
    (m) => m?.status === 'EXPIRED',
  );
  expect((await control('/gateway-a/pse/settle', { reference, outcome: 'approved' })).status).toBe(200);

  const settled = await eventually(
    async () => ({ member: await membershipOf(brief, who.token), payments: await gatewayPayments(reference) }),
    ({ member, payments }) => member?.status === 'ACTIVE' || refundedInFull(payments[0]),
    60_000,
  );
  expect(settled.member?.status === 'ACTIVE' || refundedInFull(settled.payments[0])).toBe(true);
  await eventually(
    async () => (await brief.services.temporal.workflow.getHandle(who.workflowId).describe()).status.name,
    (status) => status === 'COMPLETED',
    60_000,
  );
  const files = keepHistories(brief, who.workflowId, 'membership-late-pse-after-window-money-never-stranded');
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 180_000);

test('a renewal paid through the old link after the member cancelled is refunded, and the link no longer takes payments', async () => {
  const who = await activeMember(periods, 'cancelled-renewal');
  const due = await renewalDue(periods, who.token);
  const reference = due!.payment!.reference;
  const renewalLink = due!.payment!.checkoutUrl!;
  // The member starts the renewal transfer at the bank, then cancels; the bank settles it after the cancel. None of
  // the gateway's notifications about it arrive.
  await setFault('notifications', 'down');
  expect((await confirmAtBank(renewalLink, who.email)).status).toBe(302);
  const cancelled = await periods.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions/cancel',
    headers: session(who.token),
    payload: { workspaceId: organizer.workspaceId },
  });
  expect(cancelled.statusCode).toBe(200);
  expect((await control('/gateway-a/pse/settle', { reference, outcome: 'approved' })).status).toBe(200);

  // The reminder link closed with the request: a payment can no longer start on it.
  const page = await eventually(
    () => fetch(renewalLink).then((response) => response.status),
    (status) => status === 410,
  );
  expect(page).toBe(410);
  const [payment] = await eventually(
    () => gatewayPayments(reference),
    (payments) => refundedInFull(payments[0]),
    60_000,
  );
  expect(payment?.status).toBe('refunded');
  const member = await eventually(
    () => membershipOf(periods, who.token),
    (m) => m?.status === 'CANCELLED',
    60_000,
  );
  expect(member?.periodNumber).toBe(1);
  await eventually(
    async () => (await periods.services.temporal.workflow.getHandle(who.workflowId).describe()).status.name,
    (status) => status === 'COMPLETED',
    60_000,
  );
  const files = keepHistories(periods, who.workflowId, 'membership-renewal-after-cancel-money-never-stranded');
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 180_000);

test('a renewal card approved while gateway A was down at the period end, its notification lost, is applied or refunded', async () => {
  const who = await activeMember(periods, 'outage-renewal');
  const due = await renewalDue(periods, who.token);
  const reference = due!.payment!.reference;
  // The card is taken "in process" by the gateway (a contingency review); it is approved during an outage. None of
  // the gateway's notifications about it arrive.
  await setFault('notifications', 'down');
  await payByCardAt(due!.payment!.checkoutUrl!, 'CONT');
  const [inProcess] = await eventually(
    () => gatewayPayments(reference),
    (payments) => payments.length === 1,
  );
  await setFault('gateway-a', 'down');
  expect((await control(`/gateway-a/payments/${inProcess!.id}/settle`, { outcome: 'approved' })).status).toBe(200);
  // The period ends while gateway A cannot be asked.
  const ended = await eventually(
    () => membershipOf(periods, who.token),
    (m) => m?.status !== 'ACTIVE' || (m?.periodNumber ?? 0) > 1,
    60_000,
  );
  await setFault('gateway-a', 'ok');

  const settled = await eventually(
    async () => ({ member: await membershipOf(periods, who.token), payments: await gatewayPayments(reference) }),
    ({ member, payments }) => (member?.status === 'ACTIVE' && member.periodNumber === 2) || refundedInFull(payments[0]),
    90_000,
  );
  const applied = settled.member?.status === 'ACTIVE' && settled.member.periodNumber === 2;
  expect(applied || refundedInFull(settled.payments[0])).toBe(true);
  if (!applied) expect(ended?.status).toBe('EXPIRED');
  await eventually(
    async () => (await periods.services.temporal.workflow.getHandle(who.workflowId).describe()).status.name,
    (status) => status === 'COMPLETED',
    60_000,
  );
  const files = keepHistories(periods, who.workflowId, 'membership-period-end-outage-money-never-stranded');
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 240_000);

test('money paid on a closed request after its execution ended is found by the reconciler sweep and refunded', async () => {
  const who = await buyer(brief, 'swept');
  const { checkoutUrl } = await signUp(brief, who.token, await createPlan(brief));
  const pending = await membershipOf(brief, who.token);
  const reference = pending!.payment!.reference;
  await eventually(
    () => membershipOf(brief, who.token),
    (m) => m?.status === 'EXPIRED',
  );
  await eventually(
    async () => (await brief.services.temporal.workflow.getHandle(who.workflowId).describe()).status.name,
    (status) => status === 'COMPLETED',
    60_000,
  );
  expect(checkoutUrl).toBeTruthy();
  // A charge on the request's reference reaches the gateway after everything closed (a retried API charge, say),
  // and its notification is lost: only the reconciler can find it.
  await setFault('notifications', 'down');
  const charged = await chargeThroughApi(reference, pending!.payment!.amount, who.email);
  expect(charged.status).toBe('approved');

  const counts = await brief.services.temporal.workflow.execute<typeof reconciler>('reconciler', {
    taskQueue: brief.env.TEMPORAL_TASK_QUEUE,
    workflowId: `reconciler-membership-test-${unique()}`,
    args: [{ marginMs: 0, batchSize: 50, workspaceId: organizer.workspaceId }],
    workflowExecutionTimeout: '2 minutes',
  });
  expect(counts.lateMoneyFound).toBeGreaterThanOrEqual(1);
  const [payment] = await eventually(
    () => gatewayPayments(reference),
    (payments) => refundedInFull(payments.find((candidate) => String(candidate.id) === String(charged.id))),
    60_000,
  ).then((payments) => payments.filter((candidate) => String(candidate.id) === String(charged.id)));
  expect(payment?.status).toBe('refunded');
  expect((await membershipOf(brief, who.token))?.status).toBe('EXPIRED');
}, 180_000);

/** The worker's ticketing_refunds_refused_total{process="membership"} (its /metrics, as Prometheus scrapes it). */
async function membershipRefundsRefused(): Promise<number> {
  const port = process.env.WORKER_METRICS_PORT ?? '9464';
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text
    .split('\n')
    .find((candidate) =>
      candidate.startsWith('ticketing_refunds_refused_total{process="membership",gateway="GATEWAY_A"}'),
    );
  return line ? Number(line.split(' ').pop()) : 0;
}

test('a refund the gateway keeps refusing is recorded REFUND_REFUSED, counted, parked, and refunded once an operator retries it', async () => {
  const who = await activeMember(brief, 'refused-refund');
  const reference = await referenceOfSignup(who.email);
  const [signupPayment] = await gatewayPayments(reference);
  const before = await membershipRefundsRefused();
  // The merchant's balance cannot cover refunds of this reference; the buyer pays the signup a second time.
  expect(
    (
      await control('/refund-refusals', {
        gateway: 'gateway-a',
        reference,
        reason: 'insufficient merchant balance',
      })
    ).status,
  ).toBe(201);
  // The paid signup's link is closed, so the second charge comes through the gateway's API (a retried charge).
  const secondId = String((await chargeThroughApi(reference, PLAN_PRICE, who.email)).id);
  expect(secondId).not.toBe(String(signupPayment?.id));

  const refused = await eventually(
    () => paymentRow(secondId),
    (row) => row?.status === 'REFUND_REFUSED',
    90_000,
  );
  expect(refused?.status).toBe('REFUND_REFUSED');
  expect(await membershipRefundsRefused()).toBe(before + 1);
  expect((await gatewayPayments(reference)).find((payment) => String(payment.id) === secondId)?.status).toBe(
    'approved',
  );

  // The balance is topped up and an operator retries the refund: the parked execution refunds it.
  await fetch(`${brief.env.SANDBOX_URL}/control/refund-refusals`, {
    method: 'DELETE',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ gateway: 'gateway-a', reference }),
  });
  await brief.services.temporal.workflow
    .getHandle(who.workflowId)
    .signal(retryRefusedRefundSignal, { membershipPaymentId: refused!.id });
  const back = await eventually(
    () => paymentRow(secondId),
    (row) => row?.status === 'REFUNDED',
    60_000,
  );
  expect(back?.status).toBe('REFUNDED');
  const payments = await gatewayPayments(reference);
  expect(refundedInFull(payments.find((payment) => String(payment.id) === secondId))).toBe(true);
  expect(payments.find((payment) => String(payment.id) !== secondId)?.status).toBe('approved');
  // The member is still active: the run that parked and retried the refund goes on holding the period.
  const files = keepHistories(brief, who.workflowId, 'membership-refund-refused-retried-money-never-stranded');
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 240_000);

test('no membership execution of this file failed, was terminated or timed out', async () => {
  const bad: string[] = [];
  for (const workflowId of ourWorkflows) {
    for await (const execution of brief.services.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      if (['FAILED', 'TERMINATED', 'TIMED_OUT'].includes(execution.status.name)) {
        bad.push(`${workflowId} ${execution.runId} ${execution.status.name}`);
      }
    }
  }
  expect(ourWorkflows.size).toBeGreaterThan(0);
  expect(bad).toEqual([]);
}, 60_000);
