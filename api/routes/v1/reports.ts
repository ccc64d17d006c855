import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dataOf, listOf } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { decodeCursor, encodeCursor, PageQuerySchema } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { activeWorkspace } from '../../plugins/auth.js';
import {
  ATTENDEE_COLUMNS,
  AttendeesQuery,
  attendeesSource,
  BUYER_COLUMNS,
  BuyersQuery,
  buyersSource,
  type ExportColumnKind,
  ExportCursorParam,
  type ExportFormat,
  type ExportSource,
  exportFormat,
  FormatParam,
  prepareExport,
  SUBSCRIBER_COLUMNS,
  SubscribersQuery,
  subscribersSource,
} from '../../reports/exports.js';
import {
  checkRange,
  EXPORT_ROW_LIMIT,
  Id,
  RANGE_SHAPE,
  SalesReportQuery,
  SalesReportShape,
  type Scope,
  workspaceTimeZone,
} from '../../reports/filters.js';
import { financials } from '../../reports/financials.js';
import { BUCKETS, byEvent, inventory, summary, timeseries } from '../../reports/queries.js';
import {
  MISMATCH_REASONS,
  ReconciliationQuery,
  reconciliation,
  reconciliationSource,
} from '../../reports/reconciliation.js';
import { boundedSeriesRange, MAX_SERIES_BUCKETS, reportPage, reportPageOf } from '../../services/reports.js';

// ------------------------------------------------------------------------------------------------ schemas

const RevenueSchema = z
  .object({
    gross: minorUnits('Ticket revenue: list price minus discounts', 1530000),
    discounts: minorUnits('Taken off by discount codes and memberships', 170000),
    serviceFees: minorUnits('Service fees the buyers paid', 170000),
    iva: minorUnits('IVA on the service fees the buyers paid', 32300),
    collected: minorUnits('What the buyers paid: gross + serviceFees + iva', 1732300),
    organizerServiceFees: minorUnits('Service fees the organizer absorbs (deducted from the settlement)', 25500),
  })
  .meta({ id: 'ReportRevenue', description: 'Money of CONFIRMED sales, minor units, as stored at sale time' });

const PeriodSchema = z.object({ from: z.string().nullable(), to: z.string().nullable(), timeZone: z.string() });

const SummarySchema = z
  .object({
    period: PeriodSchema,
    revenue: RevenueSchema,
    tickets: z.object({ sold: z.number().int() }),
    sales: z.object({
      confirmed: z.number().int(),
      free: z.number().int(),
      pending: z.number().int(),
      abandoned: z.number().int(),
      cancelled: z.number().int(),
      refunded: z.number().int(),
      refundedAmount: minorUnits('Money of the refunded sales', 173230),
    }),
    memberships: z.object({
      active: z.number().int(),
      newInPeriod: z.number().int(),
      revenue: minorUnits('Membership payments received in the period', 360000),
    }),
  })
  .meta({ id: 'ReportSummary' });

const EventKpisSchema = z
  .object({
    eventId: z.string(),
    eventName: z.string(),
    eventStatus: z.string(),
    sales: z.object({
      confirmed: z.number().int(),
      pending: z.number().int(),
      abandoned: z.number().int(),
      cancelled: z.number().int(),
      refunded: z.number().int(),
    }),
    ticketsSold: z.number().int(),
    revenue: RevenueSchema,
  })
  .meta({ id: 'ReportEventKpis' });

const TimeseriesSchema = z
  .object({
    interval: z.enum(BUCKETS),
    period: PeriodSchema,
    points: z.array(
      z.object({ bucket: z.string(), sales: z.number().int(), tickets: z.number().int(), revenue: RevenueSchema }),
    ),
  })
  .meta({ id: 'ReportTimeseries' });

const InventoryRowSchema = z
  .object({
    eventId: z.string(),
    eventName: z.string(),
    eventDateId: z.string(),
    startsAt: z.string(),
    timezone: z.string(),
    ticketTypeId: z.string(),
    ticketTypeName: z.string(),
    capacity: z.number().int(),
    sold: z.number().int(),
    reserved: z.number().int(),
    available: z.number().int(),
  })
  .meta({ id: 'ReportInventoryRow' });

const FinancialsRowSchema = z
  .object({
    eventId: z.string(),
    eventName: z.string(),
    eventDateId: z.string(),
    startsAt: z.string(),
    currency: z.string().nullable(),
    salesCount: z.number().int(),
    unitsSold: z.number().int(),
    listSubtotal: minorUnits('Tickets at list price', 1700000),
    discounts: minorUnits('Taken off by discount codes and memberships', 170000),
    gross: minorUnits('Ticket revenue: listSubtotal − discounts', 1530000),
    buyerServiceFees: minorUnits('Service fees the buyers paid (the platform keeps them)', 170000),
    buyerIva: minorUnits('IVA on buyerServiceFees', 32300),
    collected: minorUnits('What the buyers paid: gross + buyerServiceFees + buyerIva', 1732300),
    organizerServiceFee: minorUnits('Service fees the organizer absorbs', 25500),
    organizerIva: minorUnits('IVA on organizerServiceFee', 4845),
    gatewayCosts: minorUnits("The payment gateways' costs", 52000),
    costs: minorUnits('organizerServiceFee + organizerIva + gatewayCosts', 82345),
    collectedByOrganizer: minorUnits('What buyers paid the organizer directly (box office), deducted', 0),
    netPayable: minorUnits('gross − costs − collectedByOrganizer; negative means the organizer owes', 1447655),
  })
  .meta({ id: 'ReportFinancialsRow', description: 'Per event date, the figures its settlement statement shows' });

const ReconciliationRowSchema = z
  .object({
    saleId: z.string(),
    reference: z.string(),
    status: z.string(),
    channel: z.string(),
    gateway: z.string().nullable(),
    paymentRef: z.string().nullable(),
    createdAt: z.string(),
    confirmedAt: z.string().nullable(),
    total: minorUnits("The sale's total", 173230),
    confirmedAmount: minorUnits("The sale's total when it is CONFIRMED (any channel), else 0", 173230),
    approvedPayments: z.number().int(),
    charged: minorUnits('Sum of the distinct payments the gateways approved', 173230),
    refunded: minorUnits('Sum of the refunds the gateways report done', 0),
    refundsPending: z.number().int().meta({ description: 'Refunds still in flight (a count)' }),
    expectedAtGateway: minorUnits(
      'What the organizer keeps at the gateway: the total of a CONFIRMED sale paid there, else 0',
      173230,
    ),
    netAtGateway: minorUnits('charged − refunded', 173230),
    mismatch: z.boolean(),
    mismatchReason: z.enum(MISMATCH_REASONS).nullable(),
  })
  .meta({ id: 'ReportReconciliationRow' });

const ReconciliationTotalsSchema = z
  .object({
    sales: z.number().int(),
    confirmedAmount: minorUnits('Sum of the confirmedAmount of the rows', 15590700),
    charged: minorUnits('Sum of charged', 15763930),
    refunded: minorUnits('Sum of refunded', 173230),
    refundsPending: z.number().int().meta({ description: 'Refunds still in flight (a count)' }),
    expectedAtGateway: minorUnits('Sum of expectedAtGateway', 15590700),
    netAtGateway: minorUnits('Sum of netAtGateway', 15590700),
    mismatches: z.number().int(),
  })
  .meta({ id: 'ReportReconciliationTotals', description: 'Over every row the filter matches, not only this page' });

/** The list envelope (data is the page's rows), with the totals over the whole filter beside it in meta. */
const ReconciliationPageSchema = listOf(ReconciliationRowSchema)
  .extend({ meta: z.object({ totals: ReconciliationTotalsSchema }) })
  .meta({ id: 'ReportReconciliation' });

/** Describes the export rows for the OpenAPI document; the rows themselves are streamed, not serialized here. */
const rowSchema = (
  id: string,
  columns: ReadonlyArray<readonly [string, ExportColumnKind]>,
  described: Record<string, z.ZodType> = {},
) => {
  const kinds: Record<ExportColumnKind, z.ZodType> = {
    text: z.string().nullable(),
    number: z.number().int(),
    boolean: z.boolean(),
    time: z.string().nullable(),
  };
  return z
    .object(Object.fromEntries(columns.map(([name, kind]) => [name, described[name] ?? kinds[kind]])))
    .meta({ id });
};

const TimeseriesQuery = z.object({ ...RANGE_SHAPE, interval: z.enum(BUCKETS).default('day') }).superRefine(checkRange);
const InventoryQuery = z
  .object({ ...RANGE_SHAPE, ticketType: Id.optional(), ...PageQuerySchema.shape })
  .superRefine(checkRange);
const ByEventQuery = z.object({ ...SalesReportShape, ...PageQuerySchema.shape }).superRefine(checkRange);
const FinancialsQuery = z.object({ ...RANGE_SHAPE, ...PageQuerySchema.shape }).superRefine(checkRange);
const PAGED = 'Paged like every list: limit (1–100, default 20) and the cursor of page.nextCursor.';
const ReconciliationPageQuery = z
  .object({ ...ReconciliationQuery.shape, ...PageQuerySchema.shape, limit: PageQuerySchema.shape.limit })
  .superRefine(checkRange);
const ReconciliationExportQuery = z
  .object({ ...ReconciliationQuery.shape, format: FormatParam, cursor: ExportCursorParam })
  .superRefine(checkRange);

const EXPORT_HEADERS =
  'X-Export-Truncated (true when more than 5000 rows matched) and X-Export-Row-Limit. A truncated export gives the ' +
  'cursor of its last row in page.nextCursor (JSON) and X-Export-Next-Cursor (CSV): the same request with that ' +
  '`cursor` answers the next rows.';

/** An export answers the list envelope as JSON or the same rows as CSV, as `format` or Accept asks. */
const exportResponse = (json: z.ZodType) => ({
  description: 'The rows, as JSON (list envelope) or CSV (header row first, same columns)',
  content: {
    'application/json': { schema: json },
    'text/csv': { schema: z.string().meta({ description: 'UTF-8 CSV with a byte order mark' }) },
  },
});

// ------------------------------------------------------------------------------------------------ helpers

async function scopeOf(request: FastifyRequest): Promise<Scope> {
  const { workspaceId } = activeWorkspace(request);
  return { workspaceId, timeZone: await workspaceTimeZone(request.em, workspaceId) };
}

const period = (scope: Scope, range: { from?: string | undefined; to?: string | undefined }) => ({
  from: range.from ?? null,
  to: range.to ?? null,
  timeZone: scope.timeZone,
});

const withWarnings = (request: FastifyRequest) => (request.warnings.length ? { warnings: request.warnings } : {});

async function sendExport(
  request: FastifyRequest,
  reply: FastifyReply,
  source: ExportSource,
  format: ExportFormat,
  cursor: string | undefined,
): Promise<FastifyReply> {
  const prepared = await prepareExport(request.em, source, format, request.warnings, cursor);
  reply
    .header('x-export-row-limit', String(EXPORT_ROW_LIMIT))
    .header('x-export-truncated', String(prepared.truncated))
    .header('cache-control', 'no-store')
    .type(prepared.contentType);
  if (prepared.nextCursor) reply.header('x-export-next-cursor', prepared.nextCursor);
  if (prepared.fileName) reply.header('content-disposition', `attachment; filename="${prepared.fileName}"`);
  request.log.info({ export: source.name, format, truncated: prepared.truncated }, 'export streamed');
  return reply.send(prepared.body);
}

// ------------------------------------------------------------------------------------------------ routes

/** Reports group of contract 4.1: VIEWER reads the reports, exports are ADMIN (contract 5.4). */
export const reportRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/reports/summary',
    {
      config: organizer('VIEWER', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'KPIs for a period: revenue, tickets, sales by status, memberships',
        querystring: SalesReportQuery,
        response: { 200: dataOf(SummarySchema) },
      },
    },
    async (request) => {
      const scope = await scopeOf(request);
      const data = await summary(request.em, scope, request.query);
      return { data: { period: period(scope, request.query), ...data } };
    },
  );

  app.get(
    '/reports/inventory',
    {
      config: organizer('VIEWER', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'Capacity, sold, reserved and available by event, date and ticket type',
        description: `from/to select event dates by the day they start, in the workspace time zone. ${PAGED}`,
        querystring: InventoryQuery,
        response: { 200: listOf(InventoryRowSchema) },
      },
    },
    async (request) => {
      const scope = await scopeOf(request);
      const { limit, cursor, ...filters } = request.query;
      const fetched = await inventory(request.em, scope, filters, reportPage('inventory', { limit, cursor }));
      return { ...reportPageOf('inventory', fetched, limit), ...withWarnings(request) };
    },
  );

  app.get(
    '/reports/by-event',
    {
      config: organizer('VIEWER', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'Sales KPIs per event',
        description: `Events by name. ${PAGED}`,
        querystring: ByEventQuery,
        response: { 200: listOf(EventKpisSchema) },
      },
    },
    async (request) => {
      const scope = await scopeOf(request);
      const { limit, cursor, ...filters } = request.query;
      const fetched = await byEvent(request.em, scope, filters, reportPage('by-event', { limit, cursor }));
      return { ...reportPageOf('by-event', fetched, limit), ...withWarnings(request) };
    },
  );

  app.get(
    '/reports/timeseries',
    {
      config: organizer('VIEWER', 'reports'),
      schema: {
        tags: ['reports'],
        summary:
          'CONFIRMED sales per day, week (from Monday) or month, in the workspace time zone; empty buckets included',
        description:
          'Without from/to: the last 30 days, 12 weeks or 12 months up to today. A series holds at most ' +
          `${MAX_SERIES_BUCKETS.day} days, ${MAX_SERIES_BUCKETS.week} weeks or ${MAX_SERIES_BUCKETS.month} months ` +
          '(to defaults to today): a longer one is 422 VALIDATION_FAILED naming the limit (details.limit).',
        querystring: TimeseriesQuery,
        response: { 200: dataOf(TimeseriesSchema) },
      },
    },
    async (request) => {
      const scope = await scopeOf(request);
      const { interval, ...filters } = request.query;
      const range = boundedSeriesRange(filters, interval, scope.timeZone);
      const series = await timeseries(request.em, scope, { ...filters, ...range }, interval);
      return {
        data: { interval, period: period(scope, series), points: series.points },
      };
    },
  );

  app.get(
    '/reports/financials',
    {
      config: organizer('VIEWER', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'Per event date: gross, costs and net payable, as its settlement statement computes them',
        description: `from/to select event dates by the day they start, in the workspace time zone. ${PAGED}`,
        querystring: FinancialsQuery,
        response: { 200: listOf(FinancialsRowSchema) },
      },
    },
    async (request) => {
      const scope = await scopeOf(request);
      const { limit, cursor, ...filters } = request.query;
      const fetched = await financials(request.em, scope, filters, reportPage('financials', { limit, cursor }));
      return { ...reportPageOf('financials', fetched, limit), ...withWarnings(request) };
    },
  );

  app.get(
    '/reports/reconciliation',
    {
      config: organizer('VIEWER', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'Each sale against its gateway payments and refunds, with mismatches flagged; totals over the filter',
        description:
          'The list envelope: data is the page of rows (newest sale first), page pages them with limit and cursor, ' +
          'and meta.totals sums every row the filter matches, the same on every page.',
        querystring: ReconciliationPageQuery,
        response: { 200: ReconciliationPageSchema },
      },
    },
    async (request) => {
      const scope = await scopeOf(request);
      const { limit, cursor, ...filters } = request.query;
      const after = decodeCursor(cursor);
      const { totals, rows: fetched } = await reconciliation(request.em, scope, filters, { limit: limit + 1, after });
      const rows = fetched.slice(0, limit);
      const last = rows[rows.length - 1];
      const hasMore = fetched.length > limit;
      return {
        data: rows,
        page: { nextCursor: hasMore && last ? encodeCursor(last.saleId) : null, hasMore },
        meta: { totals },
        ...withWarnings(request),
      };
    },
  );

  app.get(
    '/reports/exports/reconciliation',
    {
      config: organizer('ADMIN', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'The reconciliation as CSV (format=json for JSON), at most 5000 rows',
        description: EXPORT_HEADERS,
        querystring: ReconciliationExportQuery,
        response: { 200: exportResponse(listOf(ReconciliationRowSchema)) },
      },
    },
    async (request, reply) => {
      const { format, cursor, ...filters } = request.query;
      const source = reconciliationSource(await scopeOf(request), filters);
      return sendExport(request, reply, source, format ?? 'csv', cursor);
    },
  );

  app.get(
    '/reports/exports/attendees',
    {
      config: organizer('ADMIN', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'One row per ticket, filtered by event, date, ticket type and check-in; JSON or CSV; max 5000',
        description: EXPORT_HEADERS,
        querystring: AttendeesQuery,
        response: { 200: exportResponse(listOf(rowSchema('ExportAttendee', ATTENDEE_COLUMNS))) },
      },
    },
    async (request, reply) => {
      const source = attendeesSource(await scopeOf(request), request.query);
      return sendExport(
        request,
        reply,
        source,
        exportFormat(request.query.format, request.headers.accept),
        request.query.cursor,
      );
    },
  );

  app.get(
    '/reports/exports/buyers',
    {
      config: organizer('ADMIN', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'One row per buyer email of the filtered sales (CONFIRMED by default); JSON or CSV; max 5000',
        description: EXPORT_HEADERS,
        querystring: BuyersQuery,
        response: {
          200: exportResponse(
            listOf(
              rowSchema('ExportBuyer', BUYER_COLUMNS, {
                totalSpent: minorUnits("Sum of the totals of the buyer's sales", 346460),
              }),
            ),
          ),
        },
      },
    },
    async (request, reply) => {
      const source = buyersSource(await scopeOf(request), request.query);
      return sendExport(
        request,
        reply,
        source,
        exportFormat(request.query.format, request.headers.accept),
        request.query.cursor,
      );
    },
  );

  app.get(
    '/reports/exports/subscribers',
    {
      config: organizer('ADMIN', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'Membership subscribers (ExportSubscriber); JSON or CSV; max 5000',
        description: EXPORT_HEADERS,
        querystring: SubscribersQuery,
        response: { 200: exportResponse(listOf(rowSchema('ExportSubscriber', SUBSCRIBER_COLUMNS))) },
      },
    },
    async (request, reply) => {
      const { workspaceId } = activeWorkspace(request);
      const source = subscribersSource({ workspaceId, timeZone: 'UTC' });
      return sendExport(
        request,
        reply,
        source,
        exportFormat(request.query.format, request.headers.accept),
        request.query.cursor,
      );
    },
  );
};
