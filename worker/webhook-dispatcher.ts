import type { Client } from '@temporalio/client';
import { type Env, webhookTaskQueue } from '../config/env.js';
import { moveWebhookDispatcherSignal, WEBHOOK_DISPATCHER_WORKFLOW_ID } from '../workflows/definitions.js';
import type { webhookDispatcher } from '../workflows/webhook-dispatcher.js';

/**
 * Makes sure the one webhook dispatcher execution runs, on the webhooks task queue (started by whichever worker
 * comes up first; the others find it running). Decision: a workflow rather than a loop in each worker process, so
 * there is exactly one dispatcher however many workers run, its progress survives restarts, and operators see it in
 * the Temporal UI. A dispatcher found on another queue (started before deliveries had their own) is told to move.
 */
export async function startWebhookDispatcher(client: Client, env: Env): Promise<void> {
  const taskQueue = webhookTaskQueue(env);
  await client.workflow.start<typeof webhookDispatcher>('webhookDispatcher', {
    workflowId: WEBHOOK_DISPATCHER_WORKFLOW_ID,
    taskQueue,
    args: [{ pollWindowMs: 20_000 }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const running = client.workflow.getHandle(WEBHOOK_DISPATCHER_WORKFLOW_ID);
  const described = await running.describe();
  if (described.status.name === 'RUNNING' && described.taskQueue !== taskQueue) {
    await running.signal(moveWebhookDispatcherSignal, { taskQueue });
  }
}
