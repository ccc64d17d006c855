/**
 * Settlement sweep: the Schedule `settlement-sweep` (worker/schedules.ts) runs it every few minutes. It finds the
 * event dates that ended (endsAt, else startsAt) long enough ago, sold at least one CONFIRMED sale and have no
 * settlement yet, and starts one `settlement/<workspaceId>/<eventDateId>` execution for each. Starting is idempotent
 * (the id is the business key), so an overlapping run or an operator's `settlement start` never makes a second one.
 * A sweep that cannot run is counted as an error; the next run tries again.
 */
import { ActivityFailure, log, proxyActivities } from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlements.js';
import {
  DEFAULT_SETTLEMENT_SWEEP_INPUT,
  type SettlementSweepInput,
  type SettlementSweepResult,
} from './settlement-definitions.js';

/** A few attempts, then the next scheduled run takes over (a run that retried for long would hold back the next). */
const sweeps = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '20 seconds', maximumAttempts: 3 },
});

export async function settlementSweep(input: Partial<SettlementSweepInput> = {}): Promise<SettlementSweepResult> {
  const settings: SettlementSweepInput = { ...DEFAULT_SETTLEMENT_SWEEP_INPUT, ...input };
  try {
    const result = await sweeps.startEndedSettlements(settings);
    log.info('settlement sweep finished', { ...result });
    return result;
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    log.warn('settlement sweep failed; the next run retries it', { error: error.cause?.message });
    return { started: 0, alreadyRunning: 0, errors: 1 };
  }
}
