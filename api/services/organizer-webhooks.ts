/**
 * A workspace's webhook endpoints (contract 4.15): which URLs are accepted (against what the name resolves to now;
 * delivery checks again every time), the signing secret kept encrypted and shown once, and resuming a paused
 * endpoint. Routes keep the HTTP side.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../domain/errors.js';
import { checkWebhookTarget } from '../../domain/webhook-targets.js';
import { isUuid, newId } from '../../entities/ids.js';
import { Webhook } from '../../entities/index.js';
import { encryptSecret, generateSigningSecret, type IWebhook, type WEBHOOK_EVENTS } from '../../entities/webhook.js';
import { systemResolver } from '../../integrations/dns.js';
import type { ApiServices } from '../services.js';

type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
type UrlCheckServices = Pick<ApiServices, 'env' | 'resolveHost'>;

/** Contract 4.15 URL rules, against what the name resolves to now (delivery checks again every time). */
async function acceptedUrl(services: UrlCheckServices, raw: string): Promise<string> {
  const check = await checkWebhookTarget(raw, {
    resolve: services.resolveHost ?? systemResolver,
    allowPrivate: services.env.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    requireResolution: false,
  });
  if (!check.ok) {
    throw new AppError('VALIDATION_FAILED', `url is not allowed: ${check.message}`, {
      details: { reason: check.reason, fields: [{ field: 'url', message: check.message }] },
    });
  }
  return check.url.toString();
}

async function findWebhook(em: EntityManager, id: string): Promise<IWebhook> {
  const hook = isUuid(id) ? await em.findOne(Webhook, { id }) : null;
  if (!hook) throw new AppError('NOT_FOUND', 'Webhook not found');
  return hook;
}

/** Newest first, one more than `limit` (the page builder tells whether there is more); `after` is the last id seen. */
export const listWebhooks = (em: EntityManager, after: string | undefined, limit: number): Promise<IWebhook[]> =>
  em.find(Webhook, after ? { id: { $lt: after } } : {}, { orderBy: { id: 'desc' }, limit: limit + 1 });

/** Registers an endpoint; the signing secret (the caller's, else a generated one) is answered this once. */
export async function registerWebhook(
  services: UrlCheckServices,
  em: EntityManager,
  workspaceId: string,
  input: { url: string; events: WebhookEvent[]; secret?: string | undefined },
): Promise<{ hook: IWebhook; signingSecret: string }> {
  const url = await acceptedUrl(services, input.url);
  const signingSecret = input.secret ?? generateSigningSecret();
  const hook = em.create(Webhook, {
    id: newId(),
    workspace: workspaceId,
    url,
    events: input.events,
    active: true,
    secretCiphertext: encryptSecret(signingSecret, services.env.SECRETS_ENCRYPTION_KEY),
    allowPrivateTargets: services.env.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    lastDeliveryAt: null,
    lastDeliveryStatus: null,
    failureCount: 0,
    pausedAt: null,
    deletedAt: null,
  });
  await em.flush();
  return { hook, signingSecret };
}

/** Changes url, events or active; turning an endpoint on also resumes it after a pause and resets its failures. */
export async function changeWebhook(
  services: UrlCheckServices,
  em: EntityManager,
  id: string,
  change: { url?: string | undefined; events?: WebhookEvent[] | undefined; active?: boolean | undefined },
): Promise<IWebhook> {
  const hook = await findWebhook(em, id);
  if (change.url !== undefined) {
    hook.url = await acceptedUrl(services, change.url);
    hook.allowPrivateTargets = services.env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
  }
  if (change.events !== undefined) hook.events = change.events;
  if (change.active !== undefined) {
    hook.active = change.active;
    if (change.active) {
      hook.pausedAt = null;
      hook.failureCount = 0;
    }
  }
  await em.flush();
  return hook;
}

/** Soft-deletes an endpoint; deliveries in flight stop at their next attempt. */
export async function deleteWebhook(em: EntityManager, id: string): Promise<IWebhook> {
  const hook = await findWebhook(em, id);
  hook.deletedAt = new Date();
  hook.active = false;
  await em.flush();
  return hook;
}
