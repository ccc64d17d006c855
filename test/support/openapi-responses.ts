/**
 * Holds every response the tests receive to the OpenAPI document of its surface, so the published reference is
 * what integrators actually get: the status must be documented for the operation, the content type must be one the
 * document lists for that status, and a JSON body must validate against the documented schema (OpenAPI 3.1 schemas
 * are JSON Schema 2020-12). Non-JSON bodies (CSV, PDF, HTML, redirects) are checked for status and content type.
 *
 * `watchDocumentedResponses(app)` adds one `onSend` hook that notes which route answered each request (Fastify's
 * route template, and whether the route is hidden from the documents); the returned check runs after `inject`.
 * Routes outside the two documented surfaces, hidden routes and requests no route matched are not checked.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

const SURFACES = [
  { prefix: '/api/v1', name: 'organizer' },
  { prefix: '/api/public', name: 'public' },
] as const;

interface MediaTypeObject {
  schema?: unknown;
}
interface ResponseObject {
  description?: string;
  content?: Record<string, MediaTypeObject>;
}
interface OperationObject {
  responses?: Record<string, ResponseObject>;
}
export interface OpenApiDocument {
  paths?: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, unknown> };
}

/** One response as the check sees it; `path` is the document's template (`/sales/{id}`), not the request URL. */
export interface ResponseSample {
  method: string;
  path: string;
  status: number;
  contentType: string | undefined;
  body: string;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
const isJsonMediaType = (mediaType: string) => mediaType === 'application/json' || mediaType.endsWith('+json');
const mediaTypeOf = (contentType: string | undefined) => contentType?.split(';')[0]?.trim().toLowerCase() || undefined;

const matchesMediaRange = (range: string, mediaType: string): boolean => {
  const wanted = range.toLowerCase();
  if (wanted === '*/*' || wanted === mediaType) return true;
  return wanted.endsWith('/*') && mediaType.startsWith(wanted.slice(0, -1));
};

const describeError = (error: ErrorObject): string => {
  const where = error.instancePath || '(body)';
  const extra = error.keyword === 'additionalProperties' ? ` (${String(error.params.additionalProperty)})` : '';
  return `${where} ${error.message ?? error.keyword}${extra}`;
};

// ajv-formats is CommonJS: Node's ESM loader hands over `module.exports`, which carries the plugin as `.default`.
const addFormats = addFormatsModule.default;

/** The responses one OpenAPI document promises, with each response schema compiled on first use. */
export class DocumentedResponses {
  private readonly ajv: Ajv2020;
  private readonly paths: Record<string, Record<string, OperationObject>>;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly base: string;

  constructor(name: string, document: OpenApiDocument) {
    this.base = `https://openapi.invalid/${name}.json`;
    // Component refs point into one schema resource holding every component under $defs.
    const rebased = JSON.parse(
      JSON.stringify({ paths: document.paths ?? {}, schemas: document.components?.schemas ?? {} }).replaceAll(
        '"#/components/schemas/',
        `"${this.base}#/$defs/`,
      ),
    ) as { paths: Record<string, Record<string, OperationObject>>; schemas: Record<string, unknown> };
    this.paths = rebased.paths;
    // Strict, so a schema ajv cannot fully honour fails loudly; type unions (`type: ['string', 'null']`) are valid
    // JSON Schema that strictTypes would refuse.
    this.ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
    // OpenAPI's own annotations on schema objects: ajv's strict mode would refuse them as unknown keywords.
    this.ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs']);
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: this.base, $defs: rebased.schemas });
  }

  /** Why `sample` is not a response its operation documents; empty when it is one. */
  problems(sample: ResponseSample): string[] {
    const operations = this.paths[sample.path];
    if (!operations) return [`the document has no path ${sample.path}`];
    const method = sample.method.toLowerCase();
    const operation = HTTP_METHODS.has(method) ? operations[method] : undefined;
    if (!operation) return [`the document has no operation ${sample.method.toUpperCase()} ${sample.path}`];
    const responses = operation.responses ?? {};
    const status = String(sample.status);
    const key = [status, `${status[0]}XX`, 'default'].find((candidate) => candidate in responses);
    if (!key) {
      return [`status ${status} is not documented (documented: ${Object.keys(responses).join(', ') || 'none'})`];
    }
    const documented = responses[key]!.content ?? {};
    const mediaType = mediaTypeOf(sample.contentType);
    const ranges = Object.keys(documented);
    if (ranges.length === 0) {
      return sample.body.length === 0 ? [] : [`status ${status} documents no body, but one came (${mediaType ?? '?'})`];
    }
    if (!mediaType) return [`status ${status} documents ${ranges.join(', ')}, but the response has no Content-Type`];
    const range = ranges.find((candidate) => matchesMediaRange(candidate, mediaType));
    if (!range) return [`status ${status} documents ${ranges.join(', ')}, not ${mediaType}`];
    const schema = documented[range]!.schema;
    if (!isJsonMediaType(mediaType) || schema === undefined) return [];
    let body: unknown;
    try {
      body = JSON.parse(sample.body);
    } catch {
      return [`the ${mediaType} body is not JSON`];
    }
    const validate = this.validatorFor(`${method} ${sample.path} ${key} ${range}`, schema);
    return validate(body) ? [] : (validate.errors ?? []).map(describeError);
  }

  private validatorFor(key: string, schema: unknown): ValidateFunction {
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(schema as object);
      this.validators.set(key, validate);
    }
    return validate;
  }
}

interface AnsweredBy {
  /** Route template relative to the surface, in OpenAPI form (`/sales/{id}`). */
  path: string;
  method: string;
  documents: () => DocumentedResponses;
}

/** One compiled document per surface and content: apps built alike (every test's) share it. */
const documentsByText = new Map<string, DocumentedResponses>();
const documentsBySwagger = new WeakMap<object, DocumentedResponses>();

function documentsOf(name: string, server: FastifyInstance, swagger: () => unknown): DocumentedResponses {
  const known = documentsBySwagger.get(swagger);
  if (known) return known;
  const document = swagger.call(server) as OpenApiDocument;
  const text = `${name}:${JSON.stringify(document)}`;
  const compiled = documentsByText.get(text) ?? new DocumentedResponses(name, document);
  documentsByText.set(text, compiled);
  documentsBySwagger.set(swagger, compiled);
  return compiled;
}

/**
 * Starts noting which documented route answers each request of `app` (call before `app.ready()`), and returns the
 * check to run on each response `app.inject` gives back: it throws when the response is not one the document of
 * its surface promises for that operation and status.
 */
export function watchDocumentedResponses(app: FastifyInstance): (response: LightMyRequestResponse) => void {
  const answeredBy = new WeakMap<object, AnsweredBy>();
  app.addHook('onSend', async (request, _reply, payload) => {
    const url = request.routeOptions.url;
    const surface = url ? SURFACES.find((s) => url === s.prefix || url.startsWith(`${s.prefix}/`)) : undefined;
    const swagger = (request.server as unknown as { swagger?: () => unknown }).swagger;
    if (url && surface && swagger && !request.routeOptions.schema?.hide && request.method !== 'HEAD') {
      answeredBy.set(request.raw, {
        path: url.slice(surface.prefix.length).replace(/:([A-Za-z0-9_]+)/g, '{$1}') || '/',
        method: request.method,
        documents: () => documentsOf(surface.name, request.server, swagger),
      });
    }
    return payload;
  });
  return (response) => {
    const route = answeredBy.get(response.raw.req);
    if (!route) return;
    const contentType = response.headers['content-type'];
    const problems = route.documents().problems({
      method: route.method,
      path: route.path,
      status: response.statusCode,
      contentType: typeof contentType === 'string' ? contentType : undefined,
      body: response.body,
    });
    if (problems.length > 0) {
      const mediaType = mediaTypeOf(typeof contentType === 'string' ? contentType : undefined);
      const readable = !mediaType || isJsonMediaType(mediaType) || mediaType.startsWith('text/');
      const body = readable ? response.body.slice(0, 500) : `(${response.rawPayload.length} bytes of ${mediaType})`;
      throw new Error(
        `${route.method} ${route.path} answered ${response.statusCode}, which its OpenAPI document does not ` +
          `describe:\n  - ${problems.join('\n  - ')}\nbody: ${body}`,
      );
    }
  };
}
