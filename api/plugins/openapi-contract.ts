import { STATUS_CODES } from 'node:http';
import {
  EVENT_HEADER,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  SIGNATURE_V2_HEADER,
  TIMESTAMP_HEADER,
} from '../../domain/webhook-signature.js';
import { BUYER_SESSION_COOKIE } from './customer-auth.js';
import { withRequestExample } from './openapi-examples.js';

/**
 * What every operation of the contract shares, added to the generated OpenAPI documents in one place instead of on
 * each route: the error responses of part 7 (one `Error` schema, the statuses that apply to the operation, an
 * example each), the credentials of part 5 (organizer key, buyer session, none), and the headers that steer a
 * request (X-Workspace-Id, Idempotency-Key, X-Purchase-Session, X-Queue-Token). Outgoing webhooks (part 6) are
 * documented as OpenAPI 3.1 `webhooks`. Each operation gets a stable operationId, and each document keeps only the
 * component schemas its own operations use. test/integration/openapi-lint.test.ts holds both documents to Redocly's
 * recommended ruleset, and every test's responses are checked against them (test/support/openapi-responses.ts).
 */

type JsonObject = Record<string, unknown>;

interface Operation {
  responses?: Record<string, unknown>;
  parameters?: Array<{ name: string; in: string }>;
  operationId?: string;
  security?: Array<Record<string, string[]>>;
  [key: string]: unknown;
}

export type Surface = 'organizer' | 'public';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'retryable', 'details'],
      properties: {
        code: { type: 'string', description: 'Stable code from the contract (part 7.3); branch on it' },
        message: { type: 'string', description: 'For people; may change' },
        retryable: { type: 'boolean', description: 'True when the same request may succeed later' },
        details: { description: 'Free-form; `details.reason` carries a stable slug where the contract names one' },
      },
    },
  },
} as const;

/** One example per status, each a real answer of this service. */
const ERROR_EXAMPLES: Record<string, { description: string; code: string; message: string; details: unknown }> = {
  '400': {
    description: 'Malformed parameters',
    code: 'MALFORMED_JSON',
    message: 'The request body is not valid JSON',
    details: null,
  },
  '401': {
    description: 'Missing or invalid credential',
    code: 'UNAUTHENTICATED',
    message: 'Send an API key (Authorization: Bearer …)',
    details: null,
  },
  '403': {
    description: 'Insufficient role, read-only key or section not covered',
    code: 'READ_ONLY_KEY',
    message: 'This API key is read-only; use a key with write scope',
    details: null,
  },
  '404': {
    description: 'Does not exist or is out of scope',
    code: 'NOT_FOUND',
    message: 'Sale was not found',
    details: null,
  },
  '409': {
    description: 'The resource does not allow this operation in its current state',
    code: 'INVALID_STATE',
    message: 'This operation is not possible in the current state',
    details: { reason: 'example_reason' },
  },
  '413': {
    description: 'The request body exceeds the size limit',
    code: 'PAYLOAD_TOO_LARGE',
    message: 'The request body exceeds the size limit',
    details: null,
  },
  '415': {
    description: 'The request body is not JSON',
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'Unsupported Content-Type: send application/json',
    details: null,
  },
  '422': {
    description: 'Body or parameter validation failed',
    code: 'VALIDATION_FAILED',
    message: 'body.quantity: Too big: expected number to be <=30',
    details: { fields: [{ field: 'body.quantity', message: 'Too big: expected number to be <=30' }] },
  },
  '429': {
    description: 'Rate limit exceeded',
    code: 'RATE_LIMITED',
    message: 'Too many requests; retry later',
    details: null,
  },
  '502': {
    description: 'An external provider (gateway, seat map) failed',
    code: 'PROVIDER_UNAVAILABLE',
    message: 'The payment provider did not answer; retry',
    details: null,
  },
  '503': {
    description: 'A dependency is down or the service is starting',
    code: 'SERVICE_UNAVAILABLE',
    message: 'The service is temporarily unavailable; retry',
    details: null,
  },
};

const SIGN_IN_CODE_REJECTED = {
  description: 'The sign-in code is wrong, expired or already used',
  code: 'UNAUTHENTICATED',
  message: 'The code is wrong, expired or already used; request a new one',
  details: null,
};

const ENTERPRISE_TOKEN_REJECTED = {
  description: 'The enterprise SSO token is invalid, expired or already exchanged (details.reason says which)',
  code: 'UNAUTHENTICATED',
  message: 'This token was already exchanged; each token is accepted once',
  details: { reason: 'token_replayed' },
};

type Kind = 'organizer' | 'customer' | 'customer-auth' | 'public';

function kindOf(surface: Surface, path: string): Kind {
  if (surface === 'public') return 'public';
  // Sign-in and sign-up routes (buyers, enterprise SSO, organizers' sign-up and device login) take no credential.
  if (path.startsWith('/customer/auth/') || path.startsWith('/api/customer-auth/') || path.startsWith('/auth/')) {
    return 'customer-auth';
  }
  if (path.startsWith('/customer')) return 'customer';
  return 'organizer';
}

/** A body that names another resource by id (`eventDateId`, `items[].ticketTypeId`) may name a missing one. */
const bodyNamesResource = (operation: Operation): boolean =>
  /"[a-z][A-Za-z]*Id":\{/.test(JSON.stringify(operation.requestBody ?? null));

/** The statuses of part 7.2 that an operation can answer, from who calls it and what it does. */
function errorStatuses(kind: Kind, method: string, path: string, operation: Operation): string[] {
  const mutates = method !== 'get' && method !== 'head';
  const statuses = new Set<string>(['422', '429', '503']);
  if (kind !== 'public' && kind !== 'customer-auth') statuses.add('401').add('403');
  // Signing in needs no credential, but a wrong or expired sign-in code is one.
  if (kind === 'customer-auth' && (path.endsWith('/verify') || path.endsWith('/enterprise-exchange'))) {
    statuses.add('401');
  }
  if (path.includes('{') || (mutates && bodyNamesResource(operation))) statuses.add('404');
  // Every request body goes through the JSON parser and its size limit before the route sees it.
  if (mutates) statuses.add('400').add('409').add('413').add('415');
  if (kind === 'public' && mutates) statuses.add('401').add('502');
  if (kind === 'customer' && mutates) statuses.add('502');
  return [...statuses].sort();
}

const header = (name: string, description: string, required = false) => ({
  name,
  in: 'header',
  required,
  description,
  schema: { type: 'string' },
});

function headersFor(kind: Kind, method: string, path: string) {
  const headers = [];
  if (kind === 'organizer') {
    headers.push(
      header('X-Workspace-Id', 'Workspace id to act in; without it (or when unreachable) the default workspace'),
    );
  }
  if (method === 'post') {
    headers.push(
      header(
        'Idempotency-Key',
        'Makes a retried POST safe: the same key from the same caller returns the first answer (24 h)',
      ),
    );
  }
  if (kind === 'customer' && path.startsWith('/customer/orders')) {
    headers.push(header('X-Purchase-Session', 'Purchase session id; required when the event enforces one (4.2)'));
  }
  if ((kind === 'customer' && path === '/customer/orders') || (kind === 'public' && path.endsWith('/orders'))) {
    if (method === 'post') headers.push(header('X-Queue-Token', 'Turn token from the waiting room of a queued date'));
  }
  return headers;
}

type SecurityRequirement = Record<string, string[]>;

/**
 * The buyer session (contract 5.6) as security schemes, in both documents: the header API clients send, and the cookie
 * a browser presents. Declared when the document is registered (api/plugins/openapi.ts) too, since routes name them
 * in their own `security`.
 */
export const BUYER_SESSION_SECURITY_SCHEMES = {
  customerSession: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Customer-Session',
    description: 'Buyer session token from POST /customer/auth/verify',
  },
  buyerSessionCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: BUYER_SESSION_COOKIE,
    description:
      'Browser buyer session: the session of X-Customer-Session, set as a cookie by POST /customer/auth/verify',
  },
} as const;

const BUYER_SESSION_SCHEMES = ['customerSession', 'buyerSessionCookie'] as const;
const ORGANIZER_KEY_SCHEMES = ['bearerApiKey', 'headerApiKey'] as const;
/** One security requirement: every scheme named must be presented together. */
const together = (...schemes: string[]): SecurityRequirement =>
  Object.fromEntries(schemes.map((scheme) => [scheme, []]));

/** A buyer session (header or cookie) is required; an organizer API key may come along and pins the workspace. */
const CUSTOMER_SECURITY: SecurityRequirement[] = [
  ...BUYER_SESSION_SCHEMES.map((session) => together(session)),
  ...BUYER_SESSION_SCHEMES.flatMap((session) => ORGANIZER_KEY_SCHEMES.map((key) => together(session, key))),
];

/**
 * The `security` of an organizer route that may act for a member (contract 5.6): the organizer's API key, plus the
 * member's buyer session (X-Customer-Session or the cookie), which is `required` or `optional`. Routes put it in their
 * schema; the session is then documented as its security scheme, not as a header parameter.
 */
export function organizerKeyWithBuyerSession(buyerSession: 'required' | 'optional'): SecurityRequirement[] {
  return [
    ...(buyerSession === 'optional' ? ORGANIZER_KEY_SCHEMES.map((key) => together(key)) : []),
    ...ORGANIZER_KEY_SCHEMES.flatMap((key) => BUYER_SESSION_SCHEMES.map((session) => together(key, session))),
  ];
}

function securityFor(kind: Kind, path: string): SecurityRequirement[] | null {
  if (kind === 'customer-auth') return [];
  if (kind === 'customer') return CUSTOMER_SECURITY;
  if (kind === 'public') {
    // Said explicitly (an empty list): the public document has no document-wide credential to fall back on.
    return path.endsWith('/orders') ? [{}, together('customerSession'), together('buyerSessionCookie')] : [];
  }
  return null;
}

/** The parameter that carries each credential; a credential is documented once, as its security scheme. */
const CREDENTIAL_PARAMETERS: Record<string, string> = {
  'header:x-customer-session': 'customerSession',
  [`cookie:${BUYER_SESSION_COOKIE}`]: 'buyerSessionCookie',
  'header:x-api-key': 'headerApiKey',
  'header:authorization': 'bearerApiKey',
};

/** Drops the parameters that repeat a credential the operation's security already declares. */
function withoutCredentialParameters(operation: Operation): void {
  if (!operation.parameters || !operation.security) return;
  const declared = new Set(operation.security.flatMap((requirement) => Object.keys(requirement)));
  operation.parameters = operation.parameters.filter((parameter) => {
    const scheme = CREDENTIAL_PARAMETERS[`${parameter.in}:${parameter.name.toLowerCase()}`];
    return scheme === undefined || !declared.has(scheme);
  });
  if (operation.parameters.length === 0) delete operation.parameters;
}

const pascal = (text: string): string =>
  text
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('');

/**
 * A stable operationId from the method and path (`GET /sales/{id}/tickets` → `getSalesByIdTickets`), for client
 * generators' method names: it changes only when the path does, which is a breaking change anyway.
 */
function operationIdFor(method: string, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .map((segment) => {
      const parameter = /^\{(.+)\}$/.exec(segment)?.[1];
      return parameter ? `By${pascal(parameter)}` : pascal(segment);
    });
  return `${method.toLowerCase()}${words.join('')}`;
}

const SCHEMA_REF = /"\$ref":"#\/components\/schemas\/([^"]+)"/g;
const schemaRefs = (value: unknown): string[] =>
  [...JSON.stringify(value ?? null).matchAll(SCHEMA_REF)].map((match) => match[1]!);

/** Rewrites every `$ref` to a component schema through `rename` (a deep copy; only the refs change). */
function renameSchemaRefs<T>(value: T, rename: (name: string) => string): T {
  return JSON.parse(
    JSON.stringify(value).replace(
      SCHEMA_REF,
      (_match, name: string) => `"$ref":"#/components/schemas/${rename(name)}"`,
    ),
  ) as T;
}

/**
 * Keeps only the component schemas the document's operations and webhooks reach, after folding each `…Input`
 * variant into its output schema when the two are the same. The zod type provider emits an input and an output
 * variant of every schema registered anywhere in the process, for both surfaces; without this each document would
 * carry every schema of the service twice, organizer-only ones included in the public document.
 */
function pruneSchemas(doc: JsonObject & { components: { schemas?: JsonObject } }): void {
  const schemas = doc.components.schemas ?? {};
  const outputOf = (name: string) => (name.endsWith('Input') ? name.slice(0, -'Input'.length) : name);
  const alias = new Map<string, string>();
  for (const name of Object.keys(schemas)) {
    const output = outputOf(name);
    if (output === name || !(output in schemas)) continue;
    const same =
      JSON.stringify(renameSchemaRefs(schemas[name], outputOf)) ===
      JSON.stringify(renameSchemaRefs(schemas[output], outputOf));
    if (same) alias.set(name, output);
  }
  const rename = (name: string) => alias.get(name) ?? name;
  const { schemas: _all, ...otherComponents } = doc.components;
  const roots = renameSchemaRefs({ paths: doc.paths, webhooks: doc.webhooks, components: otherComponents }, rename);
  doc.paths = roots.paths;
  if (roots.webhooks) doc.webhooks = roots.webhooks;
  const reached = new Set<string>();
  const queue = schemaRefs(roots);
  while (queue.length) {
    const name = queue.pop()!;
    if (reached.has(name) || !(name in schemas)) continue;
    reached.add(name);
    queue.push(...schemaRefs(schemas[name]).map(rename));
  }
  doc.components.schemas = Object.fromEntries(
    Object.keys(schemas)
      .filter((name) => reached.has(name))
      .map((name) => [name, renameSchemaRefs(schemas[name], rename)]),
  );
}

/** `x-ticketing-event-id` → `X-Ticketing-Event-Id`: header names as integrators read them (HTTP ignores case). */
const displayHeaderName = (name: string): string =>
  name
    .split('-')
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('-');

/** Every header a delivery carries besides the standard ones (activities/webhooks.ts), each with what it is for. */
const WEBHOOK_HEADERS: Array<[name: string, description: string]> = [
  [SIGNATURE_HEADER, "Hex HMAC-SHA256 of the raw body, keyed with the webhook's signingSecret (contract part 6)"],
  [TIMESTAMP_HEADER, 'Unix seconds when this attempt was sent'],
  [
    SIGNATURE_V2_HEADER,
    'Hex HMAC-SHA256 of `<X-Ticketing-Timestamp>.<raw body>`, same key: with a freshness check on the timestamp, ' +
      'a recorded delivery cannot be replayed',
  ],
  [EVENT_ID_HEADER, "The event's id, the same on every retry of it: deduplicate on it"],
  [EVENT_HEADER, "The event type, as in the body's `event`"],
];

const WEBHOOK_SIGNATURE =
  "Signed twice with the webhook's signingSecret: `X-Ticketing-Signature` is the hex HMAC-SHA256 of the raw body; " +
  '`X-Ticketing-Signature-V2` is the hex HMAC-SHA256 of `<X-Ticketing-Timestamp>.<raw body>`. Recompute over the raw ' +
  'body before parsing it, compare in constant time, refuse a timestamp more than 5 minutes from your clock, ' +
  'deduplicate on `X-Ticketing-Event-Id` (retries repeat it), and answer 2xx within 5 seconds.';

function saleEventWebhook(event: string, extra: JsonObject, description: string) {
  return {
    post: {
      summary: event,
      operationId: `on${pascal(event)}`,
      description: `${description} ${WEBHOOK_SIGNATURE}`,
      parameters: WEBHOOK_HEADERS.map(([name, about]) => header(displayHeaderName(name), about, true)),
      requestBody: {
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['event', 'data', 'sentAt'],
              properties: {
                event: { type: 'string', const: event },
                data: {
                  type: 'object',
                  properties: {
                    saleId: { type: 'string' },
                    organizationId: { type: 'string', description: 'Workspace id; send it as X-Workspace-Id' },
                    reference: { type: 'string' },
                    total: { type: 'integer', description: 'Integer, minor units', examples: [8952000] },
                    ...extra,
                  },
                },
                sentAt: { type: 'string', format: 'date-time' },
              },
            },
          },
        },
      },
      responses: { '200': { description: 'Received (any 2xx)' } },
    },
  };
}

const MONEY_NOTE =
  "Money: every amount is an integer in the currency's minor unit, never a decimal. COP has no minor unit here, " +
  'so 85000 is COP 85.000; USD 1250 would be USD 12.50. Fields say so: "Integer, minor units".';

/** Adds the shared contract parts to a generated document (in place) and returns it. */
export function withContractDocs<T extends JsonObject>(document: T, surface: Surface): T {
  const doc = document as JsonObject & {
    paths?: Record<string, Record<string, Operation>>;
    components?: JsonObject;
    info?: { description?: string };
  };
  if (doc.info) doc.info.description = [doc.info.description, MONEY_NOTE].filter(Boolean).join('\n\n');
  doc.components = doc.components ?? {};
  const components = doc.components as { schemas?: JsonObject; securitySchemes?: JsonObject };
  components.schemas = { ...(components.schemas ?? {}), Error: ERROR_SCHEMA };
  components.securitySchemes = { ...(components.securitySchemes ?? {}), ...BUYER_SESSION_SECURITY_SCHEMES };
  for (const [path, operations] of Object.entries(doc.paths ?? {})) {
    const kind = kindOf(surface, path);
    for (const [method, operation] of Object.entries(operations)) {
      if (
        typeof operation !== 'object' ||
        operation === null ||
        !('responses' in operation || 'summary' in operation)
      ) {
        continue;
      }
      withRequestExample(surface, method, path, operation);
      operation.responses = operation.responses ?? {};
      const responses = operation.responses;
      for (const [status, response] of Object.entries(responses)) {
        // @fastify/swagger's placeholder says nothing; the status's own name at least says what happened.
        const described = response as { description?: string };
        if (described.description === 'Default Response') described.description = STATUS_CODES[status] ?? status;
      }
      for (const status of errorStatuses(kind, method, path, operation)) {
        if (responses[status]) continue;
        const example =
          (kind === 'customer-auth' && status === '401'
            ? path.endsWith('/enterprise-exchange')
              ? ENTERPRISE_TOKEN_REJECTED
              : SIGN_IN_CODE_REJECTED
            : undefined) ?? ERROR_EXAMPLES[status]!;
        responses[status] = {
          description: example.description,
          content: {
            'application/json': {
              schema: { $ref: '#/components/schemas/Error' },
              example: {
                error: {
                  code: example.code,
                  message: example.message,
                  retryable: status >= '500' || status === '429',
                  details: example.details,
                },
              },
            },
          },
        };
      }
      const known = new Set(
        (operation.parameters ?? []).map((parameter) => `${parameter.in}:${parameter.name.toLowerCase()}`),
      );
      const extra = headersFor(kind, method, path).filter((h) => !known.has(`header:${h.name.toLowerCase()}`));
      if (extra.length) operation.parameters = [...(operation.parameters ?? []), ...extra];
      const security = securityFor(kind, path);
      if (security) operation.security = security;
      withoutCredentialParameters(operation);
      operation.operationId = operation.operationId ?? operationIdFor(method, path);
    }
  }
  if (surface === 'organizer') {
    (doc as JsonObject).webhooks = {
      'sale.confirmed': saleEventWebhook(
        'sale.confirmed',
        {},
        'A sale was confirmed: paid, complimentary or recorded offline. Idempotent on data.saleId.',
      ),
      'sale.refunded': saleEventWebhook(
        'sale.refunded',
        {
          currency: { type: 'string' },
          refundedAt: { type: 'string', format: 'date-time' },
          reason: { type: ['string', 'null'] },
        },
        'A sale was refunded (through its gateway or offline).',
      ),
    };
  }
  pruneSchemas(doc as JsonObject & { components: { schemas?: JsonObject } });
  return document;
}
