import { hostname } from 'node:os';
import type { ActivityDeps } from './deps.js';

/**
 * The identity this process's workers poll with: the SDK's default (`<pid>@<host>`), which Temporal records on every
 * task a worker takes, so an operator can tell which process ran a step.
 */
const workerIdentity = (): string => `${process.pid}@${hostname()}`;

export function createHealthActivities(deps: ActivityDeps) {
  return {
    async probeDependencies(): Promise<{ workerIdentity: string; databaseTime: string }> {
      const rows = await deps.orm.em.fork().getConnection().execute<{ now: Date }[]>('select now() as now');
      await deps.redis.ping();
      return { workerIdentity: workerIdentity(), databaseTime: new Date(rows[0]?.now ?? Date.now()).toISOString() };
    },
  };
}
export type HealthActivities = ReturnType<typeof createHealthActivities>;
