import pg from 'pg';

/** The database a URL names, after checking it is a plain identifier (it is interpolated into DDL). */
function databaseName(databaseUrl: string): string {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
  if (!/^[a-zA-Z0-9_]+$/.test(name)) throw new Error(`refusing to manage a database with an unusual name: ${name}`);
  return name;
}

/** Only databases named `*_test` or `*_test_<suffix>` may be dropped by tooling. */
function disposableName(databaseUrl: string): string {
  const name = databaseName(databaseUrl);
  if (!/_test(_[a-z0-9]+)?$/.test(name))
    throw new Error(`refusing to drop ${name}: only *_test databases are disposable`);
  return name;
}

/** Runs `work` on a connection to the server's `postgres` database (databases are created and dropped from there). */
async function onServer(databaseUrl: string, work: (client: pg.Client) => Promise<void>): Promise<void> {
  const url = new URL(databaseUrl);
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}

/** Creates the database named in the URL when it does not exist yet. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const name = databaseName(databaseUrl);
  await onServer(databaseUrl, async (client) => {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`create database "${name}"`);
  });
}

/** Drops and recreates a disposable test database. */
export async function recreateDatabase(databaseUrl: string): Promise<void> {
  const name = disposableName(databaseUrl);
  await onServer(databaseUrl, async (client) => {
    await client.query(`drop database if exists "${name}" with (force)`);
    await client.query(`create database "${name}"`);
  });
}

/** Drops a disposable test database. */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const name = disposableName(databaseUrl);
  await onServer(databaseUrl, async (client) => {
    await client.query(`drop database if exists "${name}" with (force)`);
  });
}
