/**
 * The reconciler's bounded walk (activities/reconciler-walk.ts) over an in-memory table: a run reads at most its
 * pages, goes on from the saved cursor, starts over from the oldest at the end (or never, for a head), and saves its
 * position only when told to (after the run handled what it took).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { type CursorPosition, walkFromCursor } from '../../activities/reconciler-walk.js';

interface Row {
  at: string;
  id: string;
}

/** Rows 1..n, keyed by a time and an id that sort alike. */
const table = (n: number): Row[] =>
  Array.from({ length: n }, (_, i) => ({
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    id: `00000000-0000-0000-0000-${String(i + 1).padStart(12, '0')}`,
  }));

const key = (p: CursorPosition) => `${p.dueAt}|${p.itemId}`;

/** A database holding only reconciler_cursors, as the walk reads and writes it. */
function cursorsDb() {
  const cursors = new Map<string, CursorPosition>();
  const orm = {
    em: {
      fork: () => ({
        execute: async (sql: string, params: string[]) => {
          if (sql.startsWith('select due_at, item_id from reconciler_cursors')) {
            const found = cursors.get(params[0] as string);
            return found ? [{ due_at: found.dueAt, item_id: found.itemId }] : [];
          }
          if (sql.includes('insert into reconciler_cursors')) {
            cursors.set(params[0] as string, { dueAt: params[1] as string, itemId: params[2] as string });
            return [];
          }
          throw new Error(`unexpected statement ${sql}`);
        },
      }),
    },
  } as unknown as MikroORM;
  return { orm, cursors };
}

/** One run: takes up to `batch` rows (all rows count as wanted), returns the ids taken and the pages read. */
async function run(
  orm: MikroORM,
  rows: Row[],
  options: { batch: number; pageSize: number; pages: number; wrap?: boolean; startAt?: CursorPosition },
) {
  const taken: string[] = [];
  const pagesRead: number[] = [];
  const walked = await walkFromCursor<Row>(orm, {
    name: 'test:all',
    pageSize: options.pageSize,
    pages: options.pages,
    wrap: options.wrap,
    startAt: options.startAt,
    page: async (after, upTo, size) => {
      const page = rows
        .filter((row) => {
          const k = key({ dueAt: row.at, itemId: row.id });
          return (after === null || k > key(after)) && (upTo === null || k <= key(upTo));
        })
        .slice(0, size);
      pagesRead.push(page.length);
      return page;
    },
    positionOf: (row) => ({ dueAt: row.at, itemId: row.id }),
    visit: async (page) => {
      for (const [index, row] of page.entries()) {
        if (taken.length >= options.batch) return index;
        taken.push(row.id.slice(-2));
      }
      return page.length;
    },
  });
  return { taken, pagesRead, walked };
}

describe("the reconciler's bounded walk", () => {
  test('a run reads at most its pages, and the next run goes on from where it stopped, then starts over', async () => {
    const { orm } = cursorsDb();
    const rows = table(10);
    const options = { batch: 100, pageSize: 3, pages: 2 };

    const first = await run(orm, rows, options);
    expect(first.pagesRead).toEqual([3, 3]);
    expect(first.taken).toEqual(['01', '02', '03', '04', '05', '06']);
    await first.walked.saveCursor();

    // Two pages: 07..09, then 10, a short page, is the end, and no page is left to start over with.
    const second = await run(orm, rows, options);
    expect(second.taken).toEqual(['07', '08', '09', '10']);
    expect(second.walked.wrapped).toBe(false);
    await second.walked.saveCursor();

    // From the saved end: nothing newer (an empty page), then from the oldest with the pages left.
    const third = await run(orm, rows, { ...options, pages: 3 });
    expect(third.taken).toEqual(['01', '02', '03', '04', '05', '06']);
    expect(third.walked.wrapped).toBe(true);
    expect(third.pagesRead).toEqual([0, 3, 3]);
  });

  test('a run that reaches the end with pages left starts over from the oldest, up to where it began', async () => {
    const { orm } = cursorsDb();
    const rows = table(10);
    const options = { batch: 100, pageSize: 3, pages: 2 };
    await (await run(orm, rows, options)).walked.saveCursor();
    const second = await run(orm, rows, { ...options, pages: 3 });
    expect(second.taken).toEqual(['07', '08', '09', '10', '01', '02', '03']);
    expect(second.walked.wrapped).toBe(true);
    expect(second.pagesRead).toEqual([3, 1, 3]);
  });

  test('a full batch stops the walk after the last row taken, and the next run takes the row after it', async () => {
    const { orm } = cursorsDb();
    const rows = table(10);
    const first = await run(orm, rows, { batch: 4, pageSize: 3, pages: 5 });
    expect(first.taken).toEqual(['01', '02', '03', '04']);
    await first.walked.saveCursor();
    const second = await run(orm, rows, { batch: 4, pageSize: 3, pages: 5 });
    expect(second.taken).toEqual(['05', '06', '07', '08']);
  });

  test('a run whose position is not saved (it failed before handling what it took) is walked again', async () => {
    const { orm, cursors } = cursorsDb();
    const rows = table(5);
    const failed = await run(orm, rows, { batch: 2, pageSize: 3, pages: 2 });
    expect(failed.taken).toEqual(['01', '02']);
    expect(cursors.size).toBe(0);
    const retried = await run(orm, rows, { batch: 2, pageSize: 3, pages: 2 });
    expect(retried.taken).toEqual(['01', '02']);
  });

  test('a head never starts over: it begins at its start and then only follows new rows', async () => {
    const { orm, cursors } = cursorsDb();
    const rows = table(6);
    const startAt = { dueAt: rows[2]?.at as string, itemId: '00000000-0000-0000-0000-000000000000' };
    const head = { batch: 100, pageSize: 3, pages: 3, wrap: false, startAt };

    const first = await run(orm, rows, head);
    expect(first.taken).toEqual(['03', '04', '05', '06']);
    await first.walked.saveCursor();
    const idle = await run(orm, rows, head);
    expect(idle.taken).toEqual([]);
    expect(idle.walked.wrapped).toBe(false);

    rows.push(...table(8).slice(6));
    const next = await run(orm, rows, head);
    expect(next.taken).toEqual(['07', '08']);
    await next.walked.saveCursor();
    expect(cursors.get('test:all')?.itemId).toBe(rows[7]?.id);
  });

  test('a head with nothing to read yet keeps its start, so rows that come later are not skipped', async () => {
    const { orm, cursors } = cursorsDb();
    const startAt = { dueAt: '2026-01-01T00:00:00.000Z', itemId: '00000000-0000-0000-0000-000000000000' };
    const empty = await run(orm, [], { batch: 10, pageSize: 3, pages: 1, wrap: false, startAt });
    await empty.walked.saveCursor();
    expect(cursors.get('test:all')).toEqual(startAt);
  });
});
