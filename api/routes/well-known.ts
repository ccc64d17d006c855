import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DEVICE_CODE_GRANT_TYPE } from '../../domain/device-codes.js';
import { SCOPES } from '../../domain/roles.js';
import { publicAccess } from '../http/route-access.js';
import type { ApiServices } from '../services.js';

/**
 * Discovery documents: RFC 9728 protected-resource metadata (where the API lives, how to send the key, the scopes a
 * key can have, and which authorization server issues keys), and that server's RFC 8414 metadata, the home of the
 * device authorization grant's endpoints. The resource document repeats those endpoints, so a client that reads only
 * it can still log in.
 */
export const wellKnownRoutes: FastifyPluginAsyncZod<ApiServices> = async (app, services) => {
  const origin = services.env.PUBLIC_ORIGIN.replace(/\/$/, '');
  const deviceEndpoints = {
    device_authorization_endpoint: `${origin}/api/v1/auth/device/code`,
    token_endpoint: `${origin}/api/v1/auth/device/token`,
    grant_types_supported: [DEVICE_CODE_GRANT_TYPE],
  };
  const revocationEndpoint = `${origin}/api/v1/auth/revoke`;

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
            device_authorization_endpoint: z.string(),
            token_endpoint: z.string(),
            grant_types_supported: z.array(z.string()),
          }),
        },
      },
    },
    async () => ({
      resource: `${origin}/api/v1`,
      authorization_servers: [origin],
      scopes_supported: [...SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: 'Ticketing organizer API',
      resource_documentation: `${origin}/api/v1/docs`,
      ...deviceEndpoints,
    }),
  );

  app.get(
    '/.well-known/oauth-authorization-server',
    {
      config: publicAccess(),
      schema: {
        hide: true,
        response: {
          200: z.object({
            issuer: z.string(),
            device_authorization_endpoint: z.string(),
            token_endpoint: z.string(),
            grant_types_supported: z.array(z.string()),
            response_types_supported: z.array(z.string()),
            token_endpoint_auth_methods_supported: z.array(z.string()),
            revocation_endpoint: z.string(),
            revocation_endpoint_auth_methods_supported: z.array(z.string()),
            scopes_supported: z.array(z.string()),
            service_documentation: z.string(),
          }),
        },
      },
    },
    async () => ({
      issuer: origin,
      ...deviceEndpoints,
      // No authorization endpoint: keys are only handed out through the device grant.
      response_types_supported: [],
      // Command-line clients cannot keep a secret (RFC 8628 section 5.6): public clients, named by client_id only.
      token_endpoint_auth_methods_supported: ['none'],
      // RFC 7009: a client logs out by presenting its key; holding the key is the authentication.
      revocation_endpoint: revocationEndpoint,
      revocation_endpoint_auth_methods_supported: ['none'],
      scopes_supported: [...SCOPES],
      service_documentation: `${origin}/api/v1/docs`,
    }),
  );
};
