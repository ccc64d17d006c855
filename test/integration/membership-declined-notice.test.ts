/**
 * "Retries with notice" (issue 12): a declined renewal payment is told to the buyer once per declined payment, by the
 * step that records the decline (activities/memberships.ts `notePaymentRejected`), however often the step is retried
 * or the gateway repeats its notification. The step runs here in Temporal's mock activity environment, so each try's
 * attempt number is chosen, against the real database and sandbox gateway; mail goes to an in-memory outbox that can
 * be made to fail. The subscription and its payment requests are written by the membership's own steps.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createMembershipActivities, type MembershipVerdict } from '../../activities/memberships.js';
import type { MailPort } from '../../activities/ports.js';
import { createProviders } from '../../worker/providers.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const quiet: Logger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

type SentMail = Parameters<MailPort['send']>[0];

/** The mail port the step uses: records what was sent; `failNext` makes the next sends fail as an SMTP outage would. */
const mail = {
  sent: [] as SentMail[],
  failNext: 0,
  async send(message: SentMail): Promise<void> {
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error('421 mail server unavailable (simulated)');
    }
    this.sent.push(message);
  },
};

let api: TestApi;
let organizer: Organizer;
let providers: ReturnType<typeof createProviders>;
let activities: ReturnType<typeof createMembershipActivities>;

beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  providers = createProviders(api.env);
  activities = createMembershipActivities({
    env: api.env,
    orm: api.orm,
    redis: api.services.redis,
    temporal: api.services.temporal,
    providers: { ...providers, mail },
  });
});
afterAll(async () => {
  providers?.close();
  await api?.close();
});
beforeEach(() => {
  mail.sent = [];
  mail.failNext = 0;
});

/** One try of a step, as the worker runs it: `attempt` is what Temporal would report for that try. */
const tryStep = <I, O>(step: (input: I) => Promise<O>, input: I, attempt = 1): Promise<O> =>
  new MockActivityEnvironment({ attempt }, { logger: quiet }).run(step, input);

const rows = <T>(sql: string, params: unknown[]) => api.orm.em.fork().getConnection().execute<T[]>(sql, params);

/** An ACTIVE member whose renewal (period 2) is asked for with a gateway A link, as the workflow's steps leave it. */
async function memberWithOpenRenewal() {
  const plan = await api.request({
    method: 'POST',
    url: '/api/v1/membership-plans',
    headers: bearer(organizer.key),
    payload: { name: `Club ${randomUUID().slice(0, 6)}`, price: 20_000, period: 'MONTHLY' },
  });
  expect(plan.statusCode).toBe(201);
  const email = `declined-${randomUUID().slice(0, 8)}@buyers.test`;
  const token = await signInBuyer(api, email);
  const buyerId: string = (
    await api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) })
  ).json().data.id;
  const subscriptionId = randomUUID();
  const signup = await tryStep(activities.startSignup, {
    subscriptionId,
    paymentId: randomUUID(),
    workspaceId: organizer.workspaceId,
    buyerId,
    planId: plan.json().data.id,
    nowMs: Date.now(),
    signupWindowMs: 60_000,
  });
  if (!signup.ok) throw new Error(`signup refused: ${signup.reason}`);
  const approved: MembershipVerdict = {
    outcome: 'approved',
    providerPaymentId: `signup-${randomUUID()}`,
    reference: signup.payment.reference,
    amount: 20_000,
    currency: 'COP',
    rawStatus: 'approved',
    statusDetail: 'accredited',
  };
  const activated = await tryStep(activities.applyApprovedPayment, {
    currentSubscriptionId: subscriptionId,
    verdict: approved,
    nowMs: Date.now(),
    periodMs: 60_000,
  });
  expect(activated.outcome).toBe('activated');
  const renewal = await tryStep(activities.openRenewal, {
    subscriptionId,
    paymentId: randomUUID(),
    expiresAtMs: activated.snapshot!.currentPeriodEndMs!,
  });
  if (!renewal.ok) throw new Error(`renewal not opened: ${renewal.reason}`);
  const { checkoutUrl } = await tryStep(activities.openPaymentLink, { paymentId: renewal.payment.paymentId });
  return {
    email,
    subscriptionId,
    reference: renewal.payment.reference,
    checkoutUrl,
    periodEndMs: activated.snapshot!.currentPeriodEndMs!,
  };
}

const declinedRows = (subscriptionId: string) =>
  rows<{ period_number: number; provider_payment_id: string; status_detail: string }>(
    `select period_number, provider_payment_id, status_detail from membership_payments
      where subscription_id = ? and status = 'REJECTED' order by created_at`,
    [subscriptionId],
  );

test('a declined renewal payment is told once, with the open link and the instant access ends; a repeat sends nothing', async () => {
  const member = await memberWithOpenRenewal();
  const declined = {
    reference: member.reference,
    providerPaymentId: `declined-${randomUUID()}`,
    statusDetail: 'cc_rejected_insufficient_amount',
  };

  await tryStep(activities.notePaymentRejected, declined);
  expect(mail.sent).toHaveLength(1);
  const [notice] = mail.sent;
  expect(notice!.to).toBe(member.email);
  expect(notice!.subject).toMatch(/renewal payment was declined$/);
  expect(notice!.text).toContain(member.checkoutUrl);
  const until = new Date(member.periodEndMs).toISOString().slice(0, 16).replace('T', ' ');
  expect(notice!.text).toContain(`Without this payment your access ends ${until} UTC.`);
  expect(notice!.html).toContain('<a href=');
  const [subscription] = await rows<{ renewal_state: string }>(
    'select renewal_state from membership_subscriptions where id = ?',
    [member.subscriptionId],
  );
  expect(subscription!.renewal_state).toBe('FAILED');

  // The gateway repeats the notification, or the step runs again after a crash: the record is found, nothing is sent.
  await tryStep(activities.notePaymentRejected, declined);
  await tryStep(activities.notePaymentRejected, declined, 2);
  expect(mail.sent).toHaveLength(1);
  expect(await declinedRows(member.subscriptionId)).toEqual([
    {
      period_number: 2,
      provider_payment_id: declined.providerPaymentId,
      status_detail: `cc_rejected_insufficient_amount (${member.reference})`,
    },
  ]);

  // Another declined payment of the same link is another notice.
  await tryStep(activities.notePaymentRejected, { ...declined, providerPaymentId: `declined-${randomUUID()}` });
  expect(mail.sent).toHaveLength(2);
  expect(await declinedRows(member.subscriptionId)).toHaveLength(2);
});

test('a notice the mail server refused is sent by the retry of the step, and then only once', async () => {
  const member = await memberWithOpenRenewal();
  const declined = { reference: member.reference, providerPaymentId: `declined-${randomUUID()}`, statusDetail: null };
  mail.failNext = 2;
  await expect(tryStep(activities.notePaymentRejected, declined, 1)).rejects.toThrow(/mail server unavailable/);
  await expect(tryStep(activities.notePaymentRejected, declined, 2)).rejects.toThrow(/mail server unavailable/);
  // Nothing is recorded while the notice is owed, so the retry still sends it.
  expect(await declinedRows(member.subscriptionId)).toEqual([]);
  await tryStep(activities.notePaymentRejected, declined, 3);
  expect(mail.sent).toHaveLength(1);
  await tryStep(activities.notePaymentRejected, declined, 4);
  expect(mail.sent).toHaveLength(1);
  expect((await declinedRows(member.subscriptionId)).map((row) => row.status_detail)).toEqual([
    `rejected (${member.reference})`,
  ]);
});

test('a mail server down for good holds the money handling for a few quick tries only; the decline is still recorded', async () => {
  const member = await memberWithOpenRenewal();
  const declined = {
    reference: member.reference,
    providerPaymentId: `declined-${randomUUID()}`,
    statusDetail: 'cc_rejected_other_reason',
  };
  mail.failNext = 1_000;
  for (const attempt of [1, 2, 3]) {
    await expect(tryStep(activities.notePaymentRejected, declined, attempt)).rejects.toThrow();
  }
  await tryStep(activities.notePaymentRejected, declined, 4);
  expect(mail.sent).toEqual([]);
  expect((await declinedRows(member.subscriptionId)).map((row) => row.status_detail)).toEqual([
    `cc_rejected_other_reason (${member.reference}; notice not sent)`,
  ]);
  const [subscription] = await rows<{ renewal_state: string }>(
    'select renewal_state from membership_subscriptions where id = ?',
    [member.subscriptionId],
  );
  expect(subscription!.renewal_state).toBe('FAILED');
});

test('a declined signup payment is recorded without a mail: the buyer is on the page that said so', async () => {
  const plan = await api.request({
    method: 'POST',
    url: '/api/v1/membership-plans',
    headers: bearer(organizer.key),
    payload: { name: `Club ${randomUUID().slice(0, 6)}`, price: 20_000, period: 'MONTHLY' },
  });
  const token = await signInBuyer(api, `signup-declined-${randomUUID().slice(0, 8)}@buyers.test`);
  const buyerId: string = (
    await api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) })
  ).json().data.id;
  const subscriptionId = randomUUID();
  const signup = await tryStep(activities.startSignup, {
    subscriptionId,
    paymentId: randomUUID(),
    workspaceId: organizer.workspaceId,
    buyerId,
    planId: plan.json().data.id,
    nowMs: Date.now(),
    signupWindowMs: 60_000,
  });
  if (!signup.ok) throw new Error(`signup refused: ${signup.reason}`);
  await tryStep(activities.notePaymentRejected, {
    reference: signup.payment.reference,
    providerPaymentId: `declined-${randomUUID()}`,
    statusDetail: 'rejected_by_bank',
  });
  expect(mail.sent).toEqual([]);
  expect(await declinedRows(subscriptionId)).toEqual([
    expect.objectContaining({ period_number: 1, status_detail: `rejected_by_bank (${signup.payment.reference})` }),
  ]);
  const [subscription] = await rows<{ status: string; renewal_state: string }>(
    'select status, renewal_state from membership_subscriptions where id = ?',
    [subscriptionId],
  );
  expect(subscription).toEqual({ status: 'PENDING', renewal_state: 'AWAITING_SIGNUP_PAYMENT' });
});

test('a payment recorded as declined that the gateway later reports approved still pays the renewal', async () => {
  const member = await memberWithOpenRenewal();
  const providerPaymentId = `revised-${randomUUID()}`;
  await tryStep(activities.notePaymentRejected, {
    reference: member.reference,
    providerPaymentId,
    statusDetail: 'cc_rejected_other_reason',
  });
  const paid = await tryStep(activities.applyApprovedPayment, {
    currentSubscriptionId: member.subscriptionId,
    verdict: {
      outcome: 'approved',
      providerPaymentId,
      reference: member.reference,
      amount: 20_000,
      currency: 'COP',
      rawStatus: 'approved',
      statusDetail: 'accredited',
    },
    nowMs: Date.now(),
    periodMs: 60_000,
  });
  expect(paid.outcome).toBe('renewal_paid');
  expect(paid.snapshot?.renewalState).toBe('PAID');
  expect(await declinedRows(member.subscriptionId)).toEqual([]);
  const [renewal] = await rows<{ status: string; provider_payment_id: string }>(
    'select status, provider_payment_id from membership_payments where subscription_id = ? and period_number = 2',
    [member.subscriptionId],
  );
  expect(renewal).toEqual({ status: 'APPROVED', provider_payment_id: providerPaymentId });
});
