import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { API_V1_PREFIX, PUBLIC_PREFIX } from '../../api/app.js';
import { publicRoutes } from '../../api/routes/public/index.js';
import { organizerRoutes } from '../../api/routes/v1/index.js';
import { bearer, createOrganizer } from '../support/fixtures.js';
import { eventually, publishEvent } from '../support/purchase.js';
import { complimentary } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

/** Every documented (not hidden) route a route group registers, as `METHOD /path/{param}`. */
async function documentedRoutes(
  plugin: typeof organizerRoutes | typeof publicRoutes,
  prefix: string,
): Promise<string[]> {
  const collector = Fastify({ logger: false });
  collector.setValidatorCompiler(validatorCompiler);
  collector.setSerializerCompiler(serializerCompiler);
  const found: string[] = [];
  collector.addHook('onRoute', (route) => {
    if (route.schema?.hide) return;
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      const path = (route.url ?? '').slice(prefix.length).replace(/:([A-Za-z]+)/g, '{$1}');
      found.push(`${method} ${path}`);
    }
  });
  await collector.register(plugin, { prefix, services: api.services });
  await collector.ready();
  await collector.close();
  return found;
}

const documentedIn = (document: { paths: Record<string, Record<string, unknown>> }): Set<string> =>
  new Set(
    Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((m) => `${m.toUpperCase()} ${path}`),
    ),
  );

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
});

interface Operation {
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
}

interface DocumentedOperation {
  responses: Record<
    string,
    { content: Record<string, { schema: { $ref?: string }; example: { error: Record<string, unknown> } }> }
  >;
}

describe('OpenAPI documents generated from the zod schemas', () => {
  test('the organizer document is OpenAPI 3.1 and describes every organizer route with its schemas', async () => {
    const response = await api.request({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('1.16.1');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/me', '/workspaces', '/api-keys', '/api-keys/{id}']),
    );
    const createKey = document.paths['/api-keys'].post;
    expect(createKey.requestBody.content['application/json'].schema.properties.scope.enum).toEqual(['read', 'write']);
    expect(Object.keys(document.paths)).not.toContain('/openapi.json');
    // Every route the app serves under /api/v1 appears in the document.
    const served = api.app
      .printRoutes({ commonPrefix: false })
      .split('\n')
      .filter((line) => line.includes('/api/v1/'));
    expect(served.length).toBeGreaterThan(0);
  });

  test('every documented route of both surfaces appears in its OpenAPI document', async () => {
    const organizerDoc = (await api.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const publicDoc = (await api.request({ method: 'GET', url: '/api/public/openapi.json' })).json();
    const organizer = await documentedRoutes(organizerRoutes, API_V1_PREFIX);
    const storefront = await documentedRoutes(publicRoutes, PUBLIC_PREFIX);
    expect(organizer.length).toBeGreaterThan(30);
    expect(organizer.filter((route) => !documentedIn(organizerDoc).has(route))).toEqual([]);
    expect(storefront.filter((route) => !documentedIn(publicDoc).has(route))).toEqual([]);
    expect(organizer).toEqual(
      expect.arrayContaining(['POST /customer/orders', 'GET /sales/{id}', 'POST /events/{id}/publish']),
    );
    expect(storefront).toEqual(expect.arrayContaining(['POST /orders', 'GET /events/{slug}/availability']));
  });

  test('every operation documents the contract error body and the statuses of part 7.2 that apply', async () => {
    const organizerDoc = (await api.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const publicDoc = (await api.request({ method: 'GET', url: '/api/public/openapi.json' })).json();
    for (const document of [organizerDoc, publicDoc]) {
      expect(document.components.schemas.Error.properties.error.required).toEqual([
        'code',
        'message',
        'retryable',
        'details',
      ]);
      for (const [path, operations] of Object.entries(
        document.paths as Record<string, Record<string, DocumentedOperation>>,
      )) {
        for (const [method, operation] of Object.entries(operations)) {
          const statuses = Object.keys(operation.responses);
          expect({ path, method, has422: statuses.includes('422') }).toEqual({ path, method, has422: true });
          const errors = statuses.filter((status) => Number(status) >= 400);
          for (const status of errors) {
            const content = operation.responses[status]!.content['application/json']!;
            // The device grant's token and code endpoints and token revocation answer 400 in OAuth's own error
            // format (RFC 8628 3.5, RFC 6749 5.2, RFC 7009 2.2.1), which OAuth clients parse; every other error is
            // the contract's body.
            if (status === '400' && (path.startsWith('/auth/device/') || path === '/auth/revoke')) {
              expect(content.schema.$ref).toBe('#/components/schemas/OAuthError');
              continue;
            }
            expect(content.schema.$ref).toBe('#/components/schemas/Error');
            expect(Object.keys(content.example.error).sort()).toEqual(['code', 'details', 'message', 'retryable']);
          }
          if (path.includes('{')) expect(statuses).toContain('404');
          if (method === 'post') expect(statuses).toContain('409');
          // Any body passes the JSON parser and its size limit first.
          if (method !== 'get') expect(statuses).toEqual(expect.arrayContaining(['413', '415']));
        }
      }
    }
    // Organizer routes need a key (401/403) and take X-Workspace-Id; every POST takes Idempotency-Key.
    const refund = organizerDoc.paths['/sales/{id}/refund'].post;
    expect(Object.keys(refund.responses)).toEqual(expect.arrayContaining(['401', '403', '404', '409', '422']));
    const names = (operation: { parameters?: Array<{ name: string }> }) =>
      (operation.parameters ?? []).map((p) => p.name);
    expect(names(refund)).toEqual(expect.arrayContaining(['X-Workspace-Id', 'Idempotency-Key']));
    // A body naming another resource by id can name a missing one; a body that names none cannot 404.
    expect(Object.keys(organizerDoc.paths['/customer/orders'].post.responses)).toContain('404');
    expect(Object.keys(publicDoc.paths['/orders'].post.responses)).toContain('404');
    expect(Object.keys(organizerDoc.paths['/workspaces'].post.responses)).not.toContain('404');
    // Sign-in takes no credential, but a wrong code is answered 401.
    expect(Object.keys(organizerDoc.paths['/customer/auth/verify'].post.responses)).toContain('401');
    expect(Object.keys(organizerDoc.paths['/customer/auth/request'].post.responses)).not.toContain('401');
    // Organizer sign-up and the device grant take no key either.
    expect(Object.keys(organizerDoc.paths['/auth/signup'].post.responses)).not.toContain('401');
    expect(organizerDoc.paths['/auth/device/token'].post.security).toEqual([]);
  });

  test('credentials per surface: organizer key, buyer session (key optional), none for sign-in; webhooks documented', async () => {
    const organizerDoc = (await api.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const publicDoc = (await api.request({ method: 'GET', url: '/api/public/openapi.json' })).json();
    expect(organizerDoc.components.securitySchemes.customerSession).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'X-Customer-Session',
    });
    const reserve = organizerDoc.paths['/customer/orders'].post;
    expect(reserve.security).toEqual(expect.arrayContaining([{ customerSession: [] }]));
    expect(reserve.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['X-Purchase-Session', 'X-Queue-Token', 'Idempotency-Key']),
    );
    expect(reserve.parameters.map((p: { name: string }) => p.name)).not.toContain('X-Workspace-Id');
    expect(organizerDoc.paths['/customer/auth/request'].post.security).toEqual([]);
    expect(organizerDoc.paths['/sales'].get.security).toBeUndefined(); // the document-wide API key applies
    expect(publicDoc.paths['/orders'].post.security).toEqual(
      expect.arrayContaining([{}, { customerSession: [] }, { buyerSessionCookie: [] }]),
    );
    expect(publicDoc.paths['/events'].get.security).toEqual([]); // said outright: no credential at all
    expect(publicDoc.webhooks).toBeUndefined();
    const confirmed = organizerDoc.webhooks['sale.confirmed'].post;
    expect(confirmed.parameters.map((p: { name: string }) => p.name)).toContain('X-Ticketing-Signature');
    expect(Object.keys(confirmed.requestBody.content['application/json'].schema.properties.data.properties)).toEqual(
      expect.arrayContaining(['saleId', 'organizationId', 'reference', 'total']),
    );
  });

  test('the buyer session is a security scheme in both documents, as X-Customer-Session and as the cookie', async () => {
    const organizerDoc = (await api.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const publicDoc = (await api.request({ method: 'GET', url: '/api/public/openapi.json' })).json();
    for (const document of [organizerDoc, publicDoc]) {
      expect(document.components.securitySchemes).toMatchObject({
        customerSession: { type: 'apiKey', in: 'header', name: 'X-Customer-Session' },
        buyerSessionCookie: { type: 'apiKey', in: 'cookie', name: 'buyer_session' },
      });
    }
    // Every /customer/* operation but sign-in takes the session either way, with or without an organizer key.
    const customerOperations = Object.entries(organizerDoc.paths as Record<string, Record<string, Operation>>)
      .filter(([path]) => path.startsWith('/customer/') && !path.startsWith('/customer/auth/'))
      .flatMap(([path, operations]) =>
        Object.entries(operations).map(([method, operation]) => ({ path, method, operation })),
      );
    expect(customerOperations.length).toBeGreaterThan(10);
    for (const { path, method, operation } of customerOperations) {
      expect({ path, method, security: operation.security }).toEqual({
        path,
        method,
        security: expect.arrayContaining([
          { customerSession: [] },
          { buyerSessionCookie: [] },
          { customerSession: [], bearerApiKey: [] },
          { buyerSessionCookie: [], headerApiKey: [] },
        ]),
      });
      // A session is always required: no alternative without one.
      for (const requirement of operation.security ?? []) {
        expect(Object.keys(requirement).some((scheme) => /customerSession|buyerSessionCookie/.test(scheme))).toBe(true);
      }
    }
  });

  test('content routes acting for a member take the buyer session as security, never as a plain header', async () => {
    const organizerDoc = (await api.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const publicDoc = (await api.request({ method: 'GET', url: '/api/public/openapi.json' })).json();
    for (const document of [organizerDoc, publicDoc]) {
      for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, Operation>>)) {
        for (const [method, operation] of Object.entries(operations)) {
          const credentials = (operation.parameters ?? []).filter((parameter) =>
            /^(x-customer-session|x-api-key|authorization|buyer_session)$/i.test(parameter.name),
          );
          expect({ path, method, credentials }).toEqual({ path, method, credentials: [] });
        }
      }
    }
    // Playback tokens are issued to a member: key and session both, by header or cookie.
    const playback = organizerDoc.paths['/content/playback-token'].post as Operation;
    expect(playback.security).toEqual(
      expect.arrayContaining([
        { bearerApiKey: [], customerSession: [] },
        { bearerApiKey: [], buyerSessionCookie: [] },
        { headerApiKey: [], customerSession: [] },
        { headerApiKey: [], buyerSessionCookie: [] },
      ]),
    );
    expect(playback.security).not.toContainEqual({ bearerApiKey: [] });
    // A post is the organizer's with the key alone, a member's with their session as well.
    const post = organizerDoc.paths['/content/posts'].post as Operation;
    expect(post.security).toEqual(
      expect.arrayContaining([{ bearerApiKey: [] }, { headerApiKey: [] }, { bearerApiKey: [], customerSession: [] }]),
    );
  });

  test('the public document is served separately with its own version', async () => {
    const response = await api.request({ method: 'GET', url: '/api/public/openapi.json' });
    expect(response.statusCode).toBe(200);
    expect(response.json().info.version).toBe('0.9.0');
    expect(Object.keys(response.json().paths ?? {})).not.toContain('/me');
  });

  test('an interactive reference page is served for each surface', async () => {
    for (const url of ['/api/v1/docs/', '/api/public/docs/']) {
      const response = await api.request({ method: 'GET', url });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/text\/html/);
    }
  });

  test('RFC 9728 metadata declares the scopes', async () => {
    const response = await api.request({ method: 'GET', url: '/.well-known/oauth-protected-resource' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      scopes_supported: ['read', 'write'],
      bearer_methods_supported: ['header'],
    });
    expect(response.json().resource).toMatch(/\/api\/v1$/);
  });
});

describe('outgoing webhooks (OpenAPI 3.1 `webhooks`) against a real delivery', () => {
  let onPrem: TestApi;
  let receiver: Server;
  const received: IncomingHttpHeaders[] = [];
  beforeAll(async () => {
    // The receiver listens on 127.0.0.1; only an API that allows private targets registers it (see
    // webhooks-delivery.test.ts). The shared worker delivers to it.
    onPrem = await startTestApi({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    receiver = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        received.push(request.headers);
        response.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
    await onPrem?.close();
  });

  test('each documented webhook declares, as required headers, every X-Ticketing-* header a delivery sends', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const registered = await onPrem.request({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: bearer(organizer.key),
      payload: {
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
        events: ['sale.confirmed'],
      },
    });
    expect(registered.statusCode).toBe(201);
    const event = await publishEvent(api, organizer, { capacity: 5 });
    await complimentary(api, organizer, event);
    const [delivery] = await eventually(
      async () => received,
      (list) => list.length >= 1,
    );
    const sent = Object.keys(delivery!)
      .filter((name) => name.startsWith('x-ticketing-'))
      .sort();
    expect(sent).toEqual([
      'x-ticketing-event',
      'x-ticketing-event-id',
      'x-ticketing-signature',
      'x-ticketing-signature-v2',
      'x-ticketing-timestamp',
    ]);

    const organizerDoc = (await api.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    expect(Object.keys(organizerDoc.webhooks).sort()).toEqual(['sale.confirmed', 'sale.refunded']);
    for (const [name, webhook] of Object.entries(organizerDoc.webhooks as Record<string, { post: Operation }>)) {
      const headers = (webhook.post.parameters ?? []).filter((parameter) => parameter.in === 'header');
      expect({ name, declared: headers.map((header) => header.name.toLowerCase()).sort() }).toEqual({
        name,
        declared: sent,
      });
      expect(headers.every((header) => header.required === true)).toBe(true);
    }
    // Named as integrators read them, and the signature scheme is spelled out.
    const confirmed = organizerDoc.webhooks['sale.confirmed'].post;
    expect(confirmed.parameters.map((parameter: { name: string }) => parameter.name)).toEqual(
      expect.arrayContaining(['X-Ticketing-Signature-V2', 'X-Ticketing-Event-Id', 'X-Ticketing-Timestamp']),
    );
    expect(confirmed.description).toMatch(/<X-Ticketing-Timestamp>\.<raw body>/);
  });
});
