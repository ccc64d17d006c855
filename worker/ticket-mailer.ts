import type { Client } from '@temporalio/client';
import type { Env } from '../config/env.js';
import { ticketMailerWorkflowId } from '../workflows/definitions.js';
import type { ticketMailer } from '../workflows/ticket-mailer.js';

/**
 * Makes sure this task queue's ticket mailer runs (started by whichever worker of the queue comes up first; the
 * others find it running). A workflow rather than a loop in each worker process: exactly one mailer per queue however
 * many workers run, it survives restarts, and operators see it in the Temporal UI.
 */
export async function startTicketMailer(client: Client, env: Env): Promise<void> {
  await client.workflow.start<typeof ticketMailer>('ticketMailer', {
    workflowId: ticketMailerWorkflowId(env.TEMPORAL_TASK_QUEUE),
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    args: [{ pollWindowMs: 20_000 }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}
