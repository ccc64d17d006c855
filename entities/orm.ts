import { fileURLToPath } from 'node:url';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, MikroORM, type Options } from '@mikro-orm/postgresql';
import { ALL_ENTITIES } from './index.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations', import.meta.url));

export interface OrmOptions {
  databaseUrl: string;
  poolMax?: number;
  /** DATABASE_CONNECT_TIMEOUT_MS: the longest a query waits for a pooled connection. */
  connectTimeoutMs?: number;
  debug?: boolean;
}

/** As config/env.ts's default, for scripts that open the ORM without the process environment's settings. */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

export function ormConfig(options: OrmOptions): Options {
  return defineConfig({
    clientUrl: options.databaseUrl,
    entities: ALL_ENTITIES,
    extensions: [Migrator],
    preferTs: true,
    debug: options.debug ?? false,
    // The API forks an EntityManager per request and activities fork one per call; a shared global one would leak state.
    allowGlobalContext: false,
    // Tenant and soft-delete filters apply to the entity queried, not through its relations: a sale item of a
    // visible sale stays readable even when it points at a since-deleted ticket type.
    autoJoinRefsForFilters: false,
    filtersOnRelations: false,
    pool: { min: 0, max: options.poolMax ?? 20 },
    // pg's pool waits for a connection forever by default: a saturated pool or a database that accepts no connection
    // would hold requests and steps without bound.
    driverOptions: { connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS },
    migrations: {
      path: MIGRATIONS_DIR,
      pathTs: MIGRATIONS_DIR,
      glob: '!(*.d).{js,ts}',
      transactional: true,
      allOrNothing: true,
      snapshotOnMigrate: false,
      snapshotName: '.schema-snapshot',
      emit: 'ts',
    },
  });
}

/** Opens the ORM without touching the schema: migrations are applied by `scripts/migrations.ts`, never at startup. */
export async function initOrm(options: OrmOptions): Promise<MikroORM> {
  return MikroORM.init(ormConfig(options));
}
