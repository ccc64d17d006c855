import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps.js';

export function createHealthActivities(deps: ActivityDeps) {
  return {
    async probeDependencies(): Promise<{ workerIdentity: string; databaseTime: string }> {
      const rows = await deps.orm.em.fork().getConnection().execute<{ now: Date }[]>('select now() as now');
      await deps.redis.ping();
      return {
        workerIdentity: Context.current().info.taskQueue,
        databaseTime: new Date(rows[0]?.now ?? Date.now()).toISOString(),
      };
    },
  };
}
export type HealthActivities = ReturnType<typeof createHealthActivities>;
