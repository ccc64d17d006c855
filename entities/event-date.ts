import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties, softDeleteFilter, tenantFilter } from './common.js';
import { Event } from './event.js';
import { Workspace } from './workspace.js';

/** Contract: "Payment window … 30 minutes by default, never below 10 minutes". */
export const DEFAULT_PAYMENT_WINDOW_MINUTES = 30;
export const MIN_PAYMENT_WINDOW_MINUTES = 10;

export const EventDate = defineEntity({
  name: 'EventDate',
  tableName: 'event_dates',
  filters: { ...softDeleteFilter, ...tenantFilter },
  // Inventory and financials reports select a workspace's dates by when they start.
  indexes: [{ properties: ['workspace', 'startsAt'] }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    event: () => p.manyToOne(Event).mapToPk().deleteRule('cascade').index(),
    label: p.string().length(160).nullable(),
    startsAt: p.datetime().columnType('timestamptz'),
    endsAt: p.datetime().columnType('timestamptz').nullable(),
    /** IANA zone the date is held in; instants are stored in UTC. */
    timezone: p.string().length(64).default('America/Bogota'),
    salesStartAt: p.datetime().columnType('timestamptz').nullable(),
    salesEndAt: p.datetime().columnType('timestamptz').nullable(),
    paymentWindowMinutes: p.integer().default(DEFAULT_PAYMENT_WINDOW_MINUTES),
    /** High-demand dates send buyers through the virtual queue (QUEUE_REQUIRED without a turn). */
    virtualQueue: p.boolean().default(false),
    /** Deprecated: admission follows measured capacity (docs/waiting-room.md); kept so existing clients still work. */
    queueAdmissionsPerMinute: p.integer().default(60),
    /** Organizer's floor and ceiling of admitted buyers active at once in the waiting room; null: the defaults. */
    queueMinActive: p.integer().nullable(),
    queueMaxActive: p.integer().nullable(),
    /** Seat-map chart attached to the date; numbered ticket types map categories of it. */
    seatMapChartKey: p.string().length(120).nullable(),
    seatMapEventKey: p.string().length(120).nullable(),
    cancelledAt: p.datetime().columnType('timestamptz').nullable(),
    deletedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IEventDate = InferEntity<typeof EventDate>;
