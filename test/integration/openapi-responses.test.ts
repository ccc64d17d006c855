import Fastify, { type FastifyInstance, type FastifySchema } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { registerOpenApi } from '../../api/plugins/openapi.js';
import { DocumentedResponses, type OpenApiDocument, watchDocumentedResponses } from '../support/openapi-responses.js';

/** The check every test's responses go through (test/support/stack.ts), tried on responses that break it. */

const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });
const document: OpenApiDocument = {
  paths: {
    '/things/{id}': {
      get: {
        responses: {
          '200': json({
            type: 'object',
            required: ['data'],
            properties: { data: { $ref: '#/components/schemas/Thing' } },
            additionalProperties: false,
          }),
          '404': json({ $ref: '#/components/schemas/Error' }),
        },
      },
      delete: { responses: { '204': { description: 'Deleted' }, '4XX': json({ $ref: '#/components/schemas/Error' }) } },
    },
    '/things/{id}/export': {
      get: { responses: { '200': { description: 'CSV', content: { 'text/csv': { schema: { type: 'string' } } } } } },
    },
  },
  components: {
    schemas: {
      Thing: {
        type: 'object',
        required: ['id', 'price', 'createdAt'],
        properties: {
          id: { type: 'string' },
          price: { type: 'integer', description: 'Integer, minor units', examples: [85000] },
          createdAt: { type: 'string', format: 'date-time' },
        },
      },
      Error: {
        type: 'object',
        required: ['error'],
        properties: { error: { type: 'object', required: ['code'], properties: { code: { type: 'string' } } } },
      },
    },
  },
};

const documented = new DocumentedResponses('sample', document);
const check = (method: string, path: string, status: number, contentType: string | undefined, body: unknown) =>
  documented.problems({
    method,
    path,
    status,
    contentType,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const thing = { id: 't1', price: 85000, createdAt: '2026-03-01T20:00:00.000Z' };

describe('a response is held to the documented response of its operation and status', () => {
  test('a body that matches the documented schema (through $ref) passes', () => {
    expect(check('GET', '/things/{id}', 200, 'application/json; charset=utf-8', { data: thing })).toEqual([]);
    expect(check('GET', '/things/{id}', 404, 'application/json', { error: { code: 'NOT_FOUND' } })).toEqual([]);
  });

  test('a body that breaks the schema is reported with the failing location', () => {
    expect(check('GET', '/things/{id}', 200, 'application/json', { data: { ...thing, price: 850.5 } })).toEqual([
      '/data/price must be integer',
    ]);
    expect(check('GET', '/things/{id}', 200, 'application/json', { data: thing, extra: 1 })).toEqual([
      '(body) must NOT have additional properties (extra)',
    ]);
    expect(
      check('GET', '/things/{id}', 200, 'application/json', { data: { ...thing, createdAt: 'yesterday' } }),
    ).toEqual(['/data/createdAt must match format "date-time"']);
    expect(check('GET', '/things/{id}', 200, 'application/json', '{not json')).toEqual([
      'the application/json body is not JSON',
    ]);
  });

  test('an undocumented status, operation or path fails', () => {
    expect(check('GET', '/things/{id}', 500, 'application/json', { error: { code: 'INTERNAL' } })).toEqual([
      'status 500 is not documented (documented: 200, 404)',
    ]);
    expect(check('PATCH', '/things/{id}', 200, 'application/json', {})).toEqual([
      'the document has no operation PATCH /things/{id}',
    ]);
    expect(check('GET', '/nothing', 200, 'application/json', {})).toEqual(['the document has no path /nothing']);
  });

  test('a status range covers its statuses; a documented empty response must be empty', () => {
    expect(check('DELETE', '/things/{id}', 409, 'application/json', { error: { code: 'CONFLICT' } })).toEqual([]);
    expect(check('DELETE', '/things/{id}', 409, 'application/json', { error: {} })).toEqual([
      "/error must have required property 'code'",
    ]);
    expect(check('DELETE', '/things/{id}', 204, undefined, '')).toEqual([]);
    expect(check('DELETE', '/things/{id}', 204, 'application/json', { ok: true })).toEqual([
      'status 204 documents no body, but one came (application/json)',
    ]);
  });

  test('a content type the status does not document fails; non-JSON bodies are checked for type only', () => {
    expect(check('GET', '/things/{id}', 200, 'text/html', '<p>hi</p>')).toEqual([
      'status 200 documents application/json, not text/html',
    ]);
    expect(check('GET', '/things/{id}', 200, undefined, '')).toEqual([
      'status 200 documents application/json, but the response has no Content-Type',
    ]);
    expect(check('GET', '/things/{id}/export', 200, 'text/csv; charset=utf-8', 'id,price\nt1,85000\n')).toEqual([]);
    expect(check('GET', '/things/{id}/export', 200, 'application/json', { id: 't1' })).toEqual([
      'status 200 documents text/csv, not application/json',
    ]);
  });
});

describe('the hook on the test API checks what the route that answered documents', () => {
  let app: FastifyInstance;
  let checkDocumented: ReturnType<typeof watchDocumentedResponses>;
  beforeAll(async () => {
    app = Fastify({ logger: false });
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    await app.register(async (scope) => {
      await registerOpenApi(scope, {
        prefix: '/api/v1',
        title: 'sample',
        version: '0.0.0',
        description: 'sample',
        securitySchemes: false,
        surface: 'organizer',
      });
      // Documents only 200, and answers 418 for the id `teapot`.
      const widget: FastifySchema = {
        params: z.object({ id: z.string() }),
        response: { 200: z.object({ id: z.string() }) },
      };
      scope.get<{ Params: { id: string } }>('/api/v1/widgets/:id', { schema: widget }, async (request, reply) =>
        request.params.id === 'teapot' ? reply.status(418).send({ id: 'teapot' }) : { id: request.params.id },
      );
      scope.get('/api/v1/hidden', { schema: { hide: true } }, async (_request, reply) => reply.status(418).send('x'));
    });
    checkDocumented = watchDocumentedResponses(app);
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
  });

  test('a documented answer passes, resolved through the route template', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/widgets/w1?expand=all' });
    expect(response.statusCode).toBe(200);
    expect(() => checkDocumented(response)).not.toThrow();
  });

  test('an undocumented status throws, naming the operation and the problem', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/widgets/teapot' });
    expect(response.statusCode).toBe(418);
    expect(() => checkDocumented(response)).toThrow(
      /GET \/widgets\/\{id\} answered 418[\s\S]*status 418 is not documented/,
    );
  });

  test('hidden routes and requests no route matched are not checked', async () => {
    const hidden = await app.inject({ method: 'GET', url: '/api/v1/hidden' });
    expect(hidden.statusCode).toBe(418);
    expect(() => checkDocumented(hidden)).not.toThrow();
    const unknown = await app.inject({ method: 'GET', url: '/api/v1/nowhere' });
    expect(unknown.statusCode).toBe(404);
    expect(() => checkDocumented(unknown)).not.toThrow();
  });
});
