import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { checkWebhookTarget } from '../../../domain/webhook-targets.js';
import { isUuid, newId } from '../../../entities/ids.js';
import { Webhook } from '../../../entities/index.js';
import { encryptSecret, generateSigningSecret, type IWebhook, WEBHOOK_EVENTS } from '../../../entities/webhook.js';
import { systemResolver } from '../../../integrations/dns.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import type { ApiServices } from '../../services.js';

const EventsSchema = z
  .array(z.enum(WEBHOOK_EVENTS))
  .min(1)
  .max(WEBHOOK_EVENTS.length)
  .refine((events) => new Set(events).size === events.length, { message: 'events must not repeat' });

const UrlSchema = z.string().trim().min(1).max(2048).meta({
  description:
    'http or https, publicly reachable; localhost, private, link-local and names resolving to them are refused',
});

const CreateWebhookBody = z.object({
  url: UrlSchema,
  events: EventsSchema,
  secret: z.string().min(16).max(200).optional().meta({
    description: 'Your own signing secret (16–200 characters); when absent one is generated. Returned once.',
  }),
});

const UpdateWebhookBody = z
  .object({ url: UrlSchema.optional(), events: EventsSchema.optional(), active: z.boolean().optional() })
  .refine((body) => body.url !== undefined || body.events !== undefined || body.active !== undefined, {
    message: 'send url, events or active',
  });

export const WebhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENTS)),
    active: z.boolean(),
    lastDeliveryAt: z.string().nullable(),
    lastDeliveryStatus: z
      .string()
      .nullable()
      .meta({ description: 'HTTP status of the last attempt, or why it failed' }),
    failureCount: z.number().int().meta({ description: 'Consecutive failed delivery attempts' }),
    pausedAt: z.string().nullable().meta({
      description: 'Set when repeated failures paused the endpoint; PATCH { active: true } resumes it',
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Webhook' });

const CreatedWebhookSchema = WebhookSchema.extend({
  signingSecret: z.string().meta({ description: 'Shown only in this response; stored encrypted' }),
}).meta({ id: 'CreatedWebhook' });

const toWebhook = (hook: IWebhook) => ({
  id: hook.id,
  url: hook.url,
  events: hook.events,
  active: hook.active,
  lastDeliveryAt: isoOrNull(hook.lastDeliveryAt),
  lastDeliveryStatus: hook.lastDeliveryStatus ?? null,
  failureCount: hook.failureCount,
  pausedAt: isoOrNull(hook.pausedAt),
  createdAt: hook.createdAt.toISOString(),
  updatedAt: hook.updatedAt.toISOString(),
});

async function findWebhook(em: EntityManager, id: string) {
  const hook = isUuid(id) ? await em.findOne(Webhook, { id }) : null;
  if (!hook) throw new AppError('NOT_FOUND', 'Webhook not found');
  return hook;
}

export const organizerWebhookRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  /** Contract 4.15 URL rules, against what the name resolves to now (delivery checks again every time). */
  async function acceptedUrl(raw: string): Promise<string> {
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

  app.get(
    '/webhooks',
    {
      config: organizer('ADMIN', 'webhooks'),
      schema: {
        tags: ['webhooks'],
        summary: 'List webhook endpoints with their delivery health',
        querystring: PageQuerySchema,
        response: { 200: listOf(WebhookSchema) },
      },
    },
    async (request) => {
      const after = decodeCursor(request.query.cursor);
      const rows = await request.em.find(Webhook, after ? { id: { $lt: after } } : {}, {
        orderBy: { id: 'desc' },
        limit: request.query.limit + 1,
      });
      const { items, page } = toPage(rows, request.query.limit);
      return { data: items.map(toWebhook), page, ...(request.warnings.length ? { warnings: request.warnings } : {}) };
    },
  );

  app.post(
    '/webhooks',
    {
      config: organizer('ADMIN', 'webhooks'),
      schema: {
        tags: ['webhooks'],
        summary: 'Register a webhook endpoint; the signing secret is returned once',
        body: CreateWebhookBody,
        response: { 201: dataOf(CreatedWebhookSchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const url = await acceptedUrl(request.body.url);
      const signingSecret = request.body.secret ?? generateSigningSecret();
      const hook = request.em.create(Webhook, {
        id: newId(),
        workspace: workspace.workspaceId,
        url,
        events: request.body.events,
        active: true,
        secretCiphertext: encryptSecret(signingSecret, services.env.SECRETS_ENCRYPTION_KEY),
        allowPrivateTargets: services.env.WEBHOOK_ALLOW_PRIVATE_TARGETS,
        lastDeliveryAt: null,
        lastDeliveryStatus: null,
        failureCount: 0,
        pausedAt: null,
        deletedAt: null,
      });
      await request.em.flush();
      return reply.status(201).send({ data: { ...toWebhook(hook), signingSecret } });
    },
  );

  app.patch(
    '/webhooks/:id',
    {
      config: organizer('ADMIN', 'webhooks'),
      schema: {
        tags: ['webhooks'],
        summary: 'Change url, events or active; the signing secret is never rotated (create a new webhook for that)',
        description: 'active: true also resumes an endpoint paused after repeated failures and resets failureCount.',
        params: IdParamSchema,
        body: UpdateWebhookBody,
        response: { 200: dataOf(WebhookSchema) },
      },
    },
    async (request) => {
      const hook = await findWebhook(request.em, request.params.id);
      const body = request.body;
      if (body.url !== undefined) {
        hook.url = await acceptedUrl(body.url);
        hook.allowPrivateTargets = services.env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
      }
      if (body.events !== undefined) hook.events = body.events;
      if (body.active !== undefined) {
        hook.active = body.active;
        if (body.active) {
          hook.pausedAt = null;
          hook.failureCount = 0;
        }
      }
      await request.em.flush();
      return { data: toWebhook(hook) };
    },
  );

  app.delete(
    '/webhooks/:id',
    {
      config: organizer('ADMIN', 'webhooks'),
      schema: {
        tags: ['webhooks'],
        summary: 'Delete a webhook endpoint; deliveries in flight stop at their next attempt',
        params: IdParamSchema,
        response: {
          200: dataOf(z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedWebhook' })),
        },
      },
    },
    async (request) => {
      const hook = await findWebhook(request.em, request.params.id);
      hook.deletedAt = new Date();
      hook.active = false;
      await request.em.flush();
      return { data: { id: hook.id, deleted: true as const } };
    },
  );
};
