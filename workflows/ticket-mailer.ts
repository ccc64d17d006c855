/**
 * Ticket mailer: one long-running execution per task queue (id `ticket-mailer/<queue>`, started by the worker at
 * start-up) that sends the ticket emails confirmed sales owe (table ticket_email_queue, written in the transaction that
 * confirms the sale). A purchase's checkout then ends with its confirmation instead of waiting on an email activity:
 * one workflow task and one activity less per purchase, and the emails of a flash sale go out from one poll.
 *
 *   poll ─▶ mailQueuedTickets (sends oldest first for the poll window, heartbeating) ─▶ poll … ─▶ continue as new
 *
 * Being a workflow, it survives worker restarts (a dead worker's poll is retried after its heartbeat timeout) and is
 * visible in the Temporal UI; its history stays small (continue-as-new every few hundred polls).
 */
import { continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { TicketActivities } from '../activities/tickets.js';
import type { TicketMailerInput } from './definitions.js';

export async function ticketMailer(input: TicketMailerInput): Promise<void> {
  const mailer = proxyActivities<TicketActivities>({
    startToCloseTimeout: input.pollWindowMs + 60_000,
    heartbeatTimeout: '20 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
  for (let poll = 0; poll < 500; poll += 1) {
    await mailer.mailQueuedTickets({ waitMs: input.pollWindowMs });
    if (workflowInfo().continueAsNewSuggested) break;
  }
  await continueAsNew<typeof ticketMailer>(input);
}
