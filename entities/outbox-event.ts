import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Workspace } from './workspace.js';

/**
 * Transactional outbox of organizer-facing events (`sale.confirmed`, `sale.refunded`). A row is inserted in the same
 * transaction that changes the sale, so an event exists if and only if the change committed. The webhook dispatcher
 * claims undispatched rows, fans them out to one delivery workflow per subscribed endpoint and stamps
 * `dispatchedAt`. `dedupeKey` (`<type>:<saleId>`) makes a repeated insert a no-op.
 */
export const OutboxEvent = defineEntity({
  name: 'OutboxEvent',
  tableName: 'outbox_events',
  indexes: [{ properties: ['dispatchedAt', 'id'] }],
  properties: {
    id: p.string().columnType('uuid').primary(),
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade').index(),
    type: p.string().length(60),
    payload: p.json<Record<string, unknown>>(),
    dedupeKey: p.string().length(200).unique(),
    createdAt: p.datetime().columnType('timestamptz'),
    dispatchedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IOutboxEvent = InferEntity<typeof OutboxEvent>;
