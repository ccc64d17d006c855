import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TicketType } from './ticket-type.js';

/**
 * What is left to sell of a ticket type, split across a few rows ("shards"). A flash sale on one type then spreads
 * its row locks over several rows instead of serializing every buyer on one. Invariant, enforced by a CHECK:
 * no shard goes below zero; Σ available = capacity − sold − reserved. Only activities/inventory.ts writes here,
 * always with a conditional UPDATE, never read-then-write.
 */
export const TicketStock = defineEntity({
  name: 'TicketStock',
  tableName: 'ticket_stock',
  primaryKeys: ['ticketType', 'shard'],
  checks: [{ name: 'ticket_stock_available_non_negative', expression: 'available >= 0' }],
  properties: {
    ticketType: () => p.manyToOne(TicketType).mapToPk().primary().deleteRule('cascade'),
    shard: p.smallint().primary(),
    available: p.integer(),
  },
});
export type ITicketStock = InferEntity<typeof TicketStock>;
