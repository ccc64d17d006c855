import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties, softDeleteFilter, tenantFilter } from './common.js';
import { Workspace } from './workspace.js';

export const MEMBERSHIP_PERIODS = ['MONTHLY', 'QUARTERLY', 'YEARLY'] as const;

export interface MembershipBenefits {
  /** Members may buy ticket types flagged members-only. */
  membersOnlyAccess: boolean;
  /** Percentage off the ticket subtotal for members (0–100). */
  discountPercent: number;
}

export const MembershipPlan = defineEntity({
  name: 'MembershipPlan',
  tableName: 'membership_plans',
  filters: { ...softDeleteFilter, ...tenantFilter },
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade').index(),
    name: p.string().length(160),
    description: p.text().nullable(),
    price: p.integer(),
    currency: p.string().length(3),
    period: p.enum(MEMBERSHIP_PERIODS),
    benefits: p.json<MembershipBenefits>(),
    active: p.boolean().default(true),
    deletedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IMembershipPlan = InferEntity<typeof MembershipPlan>;
