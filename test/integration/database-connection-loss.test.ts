/**
 * A database restart kills every connection a transaction holds. The pool must get that slot back: a leaked slot is
 * never returned, and once every slot of the worker's pool has leaked, each database step waits for a connection
 * forever (the postgres-restart fault once showed checkouts stuck that way for minutes after the database was back).
 * Here the server ends a transaction's backend, as a restart does, on a pool of one connection.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { initOrm } from '../../entities/orm.js';
import { testEnv } from '../support/stack.js';

let orm: MikroORM;
let admin: pg.Client;
beforeAll(async () => {
  admin = new pg.Client({ connectionString: testEnv().DATABASE_URL });
  await admin.connect();
});
afterAll(async () => {
  await admin.end();
});
// Each case has a pool of its own, so a slot one case leaks cannot stall the next.
beforeEach(async () => {
  orm = await initOrm({ databaseUrl: testEnv().DATABASE_URL, poolMax: 1 });
});
afterEach(async () => {
  await withinSeconds(10, 'closing the pool', orm.close(true)).catch(() => undefined);
});

/** Fails instead of hanging when no connection ever comes back (the leak's symptom is a wait without end). */
async function withinSeconds<T>(seconds: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const giveUp = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no connection after ${seconds} s`)), seconds * 1000);
  });
  try {
    return await Promise.race([work, giveUp]);
  } finally {
    clearTimeout(timer);
  }
}

const terminateBackend = (pid: number) => admin.query('select pg_terminate_backend($1)', [pid]);

async function backendPid(em: { execute: MikroORM['em']['execute'] }): Promise<number> {
  const [row] = await em.execute<{ pid: number }[]>('select pg_backend_pid() as pid');
  return Number(row?.pid);
}

test('a transaction whose connection dies mid-way fails, and the next step still gets a connection', async () => {
  const failure = await orm.em
    .fork()
    .transactional(async (tx) => {
      await terminateBackend(await backendPid(tx));
      // The statement after the kill fails, and so does the rollback on the dead connection.
      await tx.execute('select 1');
    })
    .then(
      () => null,
      (error: unknown) => error,
    );
  expect(failure).toBeInstanceOf(Error);

  const [row] = await withinSeconds(
    10,
    'the statement after a lost transaction',
    orm.em.fork().execute<{ alive: number }[]>('select 1 as alive'),
  );
  expect(Number(row?.alive)).toBe(1);
});

test('a commit on a connection that died fails, and the next transaction still gets a connection', async () => {
  const failure = await orm.em
    .fork()
    .transactional(async (tx) => {
      await terminateBackend(await backendPid(tx));
      // Give the client time to see its socket close, so the commit itself meets the dead connection.
      await new Promise((resolve) => setTimeout(resolve, 200));
    })
    .then(
      () => null,
      (error: unknown) => error,
    );
  expect(failure).toBeInstanceOf(Error);

  const pid = await withinSeconds(
    10,
    'the transaction after a lost commit',
    orm.em.fork().transactional((tx) => backendPid(tx)),
  );
  expect(pid).toBeGreaterThan(0);
});
