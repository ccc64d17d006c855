import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties, softDeleteFilter, tenantFilter } from './common.js';
import { Venue } from './venue.js';
import { Workspace } from './workspace.js';

export const EVENT_STATUSES = ['DRAFT', 'PUBLISHED', 'CANCELLED'] as const;
export const SALES_MODES = ['INTERNAL', 'EXTERNAL'] as const;

/**
 * Progress of the event-cancellation workflow, written by it after every pass so GET /events/{id} answers without
 * asking Temporal. Counts are the event's sales by status at that moment; `failures` are sales it could not undo
 * (a gateway that refuses a refund for good, a complimentary sale already used at the door).
 */
export interface EventCancellationProgress {
  state: 'RUNNING' | 'DONE';
  pending: number;
  confirmed: number;
  cancelled: number;
  refunded: number;
  abandoned: number;
  /**
   * CONFIRMED sales whose refund the gateway refused since the cancellation (listed in `failures` too, the first
   * hundred): parked for an operator. Absent on progress written before it was counted.
   */
  refused?: number;
  failures: { saleId: string; reference: string; code: string; message: string }[];
  startedAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

export const Event = defineEntity({
  name: 'Event',
  tableName: 'events',
  filters: { ...softDeleteFilter, ...tenantFilter },
  indexes: [{ properties: ['workspace', 'id'] }],
  /**
   * A slug is the storefront address only once the event is published, so it is claimed across the service from then
   * on (and kept after deletion, so an old link never leads to another organizer's event); before that, only within
   * the workspace: another organizer's unpublished event can neither be probed nor squatted through its slug.
   */
  uniques: [
    { name: 'events_workspace_slug_unique', properties: ['workspace', 'slug'] },
    { name: 'events_public_slug_unique', properties: ['slug'], where: 'published_at is not null' },
  ],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    venue: () => p.manyToOne(Venue).mapToPk().nullable(),
    name: p.string().length(200),
    /** Public address of the event on the storefront (`/api/public/events/{slug}`): see the uniques above. */
    slug: p.string().length(120),
    description: p.text().nullable(),
    imageUrl: p.string().length(2048).nullable(),
    status: p.enum(EVENT_STATUSES).default('DRAFT'),
    /** EXTERNAL events are listed but sold elsewhere (EXTERNAL_SALE). */
    salesMode: p.enum(SALES_MODES).default('INTERNAL'),
    externalSalesUrl: p.string().length(2048).nullable(),
    /** The event charges only through gateway B (PSE is then unavailable, contract 4.4). */
    gatewayBOnly: p.boolean().default(false),
    publishedAt: p.datetime().columnType('timestamptz').nullable(),
    cancelledAt: p.datetime().columnType('timestamptz').nullable(),
    cancellation: p.json<EventCancellationProgress>().nullable(),
    deletedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IEvent = InferEntity<typeof Event>;
