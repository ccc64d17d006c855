import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SCOPES } from '../../domain/roles.js';
import { publicAccess } from '../http/route-access.js';
import type { ApiServices } from '../services.js';

/** RFC 9728 protected-resource metadata: where the API lives, how to send the key, and the scopes a key can have. */
export const wellKnownRoutes: FastifyPluginAsyncZod<ApiServices> = async (app, services) => {
  app.get(
    '/.well-known/oauth-protected-resource',
    {
      config: publicAccess(),
      schema: {
        hide: true,
        response: {
          200: z.object({
            resource: z.string(),
            authorization_servers: z.array(z.string()),
            scopes_supported: z.array(z.string()),
            bearer_methods_supported: z.array(z.string()),
            resource_name: z.string(),
            resource_documentation: z.string(),
          }),
        },
      },
    },
    async () => {
      const origin = services.env.PUBLIC_ORIGIN.replace(/\/$/, '');
      return {
        resource: `${origin}/api/v1`,
        authorization_servers: [origin],
        scopes_supported: [...SCOPES],
        bearer_methods_supported: ['header'],
        resource_name: 'Ticketing organizer API',
        resource_documentation: `${origin}/api/v1/docs`,
      };
    },
  );
};
