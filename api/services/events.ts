/**
 * Event and event-date operations the organizer routes run: loading rows of the caller's workspace, slug
 * uniqueness, and applying the rules of domain/events.ts inside the transactions and locks they need. Routes keep
 * the HTTP side (schemas, status codes, mapping); anything else that changes events calls these too.
 */
import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
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
import type { IEvent, SALES_MODES } from '../../entities/event.js';
import type { IEventDate } from '../../entities/event-date.js';
import { isUuid, newId } from '../../entities/ids.js';
import { Event, EventDate, Sale, TicketType, Venue } from '../../entities/index.js';
import { SA } from '../../workflows/definitions.js';
import type { eventCancellation } from '../../workflows/event-cancellation.js';
import { eventCancellationWorkflowId } from '../../workflows/event-cancellation-definitions.js';
import { dateIfSent, dateOrNull, patchedDate } from '../http/dates.js';
import { seatMapClient, seatMapEventKeyOf } from '../http/seatmap.js';
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

/** Slugs are unique across every workspace (they are public addresses), deleted events included. */
async function slugTaken(em: EntityManager, slug: string, exceptId?: string): Promise<boolean> {
  const count = await em.count(Event, { slug, ...(exceptId ? { id: { $ne: exceptId } } : {}) }, { filters: false });
  return count > 0;
}

const slugConflict = (slug: string): AppError =>
  new AppError('ALREADY_EXISTS', `The slug ${slug} is already used by another event; choose another`, {
    details: { fields: [{ field: 'body.slug', message: 'already taken' }] },
  });

async function availableSlug(em: EntityManager, name: string): Promise<string> {
  const base = eventSlugBase(name);
  if (!(await slugTaken(em, base))) return base;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const candidate = `${base}-${newId().slice(-6)}`;
    if (!(await slugTaken(em, candidate))) return candidate;
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
  if (input.slug && (await slugTaken(em, input.slug))) throw slugConflict(input.slug);
  const slug = input.slug ?? (await availableSlug(em, input.name));
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
  if (patch.slug !== undefined && patch.slug !== event.slug && (await slugTaken(em, patch.slug, event.id))) {
    throw slugConflict(patch.slug);
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

export async function publishEvent(em: EntityManager, id: string): Promise<IEvent> {
  return em.transactional(async (tx) => {
    const event = await findEvent(tx, id, { lock: true });
    const contents = {
      dates: await tx.count(EventDate, { event: event.id }),
      ticketTypes: await tx.count(TicketType, { event: event.id }),
    };
    publish(event, contents, new Date());
    return event;
  });
}

/**
 * Marks the event CANCELLED (no new orders from the commit on), then starts the durable workflow that cancels or
 * refunds its sales. The workflow starts after the commit: a crash between the two leaves a cancelled event whose
 * repeated request starts it.
 */
export async function cancelEvent(
  services: ApiServices,
  em: EntityManager,
  input: { eventId: string; workspaceId: string; reason: string },
): Promise<IEvent> {
  const event = await em.transactional(async (tx) => {
    const found = await findEvent(tx, input.eventId, { lock: true });
    cancel(found, new Date());
    return found;
  });
  await services.temporal.workflow
    .start<typeof eventCancellation>('eventCancellation', {
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
      // A finished cancellation is not run again by a repeated request: nothing is left to undo.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    })
    .catch((error: unknown) => {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    });
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
  const problems = prepared.flatMap((date, index) => dateWindowProblems(date.window, input.fieldPrefix(index)));
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
  const problems = dateWindowProblems(window, 'body');
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
