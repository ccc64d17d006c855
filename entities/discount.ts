import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties, softDeleteFilter, tenantFilter } from './common.js';
import { Event } from './event.js';
import { Workspace } from './workspace.js';

export const DISCOUNT_TYPES = ['PERCENT', 'FIXED'] as const;

export const Discount = defineEntity({
  name: 'Discount',
  tableName: 'discounts',
  filters: { ...softDeleteFilter, ...tenantFilter },
  indexes: [{ properties: ['workspace', 'code'] }],
  checks: [{ name: 'discounts_uses_within_max', expression: 'max_uses is null or uses <= max_uses' }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    /** Codes are stored upper-case; buyers may type them in any case. */
    code: p.string().length(40),
    type: p.enum(DISCOUNT_TYPES),
    /** PERCENT: 0–100 with at most two decimals (12.5 %); FIXED: whole minor units per order. */
    value: p.decimal('number').precision(12).scale(2),
    /** null: valid for every event of the workspace. */
    event: () => p.manyToOne(Event).mapToPk().nullable(),
    active: p.boolean().default(true),
    maxUses: p.integer().nullable(),
    uses: p.integer().default(0),
    startsAt: p.datetime().columnType('timestamptz').nullable(),
    endsAt: p.datetime().columnType('timestamptz').nullable(),
    deletedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IDiscount = InferEntity<typeof Discount>;
