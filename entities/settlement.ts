import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties, tenantFilter } from './common.js';
import { Event } from './event.js';
import { EventDate } from './event-date.js';
import { Sale } from './sale.js';
import { Workspace } from './workspace.js';

/**
 * DRAFT (being computed) and REVIEW (statement rendered, waiting for an operator) are internal: the organizer never
 * sees them. SENT (approved and sent to the organizer) → AWAITING_PAYMENT (transfer requested) → PAID (transfer
 * recorded with its proof).
 */
export const SETTLEMENT_STATUSES = ['DRAFT', 'REVIEW', 'SENT', 'AWAITING_PAYMENT', 'PAID'] as const;
export type SettlementStatus = (typeof SETTLEMENT_STATUSES)[number];
/** The statuses the organizer API exposes (contract part 2). */
export const VISIBLE_SETTLEMENT_STATUSES = ['SENT', 'AWAITING_PAYMENT', 'PAID'] as const;

export interface SettlementAllocation {
  bankAccountId: string;
  /** Whole percent; the allocations of a settlement sum to 100. */
  percentage: number;
}

/**
 * One payout statement: what the organizer is owed for one ended event date (CONFIRMED sales of that date), plus
 * adjustments carried from earlier settlements of the workspace (refunds after those were sent).
 */
export const Settlement = defineEntity({
  name: 'Settlement',
  tableName: 'settlements',
  filters: { ...tenantFilter },
  indexes: [{ properties: ['workspace', 'status', 'id'] }, { properties: ['workspace', 'event', 'id'] }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    /** `ST-` + 8 characters, for bank transfers and support. */
    reference: p.string().length(16).unique(),
    label: p.string().length(200),
    status: p.enum(SETTLEMENT_STATUSES),
    event: () => p.manyToOne(Event).mapToPk().nullable(),
    /** One settlement per event date. */
    eventDate: () => p.manyToOne(EventDate).mapToPk().nullable().unique(),
    /** Net payable in minor units (signed: negative means the organizer owes). */
    amount: p.integer(),
    grossAmount: p.integer().nullable(),
    unitsSold: p.integer().nullable(),
    currency: p.string().length(3),
    /** The whole statement breakdown (domain/settlement.ts `SettlementFigures`), as rendered in the PDF. */
    figures: p.json<Record<string, unknown>>(),
    notes: p.text().nullable(),
    rejectionReason: p.text().nullable(),
    allocations: p.json<SettlementAllocation[]>(),
    sentAt: p.datetime().columnType('timestamptz').nullable(),
    requestedAt: p.datetime().columnType('timestamptz').nullable(),
    paidAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type ISettlement = InferEntity<typeof Settlement>;

export const SETTLEMENT_FILE_KINDS = ['DOCUMENT', 'PROOF'] as const;

/** The statement PDF and the bank transfer proofs of a settlement, stored in the database beside it. */
export const SettlementFile = defineEntity({
  name: 'SettlementFile',
  tableName: 'settlement_files',
  uniques: [{ properties: ['settlement', 'kind', 'fileName'] }],
  properties: {
    id: p.string().columnType('uuid').primary(),
    settlement: () => p.manyToOne(Settlement).mapToPk().deleteRule('cascade'),
    kind: p.enum(SETTLEMENT_FILE_KINDS),
    fileName: p.string().length(120),
    contentType: p.string().length(100),
    byteSize: p.integer(),
    sha256: p.string().length(64),
    content: p.blob(),
    createdAt: p
      .datetime()
      .columnType('timestamptz')
      .onCreate(() => new Date()),
  },
});
export type ISettlementFile = InferEntity<typeof SettlementFile>;

/** The sales a settlement paid out, with each one's net contribution: a later refund is adjusted against it. */
export const SettlementSale = defineEntity({
  name: 'SettlementSale',
  tableName: 'settlement_sales',
  primaryKeys: ['settlement', 'sale'],
  properties: {
    settlement: () => p.manyToOne(Settlement).mapToPk().deleteRule('cascade').primary(),
    sale: () => p.manyToOne(Sale).mapToPk().primary().index(),
    /** Organizer net of this sale as settled (gross − costs), minor units. */
    net: p.integer(),
  },
});
export type ISettlementSale = InferEntity<typeof SettlementSale>;

/**
 * Money taken back from the organizer after a settlement was sent (a refund of a sale it paid out), carried into
 * the next settlement of the workspace. One per sale, so a refund is never adjusted twice.
 */
export const SettlementAdjustment = defineEntity({
  name: 'SettlementAdjustment',
  tableName: 'settlement_adjustments',
  filters: { ...tenantFilter },
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade').index(),
    sale: () => p.manyToOne(Sale).mapToPk().unique(),
    /** The settlement that paid the sale out. */
    originSettlement: () => p.manyToOne(Settlement).mapToPk(),
    /** The settlement that carries the adjustment; null until one does. */
    appliedSettlement: () => p.manyToOne(Settlement).mapToPk().nullable().index(),
    /** Signed minor units added to the carrying settlement's net (negative for a refund). */
    amount: p.integer(),
    reason: p.string().length(200),
  },
});
export type ISettlementAdjustment = InferEntity<typeof SettlementAdjustment>;

/** Where an organizer's payouts go; default allocations of new settlements come from here. */
export const PayoutAccount = defineEntity({
  name: 'PayoutAccount',
  tableName: 'payout_accounts',
  filters: { ...tenantFilter },
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade').index(),
    holderName: p.string().length(160),
    bankName: p.string().length(120),
    /** Only the last four digits are kept; the full number lives with the payment processor. */
    accountLast4: p.string().length(4),
    /** Default share of each payout, whole percent; a workspace's accounts sum to 100. */
    defaultPercentage: p.integer(),
    active: p.boolean().default(true),
  },
});
export type IPayoutAccount = InferEntity<typeof PayoutAccount>;
