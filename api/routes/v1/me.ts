import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { ROLES } from '../../../domain/roles.js';
import { dataOf } from '../../http/envelope.js';
import { organizer } from '../../http/route-access.js';

export const CurrentUserSchema = z
  .object({
    userId: z.string(),
    name: z.string(),
    email: z.string(),
    // Nullable only for a user left with no workspace at all (every membership revoked): there is no role or
    // workspace to name then. A user with a workspace always gets both, as contract part 2 types them as strings.
    role: z.enum(ROLES).nullable().meta({
      deprecated: true,
      description:
        'Deprecated: use the role in each workspace row. Your role in the active workspace; null only when you have no workspace',
    }),
    activeWorkspaceId: z.string().nullable().meta({
      description:
        'The workspace this request acts in: X-Workspace-Id when you can reach it, else your default workspace; null only when you have no workspace',
    }),
    workspaces: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        slug: z.string(),
        role: z.enum(ROLES),
        sections: z
          .array(z.string())
          .nullable()
          .meta({ description: 'null: unrestricted; []: access expired or revoked' }),
      }),
    ),
  })
  .meta({ id: 'CurrentUser' });

export const meRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/me',
    {
      config: organizer('VIEWER', 'account', { workspaceOptional: true }),
      schema: {
        tags: ['me'],
        summary: 'The calling user, its role and the workspaces it can reach',
        response: { 200: dataOf(CurrentUserSchema) },
      },
    },
    async (request) => {
      const context = request.organizer;
      if (!context) throw new AppError('UNAUTHENTICATED', 'Send an API key');
      return {
        data: {
          userId: context.user.id,
          name: context.user.name,
          email: context.user.email,
          role: context.active?.role ?? null,
          activeWorkspaceId: context.active?.workspaceId ?? null,
          workspaces: context.workspaces.map((w) => ({
            id: w.workspaceId,
            name: w.name,
            slug: w.slug,
            role: w.role,
            sections: w.sections,
          })),
        },
      };
    },
  );
};
