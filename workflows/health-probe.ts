import { proxyActivities } from '@temporalio/workflow';
import type { HealthActivities } from '../activities/health.js';
import type { HealthProbeResult } from './definitions.js';

const { probeDependencies } = proxyActivities<HealthActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** Proves end to end that a worker polls the task queue and its activities reach the database. */
export async function healthProbe(): Promise<HealthProbeResult> {
  return probeDependencies();
}
