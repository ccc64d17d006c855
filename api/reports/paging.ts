/**
 * Keyset paging of the report lists (inventory, by-event, financials). Their rows are ordered by a tuple of columns
 * (a date's start, a name, an id), not by a time-ordered id, so the position after a page is that tuple: the next
 * page is the rows whose tuple sorts after it. A row inserted meanwhile is then neither repeated nor skipped, which
 * an offset would do.
 */
import { EMPTY, joinSql, raw, type Sql, sql } from './sql.js';

/** One part of a row's position: text (a name, an id, a timestamp as PostgreSQL prints it) or an integer. */
export type KeyPart = string | number;

export interface KeysetPage {
  /** Rows to fetch: the page's limit plus one, which tells whether there are more. */
  fetch: number;
  /** The tuple of the last row of the previous page; null for the first page. */
  after: readonly KeyPart[] | null;
}

/**
 * `and (columns) > (after…)` and `limit fetch`, or nothing when no page is asked for (the bench reads whole reports).
 * `columns` are trusted SQL chosen by code; the values travel as parameters, each cast to its column's type.
 */
export function keysetClauses(
  columns: ReadonlyArray<{ column: string; type: 'text' | 'timestamptz' | 'int' | 'uuid' }>,
  page: KeysetPage | undefined,
): { after: Sql; limit: Sql } {
  if (!page) return { after: EMPTY, limit: EMPTY };
  const after =
    page.after === null
      ? EMPTY
      : sql` and (${raw(columns.map((each) => each.column).join(', '))}) > (${joinSql(
          columns.map((each, index) => sql`${page.after?.[index]}::${raw(each.type)}`),
          ', ',
        )})`;
  return { after, limit: sql` limit ${page.fetch}` };
}
