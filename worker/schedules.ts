import {
  type Client,
  ScheduleAlreadyRunning,
  type ScheduleDescription,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
} from '@temporalio/client';
import type { Env } from '../config/env.js';
import { RECONCILER_SCHEDULE_ID, RECONCILER_WORKFLOW_ID_PREFIX } from '../workflows/definitions.js';
import type { reconciler } from '../workflows/reconciler.js';
import { DEFAULT_RECONCILER_SETTINGS } from '../workflows/reconciler-definitions.js';
import {
  DEFAULT_SETTLEMENT_SWEEP_INPUT,
  SETTLEMENT_SWEEP_SCHEDULE_ID,
  SETTLEMENT_SWEEP_WORKFLOW_ID,
} from '../workflows/settlement-definitions.js';
import type { settlementSweep } from '../workflows/settlement-sweep.js';

export type ScheduleOutcome = 'created' | 'updated' | 'paused' | 'absent';

interface ScheduleWish {
  scheduleId: string;
  /** The configuration says the Schedule should run. */
  enabled: boolean;
  /** The variable that switches it, named in the pause note so only the configuration's own pause is lifted. */
  switchName: string;
  everySeconds: number;
  workflowType: string;
  workflowId: string;
  taskQueue: string;
  args: unknown[];
}

/**
 * Makes a Schedule match this worker's configuration; every worker calls it at start-up, so the last deployment's
 * settings win. Decision: Schedules rather than timer loops in worker processes, so there is one sweep per interval
 * however many workers run, it survives restarts, and operators see, pause and trigger it in Temporal.
 *
 * SKIP overlap: a run still going when the next is due makes that one skip, so runs never pile up behind a slow
 * provider. A one-minute catch-up window: after an outage one run catches up, not one per missed interval. An
 * operator's pause (`temporal schedule toggle --pause`) survives worker restarts; only the configuration's own pause
 * is lifted.
 */
async function ensureSchedule(client: Client, wish: ScheduleWish): Promise<ScheduleOutcome> {
  const disabledNote = `paused by ${wish.switchName}=false`;
  const handle = client.schedule.getHandle(wish.scheduleId);
  if (!wish.enabled) {
    try {
      const current = await handle.describe();
      if (!current.state.paused) await handle.pause(disabledNote);
      return 'paused';
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) return 'absent';
      throw error;
    }
  }

  const spec = { intervals: [{ every: `${wish.everySeconds} seconds` }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: wish.workflowType,
    workflowId: wish.workflowId,
    taskQueue: wish.taskQueue,
    // The full input, so the Temporal UI shows each run's settings and a change of defaults reaches the Schedule.
    args: wish.args,
  };
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' };
  try {
    await client.schedule.create({ scheduleId: wish.scheduleId, spec, action, policies });
    return 'created';
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  await handle.update((previous: ScheduleDescription) => ({
    spec,
    action,
    policies,
    state: { paused: previous.state.paused, note: previous.state.note },
  }));
  const current = await handle.describe();
  if (current.state.paused && current.state.note === disabledNote) {
    await handle.unpause(`resumed: ${wish.switchName}=true`);
  }
  return 'updated';
}

/** The `reconciler` Schedule: the money safety net, every RECONCILER_INTERVAL_SECONDS. */
export function ensureReconcilerSchedule(
  client: Client,
  env: Pick<Env, 'RECONCILER_ENABLED' | 'RECONCILER_INTERVAL_SECONDS' | 'TEMPORAL_TASK_QUEUE'>,
): Promise<ScheduleOutcome> {
  const args: Parameters<typeof reconciler> = [DEFAULT_RECONCILER_SETTINGS];
  return ensureSchedule(client, {
    scheduleId: RECONCILER_SCHEDULE_ID,
    enabled: env.RECONCILER_ENABLED,
    switchName: 'RECONCILER_ENABLED',
    everySeconds: env.RECONCILER_INTERVAL_SECONDS,
    workflowType: 'reconciler',
    workflowId: RECONCILER_WORKFLOW_ID_PREFIX,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    args,
  });
}

/** The `settlement-sweep` Schedule: starts the settlement of each ended date, every SETTLEMENTS_SWEEP_INTERVAL_SECONDS. */
export function ensureSettlementSweepSchedule(
  client: Client,
  env: Pick<
    Env,
    | 'SETTLEMENTS_SCHEDULE_ENABLED'
    | 'SETTLEMENTS_SWEEP_INTERVAL_SECONDS'
    | 'SETTLEMENT_AFTER_END_MS'
    | 'SETTLEMENT_OBJECTION_WINDOW_MS'
    | 'TEMPORAL_TASK_QUEUE'
  >,
): Promise<ScheduleOutcome> {
  const args: Parameters<typeof settlementSweep> = [
    {
      ...DEFAULT_SETTLEMENT_SWEEP_INPUT,
      endedAgoMs: env.SETTLEMENT_AFTER_END_MS,
      objectionWindowMs: env.SETTLEMENT_OBJECTION_WINDOW_MS,
    },
  ];
  return ensureSchedule(client, {
    scheduleId: SETTLEMENT_SWEEP_SCHEDULE_ID,
    enabled: env.SETTLEMENTS_SCHEDULE_ENABLED,
    switchName: 'SETTLEMENTS_SCHEDULE_ENABLED',
    everySeconds: env.SETTLEMENTS_SWEEP_INTERVAL_SECONDS,
    workflowType: 'settlementSweep',
    workflowId: SETTLEMENT_SWEEP_WORKFLOW_ID,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    args,
  });
}
