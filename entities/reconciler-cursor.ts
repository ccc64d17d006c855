import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * Where a reconciler sweep that walks a long list stopped, so the next run goes on from there instead of rereading
 * the newest rows (after a big sale, the older ones would never be reached). One row per sweep and scope (`name`,
 * e.g. `gateway-check:all` or `gateway-check:<workspaceId>`); a sweep that reaches the end starts over from the
 * oldest. Written only by the reconciler's activities (activities/reconciler.ts).
 */
export const ReconcilerCursor = defineEntity({
  name: 'ReconcilerCursor',
  tableName: 'reconciler_cursors',
  properties: {
    name: p.string().length(80).primary(),
    /** The position reached: the due time of the last item visited, and its id to break ties. */
    dueAt: p.datetime().columnType('timestamptz'),
    itemId: p.string().columnType('uuid'),
    updatedAt: p
      .datetime()
      .columnType('timestamptz')
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IReconcilerCursor = InferEntity<typeof ReconcilerCursor>;
