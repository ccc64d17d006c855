import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TICKET_STATUSES } from '../domain/sale-state.js';
import { baseProperties, tenantFilter } from './common.js';
import { Sale } from './sale.js';
import { TicketType } from './ticket-type.js';
import { Workspace } from './workspace.js';

export const Ticket = defineEntity({
  name: 'Ticket',
  tableName: 'tickets',
  filters: { ...tenantFilter },
  // The attendees export (api/reports/exports.ts) pages a workspace's tickets by id, whole or per event or date.
  indexes: [
    { properties: ['workspace', 'id'] },
    { properties: ['workspace', 'eventId', 'id'] },
    { properties: ['workspace', 'eventDateId', 'id'] },
  ],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    sale: () => p.manyToOne(Sale).mapToPk().deleteRule('cascade').index(),
    ticketType: () => p.manyToOne(TicketType).mapToPk().index(),
    eventId: p.string().columnType('uuid'),
    eventDateId: p.string().columnType('uuid'),
    /** Unguessable code printed in the QR (≥128 random bits). */
    code: p.string().length(40).unique(),
    /** Position of the ticket inside its sale; issuing twice cannot create a second ticket for the same slot. */
    ordinal: p.integer(),
    status: p.enum(TICKET_STATUSES),
    seatLabel: p.string().length(120).nullable(),
    checkedInAt: p.datetime().columnType('timestamptz').nullable(),
  },
  uniques: [{ properties: ['sale', 'ordinal'] }],
});
export type ITicket = InferEntity<typeof Ticket>;
