/**
 * `tsx scripts/migrations.ts create [name]` diffs the entities against the database and writes a migration;
 * `tsx scripts/migrations.ts up` creates the database if needed and applies pending migrations.
 */
import { loadEnv } from '../config/env.js';
import { initOrm } from '../entities/orm.js';
import { ensureDatabase } from './support/database.js';

const env = loadEnv();
const [command, name] = process.argv.slice(2);

await ensureDatabase(env.DATABASE_URL);
const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: 2 });
try {
  const migrator = orm.migrator;
  if (command === 'create') {
    const result = await migrator.create(undefined, false, false, name);
    console.log(result.fileName ? `created ${result.fileName}` : 'no schema changes');
  } else if (command === 'up') {
    const applied = await migrator.up();
    console.log(applied.length ? `applied ${applied.map((m) => m.name).join(', ')}` : 'database is up to date');
  } else if (command === 'check') {
    const pending = await migrator.checkSchema();
    console.log(
      pending ? 'entities differ from the last migration: run `npm run migration:create`' : 'schema is in sync',
    );
    process.exitCode = pending ? 1 : 0;
  } else {
    console.error('usage: migrations.ts create [name] | up | check');
    process.exitCode = 2;
  }
} finally {
  await orm.close(true);
}
