/**
 * Webhook delivery: one event to one endpoint (`webhook/<webhookId>/<eventId>`). The contract promises best effort
 * without retries; we do better: a failed attempt is retried with exponential backoff for a bounded number of
 * attempts, and the endpoint is paused after repeated consecutive failures (the attempt reports it non-retryable).
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.js';
import type { WebhookDeliveryInput, WebhookDeliveryResult } from './definitions.js';

/** The attempt's own I/O (database) may hiccup; the POST inside is made once per attempt and never retried here. */
const http = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
});

export async function webhookDelivery(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  let waitMs = input.initialIntervalMs;
  let lastStatus = 'not_attempted';
  for (let attempt = 1; attempt <= input.maxAttempts; attempt += 1) {
    const result = await http.deliverWebhook({ webhookId: input.webhookId, eventId: input.eventId, attempt });
    lastStatus = result.status;
    if (result.outcome !== 'failed') return { outcome: result.outcome, attempts: attempt, lastStatus };
    if (!result.retryable || attempt === input.maxAttempts) return { outcome: 'failed', attempts: attempt, lastStatus };
    await sleep(waitMs, { summary: 'deliver the webhook again' });
    waitMs = Math.min(waitMs * 2, input.maxIntervalMs);
  }
  return { outcome: 'failed', attempts: input.maxAttempts, lastStatus };
}
