/**
 * Settlement reads the organizer routes run (contract 4.9): the visible settlements of the caller's workspace
 * (SENT or later; internal ones do not exist for the organizer), paged by the contract's cursor, and their files.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../domain/errors.js';
import { isUuid } from '../../entities/ids.js';
import { Settlement } from '../../entities/index.js';
import { type ISettlement, VISIBLE_SETTLEMENT_STATUSES } from '../../entities/settlement.js';
import type { Page } from '../http/envelope.js';
import { decodeCursor } from '../http/pagination.js';

const VISIBLE: readonly string[] = VISIBLE_SETTLEMENT_STATUSES;
const NO_ROW = '00000000-0000-0000-0000-000000000000';

/**
 * Contract 4.9 defines the settlements cursor as the id of the last row of the previous page, so that id is the
 * cursor this list hands out and takes; the opaque form other lists use is still read, for clients holding one.
 */
export function settlementsCursorPosition(cursor: string | undefined): string | undefined {
  if (cursor !== undefined && isUuid(cursor)) return cursor;
  return decodeCursor(cursor);
}

export interface SettlementFilters {
  event?: string | undefined;
  status?: (typeof VISIBLE_SETTLEMENT_STATUSES)[number] | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** Newest first, keyset-paged by id (UUIDv7, so creation order). */
export async function listSettlements(
  em: EntityManager,
  filters: SettlementFilters,
): Promise<{ items: ISettlement[]; page: Page }> {
  const after = settlementsCursorPosition(filters.cursor);
  const where: Record<string, unknown> = { status: filters.status ?? { $in: [...VISIBLE_SETTLEMENT_STATUSES] } };
  if (after) where.id = { $lt: after };
  if (filters.event) where.event = isUuid(filters.event) ? filters.event : NO_ROW;
  const rows = await em.find(Settlement, where, { orderBy: { id: 'desc' }, limit: filters.limit + 1 });
  const hasMore = rows.length > filters.limit;
  const items = hasMore ? rows.slice(0, filters.limit) : rows;
  const last = items[items.length - 1];
  return { items, page: { nextCursor: hasMore && last ? last.id : null, hasMore } };
}

/** A settlement of the active workspace the organizer may see (SENT or later), else 404: internal ones do not exist. */
export async function findVisible(em: EntityManager, id: string): Promise<ISettlement> {
  const row = isUuid(id)
    ? await em.findOne(Settlement, { id, status: { $in: [...VISIBLE_SETTLEMENT_STATUSES] } })
    : null;
  if (!row || !VISIBLE.includes(row.status)) throw notFound('Settlement');
  return row;
}

/** One stored file of that settlement, matched exactly on kind and name; only name and bytes leave the database. */
export async function storedFile(
  em: EntityManager,
  settlementId: string,
  kind: 'DOCUMENT' | 'PROOF',
  fileName?: string,
) {
  const [file] = await em.execute<Array<{ file_name: string; content_type: string; content: Buffer }>>(
    `select file_name, content_type, content from settlement_files
      where settlement_id = ? and kind = ? ${fileName === undefined ? '' : 'and file_name = ?'}
      order by created_at desc limit 1`,
    [settlementId, kind, ...(fileName === undefined ? [] : [fileName])],
  );
  return file ?? null;
}

/** What a settlement's view names besides the row: its files, its event's name and its date's start. */
export interface SettlementNames {
  files: Array<{ settlement_id: string; kind: string; file_name: string }>;
  events: Array<{ id: string; name: string }>;
  dates: Array<{ id: string; starts_at: Date | string }>;
}

/** Event, date and file names of the given (already tenant-scoped) settlements, in three small queries. */
export async function settlementNames(em: EntityManager, rows: ISettlement[]): Promise<SettlementNames> {
  const ids = rows.map((row) => row.id);
  const placeholders = ids.map(() => '?').join(', ');
  const files = await em.execute<SettlementNames['files']>(
    `select settlement_id, kind, file_name from settlement_files where settlement_id in (${placeholders})
      order by created_at, file_name`,
    ids,
  );
  const eventIds = [...new Set(rows.flatMap((row) => (row.event ? [row.event] : [])))];
  const dateIds = [...new Set(rows.flatMap((row) => (row.eventDate ? [row.eventDate] : [])))];
  const events = eventIds.length
    ? await em.execute<SettlementNames['events']>(
        `select id, name from events where id in (${eventIds.map(() => '?').join(', ')})`,
        eventIds,
      )
    : [];
  const dates = dateIds.length
    ? await em.execute<SettlementNames['dates']>(
        `select id, starts_at from event_dates where id in (${dateIds.map(() => '?').join(', ')})`,
        dateIds,
      )
    : [];
  return { files, events, dates };
}
