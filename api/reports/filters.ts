/**
 * The filters every report shares (issue 13): event, event date, an inclusive date range of calendar days in the
 * workspace's time zone, and a status where one applies. Bad filters are refused by zod before any query runs, so
 * the caller gets the contract's 422 VALIDATION_FAILED naming the field.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { SALE_STATUSES } from '../../domain/sale-state.js';
import { joinSql, type Sql, sql } from './sql.js';

/** Where the workspace has no event dates yet (and the service's home market). */
export const DEFAULT_TIME_ZONE = 'America/Bogota';
/** Contract part 8: exports return at most this many rows. */
export const EXPORT_ROW_LIMIT = 5000;
/** A range longer than this is a mistake (or an attempt to make the database work for nothing). */
const MAX_RANGE_DAYS = 3660;

export const Id = z.uuid({ message: 'must be an id returned by this API' });
const Day = z.iso.date({ message: 'must be a calendar day, YYYY-MM-DD' });
export const BooleanParam = z.enum(['true', 'false']).transform((value) => value === 'true');

const dayNumber = (day: string): number => Date.parse(`${day}T00:00:00Z`) / 86_400_000;

/** from ≤ to, and not absurdly far apart. */
export function checkRange(
  query: { from?: string | undefined; to?: string | undefined },
  context: z.RefinementCtx,
): void {
  if (!query.from || !query.to) return;
  const span = dayNumber(query.to) - dayNumber(query.from);
  if (span < 0) context.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' });
  else if (span > MAX_RANGE_DAYS)
    context.addIssue({ code: 'custom', path: ['to'], message: `the range may cover at most ${MAX_RANGE_DAYS} days` });
}

export const RANGE_SHAPE = {
  event: Id.optional(),
  eventDate: Id.optional(),
  from: Day.optional().meta({ description: 'first day included (YYYY-MM-DD, workspace time zone)' }),
  to: Day.optional().meta({ description: 'last day included (YYYY-MM-DD, workspace time zone)' }),
};

export const SalesReportShape = { ...RANGE_SHAPE, status: z.enum(SALE_STATUSES).optional() };

/** Sales reports: the range applies to when the sale was made (created_at, as GET /sales does). */
export const SalesReportQuery = z.object(SalesReportShape).superRefine(checkRange);
export type SalesReportFilters = z.infer<typeof SalesReportQuery>;

/** Reports per event date (inventory, financials): the range selects dates by when they start. */
export const DateReportQuery = z.object({ ...RANGE_SHAPE }).superRefine(checkRange);
export type DateReportFilters = z.infer<typeof DateReportQuery>;

/**
 * The zone calendar days are read in. Workspaces carry no zone of their own; their event dates do (default
 * America/Bogota), so the zone most of the workspace's dates are held in is the workspace's.
 */
export async function workspaceTimeZone(em: EntityManager, workspaceId: string): Promise<string> {
  const rows = await em.execute<{ timezone: string }[]>(
    `select timezone from event_dates where workspace_id = ?
      group by timezone order by count(*) desc, timezone limit 1`,
    [workspaceId],
  );
  return rows[0]?.timezone ?? DEFAULT_TIME_ZONE;
}

export interface Scope {
  workspaceId: string;
  timeZone: string;
}

/** `column` falls on a day of [from, to] in the workspace zone; bounds are constants, so an index on it serves. */
export function dayRange(column: Sql, scope: Scope, range: { from?: string | undefined; to?: string | undefined }) {
  const parts: Sql[] = [];
  if (range.from) parts.push(sql`${column} >= (${range.from}::date)::timestamp at time zone ${scope.timeZone}`);
  if (range.to) parts.push(sql`${column} < ((${range.to}::date) + 1)::timestamp at time zone ${scope.timeZone}`);
  return parts;
}

/** The WHERE conditions of a sales report over `sales s`. */
export function saleConditions(scope: Scope, filters: SalesReportFilters, options: { status?: boolean } = {}): Sql {
  const parts: Sql[] = [sql`s.workspace_id = ${scope.workspaceId}`];
  if (filters.event) parts.push(sql`s.event_id = ${filters.event}`);
  if (filters.eventDate) parts.push(sql`s.event_date_id = ${filters.eventDate}`);
  if (options.status !== false && filters.status) parts.push(sql`s.status = ${filters.status}`);
  parts.push(...dayRange(sql`s.created_at`, scope, filters));
  return joinSql(parts, ' and ');
}

/** The WHERE conditions of a report over `event_dates d` (and its event). */
export function dateConditions(scope: Scope, filters: DateReportFilters): Sql {
  const parts: Sql[] = [sql`d.workspace_id = ${scope.workspaceId}`];
  if (filters.event) parts.push(sql`d.event_id = ${filters.event}`);
  if (filters.eventDate) parts.push(sql`d.id = ${filters.eventDate}`);
  parts.push(...dayRange(sql`d.starts_at`, scope, filters));
  return joinSql(parts, ' and ');
}
