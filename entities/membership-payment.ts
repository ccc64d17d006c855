import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties, tenantFilter } from './common.js';
import { MembershipSubscription } from './membership-subscription.js';
import { PAYMENT_PROVIDERS } from './sale.js';
import { Workspace } from './workspace.js';

/**
 * OPEN: payment link issued. APPROVED: the gateway (re-read) reports it paid; it paid `periodNumber`. REJECTED:
 * declined. EXPIRED: link closed unpaid. REFUND_REQUESTED / REFUNDED: money that paid nothing (a second payment for a
 * period, a payment after the membership ended) going back, then confirmed back by the gateway. REFUND_REFUSED: the
 * gateway refused that refund a bounded number of times (for example the merchant's balance is short); the execution
 * waits for an operator to retry it (`operator refunds-refused retry`), and the row goes to REFUNDED once it is back.
 */
export const MEMBERSHIP_PAYMENT_STATUSES = [
  'OPEN',
  'APPROVED',
  'REJECTED',
  'EXPIRED',
  'REFUND_REQUESTED',
  'REFUNDED',
  'REFUND_REFUSED',
] as const;
export type MembershipPaymentStatus = (typeof MEMBERSHIP_PAYMENT_STATUSES)[number];

/** One payment request of a membership period (signup or renewal), and what the gateway did with it. */
export const MembershipPayment = defineEntity({
  name: 'MembershipPayment',
  tableName: 'membership_payments',
  filters: { ...tenantFilter },
  // The reconciler's membership sweep (activities/membership-reconciler.ts) reads through these, a bounded number of
  // rows a run: closed requests with a gateway link in the order it walks them, and refunds still requested.
  indexes: [
    {
      name: 'membership_payments_closed_walk_index',
      expression: `create index "membership_payments_closed_walk_index" on "membership_payments" ("updated_at", "id") where "status" <> 'OPEN' and "checkout_url" is not null`,
    },
    {
      name: 'membership_payments_refund_requested_index',
      expression: `create index "membership_payments_refund_requested_index" on "membership_payments" ("updated_at", "id") where "status" = 'REFUND_REQUESTED'`,
    },
  ],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    subscription: () => p.manyToOne(MembershipSubscription).mapToPk().deleteRule('cascade').index(),
    /** The period this payment pays: 1 for the signup, n + 1 for the renewal after period n. */
    periodNumber: p.integer(),
    /** Merchant reference sent to the gateway (`MB-` + 8 characters); notifications find the payment by it. */
    reference: p.string().length(16).unique(),
    gateway: p.enum(PAYMENT_PROVIDERS),
    preferenceId: p.string().length(120).nullable(),
    checkoutUrl: p.text().nullable(),
    providerPaymentId: p.string().length(120).nullable().unique(),
    amount: p.integer(),
    currency: p.string().length(3),
    status: p.enum(MEMBERSHIP_PAYMENT_STATUSES).default('OPEN'),
    statusDetail: p.string().length(120).nullable(),
    expiresAt: p.datetime().columnType('timestamptz').nullable(),
    approvedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IMembershipPayment = InferEntity<typeof MembershipPayment>;
