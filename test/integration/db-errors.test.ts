/**
 * Path 14 of "Money is never stranded": a database error no retry can fix ends the step at once. The classifier is
 * checked against what PostgreSQL really answers through the pg driver and MikroORM, on the test database.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { ApplicationFailure } from '@temporalio/common';
import { databaseRejection, rejectUnfixableDatabaseErrors } from '../../activities/db-errors.js';
import { sqlStateOf } from '../../entities/database-errors.js';
import { newId } from '../../entities/ids.js';
import { Workspace } from '../../entities/index.js';
import { initOrm } from '../../entities/orm.js';
import { DATABASE_REJECTED_FAILURE } from '../../workflows/definitions.js';
import { testEnv } from '../support/stack.js';

let orm: MikroORM;
beforeAll(async () => {
  orm = await initOrm({ databaseUrl: testEnv().DATABASE_URL, poolMax: 2 });
});
afterAll(async () => {
  await orm.close(true);
});

const slug = () => `db-errors-${Math.random().toString(36).slice(2, 10)}`;

async function errorOf(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected the database to refuse this');
}

const insertWorkspace = (name: string, workspaceSlug = slug(), id = newId()) =>
  orm.em.fork().transactional(async (tx) => {
    tx.create(Workspace, { id, name, slug: workspaceSlug, currency: 'COP' });
    await tx.flush();
  });

describe('the database-error classifier (path 14)', () => {
  test('a NUL byte in a text column, written through the ORM, is rejected for good', async () => {
    const error = await errorOf(() => insertWorkspace('Ana\u0000Gómez'));
    // pg sends the NUL inside the bound parameter; the server answers with a protocol violation, every time.
    expect(sqlStateOf(error)).toBe('08P01');
    const failure = databaseRejection(error);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure?.type).toBe(DATABASE_REJECTED_FAILURE);
    expect(failure?.nonRetryable).toBe(true);
  });

  test('a NUL escape in a jsonb value (22P05) is rejected for good', async () => {
    const error = await errorOf(() => orm.em.fork().execute('select ?::jsonb as value', ['{"seat":"A\\u0000"}']));
    expect(sqlStateOf(error)).toBe('22P05');
    expect(databaseRejection(error)?.nonRetryable).toBe(true);
  });

  test('a not-null violation (23502) is rejected for good and the failure does not quote the row', async () => {
    const secretName = `Buyer ${Math.random().toString(36).slice(2)}`;
    const error = await errorOf(() =>
      orm.em
        .fork()
        .execute(
          "insert into workspaces (id, name, slug, currency, created_at, updated_at) values (?, ?, null, 'COP', now(), now())",
          [newId(), secretName],
        ),
    );
    expect(sqlStateOf(error)).toBe('23502');
    const failure = databaseRejection(error);
    expect(failure?.type).toBe(DATABASE_REJECTED_FAILURE);
    expect(JSON.stringify({ message: failure?.message, details: failure?.details })).not.toContain(secretName);
    expect(failure?.details?.[0]).toMatchObject({ sqlState: '23502', table: 'workspaces', column: 'slug' });
  });

  test('a unique violation (23505) stays retryable: a concurrent step of the same sale committed first', async () => {
    // The same primary key twice (workspace slugs are unique per account now, not service-wide).
    const taken = newId();
    await insertWorkspace('First', slug(), taken);
    const error = await errorOf(() => insertWorkspace('Second', slug(), taken));
    expect(sqlStateOf(error)).toBe('23505');
    expect(databaseRejection(error)).toBeNull();
    await expect(
      rejectUnfixableDatabaseErrors(() => insertWorkspace('Third', slug(), taken)),
    ).rejects.not.toBeInstanceOf(ApplicationFailure);
  });

  test('the wrapper turns an unfixable error into the non-retryable failure and lets results through', async () => {
    await expect(rejectUnfixableDatabaseErrors(() => insertWorkspace('Nul\u0000Name'))).rejects.toMatchObject({
      type: DATABASE_REJECTED_FAILURE,
      nonRetryable: true,
    });
    await expect(
      rejectUnfixableDatabaseErrors(() => orm.em.fork().execute<{ one: number }[]>('select 1 as one')),
    ).resolves.toEqual([{ one: 1 }]);
  });
});
