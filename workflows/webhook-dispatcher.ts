/**
 * Webhook dispatcher: one long-running execution (id `webhook-dispatcher`, started by the worker at start-up) that
 * drains the transactional outbox. Each activity is a long poll: it returns when it has fanned a batch of events out
 * to one delivery workflow per subscribed endpoint (`webhook/<webhookId>/<eventId>`), or after the poll window with
 * nothing. Being a workflow, there is exactly one dispatcher however many workers run, it survives worker restarts,
 * and it is visible in the Temporal UI; history stays small (continue-as-new every few hundred polls).
 *
 * It runs on the webhooks task queue with the deliveries (their own worker and slots). A dispatcher found elsewhere
 * is told to move (signal `moveToTaskQueue`) and continues as new on the queue it is given.
 */
import { continueAsNew, makeContinueAsNewFunc, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.js';
import { moveWebhookDispatcherSignal, type WebhookDispatcherInput } from './definitions.js';

export async function webhookDispatcher(input: WebhookDispatcherInput): Promise<void> {
  const outbox = proxyActivities<WebhookActivities>({
    startToCloseTimeout: input.pollWindowMs + 60_000,
    heartbeatTimeout: '20 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
  let moveTo: string | null = null;
  setHandler(moveWebhookDispatcherSignal, ({ taskQueue }) => {
    if (taskQueue !== workflowInfo().taskQueue) moveTo = taskQueue;
  });
  for (let poll = 0; poll < 500; poll += 1) {
    await outbox.dispatchOutbox({ waitMs: input.pollWindowMs });
    if (moveTo !== null || workflowInfo().continueAsNewSuggested) break;
  }
  if (moveTo !== null) await makeContinueAsNewFunc<typeof webhookDispatcher>({ taskQueue: moveTo })(input);
  await continueAsNew<typeof webhookDispatcher>(input);
}
