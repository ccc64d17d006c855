/**
 * Event and event-date operations the organizer routes run: loading rows of the caller's workspace, slug
 * uniqueness, and applying the rules of domain/events.ts inside the transactions and locks they need. Routes keep
 * the HTTP side (schemas, status codes, mapping); anything else that changes events calls these too.
 */
import { type FilterQuery, LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { AppError, notFound } from '../../domain/errors.js';
import {
  assertNoLiveSalesOnDate,
  assertNoLiveSalesOnEvent,
  assertNotCancelled,
  assertSalesMode,
  cancel,
  type DateWindow,
  dateWindowProblems,
  eventSlugBase,
  LIVE_SALE_STATUSES,
  publish,
} from '../../domain/events.js';
import { validationFailed } from '../../domain/field-errors.js';
import { isReservedSlug } from '../../domain/slug.js';
import type { EVENT_STATUSES, IEvent, SALES_MODES } from '../../entities/event.js';
import type { IEventDate } from '../../entities/event-date.js';
import { isUuid, newId } from '../../entities/ids.js';
import { Event, EventDate, Sale, TicketType, Venue } from '../../entities/index.js';
import { SA } from '../../workflows/definitions.js';
import type { eventCancellation } from '../../workflows/event-cancellation.js';
import { eventCancellationWorkflowId } from '../../workflows/event-cancellation-definitions.js';
import { dateIfSent, dateOrNull, patchedDate } from '../http/dates.js';
import { seatMapClient, seatMapEventKeyOf } from '../http/seatmap.js';
import { likeContains } from '../http/text.js';
import type { ApiServices } from '../services.js';

type SalesMode = (typeof SALES_MODES)[number];

export interface NewEvent {
  name: string;
  slug?: string | undefined;
  description?: string | null | undefined;
  imageUrl?: string | null | undefined;
  venueId?: string | null | undefined;
  salesMode: SalesMode;
  externalSalesUrl?: string | null | undefined;
  gatewayBOnly: boolean;
}

export interface EventPatch {
  name?: string | undefined;
  slug?: string | undefined;
  description?: string | null | undefined;
  imageUrl?: string | null | undefined;
  venueId?: string | null | undefined;
  salesMode?: SalesMode | undefined;
  externalSalesUrl?: string | null | undefined;
  gatewayBOnly?: boolean | undefined;
}

/** Dates arrive as ISO strings, already checked for shape by the route's schema. */
export interface NewEventDate {
  label?: string | null | undefined;
  startsAt: string;
  endsAt?: string | null | undefined;
  timezone?: string | undefined;
  salesStartAt?: string | null | undefined;
  salesEndAt?: string | null | undefined;
  paymentWindowMinutes: number;
  virtualQueue: boolean;
  queueAdmissionsPerMinute: number;
  queueMinActive?: number | null | undefined;
  queueMaxActive?: number | null | undefined;
  seatMapChartKey?: string | null | undefined;
}

export type EventDatePatch = {
  [K in keyof NewEventDate]?: K extends
    | 'startsAt'
    | 'paymentWindowMinutes'
    | 'virtualQueue'
    | 'queueAdmissionsPerMinute'
    ? NewEventDate[K] | undefined
    : NewEventDate[K];
};

type Log = { warn(obj: object, msg: string): void };

/** The waiting room's floor of admitted buyers active at once cannot exceed its ceiling. */
function queueBoundsProblems(floor: number | null, ceiling: number | null, prefix: string) {
  return floor !== null && ceiling !== null && floor > ceiling
    ? [{ field: `${prefix}.queueMaxActive`, message: 'must not be below queueMinActive' }]
    : [];
}

/** A date without a zone of its own or its venue's is in the market the service was built for. */
const DEFAULT_TIMEZONE = 'America/Bogota';

// ---------------------------------------------------------------------------------------------------------------
// Loading

export async function findEvent(em: EntityManager, id: string, options: { lock?: boolean } = {}): Promise<IEvent> {
  const event = isUuid(id)
    ? await em.findOne(Event, { id }, options.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {})
    : null;
  if (!event) throw notFound('Event');
  return event;
}

export async function findEventDate(em: EntityManager, eventId: string, dateId: string): Promise<IEventDate> {
  const date = isUuid(eventId) && isUuid(dateId) ? await em.findOne(EventDate, { id: dateId, event: eventId }) : null;
  if (!date) throw notFound('Event date');
  return date;
}

/** The tenant filter limits the lookup to the caller's workspace, so another organizer's venue reads as missing. */
async function assertVenue(em: EntityManager, venueId: string | null | undefined): Promise<void> {
  if (!venueId) return;
  if (!(await em.findOne(Venue, { id: venueId }))) {
    throw validationFailed([{ field: 'body.venueId', message: 'no venue with this id in your workspace' }]);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Slugs

/**
 * Whether a slug is unavailable to this workspace: used by one of its own events (deleted ones included), or the
 * storefront address of an event that was ever published, in any workspace (a public fact, so saying so reveals
 * nothing). Another workspace's never-published event does not count: its slug is not public, so it can be neither
 * probed nor squatted from here (entities/event.ts; the first to publish a slug keeps it).
 */
async function slugTaken(em: EntityManager, slug: string, workspaceId: string, exceptId?: string): Promise<boolean> {
  const rows = await em.execute<{ taken: boolean }[]>(
    `select exists (select 1 from events where slug = ? and (workspace_id = ? or published_at is not null)
       and id <> ?) as taken`,
    [slug, workspaceId, exceptId ?? '00000000-0000-0000-0000-000000000000'],
  );
  return rows[0]?.taken === true;
}

const slugConflict = (slug: string): AppError =>
  new AppError('ALREADY_EXISTS', `The slug ${slug} is already used by another event; choose another`, {
    details: { fields: [{ field: 'body.slug', message: 'already taken' }] },
  });

/** A slug the caller chose: not a reserved word (422), not taken (409, see slugTaken). */
async function assertSlugAvailable(
  em: EntityManager,
  slug: string,
  workspaceId: string,
  exceptId?: string,
): Promise<void> {
  if (isReservedSlug(slug)) {
    throw validationFailed([{ field: 'body.slug', message: 'reserved by the service; choose another' }]);
  }
  if (await slugTaken(em, slug, workspaceId, exceptId)) throw slugConflict(slug);
}

async function availableSlug(em: EntityManager, name: string, workspaceId: string): Promise<string> {
  const base = eventSlugBase(name);
  if (!isReservedSlug(base) && !(await slugTaken(em, base, workspaceId))) return base;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const candidate = `${base}-${newId().slice(-6)}`;
    if (!(await slugTaken(em, candidate, workspaceId))) return candidate;
  }
  return `${base}-${newId().slice(-12)}`;
}

/** The checks above race with other writers; the unique index has the last word and still answers 409. */
async function flushClaimingSlug(em: EntityManager, slug: string): Promise<void> {
  try {
    await em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw slugConflict(slug);
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Events

export async function createEvent(em: EntityManager, workspaceId: string, input: NewEvent): Promise<IEvent> {
  assertSalesMode(input.salesMode, input.externalSalesUrl);
  await assertVenue(em, input.venueId);
  if (input.slug) await assertSlugAvailable(em, input.slug, workspaceId);
  const slug = input.slug ?? (await availableSlug(em, input.name, workspaceId));
  const event = em.create(Event, {
    id: newId(),
    workspace: workspaceId,
    venue: input.venueId ?? null,
    name: input.name,
    slug,
    description: input.description ?? null,
    imageUrl: input.imageUrl ?? null,
    status: 'DRAFT',
    salesMode: input.salesMode,
    externalSalesUrl: input.externalSalesUrl ?? null,
    gatewayBOnly: input.gatewayBOnly,
    publishedAt: null,
    cancelledAt: null,
    deletedAt: null,
  });
  await flushClaimingSlug(em, slug);
  return event;
}

export async function updateEvent(em: EntityManager, id: string, patch: EventPatch): Promise<IEvent> {
  const event = await findEvent(em, id);
  assertSalesMode(
    patch.salesMode ?? event.salesMode,
    patch.externalSalesUrl !== undefined ? patch.externalSalesUrl : event.externalSalesUrl,
  );
  if (patch.venueId !== undefined) await assertVenue(em, patch.venueId);
  if (patch.slug !== undefined && patch.slug !== event.slug) {
    await assertSlugAvailable(em, patch.slug, event.workspace, event.id);
  }
  if (patch.name !== undefined) event.name = patch.name;
  if (patch.slug !== undefined) event.slug = patch.slug;
  if (patch.description !== undefined) event.description = patch.description;
  if (patch.imageUrl !== undefined) event.imageUrl = patch.imageUrl;
  if (patch.venueId !== undefined) event.venue = patch.venueId;
  if (patch.salesMode !== undefined) event.salesMode = patch.salesMode;
  if (patch.externalSalesUrl !== undefined) event.externalSalesUrl = patch.externalSalesUrl;
  if (patch.gatewayBOnly !== undefined) event.gatewayBOnly = patch.gatewayBOnly;
  await flushClaimingSlug(em, event.slug);
  return event;
}

/** Soft-deletes the event with its dates and ticket types, under the event's lock so no sale starts meanwhile. */
export async function deleteEvent(em: EntityManager, id: string): Promise<IEvent> {
  return em.transactional(async (tx) => {
    const event = await findEvent(tx, id, { lock: true });
    assertNoLiveSalesOnEvent(
      event.id,
      await tx.count(Sale, { event: event.id, status: { $in: [...LIVE_SALE_STATUSES] } }),
    );
    const now = new Date();
    event.deletedAt = now;
    await tx.nativeUpdate(TicketType, { event: event.id }, { deletedAt: now });
    await tx.nativeUpdate(EventDate, { event: event.id }, { deletedAt: now });
    return event;
  });
}

/**
 * Publishes the event, which claims its slug across the service. Another workspace may have published the same slug
 * since this draft took it (drafts claim theirs only within their workspace): then 409, since that address is public.
 */
export async function publishEvent(em: EntityManager, id: string): Promise<IEvent> {
  let slug = '';
  try {
    return await em.transactional(async (tx) => {
      const event = await findEvent(tx, id, { lock: true });
      slug = event.slug;
      const contents = {
        dates: await tx.count(EventDate, { event: event.id }),
        ticketTypes: await tx.count(TicketType, { event: event.id }),
      };
      publish(event, contents, new Date());
      return event;
    });
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) {
      throw new AppError(
        'ALREADY_EXISTS',
        `The slug ${slug} is already the storefront address of another event; change it with PATCH and publish again`,
        { details: { reason: 'slug_taken', fields: [{ field: 'slug', message: 'already public' }] } },
      );
    }
    throw error;
  }
}

/**
 * Marks the event CANCELLED (no new orders from the commit on), then starts the durable workflow that cancels or
 * refunds its sales. The workflow starts after the commit: a crash between the two leaves a cancelled event whose
 * repeated request starts it (and the reconciler does, if nobody repeats it).
 *
 * A repeated request joins the cancellation while it runs, and starts it again when it failed or was terminated
 * (the server terminates an execution at its history limit): the new run goes through the sales from the start and
 * refunds none twice. After a cancellation that finished, it starts again only if sales still hold stock or money
 * (a payment in flight confirmed one after the final sweep).
 */
export async function cancelEvent(
  services: Pick<ApiServices, 'temporal' | 'env'>,
  em: EntityManager,
  input: { eventId: string; workspaceId: string; reason: string },
): Promise<IEvent> {
  const event = await em.transactional(async (tx) => {
    const found = await findEvent(tx, input.eventId, { lock: true });
    cancel(found, new Date());
    return found;
  });
  const start = (workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY' | 'ALLOW_DUPLICATE') =>
    services.temporal.workflow.start<typeof eventCancellation>('eventCancellation', {
      workflowId: eventCancellationWorkflowId(event.id),
      taskQueue: services.env.TEMPORAL_TASK_QUEUE,
      args: [
        {
          eventId: event.id,
          workspaceId: input.workspaceId,
          reason: input.reason,
          finalSweepDelayMs: services.env.EVENT_CANCELLATION_FINAL_SWEEP_MS,
        },
      ],
      typedSearchAttributes: [{ key: SA.workspaceId, value: input.workspaceId }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy,
    });
  try {
    await start('ALLOW_DUPLICATE_FAILED_ONLY');
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    // The last run completed: run again only for sales that still hold stock or money.
    const live = await em.count(Sale, { event: event.id, status: { $in: [...LIVE_SALE_STATUSES] } });
    if (live > 0) {
      await start('ALLOW_DUPLICATE').catch((again: unknown) => {
        if (!(again instanceof WorkflowExecutionAlreadyStartedError)) throw again;
      });
    }
  }
  return event;
}

// ---------------------------------------------------------------------------------------------------------------
// Dates

/**
 * Adds dates in one transaction, all or none. `fieldPrefix(index)` names where each date sat in the request, so a
 * refused window points at `body.dates.3.endsAt` in a batch and `body.endsAt` for a single date.
 */
export async function addEventDates(
  services: ApiServices,
  em: EntityManager,
  input: {
    eventId: string;
    workspaceId: string;
    dates: readonly NewEventDate[];
    fieldPrefix: (index: number) => string;
  },
  log: Log,
): Promise<IEventDate[]> {
  const prepared = input.dates.map((date) => ({
    input: date,
    window: {
      startsAt: new Date(date.startsAt),
      endsAt: dateOrNull(date.endsAt),
      salesStartAt: dateOrNull(date.salesStartAt),
      salesEndAt: dateOrNull(date.salesEndAt),
    } satisfies DateWindow,
  }));
  const problems = prepared.flatMap((date, index) => [
    ...dateWindowProblems(date.window, input.fieldPrefix(index)),
    ...queueBoundsProblems(
      date.input.queueMinActive ?? null,
      date.input.queueMaxActive ?? null,
      input.fieldPrefix(index),
    ),
  ]);
  if (problems.length > 0) throw validationFailed(problems);

  const created = await em.transactional(async (tx) => {
    const event = await findEvent(tx, input.eventId, { lock: true });
    assertNotCancelled(event, 'adding dates');
    const venue = event.venue ? await tx.findOne(Venue, { id: event.venue }) : null;
    return prepared.map(({ input: date, window }) =>
      tx.create(EventDate, {
        id: newId(),
        workspace: input.workspaceId,
        event: event.id,
        label: date.label ?? null,
        ...window,
        timezone: date.timezone ?? venue?.timezone ?? DEFAULT_TIMEZONE,
        paymentWindowMinutes: date.paymentWindowMinutes,
        virtualQueue: date.virtualQueue,
        queueAdmissionsPerMinute: date.queueAdmissionsPerMinute,
        queueMinActive: date.queueMinActive ?? null,
        queueMaxActive: date.queueMaxActive ?? null,
        seatMapChartKey: date.seatMapChartKey ?? null,
        seatMapEventKey: null,
        cancelledAt: null,
        deletedAt: null,
      }),
    );
  });
  for (const date of created) await attachSeatMap(services, em, date, log);
  return created;
}

export async function updateEventDate(
  services: ApiServices,
  em: EntityManager,
  ids: { eventId: string; dateId: string },
  patch: EventDatePatch,
  log: Log,
): Promise<IEventDate> {
  const date = await findEventDate(em, ids.eventId, ids.dateId);
  const window: DateWindow = {
    startsAt: dateIfSent(patch.startsAt) ?? date.startsAt,
    endsAt: patchedDate(patch.endsAt, date.endsAt),
    salesStartAt: patchedDate(patch.salesStartAt, date.salesStartAt),
    salesEndAt: patchedDate(patch.salesEndAt, date.salesEndAt),
  };
  const problems = [
    ...dateWindowProblems(window, 'body'),
    ...queueBoundsProblems(
      patch.queueMinActive !== undefined ? patch.queueMinActive : (date.queueMinActive ?? null),
      patch.queueMaxActive !== undefined ? patch.queueMaxActive : (date.queueMaxActive ?? null),
      'body',
    ),
  ];
  if (problems.length > 0) throw validationFailed(problems);
  date.startsAt = window.startsAt;
  date.endsAt = window.endsAt;
  date.salesStartAt = window.salesStartAt;
  date.salesEndAt = window.salesEndAt;
  if (patch.label !== undefined) date.label = patch.label;
  if (patch.timezone !== undefined) date.timezone = patch.timezone;
  if (patch.paymentWindowMinutes !== undefined) date.paymentWindowMinutes = patch.paymentWindowMinutes;
  if (patch.virtualQueue !== undefined) date.virtualQueue = patch.virtualQueue;
  if (patch.queueAdmissionsPerMinute !== undefined) date.queueAdmissionsPerMinute = patch.queueAdmissionsPerMinute;
  if (patch.queueMinActive !== undefined) date.queueMinActive = patch.queueMinActive;
  if (patch.queueMaxActive !== undefined) date.queueMaxActive = patch.queueMaxActive;
  // A new chart is a new event at the seat-map provider; the old key would hand out the old chart's seats.
  if (patch.seatMapChartKey !== undefined && patch.seatMapChartKey !== date.seatMapChartKey) {
    date.seatMapChartKey = patch.seatMapChartKey;
    date.seatMapEventKey = null;
  }
  await em.flush();
  await attachSeatMap(services, em, date, log);
  return date;
}

/** Soft-deletes the date with its ticket types. */
export async function deleteEventDate(
  em: EntityManager,
  ids: { eventId: string; dateId: string },
): Promise<IEventDate> {
  return em.transactional(async (tx) => {
    const date = await findEventDate(tx, ids.eventId, ids.dateId);
    assertNoLiveSalesOnDate(
      date.id,
      await tx.count(Sale, { eventDate: date.id, status: { $in: [...LIVE_SALE_STATUSES] } }),
    );
    const now = new Date();
    date.deletedAt = now;
    await tx.nativeUpdate(TicketType, { eventDate: date.id }, { deletedAt: now });
    return date;
  });
}

/**
 * A date with a chart gets its event at the seat-map provider (key: the date id), which the availability and the
 * checkout read seats from. Best effort: a provider that is down (or an unknown chart) leaves seatMapEventKey null
 * (numbered types then list no seats and refuse orders with seats_not_held) and the next PATCH of the date retries.
 */
async function attachSeatMap(services: ApiServices, em: EntityManager, date: IEventDate, log: Log): Promise<void> {
  if (!date.seatMapChartKey || date.seatMapEventKey) return;
  try {
    const eventKey = seatMapEventKeyOf(date.id);
    await seatMapClient(services.env).createEvent({ chartKey: date.seatMapChartKey, eventKey });
    await em.nativeUpdate(EventDate, { id: date.id }, { seatMapEventKey: eventKey });
    date.seatMapEventKey = eventKey;
  } catch (error) {
    log.warn(
      { eventDateId: date.id, err: (error as Error).message },
      'seat-map event not created; retried on the next PATCH',
    );
  }
}

/** Newest first, one more than `limit` (the page builder tells whether there is more); `after` is the last id seen. */
export function listEvents(
  em: EntityManager,
  query: {
    after: string | undefined;
    limit: number;
    status?: (typeof EVENT_STATUSES)[number] | undefined;
    /** Part of the name, any case. */
    q?: string | undefined;
    venue?: string | undefined;
  },
): Promise<IEvent[]> {
  const { after, limit, status, q, venue } = query;
  const where: FilterQuery<IEvent> = {
    ...(after ? { id: { $lt: after } } : {}),
    ...(status ? { status } : {}),
    ...(q ? { name: { $ilike: likeContains(q) } } : {}),
    ...(venue ? { venue } : {}),
  };
  return em.find(Event, where, { orderBy: { id: 'desc' }, limit: limit + 1 });
}

/** The dates of an event of the workspace (404 otherwise), newest first, one more than `limit`. */
export async function listEventDates(
  em: EntityManager,
  eventId: string,
  after: string | undefined,
  limit: number,
): Promise<IEventDate[]> {
  const event = await findEvent(em, eventId);
  return em.find(
    EventDate,
    { event: event.id, ...(after ? { id: { $lt: after } } : {}) },
    { orderBy: { id: 'desc' }, limit: limit + 1 },
  );
}
