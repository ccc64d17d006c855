/**
 * Writes the OpenAPI 3.1 documents of both surfaces to openapi/ for client generators. The app is built without
 * connecting to anything: documents come from the routes' zod schemas, so no database or Temporal is needed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { buildApp } from '../api/app.js';
import type { ApiServices } from '../api/services.js';
import { loadEnv } from '../config/env.js';

const OUT_DIR = fileURLToPath(new URL('../openapi', import.meta.url));

/** Stands in for a client the document build never calls; any use fails loudly instead of hanging. */
const unused = <T extends object>(name: string): T =>
  new Proxy({} as T, {
    get: (_target, property) => {
      throw new Error(`${name}.${String(property)} was used while emitting OpenAPI documents`);
    },
  });

/**
 * A Redis client that never connects (lazyConnect, and no command is sent while it is not ready): the documents'
 * routes are rate limited too, and their limits then count in memory.
 */
const disconnectedRedis = new Redis({ lazyConnect: true });

const services: ApiServices = {
  // Nothing here serves traffic: a busy machine must not shed the documents' own requests with 503.
  env: loadEnv({ ...process.env, LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: '0', LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION: '0' }),
  orm: unused('orm'),
  redis: disconnectedRedis,
  temporal: unused('temporal'),
  gatewayA: unused('gatewayA'),
};
const app = await buildApp(services, { logger: false });
await app.ready();
mkdirSync(OUT_DIR, { recursive: true });
for (const [file, url] of [
  ['organizer.json', '/api/v1/openapi.json'],
  ['public.json', '/api/public/openapi.json'],
] as const) {
  const response = await app.inject({ method: 'GET', url, remoteAddress: '127.0.0.1' });
  if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}`);
  writeFileSync(join(OUT_DIR, file), `${JSON.stringify(response.json(), null, 2)}\n`);
  console.log(`wrote openapi/${file}`);
}
await app.close();
disconnectedRedis.disconnect();
