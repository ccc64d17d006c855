import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { type ZodIssue, z } from 'zod';
import { type FieldProblem, validationFailed } from '../../../domain/field-errors.js';
import { SLUG_PATTERN } from '../../../domain/slug.js';
import { EVENT_STATUSES, type IEvent, SALES_MODES } from '../../../entities/event.js';
import {
  DEFAULT_PAYMENT_WINDOW_MINUTES,
  type IEventDate,
  MIN_PAYMENT_WINDOW_MINUTES,
} from '../../../entities/event-date.js';
import { isUuid } from '../../../entities/ids.js';
import { dataOf, listOf, type Warning } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import {
  addEventDates,
  cancelEvent,
  createEvent,
  deleteEvent,
  deleteEventDate,
  findEvent,
  listEventDates,
  listEvents,
  publishEvent,
  updateEvent,
  updateEventDate,
} from '../../services/events.js';
import type { ApiServices } from '../../services.js';
import { TimeZoneSchema } from './venues.js';

const MAX_PAYMENT_WINDOW_MINUTES = 24 * 60;
const MAX_DATES_PER_REQUEST = 100;

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
    refused: z.number().int().meta({
      description:
        'CONFIRMED sales whose refund the gateway refused for good since the cancellation; an operator retries them',
    }),
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
    queueMinActive: z.number().int().nullable(),
    queueMaxActive: z.number().int().nullable(),
    seatMapChartKey: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'EventDate' });

const HttpUrl = z.url({ protocol: /^https?$/ }).max(2048);
const UuidRef = z.string().refine(isUuid, 'must be a UUID');

const EventFields = z.object({
  name: z.string().trim().min(1).max(200),
  slug: z.string().min(2).max(120).regex(SLUG_PATTERN, 'lowercase letters, digits and single dashes'),
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
  queueAdmissionsPerMinute: z.number().int().min(1).max(100_000).meta({
    description: 'Deprecated: the waiting room admits by measured capacity between queueMinActive and queueMaxActive',
  }),
  queueMinActive: z.number().int().min(1).max(100_000).nullable().meta({
    description: 'Waiting room: fewest admitted buyers active at once, even under strain (null: 10)',
  }),
  queueMaxActive: z.number().int().min(1).max(100_000).nullable().meta({
    description: 'Waiting room: most admitted buyers active at once, even when healthy (null: 2000)',
  }),
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
  queueMinActive: DateFields.shape.queueMinActive.optional(),
  queueMaxActive: DateFields.shape.queueMaxActive.optional(),
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
  cancellation: event.cancellation ? { ...event.cancellation, refused: event.cancellation.refused ?? 0 } : null,
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
  queueMinActive: date.queueMinActive ?? null,
  queueMaxActive: date.queueMaxActive ?? null,
  seatMapChartKey: date.seatMapChartKey ?? null,
  createdAt: date.createdAt.toISOString(),
});

const issuesToFields = (issues: readonly ZodIssue[], location: string): FieldProblem[] =>
  issues.map((issue) => ({ field: [location, ...issue.path.map(String)].join('.'), message: issue.message }));

const withWarnings = (warnings: Warning[]) => (warnings.length ? { warnings } : {});

// ---------------------------------------------------------------------------------------------------------------
// Routes

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
      const rows = await listEvents(request.em, { after: decodeCursor(cursor), limit, status, q, venue });
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
      const event = await createEvent(request.em, activeWorkspace(request).workspaceId, request.body);
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
    async (request) => ({ data: toEvent(await updateEvent(request.em, request.params.id, request.body)) }),
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
    async (request) => ({ data: toEvent(await deleteEvent(request.em, request.params.id)) }),
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
      const event = await publishEvent(request.em, request.params.id);
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
          '`sale.refunded`) and cancels complimentary and box-office sales: those end CANCELLED, not REFUNDED, with no ' +
          '`sale.refunded` event, since no gateway holds their money (cash taken at the box office is returned by the ' +
          'organizer outside the service); `cancellation` on the event shows its ' +
          'progress (`refused` counts refunds the gateway refused for good, left to an operator). Repeating the ' +
          'request joins the cancellation while it runs and resumes one that failed or was terminated; it never ' +
          'refunds a sale twice. Body: optional `reason`.',
        params: EventIdParams,
        body: CancelEventBody,
        response: { 200: dataOf(EventSchema) },
      },
    },
    async (request) => {
      const event = await cancelEvent(services, request.em, {
        eventId: request.params.id,
        workspaceId: activeWorkspace(request).workspaceId,
        reason: request.body.reason ?? 'event_cancelled',
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
      const { limit, cursor } = request.query;
      const rows = await listEventDates(request.em, request.params.id, decodeCursor(cursor), limit);
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
      const body = request.body;
      const batch = 'dates' in body;
      const inputs: CreateDateInput[] = batch ? body.dates : [body];
      const created = await addEventDates(
        services,
        request.em,
        {
          eventId: request.params.id,
          workspaceId: activeWorkspace(request).workspaceId,
          dates: inputs,
          fieldPrefix: (index) => (batch ? `body.dates.${index}` : 'body'),
        },
        request.log,
      );
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
      const { id: eventId, dateId } = request.params;
      const date = await updateEventDate(services, request.em, { eventId, dateId }, request.body, request.log);
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
      const { id: eventId, dateId } = request.params;
      return { data: toEventDate(await deleteEventDate(request.em, { eventId, dateId })) };
    },
  );
};
