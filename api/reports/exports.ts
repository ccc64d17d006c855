/**
 * Exports (contract 4.1, 4.12, part 8): attendees, buyers, subscribers and the reconciliation, as JSON (default) or
 * CSV (`Accept: text/csv` or `format=csv`). Rows come from a database cursor and are written as they arrive, so an
 * export never sits whole in memory. At most EXPORT_ROW_LIMIT rows go out; when the filter matches more, the
 * response says so before the first row (headers `X-Export-Truncated: true`, `X-Export-Row-Limit`) and, in JSON,
 * `page.hasMore: true` with an EXPORT_TRUNCATED warning. A truncated export also gives the cursor of its last row
 * (`page.nextCursor`, and the `X-Export-Next-Cursor` header for CSV): the same request with `cursor=<it>` answers the
 * next rows, so a large export is read in parts of at most EXPORT_ROW_LIMIT rows (contract part 2, list envelope).
 */
import { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { SALE_STATUSES, TICKET_STATUSES } from '../../domain/sale-state.js';
import type { Warning } from '../http/envelope.js';
import { CSV_BOM, type CsvValue, csvLine } from './csv.js';
import { BooleanParam, checkRange, EXPORT_ROW_LIMIT, Id, RANGE_SHAPE, type Scope, saleConditions } from './filters.js';
import { run } from './queries.js';
import { joinSql, raw, type Sql, sql } from './sql.js';

export const ExportCursorParam = z
  .string()
  .max(600)
  .optional()
  .meta({ description: 'page.nextCursor (or X-Export-Next-Cursor) of a truncated export: the rows after it' });

export const FormatParam = z
  .enum(['json', 'csv'])
  .optional()
  .meta({ description: 'csv, or send Accept: text/csv; JSON by default' });

export type ExportFormat = 'json' | 'csv';

/** `format` wins; otherwise a client that asks for text/csv gets CSV. */
export function exportFormat(format: ExportFormat | undefined, accept: string | undefined): ExportFormat {
  if (format) return format;
  return accept && /(^|,)\s*text\/csv\b/i.test(accept) ? 'csv' : 'json';
}

export type ExportColumnKind = 'text' | 'number' | 'boolean' | 'time';
type Kind = ExportColumnKind;

/** What one export is: its query (aliases named as the output columns) and the kind of each column, in order. */
export interface ExportSource {
  /** File name stem of the CSV. */
  name: string;
  columns: ReadonlyArray<readonly [string, Kind]>;
  /**
   * Returns at most `limit` rows in the export's order, only those after `after` (a value of `cursorColumn`) when
   * given. Each row carries `cursorColumn`, unique and in the order of the rows, so a cursor resumes exactly.
   */
  query(limit: number, after: string | null): Sql;
  /** The alias of the row's position key in the query (not an output column unless listed in `columns`). */
  cursorColumn: string;
  /** The direction of `cursorColumn` in the rows' order. */
  cursorOrder: 'asc' | 'desc';
}

/** An export cursor names its export, so one export's cursor is never read as another's position. */
export function encodeExportCursor(source: string, after: string): string {
  return Buffer.from(JSON.stringify({ v: 1, export: source, after }), 'utf8').toString('base64url');
}

/** The position a cursor of this export names; a cursor this export did not give is a 422. */
export function decodeExportCursor(source: string, cursor: string | undefined): string | null {
  if (cursor === undefined || cursor === '') return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      'export' in parsed &&
      parsed.export === source &&
      'after' in parsed &&
      typeof parsed.after === 'string'
    ) {
      return parsed.after;
    }
  } catch {
    // the validation error below
  }
  throw new AppError('VALIDATION_FAILED', 'cursor is not a cursor returned by this export', {
    details: { fields: [{ field: 'cursor', message: 'invalid cursor' }] },
  });
}

const convert = (kind: Kind, value: unknown): string | number | boolean | null => {
  if (value === null || value === undefined) return null;
  if (kind === 'number') return Number(value);
  if (kind === 'boolean') return value === true || value === 't' || value === 'true';
  if (kind === 'time') return new Date(value as string | Date).toISOString();
  return String(value);
};

function shape(source: ExportSource, row: Record<string, unknown>): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  for (const [column, kind] of source.columns) out[column] = convert(kind, row[column]);
  return out;
}

export interface PreparedExport {
  truncated: boolean;
  /** The cursor of the last row sent when more rows match (the next part's `cursor`), else null. */
  nextCursor: string | null;
  contentType: string;
  fileName: string | null;
  body: Readable;
}

/**
 * Counts (up to the limit + 1) first, so truncation is known before anything is sent, then streams the rows.
 * The count and the rows are two statements: a row added between them can at most change whether the last one
 * out is the 5000th, never leak a row outside the filter.
 */
export async function prepareExport(
  em: EntityManager,
  source: ExportSource,
  format: ExportFormat,
  warnings: Warning[],
  cursor?: string,
): Promise<PreparedExport> {
  const after = decodeExportCursor(source.name, cursor);
  const probe = source.query(EXPORT_ROW_LIMIT + 1, after);
  // One statement: how many rows match (up to the limit + 1) and the position of the last row that goes out.
  const key = raw(`"${source.cursorColumn}"`);
  const order = raw(source.cursorOrder);
  const [last] = await run<{ n: string | number; position: unknown }>(
    em,
    sql`select count(*) over () as n, probe.${key}::text as position
          from (${probe}) probe order by probe.${key} ${order} offset ${EXPORT_ROW_LIMIT - 1} limit 1`,
  );
  const truncated = Number(last?.n ?? 0) > EXPORT_ROW_LIMIT;
  const nextCursor = truncated && last ? encodeExportCursor(source.name, String(last.position)) : null;
  const query = source.query(EXPORT_ROW_LIMIT, after);
  const rows = em
    .getConnection()
    .stream<Record<string, unknown>>(query.text, [...query.params], undefined, undefined, 500);
  const columns = source.columns.map(([column]) => column);

  async function* csv(): AsyncGenerator<string> {
    yield CSV_BOM + csvLine(columns);
    for await (const row of rows) {
      const shaped = shape(source, row);
      yield csvLine(columns.map((column) => shaped[column] as CsvValue));
    }
  }

  async function* json(): AsyncGenerator<string> {
    yield '{"data":[';
    let first = true;
    for await (const row of rows) {
      yield (first ? '' : ',') + JSON.stringify(shape(source, row));
      first = false;
    }
    const all = truncated
      ? [
          ...warnings,
          {
            code: 'EXPORT_TRUNCATED',
            message: `Only the first ${EXPORT_ROW_LIMIT} rows are exported; send page.nextCursor as cursor for the next ones, or narrow the filters`,
          },
        ]
      : warnings;
    yield `],"page":${JSON.stringify({ nextCursor, hasMore: truncated })}${all.length ? `,"warnings":${JSON.stringify(all)}` : ''}}`;
  }

  return {
    truncated,
    nextCursor,
    contentType: format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
    fileName: format === 'csv' ? `${source.name}.csv` : null,
    body: Readable.from(format === 'csv' ? csv() : json(), { objectMode: false }),
  };
}

// ------------------------------------------------------------------------------------------------ attendees

export const AttendeesQuery = z.object({
  event: Id.optional(),
  eventDate: Id.optional(),
  ticketType: Id.optional(),
  checkedIn: BooleanParam.optional().meta({ description: 'true: only tickets scanned at the door; false: not yet' }),
  status: z.enum(TICKET_STATUSES).optional(),
  format: FormatParam,
  cursor: ExportCursorParam,
});
export type AttendeesFilters = z.infer<typeof AttendeesQuery>;

/** One row per ticket: the TicketAccess fields of contract part 2, plus the seat and the buyer who holds it. */
export const ATTENDEE_COLUMNS = [
  ['ticketCode', 'text'],
  ['status', 'text'],
  ['valid', 'boolean'],
  ['saleStatus', 'text'],
  ['eventId', 'text'],
  ['eventName', 'text'],
  ['eventDateId', 'text'],
  ['startsAt', 'time'],
  ['ticketTypeId', 'text'],
  ['ticketTypeName', 'text'],
  ['seatLabel', 'text'],
  ['checkedInAt', 'time'],
  ['saleReference', 'text'],
  ['buyerName', 'text'],
  ['buyerEmail', 'text'],
  ['buyerPhone', 'text'],
  ['buyerDocumentType', 'text'],
  ['buyerDocumentNumber', 'text'],
] as const satisfies ReadonlyArray<readonly [string, Kind]>;

export function attendeesSource(scope: Scope, filters: AttendeesFilters): ExportSource {
  const where = joinSql(
    [
      sql`t.workspace_id = ${scope.workspaceId}`,
      ...(filters.event ? [sql`t.event_id = ${filters.event}`] : []),
      ...(filters.eventDate ? [sql`t.event_date_id = ${filters.eventDate}`] : []),
      ...(filters.ticketType ? [sql`t.ticket_type_id = ${filters.ticketType}`] : []),
      ...(filters.status ? [sql`t.status = ${filters.status}`] : []),
      ...(filters.checkedIn === undefined
        ? []
        : [filters.checkedIn ? sql`t.checked_in_at is not null` : sql`t.checked_in_at is null`]),
    ],
    ' and ',
  );
  return {
    name: 'attendees',
    columns: ATTENDEE_COLUMNS,
    cursorColumn: 'position',
    cursorOrder: 'asc',
    query: (limit, after) => sql`
      select t.id as "position", t.code as "ticketCode", t.status as "status", (t.status = 'VALID' and s.status = 'CONFIRMED') as "valid",
             s.status as "saleStatus", t.event_id as "eventId", e.name as "eventName", t.event_date_id as "eventDateId",
             d.starts_at as "startsAt", t.ticket_type_id as "ticketTypeId", tt.name as "ticketTypeName",
             t.seat_label as "seatLabel", t.checked_in_at as "checkedInAt", s.reference as "saleReference",
             s.buyer_name as "buyerName", s.buyer_email as "buyerEmail", s.buyer_phone as "buyerPhone",
             s.buyer_document_type as "buyerDocumentType", s.buyer_document_number as "buyerDocumentNumber"
        from tickets t
        join sales s on s.id = t.sale_id
        join events e on e.id = t.event_id
        join event_dates d on d.id = t.event_date_id
        join ticket_types tt on tt.id = t.ticket_type_id
       where ${where}${after === null ? sql`` : sql` and t.id > ${after}`}
       order by t.id
       limit ${limit}`,
  };
}

// ------------------------------------------------------------------------------------------------ buyers

export const BuyersQuery = z
  .object({
    ...RANGE_SHAPE,
    status: z.enum(SALE_STATUSES).default('CONFIRMED').meta({ description: 'sales counted; CONFIRMED by default' }),
    format: FormatParam,
    cursor: ExportCursorParam,
  })
  .superRefine(checkRange);
export type BuyersFilters = z.infer<typeof BuyersQuery>;

export const BUYER_COLUMNS = [
  ['email', 'text'],
  ['name', 'text'],
  ['phone', 'text'],
  ['sales', 'number'],
  ['tickets', 'number'],
  ['totalSpent', 'number'],
  ['firstPurchaseAt', 'time'],
  ['lastPurchaseAt', 'time'],
] as const satisfies ReadonlyArray<readonly [string, Kind]>;

/** One row per buyer email among the filtered sales; name and phone as the buyer gave them last. */
export function buyersSource(scope: Scope, filters: BuyersFilters): ExportSource {
  const where = saleConditions(scope, filters);
  return {
    name: 'buyers',
    columns: BUYER_COLUMNS,
    cursorColumn: 'email',
    cursorOrder: 'asc',
    query: (limit, after) => sql`
      with units as (
        select i.sale_id, sum(i.quantity) as quantity from sale_items i join sales s on s.id = i.sale_id
         where ${where} group by i.sale_id)
      select lower(s.buyer_email) as "email",
             (array_agg(s.buyer_name order by s.created_at desc))[1] as "name",
             (array_agg(s.buyer_phone order by s.created_at desc) filter (where s.buyer_phone is not null))[1] as "phone",
             count(*) as "sales", coalesce(sum(u.quantity), 0) as "tickets", sum(s.total) as "totalSpent",
             min(s.created_at) as "firstPurchaseAt", max(s.created_at) as "lastPurchaseAt"
        from sales s left join units u on u.sale_id = s.id
       where ${where}${after === null ? sql`` : sql` and lower(s.buyer_email) > ${after}`}
       group by lower(s.buyer_email)
       order by lower(s.buyer_email)
       limit ${limit}`,
  };
}

// ------------------------------------------------------------------------------------------------ subscribers

export const SubscribersQuery = z.object({ format: FormatParam, cursor: ExportCursorParam });

/** ExportSubscriber (contract part 2): since = first activation (signup time while unpaid), expiresAt = period end. */
export const SUBSCRIBER_COLUMNS = [
  ['name', 'text'],
  ['email', 'text'],
  ['plan', 'text'],
  ['status', 'text'],
  ['since', 'time'],
  ['expiresAt', 'time'],
] as const satisfies ReadonlyArray<readonly [string, Kind]>;

export function subscribersSource(scope: Scope): ExportSource {
  return {
    name: 'subscribers',
    columns: SUBSCRIBER_COLUMNS,
    cursorColumn: 'position',
    cursorOrder: 'asc',
    query: (limit, after) => sql`
      select m.id as "position", coalesce(b.name, b.email) as "name", b.email as "email", p.name as "plan", m.status as "status",
             coalesce(m.activated_at, m.created_at) as "since", m.current_period_end as "expiresAt"
        from membership_subscriptions m
        join buyers b on b.id = m.buyer_id
        join membership_plans p on p.id = m.plan_id
       where m.workspace_id = ${scope.workspaceId}${after === null ? sql`` : sql` and m.id > ${after}`}
       order by m.id
       limit ${limit}`,
  };
}
