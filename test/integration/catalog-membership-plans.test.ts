import type { InjectOptions } from 'fastify';
import { newId } from '../../entities/ids.js';
import { Buyer, MembershipSubscription } from '../../entities/index.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let admin: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  admin = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

type Row = { id: string; [field: string]: unknown };

const call = (method: InjectOptions['method'], url: string, key: string, payload?: object) =>
  api.request({ method, url: `/api/v1${url}`, headers: bearer(key), ...(payload ? { payload } : {}) });

const created = async (response: Awaited<ReturnType<typeof call>>): Promise<Row> => {
  if (response.statusCode !== 201) throw new Error(`expected 201, got ${response.statusCode}: ${response.body}`);
  return response.json().data;
};

const fieldsOf = (response: Awaited<ReturnType<typeof call>>): string[] =>
  response.json().error.details.fields.map((f: { field: string }) => f.field);

const createPlan = (payload: object = {}, key = admin.key) =>
  call('POST', '/membership-plans', key, { name: 'Club Oro', price: 30000, period: 'MONTHLY', ...payload }).then(
    created,
  );

/** Ids one millisecond apart, so rows inserted in a burst keep their creation order in keyset paging. */
let clock = Date.now();
const orderedId = () => newId(++clock);

/** Subscriptions are started by buyers through checkout, outside this suite; these rows stand in for them. */
async function subscribe(planId: string, status: 'PENDING' | 'ACTIVE' | 'CANCELLED' | 'EXPIRED', name: string) {
  const em = api.orm.em.fork();
  const buyer = em.create(Buyer, {
    id: newId(),
    email: `${name.toLowerCase()}-${newId().slice(-6)}@example.test`,
    name,
  });
  const subscription = em.create(MembershipSubscription, {
    id: orderedId(),
    workspace: admin.workspaceId,
    plan: planId,
    buyer: buyer.id,
    status,
    currency: 'COP',
    currentPeriodEnd: status === 'ACTIVE' ? new Date('2027-01-31T00:00:00Z') : null,
    cancelledAt: status === 'CANCELLED' ? new Date('2026-12-01T00:00:00Z') : null,
  });
  await em.flush();
  return { subscriptionId: subscription.id, buyerId: buyer.id, email: buyer.email };
}

describe('membership plans: create, read, update', () => {
  test('a plan is created with default benefits, active, in the workspace currency', async () => {
    const plan = await createPlan();
    expect(plan).toEqual({
      id: expect.any(String),
      name: 'Club Oro',
      description: null,
      price: 30000,
      currency: 'COP',
      period: 'MONTHLY',
      benefits: { membersOnlyAccess: false, discountPercent: 0 },
      active: true,
      createdAt: expect.any(String),
    });
    expect((await call('GET', `/membership-plans/${plan.id}`, admin.readKey)).json().data).toEqual(plan);
  });

  test('PATCH is partial, benefits included: changing discountPercent keeps membersOnlyAccess', async () => {
    const plan = await createPlan({ benefits: { membersOnlyAccess: true, discountPercent: 5 }, description: 'VIP' });
    const response = await call('PATCH', `/membership-plans/${plan.id}`, admin.key, {
      benefits: { discountPercent: 12.5 },
      period: 'YEARLY',
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({
      name: 'Club Oro',
      description: 'VIP',
      period: 'YEARLY',
      benefits: { membersOnlyAccess: true, discountPercent: 12.5 },
    });
  });

  test('discountPercent is 0–100 with at most two decimals; period is MONTHLY, QUARTERLY or YEARLY (422)', async () => {
    for (const discountPercent of [101, -1, 10.005]) {
      const response = await call('POST', '/membership-plans', admin.key, {
        name: 'x',
        price: 1,
        period: 'MONTHLY',
        benefits: { discountPercent },
      });
      expect(response.statusCode).toBe(422);
      expect(fieldsOf(response)).toEqual(['body.benefits.discountPercent']);
    }
    const period = await call('POST', '/membership-plans', admin.key, { name: 'x', price: 1, period: 'WEEKLY' });
    expect(fieldsOf(period)).toEqual(['body.period']);
  });
});

describe('membership plans: lists', () => {
  test('the list filters by active and pages with limit and cursor', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const a = await createPlan({ name: 'A' }, owner.key);
    const b = await createPlan({ name: 'B', active: false }, owner.key);
    const c = await createPlan({ name: 'C' }, owner.key);
    const page1 = await call('GET', '/membership-plans?limit=2', owner.readKey);
    expect(page1.json().data.map((p: Row) => p.id)).toEqual([c.id, b.id]);
    const page2 = await call('GET', `/membership-plans?limit=2&cursor=${page1.json().page.nextCursor}`, owner.readKey);
    expect(page2.json().data.map((p: Row) => p.id)).toEqual([a.id]);
    const active = await call('GET', '/membership-plans?active=true', owner.readKey);
    expect(active.json().data.map((p: Row) => p.id)).toEqual([c.id, a.id]);
  });

  test('subscribers of a plan are listed newest first with buyer name and email, paged and filtered by status', async () => {
    const plan = await createPlan();
    const other = await createPlan({ name: 'Other' });
    const first = await subscribe(plan.id, 'ACTIVE', 'Ana');
    const second = await subscribe(plan.id, 'CANCELLED', 'Beto');
    const third = await subscribe(plan.id, 'ACTIVE', 'Carla');
    await subscribe(other.id, 'ACTIVE', 'Dario');

    const page1 = await call('GET', `/membership-plans/${plan.id}/subscribers?limit=2`, admin.readKey);
    expect(page1.statusCode).toBe(200);
    expect(page1.json().data).toEqual([
      {
        id: third.subscriptionId,
        buyerId: third.buyerId,
        name: 'Carla',
        email: third.email,
        status: 'ACTIVE',
        since: expect.any(String),
        renewalState: 'AWAITING_SIGNUP_PAYMENT',
        currentPeriodEnd: '2027-01-31T00:00:00.000Z',
        cancelledAt: null,
      },
      expect.objectContaining({ id: second.subscriptionId, status: 'CANCELLED', cancelledAt: expect.any(String) }),
    ]);
    const page2 = await call(
      'GET',
      `/membership-plans/${plan.id}/subscribers?limit=2&cursor=${page1.json().page.nextCursor}`,
      admin.readKey,
    );
    expect(page2.json().data.map((s: Row) => s.id)).toEqual([first.subscriptionId]);
    expect(page2.json().page.hasMore).toBe(false);
    const active = await call('GET', `/membership-plans/${plan.id}/subscribers?status=ACTIVE`, admin.readKey);
    expect(active.json().data.map((s: Row) => s.name)).toEqual(['Carla', 'Ana']);
    expect((await call('GET', `/membership-plans/${newId()}/subscribers`, admin.readKey)).statusCode).toBe(404);
  });

  test('below ADMIN the subscriber list (buyer names and emails) is refused, as its export is (issue 31)', async () => {
    const plan = await createPlan();
    await subscribe(plan.id, 'ACTIVE', 'Ana');
    for (const role of ['VIEWER', 'STAFF', 'MINCULTURA'] as const) {
      const member = await createOrganizer(api.orm.em.fork(), { workspaceId: admin.workspaceId, role });
      const refused = await call('GET', `/membership-plans/${plan.id}/subscribers`, member.key);
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error.code).toBe('INSUFFICIENT_ROLE');
      expect(refused.body).not.toContain('Ana');
    }
  });
});

describe('membership plans: soft delete', () => {
  test('a deleted plan is gone from the list and GET (404) but its row stays', async () => {
    const plan = await createPlan();
    const deleted = await call('DELETE', `/membership-plans/${plan.id}`, admin.key);
    expect(deleted.statusCode).toBe(200);
    expect((await call('GET', `/membership-plans/${plan.id}`, admin.key)).statusCode).toBe(404);
    const list = await call('GET', '/membership-plans?limit=100', admin.key);
    expect(list.json().data.map((p: Row) => p.id)).not.toContain(plan.id);
    const rows = await api.orm.em
      .fork()
      .getConnection()
      .execute<{ deleted_at: Date | null }[]>('select deleted_at from membership_plans where id = ?', [plan.id]);
    expect(rows[0]?.deleted_at).not.toBeNull();
  });

  test('a plan with active subscribers cannot be deleted (409: deactivate it instead)', async () => {
    const plan = await createPlan();
    await subscribe(plan.id, 'ACTIVE', 'Ana');
    const refused = await call('DELETE', `/membership-plans/${plan.id}`, admin.key);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.details.reason).toBe('plan_has_subscribers');
    const deactivated = await call('PATCH', `/membership-plans/${plan.id}`, admin.key, { active: false });
    expect(deactivated.json().data.active).toBe(false);
  });
});
