import type { Client } from '@temporalio/client';
import type { Env } from '../config/env.js';
import { WEBHOOK_DISPATCHER_WORKFLOW_ID } from '../workflows/definitions.js';
import type { webhookDispatcher } from '../workflows/webhook-dispatcher.js';

/**
 * Makes sure the one webhook dispatcher execution runs (started by whichever worker comes up first; the others find
 * it running). Decision: a workflow rather than a loop in each worker process, so there is exactly one dispatcher
 * however many workers run, its progress survives restarts, and operators see it in the Temporal UI.
 */
export async function startWebhookDispatcher(client: Client, env: Env): Promise<void> {
  await client.workflow.start<typeof webhookDispatcher>('webhookDispatcher', {
    workflowId: WEBHOOK_DISPATCHER_WORKFLOW_ID,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    args: [{ pollWindowMs: 20_000 }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}
