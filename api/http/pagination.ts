import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { isUuid } from '../../entities/ids.js';
import type { Page } from './envelope.js';

/** `limit` 1–100 (default 20) and an opaque `cursor`, as every list of the contract takes them. */
export const PageQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
});
export type PageQuery = z.infer<typeof PageQuerySchema>;

/**
 * Cursors are keyset positions: the id of the last row returned. Ids are UUIDv7 (time-ordered), so listing
 * `id < cursor` newest-first never repeats or skips a row when new rows are inserted between pages.
 * The value is wrapped so clients treat it as opaque and cannot build one by hand.
 */
export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ v: 1, id: lastId }), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      'id' in parsed &&
      typeof parsed.id === 'string' &&
      isUuid(parsed.id)
    ) {
      return parsed.id;
    }
  } catch {
    // fall through to the validation error below
  }
  throw new AppError('VALIDATION_FAILED', 'cursor is not a cursor returned by this list', {
    details: { fields: [{ field: 'cursor', message: 'invalid cursor' }] },
  });
}

/** Turns the `limit + 1` rows fetched into one page and its cursor. */
export function toPage<T extends { id: string }>(rows: T[], limit: number): { items: T[]; page: Page } {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  const last = items[items.length - 1];
  return { items, page: { nextCursor: hasMore && last ? encodeCursor(last.id) : null, hasMore } };
}
