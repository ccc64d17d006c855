/**
 * What every operation of the contract shares, added to the generated OpenAPI documents in one place instead of on
 * each route: the error responses of part 7 (one `Error` schema, the statuses that apply to the operation, an
 * example each), the credentials of part 5 (organizer key, buyer session, none), and the headers that steer a
 * request (X-Workspace-Id, Idempotency-Key, X-Purchase-Session, X-Queue-Token). Outgoing webhooks (part 6) are
 * documented as OpenAPI 3.1 `webhooks`.
 */

type JsonObject = Record<string, unknown>;

interface Operation {
  responses?: Record<string, unknown>;
  parameters?: Array<{ name: string; in: string }>;
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

type Kind = 'organizer' | 'customer' | 'customer-auth' | 'public';

function kindOf(surface: Surface, path: string): Kind {
  if (surface === 'public') return 'public';
  if (path.startsWith('/customer/auth/')) return 'customer-auth';
  if (path.startsWith('/customer')) return 'customer';
  return 'organizer';
}

/** The statuses of part 7.2 that an operation can answer, from who calls it and what it does. */
function errorStatuses(kind: Kind, method: string, path: string): string[] {
  const mutates = method !== 'get' && method !== 'head';
  const statuses = new Set<string>(['422', '429', '503']);
  if (kind !== 'public' && kind !== 'customer-auth') statuses.add('401').add('403');
  if (path.includes('{')) statuses.add('404');
  if (mutates) statuses.add('400').add('409');
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

function securityFor(kind: Kind, path: string): Array<Record<string, string[]>> | null {
  if (kind === 'customer-auth') return [];
  if (kind === 'customer') {
    // The buyer session is required; an API key is optional and pins the workspace.
    return [
      { customerSession: [] },
      { customerSession: [], bearerApiKey: [] },
      { customerSession: [], headerApiKey: [] },
    ];
  }
  if (kind === 'public' && path.endsWith('/orders')) return [{}, { customerSession: [] }, { buyerSessionCookie: [] }];
  return null;
}

const WEBHOOK_SIGNATURE =
  "Signed: header `X-Ticketing-Signature` is the hex HMAC-SHA256 of the raw body keyed with the webhook's " +
  'signingSecret; compare in constant time and answer 2xx within 5 seconds.';

function saleEventWebhook(event: string, extra: JsonObject, description: string) {
  return {
    post: {
      summary: event,
      description: `${description} ${WEBHOOK_SIGNATURE}`,
      parameters: [header('X-Ticketing-Signature', 'hex HMAC-SHA256 of the raw body', true)],
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

/** Adds the shared contract parts to a generated document (in place) and returns it. */
export function withContractDocs<T extends JsonObject>(document: T, surface: Surface): T {
  const doc = document as JsonObject & { paths?: Record<string, Record<string, Operation>>; components?: JsonObject };
  doc.components = doc.components ?? {};
  const components = doc.components as { schemas?: JsonObject; securitySchemes?: JsonObject };
  components.schemas = { ...(components.schemas ?? {}), Error: ERROR_SCHEMA };
  components.securitySchemes = {
    ...(components.securitySchemes ?? {}),
    customerSession: {
      type: 'apiKey',
      in: 'header',
      name: 'X-Customer-Session',
      description: 'Buyer session token from POST /customer/auth/verify',
    },
    ...(surface === 'public'
      ? {
          buyerSessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: 'buyer_session',
            description: 'Browser buyer session',
          },
        }
      : {}),
  };
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
      operation.responses = operation.responses ?? {};
      const responses = operation.responses;
      for (const status of errorStatuses(kind, method, path)) {
        if (responses[status]) continue;
        const example = ERROR_EXAMPLES[status]!;
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
  return document;
}
