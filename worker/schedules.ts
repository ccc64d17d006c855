import {
  type Client,
  ScheduleAlreadyRunning,
  type ScheduleDescription,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
} from '@temporalio/client';
import type { Env } from '../config/env.js';
import {
  DEFAULT_RECONCILER_INPUT,
  RECONCILER_SCHEDULE_ID,
  RECONCILER_WORKFLOW_ID_PREFIX,
} from '../workflows/definitions.js';
import type { reconciler } from '../workflows/reconciler.js';

/** Marks a pause made by configuration, so turning RECONCILER_ENABLED back on lifts it (and only it). */
const DISABLED_NOTE = 'paused by RECONCILER_ENABLED=false';

export type ReconcilerScheduleOutcome = 'created' | 'updated' | 'paused' | 'absent';

/**
 * Makes the `reconciler` Schedule match this worker's configuration; every worker calls it at start-up, so the last
 * deployment's settings win. Decision: a Schedule rather than a timer loop in a worker process, so there is one sweep
 * a minute however many workers run, it survives restarts, and operators see, pause and trigger it in Temporal.
 *
 * SKIP overlap: a run still going when the next is due makes that one skip, so runs never pile up behind a slow
 * gateway. A one-minute catch-up window: after an outage one run catches up, not one per missed minute. An operator's
 * pause (`temporal schedule toggle --pause`) survives worker restarts; only the configuration's own pause is lifted.
 */
export async function ensureReconcilerSchedule(
  client: Client,
  env: Pick<Env, 'RECONCILER_ENABLED' | 'RECONCILER_INTERVAL_SECONDS' | 'TEMPORAL_TASK_QUEUE'>,
): Promise<ReconcilerScheduleOutcome> {
  const handle = client.schedule.getHandle(RECONCILER_SCHEDULE_ID);
  if (!env.RECONCILER_ENABLED) {
    try {
      const current = await handle.describe();
      if (!current.state.paused) await handle.pause(DISABLED_NOTE);
      return 'paused';
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) return 'absent';
      throw error;
    }
  }

  const spec = { intervals: [{ every: `${env.RECONCILER_INTERVAL_SECONDS} seconds` }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'reconciler',
    workflowId: RECONCILER_WORKFLOW_ID_PREFIX,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    // The full input, so the Temporal UI shows each run's margins and a change of defaults reaches the Schedule.
    args: [DEFAULT_RECONCILER_INPUT] as Parameters<typeof reconciler>,
  };
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' };
  try {
    await client.schedule.create<typeof reconciler>({
      scheduleId: RECONCILER_SCHEDULE_ID,
      spec,
      action,
      policies,
    });
    return 'created';
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  await handle.update<typeof reconciler>((previous: ScheduleDescription) => ({
    spec,
    action,
    policies,
    state: { paused: previous.state.paused, note: previous.state.note },
  }));
  const current = await handle.describe();
  if (current.state.paused && current.state.note === DISABLED_NOTE) {
    await handle.unpause('resumed: RECONCILER_ENABLED=true');
  }
  return 'updated';
}
