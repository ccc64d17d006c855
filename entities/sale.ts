import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { SALE_STATUSES } from '../domain/sale-state.js';
import { Buyer } from './buyer.js';
import { baseProperties, tenantFilter } from './common.js';
import { Discount } from './discount.js';
import { Event } from './event.js';
import { EventDate } from './event-date.js';
import { TicketType } from './ticket-type.js';
import { Workspace } from './workspace.js';

export const SALE_CHANNELS = ['WEB', 'MOBILE', 'POS', 'ADMIN'] as const;
export const SALE_ORIGINS = ['CUSTOMER', 'PUBLIC', 'ORGANIZER'] as const;
export const PAYMENT_PROVIDERS = ['GATEWAY_A', 'GATEWAY_B'] as const;
export type PaymentProvider = (typeof PAYMENT_PROVIDERS)[number];

/**
 * A purchase. The checkout workflow (`checkout/<id>`) owns its state; this row is the projection the API reads.
 * Every change is a conditional UPDATE on the expected status, so a replayed step changes nothing.
 */
export const Sale = defineEntity({
  name: 'Sale',
  tableName: 'sales',
  filters: { ...tenantFilter },
  indexes: [
    { properties: ['workspace', 'id'] },
    { properties: ['workspace', 'status', 'id'] },
    { properties: ['workspace', 'eventDate', 'id'] },
    { properties: ['workspace', 'createdAt'] },
    { properties: ['buyer', 'eventDate', 'status'] },
    // Reports (api/reports): CONFIRMED sales of a period (timeseries, summary), and one event's sales of a period.
    { properties: ['workspace', 'status', 'createdAt'] },
    { properties: ['workspace', 'event', 'createdAt'] },
    // Holds whose payment window has passed, found every sweep (entities/stock.ts, releaseLapsedHolds).
    {
      name: 'sales_pending_expires_at_index',
      expression: `create index "sales_pending_expires_at_index" on "sales" ("expires_at") where "status" = 'PENDING'`,
    },
    // The reconciler (activities/reconciler.ts) pages through these by key from a saved cursor, a bounded number of
    // rows a run however many sales there are; each index serves one walk or one "is this payment settled?" probe.
    // A payment some sale is paid by (or was, and gave back): the stranded-payment sweep's settled probe.
    {
      name: 'sales_payment_ref_index',
      expression: `create index "sales_payment_ref_index" on "sales" ("payment_ref") where "payment_ref" is not null`,
    },
    // Sales closed unpaid, in the order the gateway check walks them (closed_at, id).
    {
      name: 'sales_closed_unpaid_walk_index',
      expression: `create index "sales_closed_unpaid_walk_index" on "sales" ("closed_at", "id") where "status" in ('ABANDONED', 'CANCELLED')`,
    },
    // Sales paid once (CONFIRMED, REFUNDED) by when their window ended (the gateway check's due time, less its
    // settlement lag), then id.
    {
      name: 'sales_paid_due_walk_index',
      expression: `create index "sales_paid_due_walk_index" on "sales" ((greatest("expires_at", "confirmed_at")), "id") where "status" in ('CONFIRMED', 'REFUNDED')`,
    },
    // Sales a cancelled event still has to undo (the reconciler's resume of event cancellations): refunded ones
    // drop out, so an old event of 20,000 refunded sales costs nothing a run.
    {
      name: 'sales_event_to_undo_index',
      expression: `create index "sales_event_to_undo_index" on "sales" ("event_id") where "status" in ('PENDING', 'CONFIRMED')`,
    },
  ],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    reference: p.string().length(16).unique(),
    status: p.enum(SALE_STATUSES),
    channel: p.enum(SALE_CHANNELS).default('WEB'),
    origin: p.enum(SALE_ORIGINS),
    event: () => p.manyToOne(Event).mapToPk(),
    eventDate: () => p.manyToOne(EventDate).mapToPk(),
    buyer: () => p.manyToOne(Buyer).mapToPk().nullable(),
    buyerName: p.string().length(120),
    buyerEmail: p.string().length(254),
    buyerPhone: p.string().length(40).nullable(),
    buyerDocumentType: p.string().length(8).nullable(),
    buyerDocumentNumber: p.string().length(20).nullable(),
    buyerNitDigit: p.string().length(1).nullable(),
    subtotal: p.integer(),
    discountAmount: p.integer(),
    serviceFee: p.integer(),
    iva: p.integer(),
    total: p.integer(),
    /** Fee the organizer absorbs, deducted at settlement (domain/pricing.ts). */
    organizerServiceFee: p.integer().default(0),
    currency: p.string().length(3),
    discount: () => p.manyToOne(Discount).mapToPk().nullable(),
    paymentProvider: p.enum(PAYMENT_PROVIDERS).nullable(),
    paymentRef: p.string().length(120).nullable(),
    paymentStatus: p.string().length(60).nullable(),
    declineCode: p.string().length(80).nullable(),
    failureReason: p.string().length(300).nullable(),
    returnUrl: p.string().length(2048).nullable(),
    holdToken: p.string().length(120).nullable(),
    expiresAt: p.datetime().columnType('timestamptz').nullable(),
    confirmedAt: p.datetime().columnType('timestamptz').nullable(),
    closedAt: p.datetime().columnType('timestamptz').nullable(),
    /** When the confirmation email with the tickets went out: set once, so a retried step never mails twice. */
    ticketsEmailedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type ISale = InferEntity<typeof Sale>;

export const SaleItem = defineEntity({
  name: 'SaleItem',
  tableName: 'sale_items',
  properties: {
    id: p.string().columnType('uuid').primary(),
    sale: () => p.manyToOne(Sale).mapToPk().deleteRule('cascade').index(),
    ticketType: () => p.manyToOne(TicketType).mapToPk(),
    ticketTypeName: p.string().length(160),
    quantity: p.integer(),
    unitPrice: p.integer(),
    unitServiceFee: p.integer(),
    unitIva: p.integer(),
    seats: p.json<string[]>().nullable(),
  },
});
export type ISaleItem = InferEntity<typeof SaleItem>;

/**
 * A sale item's seat labels as a raw query returns its `seats` column: pg parses jsonb into an array, and a value
 * cast to text on the way arrives as its JSON text; no seats is an empty list.
 */
export function seatLabelsOf(seats: string[] | string | null): string[] {
  if (seats === null) return [];
  return typeof seats === 'string' ? (JSON.parse(seats) as string[]) : seats;
}

/**
 * Units of stock a sale holds, per stock shard. Present while the sale holds inventory (reserved or sold); deleting
 * the rows and returning their units to the shards is one transaction, so stock is never returned twice.
 */
export const SaleStockAllocation = defineEntity({
  name: 'SaleStockAllocation',
  tableName: 'sale_stock_allocations',
  primaryKeys: ['sale', 'ticketType', 'shard'],
  properties: {
    sale: () => p.manyToOne(Sale).mapToPk().primary().deleteRule('cascade'),
    ticketType: () => p.manyToOne(TicketType).mapToPk().primary().index(),
    shard: p.smallint().primary(),
    quantity: p.integer(),
  },
});
export type ISaleStockAllocation = InferEntity<typeof SaleStockAllocation>;
