import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { SLUG_PATTERN } from '../../../domain/slug.js';
import { dataOf } from '../../http/envelope.js';
import { organizer } from '../../http/route-access.js';
import { createWorkspace } from '../../services/workspaces.js';

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
  slug: z
    .string()
    .min(2)
    .max(80)
    .regex(SLUG_PATTERN, 'lowercase letters, digits and single dashes')
    .optional()
    .meta({
      description:
        'A label for your own lists (requests name workspaces by id): unique among your workspaces (409), not ' +
        'across the service. A few words the service uses are reserved (422).',
    }),
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
      const { name, slug, currency } = request.body;
      const workspace = await createWorkspace(request.em, { userId: caller.user.id, name, slug, currency });
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
    },
  );
};
