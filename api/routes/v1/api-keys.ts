import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SCOPES } from '../../../domain/roles.js';
import type { IApiKey } from '../../../entities/api-key.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import { listOwnKeys, mintKey, revokeOwnKey } from '../../services/api-keys.js';
import type { ApiServices } from '../../services.js';

export const ApiKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    scope: z.enum(SCOPES),
    preview: z.string().meta({ description: 'Prefix and last characters, to tell keys apart; never the secret' }),
    workspaceId: z.string(),
    expiresAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
    lastUsedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'ApiKey' });

const CreatedApiKeySchema = ApiKeySchema.extend({
  key: z
    .string()
    .nullable()
    .meta({
      description:
        'The plaintext key. Shown only in this response; store it now. Null in a replay of the same Idempotency-Key: ' +
        'the key is never kept for replays (warnings says so); revoke it and mint another if it was lost.',
    }),
}).meta({ id: 'CreatedApiKey' });

const CreateApiKeyBody = z.object({
  name: z.string().trim().min(1).max(120),
  scope: z.enum(SCOPES).default('read'),
  expiresAt: IsoDateTimeSchema.optional().meta({
    description: 'When the key stops working (ISO 8601); must be in the future',
  }),
});

const toApiKey = (key: IApiKey) => ({
  id: key.id,
  name: key.name,
  scope: key.scope,
  preview: key.preview,
  workspaceId: key.workspace,
  expiresAt: isoOrNull(key.expiresAt),
  revokedAt: isoOrNull(key.revokedAt),
  lastUsedAt: isoOrNull(key.lastUsedAt),
  createdAt: key.createdAt.toISOString(),
});

export const apiKeyRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.post(
    '/api-keys',
    {
      config: { ...organizer('ADMIN', 'api-keys'), credentialFields: ['data.key'] },
      schema: {
        tags: ['api-keys'],
        summary: 'Mint an API key (the plaintext is returned once)',
        body: CreateApiKeyBody,
        response: {
          201: dataOf(CreatedApiKeySchema).extend({ warnings: listOf(z.never()).shape.warnings }),
        },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const { key, plaintext } = await mintKey(request.em, {
        prefix: services.env.API_KEY_PREFIX,
        userId: workspace.userId,
        workspaceId: workspace.workspaceId,
        name: request.body.name,
        scope: request.body.scope,
        expiresAt: request.body.expiresAt,
      });
      request.log.info({ apiKeyId: key.id, scope: key.scope }, 'api key minted');
      return reply.status(201).send({ data: { ...toApiKey(key), key: plaintext } });
    },
  );

  // Listing and revoking your own keys needs no elevated role: revoking a leaked credential must never be blocked.
  app.get(
    '/api-keys',
    {
      config: organizer('VIEWER', 'api-keys', { workspaceOptional: true }),
      schema: {
        tags: ['api-keys'],
        summary: 'List your API keys',
        querystring: PageQuerySchema,
        response: { 200: listOf(ApiKeySchema) },
      },
    },
    async (request) => {
      const caller = request.organizer!;
      const rows = await listOwnKeys(
        request.em,
        caller.user.id,
        decodeCursor(request.query.cursor),
        request.query.limit,
      );
      const { items, page } = toPage(rows, request.query.limit);
      return { data: items.map(toApiKey), page, ...(request.warnings.length ? { warnings: request.warnings } : {}) };
    },
  );

  app.delete(
    '/api-keys/:id',
    {
      config: organizer('VIEWER', 'api-keys', { workspaceOptional: true }),
      schema: {
        tags: ['api-keys'],
        summary: 'Revoke one of your API keys',
        params: IdParamSchema,
        response: { 200: dataOf(ApiKeySchema) },
      },
    },
    async (request) => {
      const caller = request.organizer!;
      const { key, revokedNow } = await revokeOwnKey(request.em, caller.user.id, request.params.id);
      if (revokedNow) request.log.info({ apiKeyId: key.id }, 'api key revoked');
      return { data: toApiKey(key) };
    },
  );
};
