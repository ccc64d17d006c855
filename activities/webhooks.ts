/**
 * Organizer webhook delivery: the outbox dispatcher (fan-out) and one signed POST per attempt. See
 * `workflows/webhook-dispatcher.ts` and `workflows/webhook-delivery.ts` for the story; this file is the I/O.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { webhookTaskQueue } from '../config/env.js';
import {
  EVENT_HEADER,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  SIGNATURE_V2_HEADER,
  signBody,
  signTimestampedBody,
  TIMESTAMP_HEADER,
} from '../domain/webhook-signature.js';
import { checkWebhookTarget, type ResolvedAddress } from '../domain/webhook-targets.js';
import { decryptSecret } from '../entities/webhook.js';
import { systemResolver } from '../integrations/dns.js';
import { countWebhookAttempt } from '../observability/metrics.js';
import {
  type WebhookAttemptResult,
  type WebhookDeliveryInput,
  webhookDeliveryWorkflowId,
} from '../workflows/definitions.js';
import type { webhookDelivery } from '../workflows/webhook-delivery.js';
import type { ActivityDeps } from './deps.js';

interface WebhookRow {
  id: string;
  workspace_id: string;
  url: string;
  active: boolean;
  secret_ciphertext: string;
  allow_private_targets: boolean;
  paused_at: Date | null;
  deleted_at: Date | null;
}

interface OutboxRow {
  id: string;
  workspace_id: string;
  type: string;
  payload: Record<string, unknown>;
}

/** A lookup that answers only with addresses already checked, so the connection cannot go elsewhere (no rebinding). */
function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all)
      callback(
        null,
        addresses.map((entry) => ({ address: entry.address, family: entry.family })),
      );
    else callback(null, addresses[0]?.address, addresses[0]?.family);
  }) as unknown as LookupFunction;
}

/** One POST, at most `timeoutMs` from the first byte sent to the last byte of the answer; redirects are not followed. */
function post(
  url: URL,
  body: string,
  headers: Record<string, string>,
  addresses: ResolvedAddress[],
  timeoutMs: number,
): Promise<{ status: number } | { error: 'timeout' | 'connection_error'; detail: string }> {
  return new Promise((resolve) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    let settled = false;
    const finish = (value: { status: number } | { error: 'timeout' | 'connection_error'; detail: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(value);
    };
    const request = send(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        ...(addresses.length > 0 ? { lookup: pinnedLookup(addresses) } : {}),
        agent: false,
      },
      (response: IncomingMessage) => {
        response.on('data', () => undefined);
        response.on('end', () => finish({ status: response.statusCode ?? 0 }));
        response.on('error', (error) => finish({ error: 'connection_error', detail: error.message }));
      },
    );
    const timer = setTimeout(() => {
      finish({ error: 'timeout', detail: `no complete answer within ${timeoutMs} ms` });
      request.destroy();
    }, timeoutMs);
    request.on('error', (error) => finish({ error: 'connection_error', detail: error.message }));
    request.end(body);
  });
}

export function createWebhookActivities(deps: ActivityDeps) {
  const resolve = deps.resolveHost ?? systemResolver;

  /** Claims a batch of undispatched events and starts their deliveries, in one transaction. */
  async function dispatchBatch(): Promise<number> {
    const em = deps.orm.em.fork();
    return em.transactional(async (tx) => {
      const events = await tx.execute<OutboxRow[]>(
        `select id, workspace_id, type, payload from outbox_events where dispatched_at is null
          order by id limit 50 for update skip locked`,
      );
      if (events.length === 0) return 0;
      for (const event of events) {
        const hooks = await tx.execute<{ id: string }[]>(
          `select id from webhooks where workspace_id = ? and deleted_at is null and active and paused_at is null
             and events @> ?::jsonb`,
          [event.workspace_id, JSON.stringify([event.type])],
        );
        for (const hook of hooks) {
          const input: WebhookDeliveryInput = {
            webhookId: hook.id,
            eventId: event.id,
            maxAttempts: deps.env.WEBHOOK_MAX_ATTEMPTS,
            initialIntervalMs: deps.env.WEBHOOK_RETRY_INITIAL_MS,
            maxIntervalMs: deps.env.WEBHOOK_RETRY_MAX_MS,
          };
          try {
            await deps.temporal.workflow.start<typeof webhookDelivery>('webhookDelivery', {
              workflowId: webhookDeliveryWorkflowId(hook.id, event.id),
              // Their own queue and worker: a slow receiver waits in a delivery slot, never in a checkout's.
              taskQueue: webhookTaskQueue(deps.env),
              args: [input],
              // One delivery per (endpoint, event), ever: a re-dispatch after a crash finds it and moves on.
              workflowIdReusePolicy: 'REJECT_DUPLICATE',
            });
          } catch (error) {
            if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
          }
        }
      }
      await tx.execute('update outbox_events set dispatched_at = now() where id in (?)', [events.map((e) => e.id)]);
      return events.length;
    });
  }

  return {
    /**
     * Long poll of the outbox: returns as soon as a batch was dispatched, or after `waitMs` with nothing. While
     * WEBHOOK_DELIVERY_ENABLED is false (the contract's "delivery paused"), events stay in the outbox untouched and are
     * delivered when it is switched back on.
     */
    async dispatchOutbox(input: { waitMs: number }): Promise<{ dispatched: number }> {
      const context = Context.current();
      const deadline = Date.now() + input.waitMs;
      while (Date.now() < deadline) {
        context.heartbeat();
        if (deps.env.WEBHOOK_DELIVERY_ENABLED) {
          const dispatched = await dispatchBatch();
          if (dispatched > 0) return { dispatched };
        }
        await context.sleep(Math.min(500, Math.max(0, deadline - Date.now())));
      }
      return { dispatched: 0 };
    },

    /**
     * One delivery attempt of one event to one endpoint: check the endpoint is still live, re-check its URL against
     * the address it resolves to now, sign, POST with the timeout, and record the outcome on the endpoint
     * (lastDeliveryAt, lastDeliveryStatus, failureCount; paused once failureCount reaches the limit).
     */
    async deliverWebhook(input: {
      webhookId: string;
      eventId: string;
      attempt: number;
    }): Promise<WebhookAttemptResult> {
      const em = deps.orm.em.fork();
      const hooks = await em.execute<WebhookRow[]>(
        `select id, workspace_id, url, active, secret_ciphertext, allow_private_targets, paused_at, deleted_at
           from webhooks where id = ?`,
        [input.webhookId],
      );
      const hook = hooks[0];
      if (!hook || hook.deleted_at) return { outcome: 'skipped', status: 'endpoint_deleted', retryable: false };
      if (!hook.active) return { outcome: 'skipped', status: 'endpoint_inactive', retryable: false };
      if (hook.paused_at) return { outcome: 'skipped', status: 'endpoint_paused', retryable: false };
      const events = await em.execute<OutboxRow[]>(
        'select id, workspace_id, type, payload from outbox_events where id = ?',
        [input.eventId],
      );
      const event = events[0];
      if (!event || event.workspace_id !== hook.workspace_id) {
        return { outcome: 'skipped', status: 'event_not_found', retryable: false };
      }

      const record = async (result: WebhookAttemptResult): Promise<WebhookAttemptResult> => {
        if (result.outcome !== 'skipped') countWebhookAttempt(event.type, result.outcome, result.status);
        if (result.outcome === 'delivered') {
          await em.execute(
            `update webhooks set last_delivery_at = now(), last_delivery_status = ?, failure_count = 0, updated_at = now()
              where id = ?`,
            [result.status, hook.id],
          );
          return result;
        }
        const rows = await em.execute<{ paused_at: Date | null }[]>(
          `update webhooks set last_delivery_at = now(), last_delivery_status = ?, failure_count = failure_count + 1,
              paused_at = case when failure_count + 1 >= ? then coalesce(paused_at, now()) else paused_at end,
              updated_at = now()
            where id = ? returning paused_at`,
          [result.status.slice(0, 80), deps.env.WEBHOOK_PAUSE_AFTER_FAILURES, hook.id],
        );
        return rows[0]?.paused_at ? { ...result, retryable: false } : result;
      };

      const target = await checkWebhookTarget(hook.url, {
        resolve,
        allowPrivate: hook.allow_private_targets || deps.env.WEBHOOK_ALLOW_PRIVATE_TARGETS,
        requireResolution: true,
      });
      if (!target.ok) {
        Context.current().log.warn('webhook target refused', { webhookId: hook.id, reason: target.reason });
        return record({
          outcome: 'failed',
          status: target.reason === 'unresolvable' ? 'unresolvable' : `blocked_address: ${target.reason}`,
          retryable: target.reason === 'unresolvable',
        });
      }

      const secret = decryptSecret(hook.secret_ciphertext, deps.env.SECRETS_ENCRYPTION_KEY);
      // One instant for the signed body's sentAt and the timestamp header: the receiver's freshness window reads
      // either, and the contract's body-only signature is fresh only through sentAt.
      const sentAt = new Date();
      const body = JSON.stringify({ event: event.type, data: event.payload, sentAt: sentAt.toISOString() });
      const timestamp = Math.floor(sentAt.getTime() / 1000);
      const answer = await post(
        target.url,
        body,
        {
          'user-agent': 'ticketing-webhooks/1',
          [SIGNATURE_HEADER]: signBody(secret, body),
          [TIMESTAMP_HEADER]: String(timestamp),
          [SIGNATURE_V2_HEADER]: signTimestampedBody(secret, timestamp, body),
          [EVENT_ID_HEADER]: event.id,
          [EVENT_HEADER]: event.type,
        },
        target.addresses,
        deps.env.WEBHOOK_TIMEOUT_MS,
      );
      if ('error' in answer) return record({ outcome: 'failed', status: answer.error, retryable: true });
      if (answer.status >= 200 && answer.status < 300) {
        return record({ outcome: 'delivered', status: String(answer.status), retryable: false });
      }
      if (answer.status >= 300 && answer.status < 400) {
        // Following a redirect would let a public endpoint bounce the request to an internal address.
        return record({ outcome: 'failed', status: `${answer.status} redirect_not_followed`, retryable: true });
      }
      return record({ outcome: 'failed', status: String(answer.status), retryable: true });
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
