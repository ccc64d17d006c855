/**
 * The organizer reports (contract 4.1, reports group): each one is a few SQL aggregates over the stored sales,
 * items, stock and payment attempts. Money is read as stored at sale time (domain/pricing.ts wrote it); nothing
 * here recomputes a fee from today's settings. Postgres returns sums as text (bigint/numeric), hence `Number()`.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  type DateReportFilters,
  dateConditions,
  dayRange,
  type SalesReportFilters,
  type Scope,
  saleConditions,
} from './filters.js';
import { type KeyPart, type KeysetPage, keysetClauses } from './paging.js';
import { joinSql, raw, type Sql, sql } from './sql.js';

/** A report row and its position in the report's order (the keyset a page after it starts from). */
export interface Positioned<T> {
  row: T;
  position: KeyPart[];
}

export const run = <T>(em: EntityManager, query: Sql): Promise<T[]> => em.execute<T[]>(query.text, [...query.params]);

type Numeric = string | number | null;
const num = (value: Numeric | undefined): number => Number(value ?? 0);

/** The money of CONFIRMED sales, the same columns in every report so they can be added up against each other. */
export interface Revenue {
  /** Σ (subtotal − discountAmount): ticket revenue belonging to the organizer. */
  gross: number;
  discounts: number;
  /** Σ buyer service fees (seating surcharge included). */
  serviceFees: number;
  iva: number;
  /** Σ total: what buyers paid. */
  collected: number;
  /** Σ fees the organizer absorbed (deducted at settlement). */
  organizerServiceFees: number;
}

const REVENUE_COLUMNS = raw(`
  count(*) filter (where s.status = 'CONFIRMED') as confirmed_sales,
  coalesce(sum(s.subtotal - s.discount_amount) filter (where s.status = 'CONFIRMED'), 0) as gross,
  coalesce(sum(s.discount_amount) filter (where s.status = 'CONFIRMED'), 0) as discounts,
  coalesce(sum(s.service_fee) filter (where s.status = 'CONFIRMED'), 0) as service_fees,
  coalesce(sum(s.iva) filter (where s.status = 'CONFIRMED'), 0) as iva,
  coalesce(sum(s.total) filter (where s.status = 'CONFIRMED'), 0) as collected,
  coalesce(sum(s.organizer_service_fee) filter (where s.status = 'CONFIRMED'), 0) as organizer_service_fees`);

interface RevenueRow {
  confirmed_sales: Numeric;
  gross: Numeric;
  discounts: Numeric;
  service_fees: Numeric;
  iva: Numeric;
  collected: Numeric;
  organizer_service_fees: Numeric;
}

const revenueOf = (row: RevenueRow | undefined): Revenue => ({
  gross: num(row?.gross),
  discounts: num(row?.discounts),
  serviceFees: num(row?.service_fees),
  iva: num(row?.iva),
  collected: num(row?.collected),
  organizerServiceFees: num(row?.organizer_service_fees),
});

// ------------------------------------------------------------------------------------------------ summary

export interface Summary {
  revenue: Revenue;
  tickets: { sold: number };
  sales: {
    confirmed: number;
    free: number;
    pending: number;
    abandoned: number;
    cancelled: number;
    refunded: number;
    /** Σ total of the sales refunded in the period. */
    refundedAmount: number;
  };
  memberships: { active: number; newInPeriod: number; revenue: number };
}

export async function summary(em: EntityManager, scope: Scope, filters: SalesReportFilters): Promise<Summary> {
  const where = saleConditions(scope, filters);
  const [row] = await run<
    RevenueRow & {
      free: Numeric;
      pending: Numeric;
      abandoned: Numeric;
      cancelled: Numeric;
      refunded: Numeric;
      refunded_amount: Numeric;
      tickets: Numeric;
    }
  >(
    em,
    sql`select ${REVENUE_COLUMNS},
          count(*) filter (where s.status = 'CONFIRMED' and s.total = 0) as free,
          count(*) filter (where s.status = 'PENDING') as pending,
          count(*) filter (where s.status = 'ABANDONED') as abandoned,
          count(*) filter (where s.status = 'CANCELLED') as cancelled,
          count(*) filter (where s.status = 'REFUNDED') as refunded,
          coalesce(sum(s.total) filter (where s.status = 'REFUNDED'), 0) as refunded_amount,
          (select coalesce(sum(i.quantity), 0) from sale_items i join sales s on s.id = i.sale_id
            where ${where} and s.status = 'CONFIRMED') as tickets
        from sales s where ${where}`,
  );
  // Memberships belong to the workspace, not to an event: only the date range applies to them.
  const [members] = await run<{ active: Numeric; new_in_period: Numeric; revenue: Numeric }>(
    em,
    sql`select
          (select count(*) from membership_subscriptions m
            where m.workspace_id = ${scope.workspaceId} and m.status = 'ACTIVE' and m.current_period_end > now()) as active,
          (select count(*) from membership_subscriptions m
            where ${joinSql([sql`m.workspace_id = ${scope.workspaceId}`, sql`m.activated_at is not null`, ...dayRange(sql`m.activated_at`, scope, filters)], ' and ')}) as new_in_period,
          (select coalesce(sum(p.amount), 0) from membership_payments p
            where ${joinSql([sql`p.workspace_id = ${scope.workspaceId}`, sql`p.status = 'APPROVED'`, ...dayRange(sql`p.approved_at`, scope, filters)], ' and ')}) as revenue`,
  );
  return {
    revenue: revenueOf(row),
    tickets: { sold: num(row?.tickets) },
    sales: {
      confirmed: num(row?.confirmed_sales),
      free: num(row?.free),
      pending: num(row?.pending),
      abandoned: num(row?.abandoned),
      cancelled: num(row?.cancelled),
      refunded: num(row?.refunded),
      refundedAmount: num(row?.refunded_amount),
    },
    memberships: {
      active: num(members?.active),
      newInPeriod: num(members?.new_in_period),
      revenue: num(members?.revenue),
    },
  };
}

// ------------------------------------------------------------------------------------------------ by event

export interface EventKpis {
  eventId: string;
  eventName: string;
  eventStatus: string;
  sales: { confirmed: number; pending: number; abandoned: number; cancelled: number; refunded: number };
  ticketsSold: number;
  revenue: Revenue;
}

export async function byEvent(
  em: EntityManager,
  scope: Scope,
  filters: SalesReportFilters,
  page?: KeysetPage,
): Promise<Array<Positioned<EventKpis>>> {
  const where = saleConditions(scope, filters);
  const keyset = keysetClauses(
    [
      { column: 'e.name', type: 'text' },
      { column: 'e.id', type: 'uuid' },
    ],
    page,
  );
  const eventScope = joinSql(
    [
      sql`e.workspace_id = ${scope.workspaceId}`,
      ...(filters.event ? [sql`e.id = ${filters.event}`] : []),
      ...(filters.eventDate
        ? [sql`e.id in (select d.event_id from event_dates d where d.id = ${filters.eventDate})`]
        : []),
    ],
    ' and ',
  );
  const rows = await run<
    RevenueRow & {
      event_id: string;
      name: string;
      status: string;
      pending: Numeric;
      abandoned: Numeric;
      cancelled: Numeric;
      refunded: Numeric;
      tickets: Numeric;
    }
  >(
    em,
    sql`with agg as (
          select s.event_id, ${REVENUE_COLUMNS},
            count(*) filter (where s.status = 'PENDING') as pending,
            count(*) filter (where s.status = 'ABANDONED') as abandoned,
            count(*) filter (where s.status = 'CANCELLED') as cancelled,
            count(*) filter (where s.status = 'REFUNDED') as refunded
          from sales s where ${where} group by s.event_id),
        units as (
          select s.event_id, sum(i.quantity) as tickets from sale_items i join sales s on s.id = i.sale_id
           where ${where} and s.status = 'CONFIRMED' group by s.event_id)
        -- agg.* first: an event without sales has a null agg.event_id, which must not shadow e.id.
        select agg.*, units.tickets, e.id as event_id, e.name, e.status
          from events e left join agg on agg.event_id = e.id left join units on units.event_id = e.id
         where ${eventScope} and (e.deleted_at is null or agg.event_id is not null)${keyset.after}
         order by e.name, e.id${keyset.limit}`,
  );
  return rows.map((row) => ({
    position: [row.name, row.event_id],
    row: {
      eventId: row.event_id,
      eventName: row.name,
      eventStatus: row.status,
      sales: {
        confirmed: num(row.confirmed_sales),
        pending: num(row.pending),
        abandoned: num(row.abandoned),
        cancelled: num(row.cancelled),
        refunded: num(row.refunded),
      },
      ticketsSold: num(row.tickets),
      revenue: revenueOf(row),
    },
  }));
}

// ------------------------------------------------------------------------------------------------ time series

export const BUCKETS = ['day', 'week', 'month'] as const;
export type Bucket = (typeof BUCKETS)[number];

export interface TimeseriesPoint {
  /** First calendar day of the bucket in the workspace zone (weeks start on Monday). */
  bucket: string;
  sales: number;
  tickets: number;
  revenue: Revenue;
}

/** Today's calendar day in a zone, YYYY-MM-DD. */
export const todayIn = (timeZone: string, now = new Date()): string =>
  new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);

const DEFAULT_SPAN_DAYS: Record<Bucket, number> = { day: 29, week: 7 * 12 - 1, month: 365 };

const shiftDay = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

/** The range a time series covers: the given days, or the last 30 days / 12 weeks / 12 months up to today. */
export function seriesRange(
  filters: SalesReportFilters,
  bucket: Bucket,
  timeZone: string,
): { from: string; to: string } {
  const to = filters.to ?? (filters.from && filters.from > todayIn(timeZone) ? filters.from : todayIn(timeZone));
  return { from: filters.from ?? shiftDay(to, -DEFAULT_SPAN_DAYS[bucket]), to };
}

export async function timeseries(
  em: EntityManager,
  scope: Scope,
  filters: SalesReportFilters,
  bucket: Bucket,
): Promise<{ from: string; to: string; points: TimeseriesPoint[] }> {
  const range = seriesRange(filters, bucket, scope.timeZone);
  const where = saleConditions(scope, { ...filters, ...range, status: 'CONFIRMED' });
  // `offset 0` keeps the bucket a column of its own subquery: grouped by the bare expression, the planner counts a
  // group per distinct created_at (75,000 "buckets" for 13 months), sorts to disk instead of hashing 13 groups,
  // and from the inflated cost JIT-compiles the statement, which alone took longer than the work.
  const local = sql`cross join lateral (select date_trunc(${bucket}, s.created_at at time zone ${scope.timeZone}) as bucket offset 0) b`;
  const rows = await run<RevenueRow & { day: string; tickets: Numeric }>(
    em,
    sql`with buckets as (
          select generate_series(date_trunc(${bucket}, (${range.from}::date)::timestamp),
                                 date_trunc(${bucket}, (${range.to}::date)::timestamp),
                                 ('1 ' || ${bucket})::interval) as bucket),
        agg as (select b.bucket, ${REVENUE_COLUMNS} from sales s ${local} where ${where} group by b.bucket),
        units as (select b.bucket, sum(i.quantity) as tickets
                    from sales s join sale_items i on i.sale_id = s.id ${local} where ${where} group by b.bucket)
        -- The bucket is named apart from agg.bucket, which is null on an empty day.
        select agg.*, units.tickets, to_char(b.bucket, 'YYYY-MM-DD') as day
          from buckets b left join agg on agg.bucket = b.bucket left join units on units.bucket = b.bucket
         order by b.bucket`,
  );
  return {
    ...range,
    points: rows.map((row) => ({
      bucket: row.day,
      sales: num(row.confirmed_sales),
      tickets: num(row.tickets),
      revenue: revenueOf(row),
    })),
  };
}

// ------------------------------------------------------------------------------------------------ inventory

export interface InventoryRow {
  eventId: string;
  eventName: string;
  eventDateId: string;
  startsAt: string;
  timezone: string;
  ticketTypeId: string;
  ticketTypeName: string;
  capacity: number;
  /** Units held by CONFIRMED sales. */
  sold: number;
  /** Units held by sales still waiting for payment. */
  reserved: number;
  /** Units left in stock: capacity − sold − reserved. */
  available: number;
}

/**
 * A type some PENDING or CONFIRMED sale still holds units of. Deleting such a type (or its date or event) is refused
 * now, but rows deleted before that rule still carry sold units: they stay in the inventory so it agrees with the
 * summary and financials.
 */
const HOLDS_LIVE_UNITS = sql`exists (select 1 from sale_stock_allocations a join sales s on s.id = a.sale_id
                                     where a.ticket_type_id = t.id and s.status in ('PENDING', 'CONFIRMED'))`;

export async function inventory(
  em: EntityManager,
  scope: Scope,
  filters: DateReportFilters & { ticketType?: string | undefined },
  page?: KeysetPage,
): Promise<Array<Positioned<InventoryRow>>> {
  const keyset = keysetClauses(
    [
      { column: 'd.starts_at', type: 'timestamptz' },
      { column: 'e.name', type: 'text' },
      { column: 't.sort_order', type: 'int' },
      { column: 't.id', type: 'uuid' },
    ],
    page,
  );
  const where = joinSql(
    [dateConditions(scope, filters), ...(filters.ticketType ? [sql`t.id = ${filters.ticketType}`] : [])],
    ' and ',
  );
  const rows = await run<{
    event_id: string;
    event_name: string;
    event_date_id: string;
    starts_at: Date;
    starts_at_key: string;
    sort_order: number;
    timezone: string;
    ticket_type_id: string;
    ticket_type_name: string;
    capacity: number;
    sold: Numeric;
    reserved: Numeric;
    available: Numeric;
  }>(
    em,
    // Grouped once per report (hash joins), not once per ticket type: a date with many types stays one pass.
    sql`with types as (
          select t.id, t.name, t.capacity, t.sort_order, t.event_date_id, t.event_id
            from ticket_types t join event_dates d on d.id = t.event_date_id
           where ${where} and ((t.deleted_at is null and d.deleted_at is null) or ${HOLDS_LIVE_UNITS})),
        held as (
          select a.ticket_type_id,
                 sum(a.quantity) filter (where s.status = 'CONFIRMED') as sold,
                 sum(a.quantity) filter (where s.status <> 'CONFIRMED') as reserved
            from sale_stock_allocations a join types t on t.id = a.ticket_type_id join sales s on s.id = a.sale_id
           group by a.ticket_type_id),
        stock as (
          select k.ticket_type_id, sum(k.available) as available
            from ticket_stock k join types t on t.id = k.ticket_type_id group by k.ticket_type_id)
        select e.id as event_id, e.name as event_name, d.id as event_date_id, d.starts_at, d.timezone,
               d.starts_at::text as starts_at_key, t.sort_order,
               t.id as ticket_type_id, t.name as ticket_type_name, t.capacity,
               held.sold, held.reserved, stock.available
          from types t
          join event_dates d on d.id = t.event_date_id
          join events e on e.id = t.event_id
          left join held on held.ticket_type_id = t.id
          left join stock on stock.ticket_type_id = t.id
         where (e.deleted_at is null or ${HOLDS_LIVE_UNITS})${keyset.after}
         order by d.starts_at, e.name, t.sort_order, t.id${keyset.limit}`,
  );
  return rows.map((row) => ({
    position: [row.starts_at_key, row.event_name, num(row.sort_order), row.ticket_type_id],
    row: {
      eventId: row.event_id,
      eventName: row.event_name,
      eventDateId: row.event_date_id,
      startsAt: new Date(row.starts_at).toISOString(),
      timezone: row.timezone,
      ticketTypeId: row.ticket_type_id,
      ticketTypeName: row.ticket_type_name,
      capacity: num(row.capacity),
      sold: num(row.sold),
      reserved: num(row.reserved),
      available: num(row.available),
    },
  }));
}
