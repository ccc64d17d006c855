/**
 * Replay of the membership workflow: fresh executions of its stories must replay deterministically against today's
 * code, and `RECORD_WORKFLOW_HISTORIES=1 npm test -- test/replay/membership-replay.test.ts -t '<scenario>'` commits
 * their histories as fixtures (new files only; see recorder.ts). The committed fixtures are replayed with every other
 * committed history by checkout-replay.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { providerUrls } from '../../config/env.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { membershipWorkflowId } from '../../workflows/membership-definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { cardToken, confirmAtBank, eventually, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';
import { exportHistory, replayHistories } from './recorder.js';

/** Periods of 12 s with the renewal asked 8 s before the end. */
let periods: TestApi;
/** A signup link open for 3 s. */
let brief: TestApi;
let organizer: Organizer;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));

beforeAll(async () => {
  periods = await startTestApi({
    MEMBERSHIP_PERIOD_MS: '12000',
    MEMBERSHIP_RENEWAL_NOTICE_MS: '8000',
    MEMBERSHIP_REMINDER_INTERVAL_MS: '3000',
    MEMBERSHIP_PAYMENT_POLL_MS: '2000',
  });
  brief = await startTestApi({ MEMBERSHIP_SIGNUP_WINDOW_MS: '3000', MEMBERSHIP_PAYMENT_POLL_MS: '1000' });
  organizer = await createOrganizer(periods.orm.em.fork());
});
afterAll(async () => {
  await periods.close();
  await brief.close();
  rmSync(scratch, { recursive: true, force: true });
});

const record = (target: TestApi, workflowId: string, name: string, runId?: string) =>
  exportHistory({ address: target.env.TEMPORAL_ADDRESS, workflowId, name, scratchDir: scratch, runId });

async function setUp(target: TestApi) {
  const plan = await target.request({
    method: 'POST',
    url: '/api/v1/membership-plans',
    headers: bearer(organizer.key),
    payload: { name: 'Replay club', price: 15_000, period: 'MONTHLY' },
  });
  const email = `replay-member-${Math.random().toString(36).slice(2, 8)}@buyers.test`;
  const token = await signInBuyer(target, email);
  const me = await target.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) });
  const buyerId: string = me.json().data.id;
  return {
    planId: plan.json().data.id as string,
    email,
    token,
    workflowId: membershipWorkflowId(organizer.workspaceId, buyerId),
  };
}

const membershipOf = async (target: TestApi, token: string) =>
  (
    await target.request({
      method: 'GET',
      url: `/api/v1/customer/membership?workspaceId=${organizer.workspaceId}`,
      headers: session(token),
    })
  ).json().data;

const settle = (target: TestApi, reference: string) =>
  fetch(`${target.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reference, outcome: 'approved' }),
  });

async function lateCharge(target: TestApi, reference: string, amount: number, email: string): Promise<void> {
  const client = new GatewayAClient({
    baseUrl: providerUrls(target.env).gatewayA,
    accessToken: target.env.GATEWAY_A_ACCESS_TOKEN,
    publicKey: target.env.GATEWAY_A_PUBLIC_KEY,
  });
  await client.createPayment({
    idempotencyKey: `late-${reference}`,
    cardToken: await cardToken(target, 'APRO'),
    amount,
    currency: 'COP',
    description: 'late membership charge',
    payerEmail: email,
    externalReference: reference,
    notificationUrl: `${target.env.GATEWAY_NOTIFICATION_ORIGIN ?? target.env.PUBLIC_ORIGIN}/api/v1/webhooks/gateway-a`,
  });
}

async function payOpenRequest(target: TestApi, token: string, email: string): Promise<void> {
  const view = await eventually(
    () => membershipOf(target, token),
    (m) => Boolean(m?.payment?.checkoutUrl),
  );
  await confirmAtBank(view.payment.checkoutUrl, email);
  await settle(target, view.payment.reference);
}

test('membership executions that renewed (continue as new) and were cancelled replay deterministically', async () => {
  const { planId, email, token, workflowId } = await setUp(periods);
  const signup = await periods.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions',
    headers: session(token),
    payload: { planId },
  });
  expect(signup.statusCode).toBe(201);
  const handle = periods.services.temporal.workflow.getHandle(workflowId);
  const firstRunId = (await handle.describe()).runId;
  await payOpenRequest(periods, token, email);
  await eventually(
    () => membershipOf(periods, token),
    (m) => m?.renewalState === 'DUE',
  );
  await payOpenRequest(periods, token, email);
  await eventually(
    () => membershipOf(periods, token),
    (m) => m?.periodNumber === 2,
    30_000,
  );
  const cancelled = await periods.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions/cancel',
    headers: session(token),
    payload: { workspaceId: organizer.workspaceId },
  });
  expect(cancelled.statusCode).toBe(200);
  await eventually(
    async () => (await handle.describe()).status.name,
    (status) => status === 'COMPLETED',
    30_000,
  );
  const files = [
    record(periods, workflowId, 'membership-renewed-first-run', firstRunId),
    record(periods, workflowId, 'membership-renewed-cancelled-next-run'),
  ];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true, true]);
}, 120_000);

test('membership executions of an expired signup and of the late payment they refunded replay deterministically', async () => {
  const { planId, email, token, workflowId } = await setUp(brief);
  const signup = await brief.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions',
    headers: session(token),
    payload: { planId },
  });
  expect(signup.statusCode).toBe(201);
  const handle = brief.services.temporal.workflow.getHandle(workflowId);
  const firstRunId = (await handle.describe()).runId;
  const pending = await membershipOf(brief, token);
  await eventually(
    () => membershipOf(brief, token),
    (m) => m?.status === 'EXPIRED',
  );
  // Nothing was paid: the run asks the gateway once more after the close, then ends. (A transfer still pending at
  // the bank keeps an ended run asking for it: see test/faults/membership-money.test.ts.)
  await eventually(
    async () => (await handle.describe()).status.name,
    (status) => status === 'COMPLETED',
  );
  // A charge on the closed request's reference arrives afterwards (a retried API charge): its notification starts
  // a run that refunds it.
  await lateCharge(brief, pending.payment.reference, pending.payment.amount, email);
  await eventually(
    async () => {
      const latest = await handle.describe();
      return latest.runId !== firstRunId ? latest.status.name : 'first';
    },
    (status) => status === 'COMPLETED',
    30_000,
  );
  const files = [
    record(brief, workflowId, 'membership-signup-expired', firstRunId),
    record(brief, workflowId, 'membership-late-payment-refunded'),
  ];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true, true]);
}, 120_000);
