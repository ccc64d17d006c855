/**
 * Buyer membership rules that hold without the stack (api/services/memberships.ts): which workspace a request is
 * about, when a signup is refused before any execution is asked, and who counts as a member.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { cancelSubscription, isMember, membershipWorkspace, signUp } from '../../api/services/memberships.js';
import type { IMembershipPlan } from '../../entities/membership-plan.js';
import type { IMembershipSubscription } from '../../entities/membership-subscription.js';
import { appErrorOf } from '../support/app-errors.js';
import { servicesWithoutTemporal } from '../support/unreachable-temporal.js';

const workspaceId = '0190a0b0-0000-7000-8000-000000000001';
const now = Date.parse('2026-06-01T12:00:00Z');

const planOf = (overrides: Partial<IMembershipPlan> = {}) =>
  ({ id: 'plan-1', workspace: workspaceId, active: true, price: 120000, ...overrides }) as IMembershipPlan;

const subscriptionOf = (overrides: Partial<IMembershipSubscription> = {}) =>
  ({
    id: 'sub-1',
    status: 'ACTIVE',
    currentPeriodEnd: new Date(now + 60_000),
    ...overrides,
  }) as IMembershipSubscription;

/** The buyer's subscriptions, newest first; nothing else is read. */
const emWith = (...subscriptions: IMembershipSubscription[]) =>
  ({ find: async () => subscriptions }) as unknown as EntityManager;

/** No membership execution is reachable: a refusal must come before one is asked. */
const services = servicesWithoutTemporal({ TEMPORAL_TASK_QUEUE: 'q' }, 'the membership execution');

describe('membership rules', () => {
  test("a request is about the key's pinned workspace; naming another is 404, naming none without a pin is 422", async () => {
    expect(membershipWorkspace(workspaceId, undefined)).toBe(workspaceId);
    expect(membershipWorkspace(workspaceId, workspaceId)).toBe(workspaceId);
    expect(membershipWorkspace(null, workspaceId)).toBe(workspaceId);
    const other = await appErrorOf(Promise.resolve().then(() => membershipWorkspace(workspaceId, 'another')));
    expect(other.code).toBe('NOT_FOUND');
    const none = await appErrorOf(Promise.resolve().then(() => membershipWorkspace(null, undefined)));
    expect(none.code).toBe('VALIDATION_FAILED');
    expect(none.details).toEqual({ field: 'workspaceId', reason: 'workspace_required' });
    expect((await appErrorOf(Promise.resolve().then(() => membershipWorkspace(null, 'not-a-uuid')))).code).toBe(
      'NOT_FOUND',
    );
  });

  test('a signup is refused for an inactive plan, a free plan, and an active member', async () => {
    const inactive = await appErrorOf(signUp(services, emWith(), planOf({ active: false }), 'buyer-1'));
    expect([inactive.code, inactive.details]).toEqual(['INVALID_STATE', { reason: 'plan_inactive' }]);
    const free = await appErrorOf(signUp(services, emWith(), planOf({ price: 0 }), 'buyer-1'));
    expect([free.code, free.details]).toEqual(['INVALID_STATE', { reason: 'free_plan' }]);
    const member = await appErrorOf(signUp(services, emWith(subscriptionOf()), planOf(), 'buyer-1'));
    expect([member.code, member.details]).toEqual([
      'ALREADY_MEMBER',
      { reason: 'already_member', subscriptionId: 'sub-1' },
    ]);
  });

  test('a member is ACTIVE with a current period that has not ended', () => {
    expect(isMember(subscriptionOf(), now)).toBe(true);
    expect(isMember(subscriptionOf({ currentPeriodEnd: new Date(now) }), now)).toBe(false);
    expect(isMember(subscriptionOf({ currentPeriodEnd: null }), now)).toBe(false);
    expect(isMember(subscriptionOf({ status: 'PENDING' }), now)).toBe(false);
  });
});

describe("an organizer's cancel of a subscription", () => {
  const subscriptionId = '0190a0b0-0000-7000-8000-000000000009';
  const emFinding = (subscription: IMembershipSubscription | null) =>
    ({ findOne: async () => subscription }) as unknown as EntityManager;
  test('an unknown subscription is 404; an ended one is 409 INVALID_STATE, before its execution is asked', async () => {
    expect((await appErrorOf(cancelSubscription(services, emFinding(null), subscriptionId))).code).toBe('NOT_FOUND');
    expect((await appErrorOf(cancelSubscription(services, emFinding(null), 'not-a-uuid'))).code).toBe('NOT_FOUND');
    for (const status of ['CANCELLED', 'EXPIRED'] as const) {
      const ended = subscriptionOf({ id: subscriptionId, status });
      const error = await appErrorOf(cancelSubscription(services, emFinding(ended), subscriptionId));
      expect([error.code, error.details]).toEqual(['INVALID_STATE', { reason: 'subscription_ended', status }]);
    }
  });
});
