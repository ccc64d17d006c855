import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Buyer } from './buyer.js';
import { baseProperties, tenantFilter } from './common.js';
import { MembershipPlan } from './membership-plan.js';
import { Workspace } from './workspace.js';

export const SUBSCRIPTION_STATUSES = ['PENDING', 'ACTIVE', 'CANCELLED', 'EXPIRED'] as const;

export const MembershipSubscription = defineEntity({
  name: 'MembershipSubscription',
  tableName: 'membership_subscriptions',
  filters: { ...tenantFilter },
  indexes: [{ properties: ['workspace', 'buyer'] }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    plan: () => p.manyToOne(MembershipPlan).mapToPk().index(),
    buyer: () => p.manyToOne(Buyer).mapToPk(),
    status: p.enum(SUBSCRIPTION_STATUSES),
    currentPeriodEnd: p.datetime().columnType('timestamptz').nullable(),
    cancelledAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IMembershipSubscription = InferEntity<typeof MembershipSubscription>;
