/**
 * The reconciler's bounded walk: a sweep reads its rows a page at a time, in key order (a time, then an id), from where
 * the previous run stopped (its `reconciler_cursors` row), and reads at most `pages` pages a run. Reaching the newest
 * row, it starts over from the oldest (up to where this run started), so every row is visited, run after run,
 * however many there are, and no run reads more than `pages × pageSize` rows whatever the table holds.
 */
import type { MikroORM } from '@mikro-orm/postgresql';

/** A position in a walk: the key time (as Postgres writes it, microseconds kept) and the id of the last row visited. */
export interface CursorPosition {
  dueAt: string;
  itemId: string;
}

/** The id before every uuid and after every uuid, to bound a page with no cursor on one side. */
export const FIRST_ITEM = '00000000-0000-0000-0000-000000000000';
export const LAST_ITEM = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

export interface WalkOptions<R> {
  /** The cursor row's name: `<sweep>:<workspaceId | all>`. */
  name: string;
  pageSize: number;
  /** Pages one run reads at most. */
  pages: number;
  /**
   * False: the walk never starts over; it only follows new rows as they come (a head that visits each row once, soon
   * after it appears). Default true.
   */
  wrap?: boolean;
  /** Where a walk with no saved cursor starts (default: the oldest row). */
  startAt?: CursorPosition;
  /** Rows after `after` (exclusive; null: from the oldest) up to `upTo` (inclusive; null: to the newest), in key order. */
  page: (after: CursorPosition | null, upTo: CursorPosition | null, pageSize: number) => Promise<R[]>;
  positionOf: (row: R) => CursorPosition;
  /**
   * Takes what it wants of a page, in order, and says how many rows it went through: fewer than the page means this
   * run has all it can handle (its batch is full), and the walk stops after the last row it went through.
   */
  visit: (rows: R[]) => Promise<number>;
  /** Called after each page (a heartbeat). */
  onPage?: () => void;
}

export interface WalkResult {
  /** Rows read from the database this run. */
  rowsRead: number;
  pagesRead: number;
  /** The walk reached the newest row and started over from the oldest this run. */
  wrapped: boolean;
  /**
   * Saves where this run stopped. Called once what was taken has been handled, so a run that fails before goes over
   * the same rows again when retried.
   */
  saveCursor: () => Promise<void>;
}

export const cursorName = (sweep: string, workspaceId: string | null) => `${sweep}:${workspaceId ?? 'all'}`;

export async function readCursor(orm: MikroORM, name: string): Promise<CursorPosition | null> {
  const [row] = await orm.em
    .fork()
    .execute<{ due_at: string; item_id: string }[]>('select due_at, item_id from reconciler_cursors where name = ?', [
      name,
    ]);
  return row ? { dueAt: row.due_at, itemId: row.item_id } : null;
}

export async function saveCursor(orm: MikroORM, name: string, position: CursorPosition): Promise<void> {
  await orm.em.fork().execute(
    `insert into reconciler_cursors (name, due_at, item_id, updated_at) values (?, ?, ?, now())
     on conflict (name) do update set due_at = excluded.due_at, item_id = excluded.item_id, updated_at = now()`,
    [name, position.dueAt, position.itemId],
  );
}

/**
 * One run of a walk: from the saved cursor to the newest row, then (pages left) from the oldest up to the cursor.
 * The caller saves the position reached (`saveCursor`) once it has handled what it took.
 */
export async function walkFromCursor<R>(orm: MikroORM, options: WalkOptions<R>): Promise<WalkResult> {
  const saved = await readCursor(orm, options.name);
  const from = saved ?? options.startAt ?? null;
  let reached: CursorPosition | null = from;
  let pagesLeft = options.pages;
  const result: WalkResult = {
    rowsRead: 0,
    pagesRead: 0,
    wrapped: false,
    saveCursor: async () => {
      if (reached !== null && (reached !== from || saved === null)) await saveCursor(orm, options.name, reached);
    },
  };
  /** True once the end (`upTo`) was reached; false when the batch or this run's pages ran out first. */
  const walk = async (after: CursorPosition | null, upTo: CursorPosition | null): Promise<boolean> => {
    let position = after;
    for (;;) {
      if (pagesLeft === 0) return false;
      pagesLeft -= 1;
      const rows = await options.page(position, upTo, options.pageSize);
      result.pagesRead += 1;
      result.rowsRead += rows.length;
      const through = await options.visit(rows);
      const last = through > 0 ? rows[through - 1] : undefined;
      if (last !== undefined) {
        position = options.positionOf(last);
        reached = position;
      }
      options.onPage?.();
      if (through < rows.length) return false;
      if (rows.length < options.pageSize) return true;
    }
  };
  if ((await walk(from, null)) && options.wrap !== false && from !== null && pagesLeft > 0) {
    result.wrapped = true;
    await walk(null, from);
  }
  return result;
}
