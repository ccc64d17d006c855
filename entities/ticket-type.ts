import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties, softDeleteFilter, tenantFilter } from './common.js';
import { Event } from './event.js';
import { EventDate } from './event-date.js';
import { Workspace } from './workspace.js';

export const TicketType = defineEntity({
  name: 'TicketType',
  tableName: 'ticket_types',
  filters: { ...softDeleteFilter, ...tenantFilter },
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    event: () => p.manyToOne(Event).mapToPk().deleteRule('cascade'),
    eventDate: () => p.manyToOne(EventDate).mapToPk().deleteRule('cascade').index(),
    name: p.string().length(160),
    description: p.text().nullable(),
    /** List price per ticket in the workspace currency's minor units. */
    price: p.integer(),
    currency: p.string().length(3),
    /** Total units ever sellable; stock rows hold what is left (see ticket_stock). */
    capacity: p.integer(),
    maxPerOrder: p.integer().default(10),
    membersOnly: p.boolean().default(false),
    /** Presale tier: when set, the type sells only inside this window. */
    presaleStartsAt: p.datetime().columnType('timestamptz').nullable(),
    presaleEndsAt: p.datetime().columnType('timestamptz').nullable(),
    /** Numbered types sell exact seats of this seat-map category (PublicTicketType.seatsioCategoryKey). */
    seatMapCategoryKey: p.string().length(120).nullable(),
    feeAbsorbedByOrganizer: p.boolean().default(false),
    /** Overrides of the workspace fee policy; null inherits. */
    serviceFeeBps: p.integer().nullable(),
    serviceFeeFixed: p.integer().nullable(),
    seatingSurcharge: p.integer().default(0),
    sortOrder: p.integer().default(0),
    deletedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type ITicketType = InferEntity<typeof TicketType>;
