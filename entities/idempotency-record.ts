import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * The first response to a POST sent with an `Idempotency-Key`, replayed to retries for 24 hours. `scope` is the
 * caller (API key, buyer session or client IP) so two callers can never read each other's responses.
 */
export const IdempotencyRecord = defineEntity({
  name: 'IdempotencyRecord',
  tableName: 'idempotency_records',
  uniques: [{ properties: ['scope', 'key'] }],
  properties: {
    id: p.string().columnType('uuid').primary(),
    scope: p.string().length(120),
    key: p.string().length(255),
    requestHash: p.string().length(64),
    state: p.enum(['in_progress', 'completed'] as const),
    responseStatus: p.integer().nullable(),
    responseBody: p.json<unknown>().nullable(),
    createdAt: p.datetime().columnType('timestamptz'),
    expiresAt: p.datetime().columnType('timestamptz').index(),
  },
});
export type IIdempotencyRecord = InferEntity<typeof IdempotencyRecord>;
