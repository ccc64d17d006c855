/**
 * The report rules the report routes apply around the queries of api/reports: how far a report may reach (buckets,
 * rows, days) and how its lists page. Every limit is refused with the contract's 422 that names it, before any
 * query runs, so no caller (VIEWER keys and self-serve accounts included) can make the API build an unbounded answer.
 */
import { AppError } from '../../domain/errors.js';
import type { Page } from '../http/envelope.js';
import type { SalesReportFilters } from '../reports/filters.js';
import type { KeyPart, KeysetPage } from '../reports/paging.js';
import type { Positioned } from '../reports/queries.js';
import { type Bucket, seriesRange } from '../reports/queries.js';

/** At most this many points in one time series: a year of days, five years of weeks, ten years of months. */
export const MAX_SERIES_BUCKETS: Record<Bucket, number> = { day: 366, week: 261, month: 120 };

const dayNumber = (day: string): number => Date.parse(`${day}T00:00:00Z`) / 86_400_000;

/** How many buckets of `bucket` the inclusive day range [from, to] touches (weeks start on Monday). */
export function bucketCount(range: { from: string; to: string }, bucket: Bucket): number {
  const from = dayNumber(range.from);
  const to = dayNumber(range.to);
  if (bucket === 'day') return to - from + 1;
  if (bucket === 'week') {
    // Day 0 (1970-01-01) was a Thursday, so day -3 was a Monday and floor((n + 3) / 7) numbers Monday-started weeks.
    return Math.floor((to + 3) / 7) - Math.floor((from + 3) / 7) + 1;
  }
  const month = (day: string) => Number(day.slice(0, 4)) * 12 + Number(day.slice(5, 7));
  return month(range.to) - month(range.from) + 1;
}

/**
 * The range a time series covers (the given days, or its default span up to today), refused with 422 when it would
 * hold more buckets than MAX_SERIES_BUCKETS allows: `from=1800-01-01` alone would otherwise build a point per day
 * since then.
 */
export function boundedSeriesRange(
  filters: SalesReportFilters,
  bucket: Bucket,
  timeZone: string,
): { from: string; to: string } {
  const range = seriesRange(filters, bucket, timeZone);
  const buckets = bucketCount(range, bucket);
  const limit = MAX_SERIES_BUCKETS[bucket];
  if (buckets > limit) {
    const message = `a ${bucket} series holds at most ${limit} points (${range.from} to ${range.to} is ${buckets}); narrow from/to or use a longer interval`;
    throw new AppError('VALIDATION_FAILED', `querystring.from: ${message}`, {
      details: { fields: [{ field: 'querystring.from', message }], limit, buckets },
    });
  }
  return range;
}

// ------------------------------------------------------------------------------------------------ list paging

const invalidCursor = () =>
  new AppError('VALIDATION_FAILED', 'cursor is not a cursor returned by this list', {
    details: { fields: [{ field: 'querystring.cursor', message: 'invalid cursor' }] },
  });

/** The position after a page, wrapped so clients treat it as opaque (as the other lists' cursors are). */
export function encodeReportCursor(report: string, position: readonly KeyPart[]): string {
  return Buffer.from(JSON.stringify({ v: 1, r: report, k: position }), 'utf8').toString('base64url');
}

/** The position a cursor of this report carries, checked for shape (`kinds` gives each part's type); else 422. */
export function decodeReportCursor(
  report: string,
  cursor: string | undefined,
  kinds: ReadonlyArray<'string' | 'number'>,
): KeyPart[] | null {
  if (cursor === undefined || cursor === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (typeof parsed !== 'object' || parsed === null || !('r' in parsed) || !('k' in parsed)) throw invalidCursor();
  const { r, k } = parsed as { r: unknown; k: unknown };
  if (r !== report || !Array.isArray(k) || k.length !== kinds.length) throw invalidCursor();
  const parts: unknown[] = k;
  const valid = parts.every((part, index) =>
    kinds[index] === 'number'
      ? Number.isSafeInteger(part)
      : typeof part === 'string' && part.length > 0 && part.length <= 400,
  );
  if (!valid) throw invalidCursor();
  return parts as KeyPart[];
}

/** The cursor parts of each paged report, in the order of its ORDER BY (api/reports/queries.ts, financials.ts). */
export const REPORT_KEYS = {
  inventory: ['string', 'string', 'number', 'string'],
  'by-event': ['string', 'string'],
  financials: ['string', 'string'],
} as const satisfies Record<string, ReadonlyArray<'string' | 'number'>>;
export type PagedReport = keyof typeof REPORT_KEYS;

/** The keyset a page of `report` starts after and how many rows to fetch (one more than the limit). */
export function reportPage(report: PagedReport, query: { limit: number; cursor?: string | undefined }): KeysetPage {
  return { fetch: query.limit + 1, after: decodeReportCursor(report, query.cursor, REPORT_KEYS[report]) };
}

/** One page of rows fetched with reportPage, with a truthful hasMore and the cursor of the next page. */
export function reportPageOf<T>(
  report: PagedReport,
  fetched: Array<Positioned<T>>,
  limit: number,
): {
  data: T[];
  page: Page;
} {
  const hasMore = fetched.length > limit;
  const rows = fetched.slice(0, limit);
  const last = rows[rows.length - 1];
  return {
    data: rows.map((each) => each.row),
    page: { nextCursor: hasMore && last ? encodeReportCursor(report, last.position) : null, hasMore },
  };
}
