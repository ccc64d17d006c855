/** `ticketing events list`: GET /api/v1/events, every page. */
import { z } from 'zod';
import type { ApiClient } from './api-client.js';
import { type Column, formatInstant } from './output.js';

/** The fields the table shows; the rest of the Event (api/routes/v1/events.ts) passes through to `--json`. */
export const EventRowSchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  status: z.string(),
  publishedAt: z.string().nullable().optional(),
  createdAt: z.string(),
});
export type EventRow = z.infer<typeof EventRowSchema>;

export const EventsListOptions = z.object({
  status: z.string().trim().min(1).max(40).optional(),
  limit: z.coerce.number().int().positive().optional(),
});
export type EventsListOptions = z.infer<typeof EventsListOptions>;

export const EVENT_COLUMNS: ReadonlyArray<Column<EventRow>> = [
  { header: 'ID', value: (event) => event.id },
  { header: 'NAME', value: (event) => event.name },
  { header: 'STATUS', value: (event) => event.status },
  { header: 'SLUG', value: (event) => event.slug },
  { header: 'CREATED (UTC)', value: (event) => formatInstant(event.createdAt) },
];

export async function listEvents(client: ApiClient, options: EventsListOptions): Promise<EventRow[]> {
  const events: EventRow[] = [];
  for await (const page of client.pages('/events', { status: options.status }, EventRowSchema, options)) {
    events.push(...page);
  }
  return events;
}
