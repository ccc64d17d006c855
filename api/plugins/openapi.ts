import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { BUYER_SESSION_SECURITY_SCHEMES, type Surface, withContractDocs } from './openapi-contract.js';

/**
 * Registers an OpenAPI 3.1 document for the routes of one surface (the encapsulated instance it is registered
 * in), served as `<prefix>/openapi.json` with an interactive reference at `<prefix>/docs`. The document is
 * generated from the same zod schemas that validate requests, so it cannot drift from the code.
 */
export async function registerOpenApi(
  app: FastifyInstance,
  options: {
    prefix: string;
    title: string;
    version: string;
    description: string;
    securitySchemes: boolean;
    surface: Surface;
  },
): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: options.title, version: options.version, description: options.description },
      servers: [{ url: options.prefix }],
      ...(options.securitySchemes
        ? {
            components: {
              securitySchemes: {
                bearerApiKey: { type: 'http', scheme: 'bearer', description: 'Organizer API key `<prefix>_live_…`' },
                headerApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
                ...BUYER_SESSION_SECURITY_SCHEMES,
              },
            },
            security: [{ bearerApiKey: [] }, { headerApiKey: [] }],
          }
        : {}),
    },
    transform: jsonSchemaTransform,
    transformObject: (input) => withContractDocs(jsonSchemaTransformObject(input), options.surface),
  });
  await app.register(swaggerUi, { routePrefix: `${options.prefix}/docs`, staticCSP: true });
  app.get(
    `${options.prefix}/openapi.json`,
    { schema: { hide: true }, config: { access: { kind: 'public' } } },
    async () => app.swagger(),
  );
}
