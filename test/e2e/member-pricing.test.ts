/**
 * Checkout honours memberships (issue 12): members-only ticket types sell to active members only, the plan's
 * discountPercent frozen for the member's current period comes off each ticket, and the public availability shows a
 * signed-in member the price checkout then charges.
 */
import { newId } from '../../entities/ids.js';
import type { MembershipBenefits } from '../../entities/membership-plan.js';
import type { SubscriptionStatus } from '../../entities/membership-subscription.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const DAY_MS = 24 * 3_600_000;
const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@members.test`;

// 33,333 with the workspace's default 10 % fee: fee 3,333, IVA 633, buyerTotal 37,299. A 12.5 % member discount is
// 4,166.625 → 4,167 per ticket (rounded per ticket: three tickets take 12,501 off, where one rounding on the
// subtotal would take 12,500), so the member buyerTotal is 33,132.
const PRICE = 33_333;
const BUYER_TOTAL = 37_299;
const MEMBER_PERCENT = 12.5;
const MEMBER_DISCOUNT_PER_TICKET = 4_167;
const MEMBER_BUYER_TOTAL = 33_132;

interface Catalog extends PublishedEvent {
  /** A type every buyer may buy, beside the members-only one (`ticketTypeId`). */
  generalTypeId: string;
}

/** A published event whose first type is members-only, plus a general type. */
async function membersEvent(): Promise<Catalog> {
  const event = await publishEvent(api, organizer, { price: PRICE, ticketType: { name: 'Socios', membersOnly: true } });
  const general = await api.request({
    method: 'POST',
    url: '/api/v1/ticket-types',
    headers: bearer(organizer.key),
    payload: { eventId: event.eventId, eventDateId: event.eventDateId, name: 'General', price: PRICE, capacity: 100 },
  });
  expect(general.statusCode).toBe(201);
  return { ...event, generalTypeId: general.json().data.id };
}

async function createPlan(benefits: MembershipBenefits): Promise<string> {
  const plan = await api.request({
    method: 'POST',
    url: '/api/v1/membership-plans',
    headers: bearer(organizer.key),
    payload: { name: `Club ${Math.random().toString(36).slice(2, 6)}`, price: 20_000, period: 'MONTHLY', benefits },
  });
  expect(plan.statusCode).toBe(201);
  return plan.json().data.id;
}

const buyerIdOf = async (token: string): Promise<string> =>
  (await api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) })).json().data.id;

/**
 * The subscription row the membership workflow (workflows/membership.ts) writes when a period is paid, with the
 * plan's terms frozen for the period in period_benefits. Written directly so each pricing case sets exactly the
 * status, period end and terms it needs; memberships.test.ts drives the workflow itself (join, pay, buy).
 */
async function subscribe(
  token: string,
  planId: string,
  options: { status?: SubscriptionStatus; periodEnd?: Date; periodBenefits?: MembershipBenefits | null },
): Promise<void> {
  const periodEnd = options.periodEnd ?? new Date(Date.now() + 30 * DAY_MS);
  await api.orm.em.fork().execute(
    `insert into membership_subscriptions (id, created_at, updated_at, workspace_id, plan_id, buyer_id, status,
        renewal_state, period_number, activated_at, current_period_start, current_period_end, period_price,
        period_benefits, currency)
     values (?, now(), now(), ?, ?, ?, ?, 'SCHEDULED', 1, ?, ?, ?, 20000, ?, 'COP')`,
    [
      newId(),
      organizer.workspaceId,
      planId,
      await buyerIdOf(token),
      options.status ?? 'ACTIVE',
      new Date(periodEnd.getTime() - 30 * DAY_MS),
      new Date(periodEnd.getTime() - 30 * DAY_MS),
      periodEnd,
      options.periodBenefits === null ? null : JSON.stringify(options.periodBenefits),
    ],
  );
}

interface QuotedType {
  id: string;
  buyerTotal: number;
  member?: { discountPercent: number; discountPerTicket: number; buyerTotal: number };
}

async function availability(event: PublishedEvent, headers: Record<string, string> = {}): Promise<QuotedType[]> {
  const response = await api.request({ method: 'GET', url: `/api/public/events/${event.slug}/availability`, headers });
  expect(response.statusCode).toBe(200);
  return response.json().data.dates[0].ticketTypes;
}

const typeIn = (types: QuotedType[], id: string): QuotedType => {
  const found = types.find((type) => type.id === id);
  if (!found) throw new Error(`ticket type ${id} is not in the availability`);
  return found;
};

const saleOf = async (saleId: string) =>
  (await api.request({ method: 'GET', url: `/api/v1/sales/${saleId}`, headers: bearer(organizer.key) })).json().data;

const buy = (token: string, event: PublishedEvent, ticketTypeId: string, quantity: number, extra = {}) =>
  reserveOrder(api, token, {
    ...orderBody(event, quantity, extra),
    items: [{ ticketTypeId, quantity }],
  });

describe('member pricing and members-only tickets', () => {
  test('an active member buys a members-only type at the member price: the charge is quantity × the quoted member.buyerTotal', async () => {
    const event = await membersEvent();
    const plan = await createPlan({ membersOnlyAccess: true, discountPercent: MEMBER_PERCENT });
    const token = await signInBuyer(api, email('member'));
    await subscribe(token, plan, { periodBenefits: { membersOnlyAccess: true, discountPercent: MEMBER_PERCENT } });

    // Anonymous readers see the list prices only; the member's session adds the member price to both types.
    const anonymous = await availability(event);
    expect(anonymous.every((type) => type.member === undefined)).toBe(true);
    const quoted = typeIn(await availability(event, session(token)), event.ticketTypeId);
    expect(quoted.buyerTotal).toBe(BUYER_TOTAL);
    expect(quoted.member).toEqual({
      discountPercent: MEMBER_PERCENT,
      discountPerTicket: MEMBER_DISCOUNT_PER_TICKET,
      buyerTotal: MEMBER_BUYER_TOTAL,
    });
    // The buyer-session cookie counts as the session too.
    const byCookie = await availability(event, { cookie: `buyer_session=${token}` });
    expect(typeIn(byCookie, event.generalTypeId).member?.buyerTotal).toBe(MEMBER_BUYER_TOTAL);

    const created = await buy(token, event, event.ticketTypeId, 3);
    expect(created.statusCode).toBe(201);
    const order = created.json().data;
    expect(order.total).toBe(3 * quoted.member!.buyerTotal);
    const sale = await saleOf(order.saleId);
    expect(sale).toMatchObject({
      subtotal: 3 * PRICE,
      discountAmount: 3 * MEMBER_DISCOUNT_PER_TICKET,
      serviceFee: 3 * 3_333,
      iva: 3 * 633,
      total: 3 * MEMBER_BUYER_TOTAL,
    });
    // What the gateway is asked to charge is the same amount.
    const payment = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(payment.statusCode).toBe(200);
    expect(payment.json().data.amount).toBe(3 * MEMBER_BUYER_TOTAL);
  });

  test('a buyer without a membership gets 409 MEMBERS_ONLY (members_only) and no member price', async () => {
    const event = await membersEvent();
    const token = await signInBuyer(api, email('stranger'));
    const refused = await buy(token, event, event.ticketTypeId, 1);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'MEMBERS_ONLY', details: { reason: 'members_only' } });
    expect((await availability(event, session(token))).every((type) => type.member === undefined)).toBe(true);
  });

  test('a period that ended (ACTIVE past currentPeriodEnd) is not membership: 409 MEMBERS_ONLY and the full price', async () => {
    const event = await membersEvent();
    const plan = await createPlan({ membersOnlyAccess: true, discountPercent: MEMBER_PERCENT });
    const token = await signInBuyer(api, email('lapsed'));
    await subscribe(token, plan, {
      periodEnd: new Date(Date.now() - 60_000),
      periodBenefits: { membersOnlyAccess: true, discountPercent: MEMBER_PERCENT },
    });
    const refused = await buy(token, event, event.ticketTypeId, 1);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'MEMBERS_ONLY', details: { reason: 'members_only' } });

    expect(typeIn(await availability(event, session(token)), event.generalTypeId).member).toBeUndefined();
    const created = await buy(token, event, event.generalTypeId, 2);
    expect(created.statusCode).toBe(201);
    expect(created.json().data.total).toBe(2 * BUYER_TOTAL);
    expect(await saleOf(created.json().data.saleId)).toMatchObject({ discountAmount: 0, total: 2 * BUYER_TOTAL });
  });

  test.each(['EXPIRED', 'CANCELLED', 'PENDING'] as const)(
    'a %s subscription is not membership, even with a period end in the future',
    async (status) => {
      const event = await membersEvent();
      const plan = await createPlan({ membersOnlyAccess: true, discountPercent: MEMBER_PERCENT });
      const token = await signInBuyer(api, email(status.toLowerCase()));
      await subscribe(token, plan, {
        status,
        periodBenefits: { membersOnlyAccess: true, discountPercent: MEMBER_PERCENT },
      });
      const refused = await buy(token, event, event.ticketTypeId, 1);
      expect(refused.json().error).toMatchObject({ code: 'MEMBERS_ONLY', details: { reason: 'members_only' } });
      expect((await availability(event, session(token))).every((type) => type.member === undefined)).toBe(true);
    },
  );

  test("the plan's live discountPercent changed after the period started does not change the member's price", async () => {
    const event = await membersEvent();
    const plan = await createPlan({ membersOnlyAccess: true, discountPercent: MEMBER_PERCENT });
    const token = await signInBuyer(api, email('frozen'));
    await subscribe(token, plan, { periodBenefits: { membersOnlyAccess: true, discountPercent: MEMBER_PERCENT } });
    const patched = await api.request({
      method: 'PATCH',
      url: `/api/v1/membership-plans/${plan}`,
      headers: bearer(organizer.key),
      payload: { benefits: { discountPercent: 50 } },
    });
    expect(patched.json().data.benefits.discountPercent).toBe(50);

    const quoted = typeIn(await availability(event, session(token)), event.ticketTypeId);
    expect(quoted.member).toMatchObject({ discountPercent: MEMBER_PERCENT, buyerTotal: MEMBER_BUYER_TOTAL });
    const created = await buy(token, event, event.ticketTypeId, 2);
    expect(created.statusCode).toBe(201);
    expect(created.json().data.total).toBe(2 * MEMBER_BUYER_TOTAL);
  });

  test("membersOnlyAccess false in the period's benefits denies members-only types, though the plan now grants it", async () => {
    const event = await membersEvent();
    const plan = await createPlan({ membersOnlyAccess: true, discountPercent: 50 });
    const token = await signInBuyer(api, email('no-access'));
    await subscribe(token, plan, { periodBenefits: { membersOnlyAccess: false, discountPercent: 10 } });
    const refused = await buy(token, event, event.ticketTypeId, 1);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'MEMBERS_ONLY', details: { reason: 'members_only' } });

    // Still a member: the period's 10 % applies to the general type (3,333.3 → 3,333 off), and only that type is quoted.
    const types = await availability(event, session(token));
    expect(typeIn(types, event.ticketTypeId).member).toBeUndefined();
    expect(typeIn(types, event.generalTypeId).member).toEqual({
      discountPercent: 10,
      discountPerTicket: 3_333,
      buyerTotal: BUYER_TOTAL - 3_333,
    });
    const created = await buy(token, event, event.generalTypeId, 1);
    expect(created.json().data.total).toBe(BUYER_TOTAL - 3_333);
  });

  test('a subscription without frozen benefits falls back to the plan’s', async () => {
    const event = await membersEvent();
    const plan = await createPlan({ membersOnlyAccess: true, discountPercent: MEMBER_PERCENT });
    const token = await signInBuyer(api, email('unfrozen'));
    await subscribe(token, plan, { periodBenefits: null });
    const created = await buy(token, event, event.ticketTypeId, 1);
    expect(created.statusCode).toBe(201);
    expect(created.json().data.total).toBe(MEMBER_BUYER_TOTAL);
  });

  test('member and code discounts never stack: the larger applies, and a code that loses keeps its use', async () => {
    const event = await membersEvent();
    const plan = await createPlan({ membersOnlyAccess: true, discountPercent: MEMBER_PERCENT });
    const createCode = async (value: number) => {
      const response = await api.request({
        method: 'POST',
        url: '/api/v1/discounts',
        headers: bearer(organizer.key),
        payload: { code: `M${value}${Math.random().toString(36).slice(2, 7)}`, type: 'PERCENT', value },
      });
      expect(response.statusCode).toBe(201);
      return response.json().data as { id: string; code: string };
    };
    const usesOf = async (id: string) =>
      (await api.request({ method: 'GET', url: '/api/v1/discounts?limit=100', headers: bearer(organizer.key) }))
        .json()
        .data.find((discount: { id: string }) => discount.id === id).uses;

    // 20 % of 3 × 33,333 = 19,999.8 → 20,000 off beats the member's 12,501.
    const bigger = await createCode(20);
    const first = await signInBuyer(api, email('code-wins'));
    await subscribe(first, plan, { periodBenefits: { membersOnlyAccess: true, discountPercent: MEMBER_PERCENT } });
    const withBigger = await buy(first, event, event.generalTypeId, 3, { discountCode: bigger.code });
    expect(withBigger.statusCode).toBe(201);
    expect(await saleOf(withBigger.json().data.saleId)).toMatchObject({
      discountAmount: 20_000,
      total: 3 * BUYER_TOTAL - 20_000,
    });
    expect(await usesOf(bigger.id)).toBe(1);

    // 5 % takes less than the member discount: the member price is charged and the code is not spent.
    const smaller = await createCode(5);
    const second = await signInBuyer(api, email('member-wins'));
    await subscribe(second, plan, { periodBenefits: { membersOnlyAccess: true, discountPercent: MEMBER_PERCENT } });
    const withSmaller = await buy(second, event, event.generalTypeId, 3, { discountCode: smaller.code });
    expect(withSmaller.statusCode).toBe(201);
    expect(withSmaller.json().data.total).toBe(3 * MEMBER_BUYER_TOTAL);
    expect(await saleOf(withSmaller.json().data.saleId)).toMatchObject({
      discountAmount: 3 * MEMBER_DISCOUNT_PER_TICKET,
    });
    expect(await usesOf(smaller.id)).toBe(0);
  });
});
