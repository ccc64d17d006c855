import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Buyer } from './buyer.js';
import { baseProperties, tenantFilter } from './common.js';
import { type MembershipBenefits, MembershipPlan } from './membership-plan.js';
import { Workspace } from './workspace.js';

/**
 * PENDING: signup waiting for its first payment. ACTIVE: a paid period is running (benefits apply while
 * currentPeriodEnd is in the future). CANCELLED: ended at a period end after a cancel. EXPIRED: ended because a
 * payment (signup or renewal) never arrived.
 */
export const SUBSCRIPTION_STATUSES = ['PENDING', 'ACTIVE', 'CANCELLED', 'EXPIRED'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/**
 * Where the next period stands, for the buyer and the organizer:
 * AWAITING_SIGNUP_PAYMENT (PENDING only), SCHEDULED (renews at period end), DUE (renewal payment asked, not paid
 * yet), PAID (next period already paid), CANCEL_AT_PERIOD_END (cancelled, access until period end), FAILED (renewal
 * not paid; access ends at period end), ENDED (no longer a member).
 */
export const RENEWAL_STATES = [
  'AWAITING_SIGNUP_PAYMENT',
  'SCHEDULED',
  'DUE',
  'PAID',
  'CANCEL_AT_PERIOD_END',
  'FAILED',
  'ENDED',
] as const;
export type RenewalState = (typeof RENEWAL_STATES)[number];

export const MembershipSubscription = defineEntity({
  name: 'MembershipSubscription',
  tableName: 'membership_subscriptions',
  filters: { ...tenantFilter },
  indexes: [{ properties: ['workspace', 'buyer'] }, { properties: ['workspace', 'status', 'id'] }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    plan: () => p.manyToOne(MembershipPlan).mapToPk().index(),
    buyer: () => p.manyToOne(Buyer).mapToPk(),
    status: p.enum(SUBSCRIPTION_STATUSES),
    renewalState: p.enum(RENEWAL_STATES).default('AWAITING_SIGNUP_PAYMENT'),
    /** Paid periods so far; 0 while the signup is unpaid. */
    periodNumber: p.integer().default(0),
    /** When the buyer first became a member (first payment approved). */
    activatedAt: p.datetime().columnType('timestamptz').nullable(),
    currentPeriodStart: p.datetime().columnType('timestamptz').nullable(),
    currentPeriodEnd: p.datetime().columnType('timestamptz').nullable(),
    /**
     * The plan's terms frozen for the current period (price paid and benefits): an organizer's plan change applies
     * from the next period, never to one already paid.
     */
    periodPrice: p.integer().nullable(),
    periodBenefits: p.json<MembershipBenefits>().nullable(),
    currency: p.string().length(3),
    /** When the cancel was requested (buyer or organizer); access continues until currentPeriodEnd. */
    cancelledAt: p.datetime().columnType('timestamptz').nullable(),
    cancelledBy: p.string().length(20).nullable(),
    endedAt: p.datetime().columnType('timestamptz').nullable(),
    /** signup_unpaid, renewal_unpaid or cancelled. */
    endReason: p.string().length(40).nullable(),
  },
});
export type IMembershipSubscription = InferEntity<typeof MembershipSubscription>;
