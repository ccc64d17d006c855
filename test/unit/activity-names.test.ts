/**
 * Activity names are unique across every factory merged into the worker's one activity object (activities/index.ts):
 * Temporal dispatches by name, and a duplicate once silently replaced another. The merge refuses one, so a worker
 * with a clash does not start.
 */

import type { ActivityDeps } from '../../activities/deps.js';
import { createActivities } from '../../activities/index.js';
import { DuplicateActivityNameError, mergeActivities } from '../../activities/merge.js';
import { loadEnv } from '../../config/env.js';

describe('merging activity factories', () => {
  test('a name defined by two factories makes the merge throw, naming the activity and both factories', () => {
    const merge = () =>
      mergeActivities({
        checkout: { recordRefundRefused: async () => 'sale', reserveStock: async () => 1 },
        memberships: { recordRefundRefused: async () => 'membership', startPeriod: async () => 2 },
      });
    expect(merge).toThrow(DuplicateActivityNameError);
    expect(merge).toThrow('"recordRefundRefused" is defined by checkout and memberships');
  });

  test('every duplicate is named at once, not only the first', () => {
    let error: unknown;
    try {
      mergeActivities({ a: { one: () => 1, two: () => 2 }, b: { one: () => 1 }, c: { two: () => 2, three: () => 3 } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DuplicateActivityNameError);
    expect((error as DuplicateActivityNameError).duplicates).toEqual([
      { name: 'one', groups: ['a', 'b'] },
      { name: 'two', groups: ['a', 'c'] },
    ]);
  });

  test('distinct names merge into one object holding each function as its factory made it', () => {
    const one = () => 1;
    const two = () => 2;
    const merged = mergeActivities({ a: { one }, b: { two } });
    expect(merged).toEqual({ one, two });
  });

  test("the worker's own factories merge without a clash, and recordRefundRefused serves both callers by input", async () => {
    // Factories only keep their clients at construction; the fake database records what each record updates.
    const statements: string[] = [];
    const orm = {
      em: {
        fork: () => ({
          execute: async (sql: string) => {
            statements.push(sql);
            return [];
          },
        }),
      },
    };
    const deps = { env: loadEnv({}), orm, redis: {}, providers: {}, temporal: {} } as unknown as ActivityDeps;
    const activities = createActivities(deps);
    expect(typeof activities.resolveStrandedPayments).toBe('function');
    expect(typeof activities.sweepMembershipMoney).toBe('function');

    const sale = await activities.recordRefundRefused({
      saleId: 'sale-1',
      dedupeKey: 'refund:sale-1',
      gateway: 'GATEWAY_A',
      providerPaymentId: 'pay-1',
      refusals: 5,
      reason: 'insufficient_balance',
    });
    expect(sale).toEqual({ recorded: false });
    expect(statements).toHaveLength(1);
    expect(statements[0]).toContain('update payment_attempts');

    statements.length = 0;
    const membership = await activities.recordRefundRefused({ providerPaymentId: 'pay-2', reason: 'insufficient' });
    expect(membership).toEqual({ membershipPaymentId: null });
    expect(statements[0]).toContain('update membership_payments');
  });
});
