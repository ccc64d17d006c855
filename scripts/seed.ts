/** Seeds the demo workspace against the configured database and prints fresh demo keys (used by docker compose). */
import { loadEnv } from '../config/env.js';
import { initOrm } from '../entities/orm.js';
import { seedDemo } from './support/seed.js';

const env = loadEnv();
const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: 2 });
try {
  const seed = await seedDemo(orm.em.fork(), { keyPrefix: env.API_KEY_PREFIX });
  console.log(
    JSON.stringify({ workspaceId: seed.workspaceId, apiKey: seed.apiKey, readApiKey: seed.readApiKey }, null, 2),
  );
} finally {
  await orm.close(true);
}
