import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type IWebhook, WEBHOOK_EVENTS } from '../../../entities/webhook.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import { changeWebhook, deleteWebhook, listWebhooks, registerWebhook } from '../../services/organizer-webhooks.js';
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

export const organizerWebhookRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
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
      const rows = await listWebhooks(request.em, decodeCursor(request.query.cursor), request.query.limit);
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
      const { hook, signingSecret } = await registerWebhook(services, request.em, workspace.workspaceId, request.body);
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
      const hook = await changeWebhook(services, request.em, request.params.id, request.body);
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
      const hook = await deleteWebhook(request.em, request.params.id);
      return { data: { id: hook.id, deleted: true as const } };
    },
  );
};
