/**
 * Memberships end to end over HTTP against the real stack: a buyer joins and pays by PSE in the sandbox, buys a
 * members-only ticket at member price, renews, has a renewal payment declined (and is told), fails to renew,
 * cancels; money that can pay nothing is refunded. Durations are workflow inputs (MEMBERSHIP_* env of the in-process
 * API), so whole periods last seconds; every wait is "eventually", never a timed assertion.
 */
import { membershipWorkflowId } from '../../workflows/membership-definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  cardToken,
  confirmAtBank,
  customerOrder,
  eventually,
  type InboxMessage,
  inbox,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
  waitForMail,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
/** Periods of 24 s, renewal asked 14 s before the end, reminders every 5 s. */
let fast: TestApi;
/** A signup link open for 5 s. */
let brief: TestApi;
let organizer: Organizer;

beforeAll(async () => {
  api = await startTestApi({ MEMBERSHIP_PAYMENT_POLL_MS: '2000' });
  fast = await startTestApi({
    MEMBERSHIP_PERIOD_MS: '24000',
    MEMBERSHIP_RENEWAL_NOTICE_MS: '14000',
    MEMBERSHIP_REMINDER_INTERVAL_MS: '5000',
    MEMBERSHIP_PAYMENT_POLL_MS: '2000',
  });
  brief = await startTestApi({ MEMBERSHIP_SIGNUP_WINDOW_MS: '5000', MEMBERSHIP_PAYMENT_POLL_MS: '2000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
  await fast.close();
  await brief.close();
});

const unique = () => Math.random().toString(36).slice(2, 8);
// The tests that wait for membership periods to pass (each with its own plan and buyer) run side by side.

async function createPlan(body: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  const response = await api.request({
    method: 'POST',
    url: '/api/v1/membership-plans',
    headers: bearer(organizer.key),
    payload: {
      name: `Club ${unique()}`,
      price: 20_000,
      period: 'MONTHLY',
      benefits: { membersOnlyAccess: true, discountPercent: 10 },
      ...body,
    },
  });
  expect(response.statusCode).toBe(201);
  return response.json().data;
}

interface MembershipView {
  subscriptionId: string;
  status: string;
  member: boolean;
  renewalState: string;
  periodNumber: number;
  since: string | null;
  periodPrice: number | null;
  benefits: { membersOnlyAccess: boolean; discountPercent: number } | null;
  currentPeriodEnd: string | null;
  endReason: string | null;
  payment: { reference: string; amount: number; checkoutUrl: string | null; periodNumber: number } | null;
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

const signUp = (target: TestApi, token: string, planId: string) =>
  target.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions',
    headers: session(token),
    payload: { planId },
  });

const settleAtGateway = (target: TestApi, reference: string, outcome: 'approved' | 'rejected' = 'approved') =>
  fetch(`${target.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reference, outcome }),
  });

/** The buyer pays the open payment request by PSE: the bank page, then the bank settles it approved. */
async function payOpenRequest(target: TestApi, token: string, email: string): Promise<string> {
  const view = await eventually(
    () => membershipOf(target, token),
    (m) => Boolean(m?.payment?.checkoutUrl),
  );
  const payment = view!.payment!;
  expect((await confirmAtBank(payment.checkoutUrl!, email)).status).toBe(302);
  expect((await settleAtGateway(target, payment.reference)).status).toBe(200);
  return payment.reference;
}

async function join(target: TestApi, planId: string, label: string) {
  const email = `${label}-${unique()}@buyers.test`;
  const token = await signInBuyer(target, email);
  const created = await signUp(target, token, planId);
  expect(created.statusCode).toBe(201);
  const reference = await payOpenRequest(target, token, email);
  const active = await eventually(
    () => membershipOf(target, token),
    (m) => m?.status === 'ACTIVE',
  );
  return { email, token, reference, subscriptionId: created.json().data.subscriptionId as string, active: active! };
}

const rows = <T>(target: TestApi, sql: string, params: unknown[]) =>
  target.orm.em.fork().getConnection().execute<T[]>(sql, params);

const DECLINED_NOTICE = /^Your .+ renewal payment was declined$/;

const declinedNotices = async (target: TestApi, email: string): Promise<InboxMessage[]> =>
  (await inbox(target.env.SANDBOX_URL, email)).filter((m) => DECLINED_NOTICE.test(m.subject));

/** An instant as the membership emails write it: UTC, to the minute. */
const mailInstant = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

/** How many declined payments the buyer's membership execution has handled (its notePaymentRejected steps). */
async function declineSteps(target: TestApi, token: string): Promise<number> {
  const me = await target.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) });
  const workflowId = membershipWorkflowId(organizer.workspaceId, me.json().data.id);
  const history = await target.services.temporal.workflow.getHandle(workflowId).fetchHistory();
  // A local step's marker names its activity type in plain JSON (the payload codec encrypts only its result).
  return (history.events ?? []).filter((event) => {
    const data = event.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
    if (!data) return false;
    const marker = JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string };
    return marker.activity_type === 'notePaymentRejected';
  }).length;
}

const paymentRows = (target: TestApi, subscriptionId: string) =>
  rows<{ period_number: number; status: string; status_detail: string | null }>(
    target,
    `select period_number, status, status_detail from membership_payments where subscription_id = ?
      order by period_number, status, created_at`,
    [subscriptionId],
  );

const outboxEvents = (target: TestApi, subscriptionId: string) =>
  rows<{ type: string; payload: Record<string, unknown> }>(
    target,
    `select type, payload from outbox_events where payload->>'subscriptionId' = ? order by created_at`,
    [subscriptionId],
  );

test('a buyer joins: the signup link is idempotent, the PSE payment activates once, members get member pricing', async () => {
  const plan = await createPlan();
  const email = `joiner-${unique()}@buyers.test`;
  const token = await signInBuyer(api, email);

  const first = await signUp(api, token, plan.id);
  expect(first.statusCode).toBe(201);
  const signup = first.json().data;
  expect(signup).toMatchObject({ status: 'PENDING', planId: plan.id, amount: 20_000, currency: 'COP' });
  expect(signup.checkoutUrl).toMatch(/\/gateway-a\/pse\/checkout\//);
  expect(Date.parse(signup.expiresAt)).toBeGreaterThan(Date.now());
  // The same pending signup for the same plan answers the same link.
  const again = await signUp(api, token, plan.id);
  expect(again.statusCode).toBe(201);
  expect(again.json().data).toEqual(signup);
  await waitForMail(api.env.SANDBOX_URL, email, (m) => /Complete your/.test(m.subject));

  const pending = await membershipOf(api, token);
  expect(pending).toMatchObject({ status: 'PENDING', member: false, renewalState: 'AWAITING_SIGNUP_PAYMENT' });
  const reference = pending!.payment!.reference;
  expect(reference).toMatch(/^MB-[2-9A-HJ-NP-Z]{8}$/);

  expect((await confirmAtBank(signup.checkoutUrl, email)).status).toBe(302);
  const settledAtMs = Date.now();
  expect((await settleAtGateway(api, reference)).status).toBe(200);
  const active = await eventually(
    () => membershipOf(api, token),
    (m) => m?.status === 'ACTIVE',
  );
  // `since` is the activation: when the execution applied the payment, after the bank settled it and before the
  // buyer saw the membership active.
  expect(Date.parse(active!.since!)).toBeGreaterThanOrEqual(settledAtMs - 1_000);
  expect(Date.parse(active!.since!)).toBeLessThanOrEqual(Date.now());
  expect(active).toMatchObject({
    subscriptionId: signup.subscriptionId,
    member: true,
    periodNumber: 1,
    renewalState: 'SCHEDULED',
    periodPrice: 20_000,
    benefits: { membersOnlyAccess: true, discountPercent: 10 },
    payment: null,
  });
  await waitForMail(api.env.SANDBOX_URL, email, (m) => /Welcome to/.test(m.subject));

  // A duplicated notification never activates twice.
  const replayed = await fetch(`${api.env.SANDBOX_URL}/control/notifications/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ gateway: 'gateway-a', reference }),
  });
  expect(replayed.status).toBe(200);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const payments = await rows<{ status: string }>(
    api,
    'select status from membership_payments where subscription_id = ?',
    [signup.subscriptionId],
  );
  expect(payments.map((p) => p.status)).toEqual(['APPROVED']);
  expect((await outboxEvents(api, signup.subscriptionId)).map((e) => e.type)).toEqual(['membership.activated']);
  const [event] = await outboxEvents(api, signup.subscriptionId);
  expect(Object.keys(event!.payload).sort()).toEqual(
    ['currentPeriodEnd', 'organizationId', 'periodNumber', 'planId', 'status', 'subscriptionId'].sort(),
  );

  // An active member cannot join again.
  const twice = await signUp(api, token, plan.id);
  expect(twice.statusCode).toBe(409);
  expect(twice.json().error.code).toBe('ALREADY_MEMBER');

  // The organizer sees the real subscriber.
  const subscribers = await api.request({
    method: 'GET',
    url: `/api/v1/membership-plans/${plan.id}/subscribers`,
    headers: bearer(organizer.readKey),
  });
  expect(subscribers.json().data).toEqual([
    expect.objectContaining({
      id: signup.subscriptionId,
      email,
      status: 'ACTIVE',
      renewalState: 'SCHEDULED',
      currentPeriodEnd: active!.currentPeriodEnd,
      cancelledAt: null,
    }),
  ]);
  // The subscribers export (ExportSubscriber) shows the subscription the workflow created, as the buyer sees it.
  const exported = await api.request({
    method: 'GET',
    url: '/api/v1/reports/exports/subscribers',
    headers: bearer(organizer.readKey),
  });
  expect(exported.statusCode).toBe(200);
  expect(exported.json().data.filter((row: { email: string }) => row.email === email)).toEqual([
    {
      name: email,
      email,
      plan: plan.name,
      status: 'ACTIVE',
      since: active!.since,
      expiresAt: active!.currentPeriodEnd,
    },
  ]);

  // Member pricing and a members-only ticket (checkout reads the period's frozen benefits).
  const event1 = await publishEvent(api, organizer, { price: 50_000, ticketType: { membersOnly: true } });
  const body = {
    eventDateId: event1.eventDateId,
    items: [{ ticketTypeId: event1.ticketTypeId, quantity: 1 }],
    buyer: { name: 'Ana Member', phone: '+57 300 000 0000', idType: 'CC', idNumber: '1020304050' },
    returnUrl: 'http://localhost:5173/thanks',
  };
  const outsider = await signInBuyer(api, `outsider-${unique()}@buyers.test`);
  const refused = await reserveOrder(api, outsider, body);
  expect(refused.statusCode).toBe(409);
  expect(refused.json().error.code).toBe('MEMBERS_ONLY');
  const bought = await reserveOrder(api, token, body);
  expect(bought.statusCode).toBe(201);
  const order = bought.json().data;
  const sale = await rows<{ discount_amount: number; subtotal: number }>(
    api,
    'select discount_amount, subtotal from sales where id = ?',
    [order.saleId],
  );
  expect(sale[0]).toEqual({ subtotal: 50_000, discount_amount: 5_000 });
  // 50,000 − 10 % member discount + fee 5,000 (10 % of the list price) + IVA 950: the charge is the member price.
  expect(order.total).toBe(45_000 + 5_000 + 950);

  // The member pays by card in the sandbox: the sale is CONFIRMED and the members-only ticket is issued.
  const opened = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${order.saleId}/payment`,
    headers: session(token),
  });
  expect(opened.statusCode).toBe(200);
  expect(opened.json().data).toMatchObject({ amount: order.total, reference: order.reference });
  const charged = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
    headers: session(token),
    payload: { token: await cardToken(api, 'APRO') },
  });
  expect(charged.statusCode).toBe(200);
  expect(charged.json().data).toMatchObject({ status: 'approved', saleStatus: 'CONFIRMED' });
  const confirmed = await customerOrder(api, token, order.saleId);
  expect(confirmed).toMatchObject({ status: 'CONFIRMED', total: order.total, discountAmount: 5_000 });
  expect(confirmed.tickets).toHaveLength(1);
  expect(confirmed.tickets[0]).toMatchObject({ ticketTypeId: event1.ticketTypeId });
  const ticketMail = await waitForMail(api.env.SANDBOX_URL, email, (m) => m.subject.includes(order.reference));
  expect(ticketMail.text).toContain(confirmed.tickets[0].code);
}, 120_000);

test.concurrent('renewal paid: the next period starts at the plan price of its renewal, with the terms frozen per period; a cancel keeps access until the period ends', async () => {
  const plan = await createPlan({ price: 20_000 });
  const { email, token, subscriptionId } = await join(fast, plan.id, 'renews');

  // The organizer changes the plan during period 1: the current period keeps its terms.
  const patched = await fast.request({
    method: 'PATCH',
    url: `/api/v1/membership-plans/${plan.id}`,
    headers: bearer(organizer.key),
    payload: { price: 30_000, benefits: { discountPercent: 20 } },
  });
  expect(patched.statusCode).toBe(200);
  expect(await membershipOf(fast, token)).toMatchObject({ periodPrice: 20_000, benefits: { discountPercent: 10 } });

  // Before the period ends the renewal is asked for at the plan's current price, by email with the link.
  const due = await eventually(
    () => membershipOf(fast, token),
    (m) => m?.renewalState === 'DUE' && Boolean(m.payment?.checkoutUrl),
  );
  expect(due!.payment).toMatchObject({ periodNumber: 2, amount: 30_000 });
  const renewMail = await waitForMail(fast.env.SANDBOX_URL, email, (m) => /^Renew your/.test(m.subject));
  expect(renewMail.text).toContain(due!.payment!.checkoutUrl!);

  await payOpenRequest(fast, token, email);
  await eventually(
    () => membershipOf(fast, token),
    (m) => m?.renewalState === 'PAID',
  );
  const renewed = await eventually(
    () => membershipOf(fast, token),
    (m) => m?.periodNumber === 2,
    40_000,
  );
  expect(renewed).toMatchObject({
    status: 'ACTIVE',
    member: true,
    periodPrice: 30_000,
    benefits: { membersOnlyAccess: true, discountPercent: 20 },
  });
  await waitForMail(fast.env.SANDBOX_URL, email, (m) => /renewed/.test(m.subject));

  // The buyer cancels: access continues until the period ends, then the membership is CANCELLED.
  const cancelled = await fast.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions/cancel',
    headers: session(token),
    payload: { workspaceId: organizer.workspaceId },
  });
  expect(cancelled.statusCode).toBe(200);
  expect(cancelled.json().data).toMatchObject({
    status: 'ACTIVE',
    member: true,
    renewalState: 'CANCEL_AT_PERIOD_END',
    currentPeriodEnd: renewed!.currentPeriodEnd,
    payment: null,
  });
  const ended = await eventually(
    () => membershipOf(fast, token),
    (m) => m?.status === 'CANCELLED',
    40_000,
  );
  expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(renewed!.currentPeriodEnd!));
  expect(ended).toMatchObject({ member: false, renewalState: 'ENDED', endReason: 'cancelled' });
  expect((await outboxEvents(fast, subscriptionId)).map((e) => e.type)).toEqual([
    'membership.activated',
    'membership.renewed',
    'membership.cancelled',
  ]);
}, 180_000);

test.concurrent('renewal failed: reminders and a final notice, then access ends at period end (EXPIRED, renewal_unpaid)', async () => {
  const plan = await createPlan();
  const { email, token, active, subscriptionId } = await join(fast, plan.id, 'lapses');
  await waitForMail(fast.env.SANDBOX_URL, email, (m) => /^Renew your/.test(m.subject), 30_000);
  await waitForMail(fast.env.SANDBOX_URL, email, (m) => /^Final notice/.test(m.subject), 30_000);
  expect(await membershipOf(fast, token)).toMatchObject({ status: 'ACTIVE', member: true, renewalState: 'DUE' });
  const expired = await eventually(
    () => membershipOf(fast, token),
    (m) => m?.status === 'EXPIRED',
    40_000,
  );
  expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(active.currentPeriodEnd!));
  expect(expired).toMatchObject({ member: false, endReason: 'renewal_unpaid', renewalState: 'ENDED', payment: null });
  const statuses = await rows<{ period_number: number; status: string }>(
    fast,
    'select period_number, status from membership_payments where subscription_id = ? order by period_number',
    [subscriptionId],
  );
  expect(statuses).toEqual([
    { period_number: 1, status: 'APPROVED' },
    { period_number: 2, status: 'EXPIRED' },
  ]);
  expect((await outboxEvents(fast, subscriptionId)).map((e) => e.type)).toEqual([
    'membership.activated',
    'membership.expired',
  ]);
  // Lapsed, the buyer may join again.
  expect((await signUp(fast, token, plan.id)).statusCode).toBe(201);
}, 180_000);

test.concurrent('a declined renewal payment: the buyer is told once, with the same link and when access ends; paying that link renews', async () => {
  const plan = await createPlan();
  const { email, token, active, subscriptionId } = await join(fast, plan.id, 'declined');
  const due = await eventually(
    () => membershipOf(fast, token),
    (m) => m?.renewalState === 'DUE' && Boolean(m.payment?.checkoutUrl),
  );
  const { reference, checkoutUrl } = due!.payment!;

  // The buyer starts a PSE transfer for the renewal and the bank declines it.
  expect((await confirmAtBank(checkoutUrl!, email)).status).toBe(302);
  expect((await settleAtGateway(fast, reference, 'rejected')).status).toBe(200);
  const notice = await waitForMail(fast.env.SANDBOX_URL, email, (m) => DECLINED_NOTICE.test(m.subject));
  expect(notice.text).toContain('was declined');
  expect(notice.text).toContain(checkoutUrl!);
  expect(notice.text).toContain(`Without this payment your access ends ${mailInstant(active.currentPeriodEnd!)}`);
  expect(await membershipOf(fast, token)).toMatchObject({
    status: 'ACTIVE',
    member: true,
    renewalState: 'FAILED',
    payment: { reference, checkoutUrl, periodNumber: 2 },
  });

  // The gateway notifies the same declined payment again: it is handled, and no second notice goes out.
  const handled = await declineSteps(fast, token);
  const replayed = await fetch(`${fast.env.SANDBOX_URL}/control/notifications/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ gateway: 'gateway-a', reference }),
  });
  expect(replayed.status).toBe(200);
  await eventually(
    () => declineSteps(fast, token),
    (steps) => steps > handled,
  );
  expect(await declinedNotices(fast, email)).toHaveLength(1);

  // The same link still takes the payment: the renewal is paid and the next period starts where this one ends.
  await payOpenRequest(fast, token, email);
  const renewed = await eventually(
    () => membershipOf(fast, token),
    (m) => m?.periodNumber === 2,
    40_000,
  );
  expect(renewed).toMatchObject({ status: 'ACTIVE', member: true });
  expect(Date.parse(renewed!.currentPeriodEnd!)).toBeGreaterThan(Date.parse(active.currentPeriodEnd!));
  await waitForMail(fast.env.SANDBOX_URL, email, (m) => /renewed/.test(m.subject));
  expect(await declinedNotices(fast, email)).toHaveLength(1);
  expect(await paymentRows(fast, subscriptionId)).toEqual([
    { period_number: 1, status: 'APPROVED', status_detail: 'accredited' },
    { period_number: 2, status: 'APPROVED', status_detail: 'accredited' },
    { period_number: 2, status: 'REJECTED', status_detail: `rejected_by_bank (${reference})` },
  ]);
}, 180_000);

test.concurrent('two declined renewal payments bring one notice each; left unpaid, access ends at period end', async () => {
  const plan = await createPlan();
  const { email, token, active, subscriptionId } = await join(fast, plan.id, 'declined-twice');
  const due = await eventually(
    () => membershipOf(fast, token),
    (m) => m?.renewalState === 'DUE' && Boolean(m.payment?.checkoutUrl),
  );
  const { reference, checkoutUrl } = due!.payment!;
  // Test cards on the checkout page: FUND (insufficient funds), then OTHE (other reason) are declined at once.
  const payByCard = (holder: string) =>
    fetch(checkoutUrl!, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ decision: 'card', cardholder_name: holder }),
      redirect: 'manual',
    });
  expect((await payByCard('FUND')).status).toBe(302);
  await waitForMail(fast.env.SANDBOX_URL, email, (m) => DECLINED_NOTICE.test(m.subject));
  expect((await payByCard('OTHE')).status).toBe(302);
  const notices = await eventually(
    () => declinedNotices(fast, email),
    (found) => found.length >= 2,
  );
  for (const each of notices) expect(each.text).toContain(checkoutUrl!);
  expect(await membershipOf(fast, token)).toMatchObject({ member: true, renewalState: 'FAILED' });

  const expired = await eventually(
    () => membershipOf(fast, token),
    (m) => m?.status === 'EXPIRED',
    40_000,
  );
  expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(active.currentPeriodEnd!));
  expect(expired).toMatchObject({ member: false, endReason: 'renewal_unpaid', renewalState: 'ENDED', payment: null });
  expect(await declinedNotices(fast, email)).toHaveLength(2);
  const declined = (await paymentRows(fast, subscriptionId)).filter((row) => row.status === 'REJECTED');
  expect(declined.map((row) => row.status_detail).sort()).toEqual([
    `cc_rejected_insufficient_amount (${reference})`,
    `cc_rejected_other_reason (${reference})`,
  ]);
  expect((await outboxEvents(fast, subscriptionId)).map((e) => e.type)).toEqual([
    'membership.activated',
    'membership.expired',
  ]);
}, 180_000);

test.concurrent('the organizer cancels after the renewal was paid: the renewal is refunded and access ends at period end', async () => {
  const plan = await createPlan();
  const { token, subscriptionId, active } = await join(fast, plan.id, 'refunded-renewal');
  await eventually(
    () => membershipOf(fast, token),
    (m) => m?.renewalState === 'DUE' && Boolean(m.payment?.checkoutUrl),
  );
  // This time the buyer pays with a test card on the same checkout page (the link takes card and PSE).
  const due = await membershipOf(fast, token);
  const page = await fetch(due!.payment!.checkoutUrl!);
  expect(await page.text()).toContain('id="card-form"');
  const paid = await fetch(due!.payment!.checkoutUrl!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ decision: 'card', cardholder_name: 'APRO' }),
    redirect: 'manual',
  });
  expect(paid.status).toBe(302);
  await eventually(
    () => membershipOf(fast, token),
    (m) => m?.renewalState === 'PAID',
  );
  const cancelled = await fast.request({
    method: 'POST',
    url: `/api/v1/subscriptions/${subscriptionId}/cancel`,
    headers: bearer(organizer.key),
  });
  expect(cancelled.statusCode).toBe(200);
  expect(cancelled.json().data).toMatchObject({
    status: 'ACTIVE',
    renewalState: 'CANCEL_AT_PERIOD_END',
    cancelledBy: 'organizer',
    periodNumber: 1,
  });
  const renewal = await eventually(
    () =>
      rows<{ status: string; provider_payment_id: string | null }>(
        fast,
        'select status, provider_payment_id from membership_payments where subscription_id = ? and period_number = 2',
        [subscriptionId],
      ),
    (found) => found[0]?.status === 'REFUNDED',
  );
  const atGateway = await fetch(`${fast.env.SANDBOX_URL}/gateway-a/v1/payments/${renewal[0]!.provider_payment_id}`, {
    headers: { authorization: `Bearer ${fast.env.GATEWAY_A_ACCESS_TOKEN}` },
  });
  expect(((await atGateway.json()) as { status: string }).status).toBe('refunded');
  expect(await membershipOf(fast, token)).toMatchObject({ status: 'ACTIVE', member: true, periodNumber: 1 });
  const ended = await eventually(
    () => membershipOf(fast, token),
    (m) => m?.status === 'CANCELLED',
    40_000,
  );
  expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(active.currentPeriodEnd!));
  expect(ended).toMatchObject({ periodNumber: 1, member: false, endReason: 'cancelled' });
}, 180_000);

test.concurrent('an unpaid signup expires, and a payment that settles after that is refunded, never stranded', async () => {
  const plan = await createPlan();
  const email = `late-${unique()}@buyers.test`;
  const token = await signInBuyer(brief, email);
  const created = await signUp(brief, token, plan.id);
  expect(created.statusCode).toBe(201);
  const { subscriptionId, checkoutUrl } = created.json().data;
  const reference = (await membershipOf(brief, token))!.payment!.reference;
  // The buyer starts a transfer that the bank settles only after the signup window.
  expect((await confirmAtBank(checkoutUrl, email)).status).toBe(302);
  const expired = await eventually(
    () => membershipOf(brief, token),
    (m) => m?.status === 'EXPIRED',
  );
  expect(expired).toMatchObject({ endReason: 'signup_unpaid', member: false, payment: null });

  expect((await settleAtGateway(brief, reference)).status).toBe(200);
  const refunded = await eventually(
    () =>
      rows<{ status: string; provider_payment_id: string | null }>(
        brief,
        'select status, provider_payment_id from membership_payments where subscription_id = ?',
        [subscriptionId],
      ),
    (found) => found.length === 1 && found[0]?.status === 'REFUNDED',
    30_000,
  );
  const paymentId = refunded[0]!.provider_payment_id!;
  const atGateway = await fetch(`${brief.env.SANDBOX_URL}/gateway-a/v1/payments/${paymentId}`, {
    headers: { authorization: `Bearer ${brief.env.GATEWAY_A_ACCESS_TOKEN}` },
  });
  expect(((await atGateway.json()) as { status: string }).status).toBe('refunded');
  expect(await membershipOf(brief, token)).toMatchObject({ status: 'EXPIRED', member: false });
  expect(await outboxEvents(brief, subscriptionId)).toEqual([]);
  expect((await inbox(brief.env.SANDBOX_URL, email)).some((m) => /Welcome/.test(m.subject))).toBe(false);
}, 120_000);

test('the organizer cancels a pending signup (it ends at once); errors use the contract body', async () => {
  const plan = await createPlan();
  const token = await signInBuyer(api, `pending-${unique()}@buyers.test`);
  const created = await signUp(api, token, plan.id);
  const { subscriptionId } = created.json().data;
  // Cancelling is for ADMINs: a VIEWER of the workspace is refused even with a write key, and nothing changes.
  const viewer = await createOrganizer(api.orm.em.fork(), { role: 'VIEWER', workspaceId: organizer.workspaceId });
  const byViewer = await api.request({
    method: 'POST',
    url: `/api/v1/subscriptions/${subscriptionId}/cancel`,
    headers: bearer(viewer.key),
  });
  expect(byViewer.statusCode).toBe(403);
  expect(byViewer.json().error.code).toBe('INSUFFICIENT_ROLE');
  expect(await membershipOf(api, token)).toMatchObject({ status: 'PENDING', renewalState: 'AWAITING_SIGNUP_PAYMENT' });

  const cancelled = await api.request({
    method: 'POST',
    url: `/api/v1/subscriptions/${subscriptionId}/cancel`,
    headers: bearer(organizer.key),
  });
  expect(cancelled.statusCode).toBe(200);
  expect(cancelled.json().data).toMatchObject({
    id: subscriptionId,
    status: 'CANCELLED',
    renewalState: 'ENDED',
    cancelledBy: 'organizer',
    endReason: 'cancelled',
  });
  const readOnly = await api.request({
    method: 'POST',
    url: `/api/v1/subscriptions/${subscriptionId}/cancel`,
    headers: bearer(organizer.readKey),
  });
  expect(readOnly.statusCode).toBe(403);
  const again = await api.request({
    method: 'POST',
    url: `/api/v1/subscriptions/${subscriptionId}/cancel`,
    headers: bearer(organizer.key),
  });
  expect(again.statusCode).toBe(409);
  expect(again.json().error).toMatchObject({ code: 'INVALID_STATE', retryable: false });

  const noWorkspace = await api.request({ method: 'GET', url: '/api/v1/customer/membership', headers: session(token) });
  expect(noWorkspace.statusCode).toBe(422);
  expect((await signUp(api, token, '00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
  const inactive = await createPlan({ active: false });
  const refused = await signUp(api, token, inactive.id);
  expect(refused.statusCode).toBe(409);
  expect(refused.json().error.details.reason).toBe('plan_inactive');
}, 120_000);
