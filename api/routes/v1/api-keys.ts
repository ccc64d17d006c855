import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { SCOPES } from '../../../domain/roles.js';
import { ApiKey, type IApiKey, mintApiKey } from '../../../entities/api-key.js';
import { isUuid } from '../../../entities/ids.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
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
  key: z.string().meta({ description: 'The plaintext key. Shown only in this response; store it now.' }),
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
      config: organizer('ADMIN', 'api-keys'),
      schema: {
        tags: ['api-keys'],
        summary: 'Mint an API key (the plaintext is returned once)',
        body: CreateApiKeyBody,
        response: { 201: dataOf(CreatedApiKeySchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const expiresAt = request.body.expiresAt ? new Date(request.body.expiresAt) : null;
      if (expiresAt && expiresAt.getTime() <= Date.now()) {
        throw new AppError('VALIDATION_FAILED', 'expiresAt must be in the future', {
          details: { fields: [{ field: 'body.expiresAt', message: 'must be in the future' }] },
        });
      }
      const { key, plaintext } = mintApiKey(request.em, {
        prefix: services.env.API_KEY_PREFIX,
        userId: workspace.userId,
        workspaceId: workspace.workspaceId,
        name: request.body.name,
        scope: request.body.scope,
        expiresAt,
      });
      await request.em.flush();
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
      const after = decodeCursor(request.query.cursor);
      const rows = await request.em.find(
        ApiKey,
        { user: caller.user.id, ...(after ? { id: { $lt: after } } : {}) },
        { orderBy: { id: 'desc' }, limit: request.query.limit + 1 },
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
      const key = isUuid(request.params.id)
        ? await request.em.findOne(ApiKey, { id: request.params.id, user: caller.user.id })
        : null;
      if (!key) throw new AppError('NOT_FOUND', 'API key not found');
      if (!key.revokedAt) {
        key.revokedAt = new Date();
        await request.em.flush();
        request.log.info({ apiKeyId: key.id }, 'api key revoked');
      }
      return { data: toApiKey(key) };
    },
  );
};
