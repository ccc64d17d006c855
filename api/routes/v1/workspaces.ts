import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { SLUG_PATTERN, slugify } from '../../../domain/slug.js';
import { newId } from '../../../entities/ids.js';
import { User, Workspace, WorkspaceMember } from '../../../entities/index.js';
import { dataOf } from '../../http/envelope.js';
import { organizer } from '../../http/route-access.js';

export const WorkspaceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    currency: z.string(),
    role: z.string(),
    createdAt: z.string(),
  })
  .meta({ id: 'Workspace' });

const CreateWorkspaceBody = z.object({
  name: z.string().trim().min(2).max(120),
  slug: z.string().min(2).max(80).regex(SLUG_PATTERN, 'lowercase letters, digits and single dashes').optional(),
  currency: z.enum(['COP', 'USD', 'EUR', 'MXN']).default('COP'),
});

export const workspaceRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '/workspaces',
    {
      config: organizer('VIEWER', 'account', { workspaceOptional: true }),
      schema: {
        tags: ['me'],
        summary: 'Create your own workspace; you become its ADMIN',
        body: CreateWorkspaceBody,
        response: { 201: dataOf(WorkspaceSchema) },
      },
    },
    async (request, reply) => {
      const caller = request.organizer;
      if (!caller) throw new AppError('UNAUTHENTICATED', 'Send an API key');
      const { name, currency } = request.body;
      const slug =
        request.body.slug ?? `${slugify(name, { maxLength: 60, fallback: 'workspace' })}-${newId().slice(-6)}`;
      const em = request.em.fork();
      try {
        const workspace = await em.transactional(async (tx) => {
          const created = tx.create(Workspace, { id: newId(), name, slug, currency });
          tx.create(WorkspaceMember, {
            id: newId(),
            workspace: created.id,
            user: caller.user.id,
            role: 'ADMIN',
            sections: null,
            accessExpiresAt: null,
            revokedAt: null,
          });
          const user = await tx.findOneOrFail(User, { id: caller.user.id });
          if (!user.defaultWorkspaceId) user.defaultWorkspaceId = created.id;
          return created;
        });
        return reply.status(201).send({
          data: {
            id: workspace.id,
            name: workspace.name,
            slug: workspace.slug,
            currency: workspace.currency,
            role: 'ADMIN',
            createdAt: workspace.createdAt.toISOString(),
          },
        });
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException) {
          throw new AppError('ALREADY_EXISTS', `The workspace slug ${slug} is taken; choose another`, {
            details: { fields: [{ field: 'body.slug', message: 'already taken' }] },
          });
        }
        throw error;
      }
    },
  );
};
