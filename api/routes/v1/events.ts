import { type FilterQuery, LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { type ZodIssue, z } from 'zod';
import { AppError, notFound } from '../../../domain/errors.js';
import { EVENT_STATUSES, type IEvent, SALES_MODES } from '../../../entities/event.js';
import {
  DEFAULT_PAYMENT_WINDOW_MINUTES,
  type IEventDate,
  MIN_PAYMENT_WINDOW_MINUTES,
} from '../../../entities/event-date.js';
import { isUuid, newId } from '../../../entities/ids.js';
import { Event, EventDate, Sale, TicketType, Venue } from '../../../entities/index.js';
import { SA } from '../../../workflows/definitions.js';
import type { eventCancellation } from '../../../workflows/event-cancellation.js';
import { eventCancellationWorkflowId } from '../../../workflows/event-cancellation-definitions.js';
import { dataOf, listOf, type Warning } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema, isoOrNull } from '../../http/schemas.js';
import { seatMapClient, seatMapEventKeyOf } from '../../http/seatmap.js';
import { activeWorkspace } from '../../plugins/auth.js';
import type { ApiServices } from '../../services.js';
import { TimeZoneSchema } from './venues.js';

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const MAX_PAYMENT_WINDOW_MINUTES = 24 * 60;
const MAX_DATES_PER_REQUEST = 100;
/** Sales in these states hold the event's inventory or money; rows they point to cannot be deleted. */
const LIVE_SALE_STATUSES = ['PENDING', 'CONFIRMED'] as const;

// ---------------------------------------------------------------------------------------------------------------
// Schemas

const EventCancellationSchema = z
  .object({
    state: z.enum(['RUNNING', 'DONE']).meta({
      description: 'DONE when no sale of the event holds stock or money any more, except the failures listed',
    }),
    pending: z.number().int(),
    confirmed: z.number().int(),
    cancelled: z.number().int(),
    refunded: z.number().int(),
    abandoned: z.number().int(),
    failures: z
      .array(z.object({ saleId: z.string(), reference: z.string(), code: z.string(), message: z.string() }))
      .meta({
        description: 'Sales that could not be undone (e.g. the gateway refused the refund); handle them by hand',
      }),
    startedAt: z.string(),
    updatedAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .meta({ id: 'EventCancellation' });

export const EventSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string().meta({ description: 'Public address on the storefront; unique across the service' }),
    description: z.string().nullable(),
    imageUrl: z.string().nullable(),
    venueId: z.string().nullable(),
    status: z.enum(EVENT_STATUSES),
    salesMode: z.enum(SALES_MODES).meta({ description: 'EXTERNAL events are listed but sold at externalSalesUrl' }),
    externalSalesUrl: z.string().nullable(),
    gatewayBOnly: z.boolean(),
    publishedAt: z.string().nullable(),
    cancelledAt: z.string().nullable(),
    cancellation: EventCancellationSchema.nullable().meta({
      description: 'Progress of undoing the sales of a cancelled event; null until the event is cancelled',
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Event' });

export const EventDateSchema = z
  .object({
    id: z.string(),
    eventId: z.string(),
    label: z.string().nullable(),
    startsAt: z.string(),
    endsAt: z.string().nullable(),
    timezone: z.string(),
    salesStartAt: z.string().nullable(),
    salesEndAt: z.string().nullable(),
    paymentWindowMinutes: z.number().int(),
    virtualQueue: z.boolean(),
    queueAdmissionsPerMinute: z.number().int(),
    seatMapChartKey: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'EventDate' });

const HttpUrl = z.url({ protocol: /^https?$/ }).max(2048);
const UuidRef = z.string().refine(isUuid, 'must be a UUID');

const EventFields = z.object({
  name: z.string().trim().min(1).max(200),
  slug: z.string().min(2).max(120).regex(SLUG, 'lowercase letters, digits and single dashes'),
  description: z.string().max(20_000).nullable(),
  imageUrl: HttpUrl.nullable(),
  venueId: UuidRef.nullable().meta({ description: 'A venue of the same workspace' }),
  salesMode: z.enum(SALES_MODES),
  externalSalesUrl: HttpUrl.nullable().meta({ description: 'Required when salesMode is EXTERNAL' }),
  gatewayBOnly: z.boolean(),
});

const CreateEventBody = EventFields.extend({
  slug: EventFields.shape.slug.optional().meta({ description: 'Generated from the name when omitted' }),
  description: EventFields.shape.description.optional(),
  imageUrl: EventFields.shape.imageUrl.optional(),
  venueId: EventFields.shape.venueId.optional(),
  salesMode: EventFields.shape.salesMode.default('INTERNAL'),
  externalSalesUrl: EventFields.shape.externalSalesUrl.optional(),
  gatewayBOnly: EventFields.shape.gatewayBOnly.default(false),
});

/** PATCH is partial. Status changes only through publish and cancel. */
const UpdateEventBody = EventFields.partial();

const ListEventsQuery = PageQuerySchema.extend({
  status: z.enum(EVENT_STATUSES).optional(),
  q: z.string().trim().min(1).max(100).optional().meta({ description: 'Part of the event name' }),
  venue: UuidRef.optional().meta({ description: 'Venue id' }),
});

const DateFields = z.object({
  label: z.string().trim().max(160).nullable(),
  startsAt: IsoDateTimeSchema,
  endsAt: IsoDateTimeSchema.nullable().meta({ description: 'After startsAt' }),
  timezone: TimeZoneSchema,
  salesStartAt: IsoDateTimeSchema.nullable(),
  salesEndAt: IsoDateTimeSchema.nullable().meta({ description: 'After salesStartAt' }),
  paymentWindowMinutes: z
    .number()
    .int()
    .min(MIN_PAYMENT_WINDOW_MINUTES)
    .max(MAX_PAYMENT_WINDOW_MINUTES)
    .meta({ description: 'How long a reservation waits for payment; never below 10 minutes' }),
  virtualQueue: z.boolean(),
  queueAdmissionsPerMinute: z.number().int().min(1).max(100_000),
  seatMapChartKey: z.string().trim().min(1).max(120).nullable(),
});

const CreateDateBody = DateFields.extend({
  label: DateFields.shape.label.optional(),
  endsAt: DateFields.shape.endsAt.optional(),
  timezone: TimeZoneSchema.optional().meta({ description: "Defaults to the venue's zone, else America/Bogota" }),
  salesStartAt: DateFields.shape.salesStartAt.optional(),
  salesEndAt: DateFields.shape.salesEndAt.optional(),
  paymentWindowMinutes: DateFields.shape.paymentWindowMinutes.default(DEFAULT_PAYMENT_WINDOW_MINUTES),
  virtualQueue: DateFields.shape.virtualQueue.default(false),
  queueAdmissionsPerMinute: DateFields.shape.queueAdmissionsPerMinute.default(60),
  seatMapChartKey: DateFields.shape.seatMapChartKey.optional(),
});
type CreateDateInput = z.infer<typeof CreateDateBody>;

const CreateDatesBatchBody = z.object({ dates: z.array(CreateDateBody).min(1).max(MAX_DATES_PER_REQUEST) });

const CreateDatesBody = z.union([CreateDatesBatchBody, CreateDateBody]).meta({
  description: `One date object, or { dates: [...] } with up to ${MAX_DATES_PER_REQUEST} dates`,
});

const UpdateDateBody = DateFields.partial();

const EventIdParams = IdParamSchema;
/** The body is optional: clients that cancel with an empty POST (as before the reason existed) keep working. */
const CancelEventBody = z.preprocess(
  (body) => body ?? {},
  z.object({
    reason: z.string().trim().min(1).max(300).optional().meta({
      description: 'Kept as the failure reason of every cancelled sale and in each refund',
    }),
  }),
);
const EventDateParams = z.object({ id: z.string().min(1).max(200), dateId: z.string().min(1).max(200) });

// ---------------------------------------------------------------------------------------------------------------
// Mapping and helpers

const toEvent = (event: IEvent) => ({
  id: event.id,
  name: event.name,
  slug: event.slug,
  description: event.description ?? null,
  imageUrl: event.imageUrl ?? null,
  venueId: event.venue ?? null,
  status: event.status,
  salesMode: event.salesMode,
  externalSalesUrl: event.externalSalesUrl ?? null,
  gatewayBOnly: event.gatewayBOnly,
  publishedAt: isoOrNull(event.publishedAt),
  cancelledAt: isoOrNull(event.cancelledAt),
  cancellation: event.cancellation ?? null,
  createdAt: event.createdAt.toISOString(),
  updatedAt: event.updatedAt.toISOString(),
});

const toEventDate = (date: IEventDate) => ({
  id: date.id,
  eventId: date.event,
  label: date.label ?? null,
  startsAt: date.startsAt.toISOString(),
  endsAt: isoOrNull(date.endsAt),
  timezone: date.timezone,
  salesStartAt: isoOrNull(date.salesStartAt),
  salesEndAt: isoOrNull(date.salesEndAt),
  paymentWindowMinutes: date.paymentWindowMinutes,
  virtualQueue: date.virtualQueue,
  queueAdmissionsPerMinute: date.queueAdmissionsPerMinute,
  seatMapChartKey: date.seatMapChartKey ?? null,
  createdAt: date.createdAt.toISOString(),
});

interface FieldProblem {
  field: string;
  message: string;
}

const validationFailed = (fields: FieldProblem[]): AppError =>
  new AppError('VALIDATION_FAILED', fields[0] ? `${fields[0].field}: ${fields[0].message}` : 'The request is invalid', {
    details: { fields },
  });

const issuesToFields = (issues: readonly ZodIssue[], location: string): FieldProblem[] =>
  issues.map((issue) => ({ field: [location, ...issue.path.map(String)].join('.'), message: issue.message }));

const toDate = (value: string | null | undefined): Date | null | undefined =>
  value === undefined ? undefined : value === null ? null : new Date(value);

/** `%`, `_` and `\` typed by a user are literal characters in a name search, not wildcards. */
const likePattern = (text: string): string => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const slugify = (name: string): string =>
  name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100)
    .replace(/-+$/g, '') || 'event';

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
  const base = slugify(name);
  if (!(await slugTaken(em, base))) return base;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const candidate = `${base}-${newId().slice(-6)}`;
    if (!(await slugTaken(em, candidate))) return candidate;
  }
  return `${base}-${newId().slice(-12)}`;
}

async function findEvent(em: EntityManager, id: string, options: { lock?: boolean } = {}): Promise<IEvent> {
  const event = isUuid(id)
    ? await em.findOne(Event, { id }, options.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {})
    : null;
  if (!event) throw notFound('Event');
  return event;
}

async function findEventDate(em: EntityManager, eventId: string, dateId: string): Promise<IEventDate> {
  const date = isUuid(eventId) && isUuid(dateId) ? await em.findOne(EventDate, { id: dateId, event: eventId }) : null;
  if (!date) throw notFound('Event date');
  return date;
}

async function assertVenue(em: EntityManager, venueId: string | null | undefined): Promise<void> {
  if (!venueId) return;
  if (!(await em.findOne(Venue, { id: venueId }))) {
    throw validationFailed([{ field: 'body.venueId', message: 'no venue with this id in your workspace' }]);
  }
}

function assertSalesMode(salesMode: string, externalSalesUrl: string | null | undefined): void {
  if (salesMode === 'EXTERNAL' && !externalSalesUrl) {
    throw validationFailed([{ field: 'body.externalSalesUrl', message: 'is required when salesMode is EXTERNAL' }]);
  }
}

/** endsAt after startsAt and salesEndAt after salesStartAt, checked on the values the date will have. */
function dateWindowProblems(
  date: { startsAt: Date; endsAt: Date | null; salesStartAt: Date | null; salesEndAt: Date | null },
  prefix: string,
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (date.endsAt && date.endsAt.getTime() <= date.startsAt.getTime()) {
    problems.push({ field: `${prefix}.endsAt`, message: 'must be after startsAt' });
  }
  if (date.salesStartAt && date.salesEndAt && date.salesEndAt.getTime() <= date.salesStartAt.getTime()) {
    problems.push({ field: `${prefix}.salesEndAt`, message: 'must be after salesStartAt' });
  }
  return problems;
}

function refuseWhenCancelled(event: IEvent, action: string): void {
  if (event.status === 'CANCELLED') {
    throw new AppError('INVALID_STATE', `Event ${event.id} is cancelled; ${action} is not possible`, {
      details: { reason: 'event_cancelled', status: event.status },
    });
  }
}

const withWarnings = (warnings: Warning[]) => (warnings.length ? { warnings } : {});

// ---------------------------------------------------------------------------------------------------------------
// Routes

/**
 * A date with a chart gets its event at the seat-map provider (key: the date id), which the availability and the
 * checkout read seats from. Best effort: a provider that is down (or an unknown chart) leaves seatMapEventKey null
 * (numbered types then list no seats and refuse orders with seats_not_held) and the next PATCH of the date retries.
 */
async function attachSeatMap(
  services: ApiServices,
  em: EntityManager,
  date: IEventDate,
  log: { warn(obj: object, msg: string): void },
): Promise<void> {
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

export const eventRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.get(
    '/events',
    {
      config: organizer('VIEWER', 'events'),
      schema: {
        tags: ['events'],
        summary: 'List events, newest first',
        querystring: ListEventsQuery,
        response: { 200: listOf(EventSchema) },
      },
    },
    async (request) => {
      const { limit, cursor, status, q, venue } = request.query;
      const after = decodeCursor(cursor);
      const where: FilterQuery<IEvent> = {
        ...(after ? { id: { $lt: after } } : {}),
        ...(status ? { status } : {}),
        ...(q ? { name: { $ilike: likePattern(q) } } : {}),
        ...(venue ? { venue } : {}),
      };
      const rows = await request.em.find(Event, where, { orderBy: { id: 'desc' }, limit: limit + 1 });
      const { items, page } = toPage(rows, limit);
      return { data: items.map(toEvent), page, ...withWarnings(request.warnings) };
    },
  );

  app.post(
    '/events',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['events'],
        summary: 'Create an event (DRAFT)',
        body: CreateEventBody,
        response: { 201: dataOf(EventSchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const body = request.body;
      const em = request.em;
      assertSalesMode(body.salesMode, body.externalSalesUrl);
      await assertVenue(em, body.venueId);
      if (body.slug && (await slugTaken(em, body.slug))) throw slugConflict(body.slug);
      const slug = body.slug ?? (await availableSlug(em, body.name));
      const event = em.create(Event, {
        id: newId(),
        workspace: workspace.workspaceId,
        venue: body.venueId ?? null,
        name: body.name,
        slug,
        description: body.description ?? null,
        imageUrl: body.imageUrl ?? null,
        status: 'DRAFT',
        salesMode: body.salesMode,
        externalSalesUrl: body.externalSalesUrl ?? null,
        gatewayBOnly: body.gatewayBOnly,
        publishedAt: null,
        cancelledAt: null,
        deletedAt: null,
      });
      try {
        await em.flush();
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException) throw slugConflict(slug);
        throw error;
      }
      return reply.status(201).send({ data: toEvent(event) });
    },
  );

  app.get(
    '/events/:id',
    {
      config: organizer('VIEWER', 'events'),
      schema: {
        tags: ['events'],
        summary: 'Get an event',
        params: EventIdParams,
        response: { 200: dataOf(EventSchema) },
      },
    },
    async (request) => ({ data: toEvent(await findEvent(request.em, request.params.id)) }),
  );

  app.patch(
    '/events/:id',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['events'],
        summary: 'Update an event (partial); status changes through publish and cancel',
        params: EventIdParams,
        body: UpdateEventBody,
        response: { 200: dataOf(EventSchema) },
      },
    },
    async (request) => {
      const em = request.em;
      const event = await findEvent(em, request.params.id);
      const body = request.body;
      assertSalesMode(
        body.salesMode ?? event.salesMode,
        body.externalSalesUrl !== undefined ? body.externalSalesUrl : event.externalSalesUrl,
      );
      if (body.venueId !== undefined) await assertVenue(em, body.venueId);
      if (body.slug !== undefined && body.slug !== event.slug && (await slugTaken(em, body.slug, event.id))) {
        throw slugConflict(body.slug);
      }
      if (body.name !== undefined) event.name = body.name;
      if (body.slug !== undefined) event.slug = body.slug;
      if (body.description !== undefined) event.description = body.description;
      if (body.imageUrl !== undefined) event.imageUrl = body.imageUrl;
      if (body.venueId !== undefined) event.venue = body.venueId;
      if (body.salesMode !== undefined) event.salesMode = body.salesMode;
      if (body.externalSalesUrl !== undefined) event.externalSalesUrl = body.externalSalesUrl;
      if (body.gatewayBOnly !== undefined) event.gatewayBOnly = body.gatewayBOnly;
      try {
        await em.flush();
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException) throw slugConflict(event.slug);
        throw error;
      }
      return { data: toEvent(event) };
    },
  );

  app.delete(
    '/events/:id',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['events'],
        summary: 'Soft-delete an event without live sales, with its dates and ticket types',
        description: 'An event with PENDING or CONFIRMED sales cannot be deleted (409); cancel it instead.',
        params: EventIdParams,
        response: { 200: dataOf(EventSchema) },
      },
    },
    async (request) => {
      const event = await request.em.transactional(async (tx) => {
        const found = await findEvent(tx, request.params.id, { lock: true });
        const sales = await tx.count(Sale, { event: found.id, status: { $in: [...LIVE_SALE_STATUSES] } });
        if (sales > 0) {
          throw new AppError(
            'INVALID_STATE',
            `Event ${found.id} has ${sales} pending or confirmed sale(s); cancel it (POST /events/{id}/cancel) instead of deleting it`,
            { details: { reason: 'event_has_sales', sales } },
          );
        }
        const now = new Date();
        found.deletedAt = now;
        await tx.nativeUpdate(TicketType, { event: found.id }, { deletedAt: now });
        await tx.nativeUpdate(EventDate, { event: found.id }, { deletedAt: now });
        return found;
      });
      return { data: toEvent(event) };
    },
  );

  app.post(
    '/events/:id/publish',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['events'],
        summary: 'Publish an event',
        description:
          'Needs at least one date and one ticket type (409 INVALID_STATE otherwise). Publishing a published event returns it unchanged; a cancelled event cannot be published.',
        params: EventIdParams,
        response: { 200: dataOf(EventSchema) },
      },
    },
    async (request) => {
      const event = await request.em.transactional(async (tx) => {
        const found = await findEvent(tx, request.params.id, { lock: true });
        refuseWhenCancelled(found, 'publishing');
        if (found.status === 'PUBLISHED') return found;
        if ((await tx.count(EventDate, { event: found.id })) === 0) {
          throw new AppError(
            'INVALID_STATE',
            'An event needs at least one date before it can be published; add one with POST /events/{id}/dates',
            { details: { reason: 'no_dates' } },
          );
        }
        if ((await tx.count(TicketType, { event: found.id })) === 0) {
          throw new AppError(
            'INVALID_STATE',
            'An event needs at least one ticket type before it can be published; add one with POST /ticket-types',
            { details: { reason: 'no_ticket_types' } },
          );
        }
        found.status = 'PUBLISHED';
        found.publishedAt = new Date();
        return found;
      });
      request.log.info({ eventId: event.id }, 'event published');
      return { data: toEvent(event) };
    },
  );

  app.post(
    '/events/:id/cancel',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['events'],
        summary: 'Cancel an event: it stops selling now, and every sale is cancelled or refunded in the background',
        description:
          'The event becomes CANCELLED in this request (no new orders). The workflow `event-cancellation/<eventId>` then ' +
          'cancels its PENDING sales, refunds its sales paid through a gateway (buyers are emailed; each refund emits ' +
          '`sale.refunded`) and cancels complimentary and box-office sales; `cancellation` on the event shows its ' +
          'progress. Repeating the request changes nothing and never refunds a sale twice. Body: optional `reason`.',
        params: EventIdParams,
        body: CancelEventBody,
        response: { 200: dataOf(EventSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const event = await request.em.transactional(async (tx) => {
        const found = await findEvent(tx, request.params.id, { lock: true });
        if (found.status !== 'CANCELLED') {
          found.status = 'CANCELLED';
          found.cancelledAt = new Date();
        }
        return found;
      });
      // After the commit: a crash between the two leaves a cancelled event whose repeat request starts the workflow.
      await services.temporal.workflow
        .start<typeof eventCancellation>('eventCancellation', {
          workflowId: eventCancellationWorkflowId(event.id),
          taskQueue: services.env.TEMPORAL_TASK_QUEUE,
          args: [
            {
              eventId: event.id,
              workspaceId: workspace.workspaceId,
              reason: request.body.reason ?? 'event_cancelled',
              finalSweepDelayMs: services.env.EVENT_CANCELLATION_FINAL_SWEEP_MS,
            },
          ],
          typedSearchAttributes: [{ key: SA.workspaceId, value: workspace.workspaceId }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          // A finished cancellation is not run again by a repeated request: nothing is left to undo.
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        })
        .catch((error: unknown) => {
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        });
      request.log.info({ eventId: event.id }, 'event cancelled');
      return { data: toEvent(event) };
    },
  );

  // Dates ---------------------------------------------------------------------------------------------------------

  app.get(
    '/events/:id/dates',
    {
      config: organizer('VIEWER', 'events'),
      schema: {
        tags: ['events'],
        summary: 'List the dates of an event, newest first',
        params: EventIdParams,
        querystring: PageQuerySchema,
        response: { 200: listOf(EventDateSchema) },
      },
    },
    async (request) => {
      const event = await findEvent(request.em, request.params.id);
      const { limit, cursor } = request.query;
      const after = decodeCursor(cursor);
      const rows = await request.em.find(
        EventDate,
        { event: event.id, ...(after ? { id: { $lt: after } } : {}) },
        { orderBy: { id: 'desc' }, limit: limit + 1 },
      );
      const { items, page } = toPage(rows, limit);
      return { data: items.map(toEventDate), page, ...withWarnings(request.warnings) };
    },
  );

  app.post(
    '/events/:id/dates',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['events'],
        summary: 'Add one date, or several with { dates: [...] }',
        params: EventIdParams,
        body: CreateDatesBody,
        response: { 201: z.union([dataOf(EventDateSchema), dataOf(z.array(EventDateSchema))]) },
      },
      // The body is one date or a batch; validating against the shape actually sent names the bad field
      // (body.paymentWindowMinutes, body.dates.0.startsAt) instead of a generic "does not match the union".
      preValidation: async (request) => {
        const body: unknown = request.body;
        const batch = typeof body === 'object' && body !== null && !Array.isArray(body) && 'dates' in body;
        const result = (batch ? CreateDatesBatchBody : CreateDateBody).safeParse(body);
        if (!result.success) throw validationFailed(issuesToFields(result.error.issues, 'body'));
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const body = request.body;
      const batch = 'dates' in body;
      const inputs: CreateDateInput[] = batch ? body.dates : [body];
      const prepared = inputs.map((input) => ({
        input,
        startsAt: new Date(input.startsAt),
        endsAt: toDate(input.endsAt) ?? null,
        salesStartAt: toDate(input.salesStartAt) ?? null,
        salesEndAt: toDate(input.salesEndAt) ?? null,
      }));
      const problems = prepared.flatMap((date, index) =>
        dateWindowProblems(date, batch ? `body.dates.${index}` : 'body'),
      );
      if (problems.length > 0) throw validationFailed(problems);

      const created = await request.em.transactional(async (tx) => {
        const event = await findEvent(tx, request.params.id, { lock: true });
        refuseWhenCancelled(event, 'adding dates');
        const venue = event.venue ? await tx.findOne(Venue, { id: event.venue }) : null;
        const dates = prepared.map((date) =>
          tx.create(EventDate, {
            id: newId(),
            workspace: workspace.workspaceId,
            event: event.id,
            label: date.input.label ?? null,
            startsAt: date.startsAt,
            endsAt: date.endsAt,
            timezone: date.input.timezone ?? venue?.timezone ?? 'America/Bogota',
            salesStartAt: date.salesStartAt,
            salesEndAt: date.salesEndAt,
            paymentWindowMinutes: date.input.paymentWindowMinutes,
            virtualQueue: date.input.virtualQueue,
            queueAdmissionsPerMinute: date.input.queueAdmissionsPerMinute,
            seatMapChartKey: date.input.seatMapChartKey ?? null,
            seatMapEventKey: null,
            cancelledAt: null,
            deletedAt: null,
          }),
        );
        return dates;
      });
      for (const date of created) await attachSeatMap(services, request.em, date, request.log);
      const data = created.map(toEventDate);
      return reply.status(201).send(batch ? { data } : { data: data[0]! });
    },
  );

  app.patch(
    '/events/:id/dates/:dateId',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['events'],
        summary: 'Update a date (partial)',
        params: EventDateParams,
        body: UpdateDateBody,
        response: { 200: dataOf(EventDateSchema) },
      },
    },
    async (request) => {
      const em = request.em;
      const date = await findEventDate(em, request.params.id, request.params.dateId);
      const body = request.body;
      const next = {
        startsAt: toDate(body.startsAt) ?? date.startsAt,
        endsAt: body.endsAt !== undefined ? (toDate(body.endsAt) ?? null) : (date.endsAt ?? null),
        salesStartAt:
          body.salesStartAt !== undefined ? (toDate(body.salesStartAt) ?? null) : (date.salesStartAt ?? null),
        salesEndAt: body.salesEndAt !== undefined ? (toDate(body.salesEndAt) ?? null) : (date.salesEndAt ?? null),
      };
      const problems = dateWindowProblems(next, 'body');
      if (problems.length > 0) throw validationFailed(problems);
      date.startsAt = next.startsAt;
      date.endsAt = next.endsAt;
      date.salesStartAt = next.salesStartAt;
      date.salesEndAt = next.salesEndAt;
      if (body.label !== undefined) date.label = body.label;
      if (body.timezone !== undefined) date.timezone = body.timezone;
      if (body.paymentWindowMinutes !== undefined) date.paymentWindowMinutes = body.paymentWindowMinutes;
      if (body.virtualQueue !== undefined) date.virtualQueue = body.virtualQueue;
      if (body.queueAdmissionsPerMinute !== undefined) date.queueAdmissionsPerMinute = body.queueAdmissionsPerMinute;
      if (body.seatMapChartKey !== undefined && body.seatMapChartKey !== date.seatMapChartKey) {
        date.seatMapChartKey = body.seatMapChartKey;
        date.seatMapEventKey = null;
      }
      await em.flush();
      await attachSeatMap(services, em, date, request.log);
      return { data: toEventDate(date) };
    },
  );

  app.delete(
    '/events/:id/dates/:dateId',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['events'],
        summary: 'Soft-delete a date without live sales, with its ticket types',
        params: EventDateParams,
        response: { 200: dataOf(EventDateSchema) },
      },
    },
    async (request) => {
      const date = await request.em.transactional(async (tx) => {
        const found = await findEventDate(tx, request.params.id, request.params.dateId);
        const sales = await tx.count(Sale, { eventDate: found.id, status: { $in: [...LIVE_SALE_STATUSES] } });
        if (sales > 0) {
          throw new AppError(
            'INVALID_STATE',
            `Date ${found.id} has ${sales} pending or confirmed sale(s) and cannot be deleted`,
            { details: { reason: 'date_has_sales', sales } },
          );
        }
        const now = new Date();
        found.deletedAt = now;
        await tx.nativeUpdate(TicketType, { eventDate: found.id }, { deletedAt: now });
        return found;
      });
      return { data: toEventDate(date) };
    },
  );
};
