import { createConfig, lintFromString, type NormalizedProblem } from '@redocly/openapi-core';
import { startTestApi, type TestApi } from '../support/stack.js';

/**
 * Both OpenAPI documents pass Redocly's `recommended` ruleset with no error and no warning. Rules turned off here
 * do not apply to this service; each says why. Keep this list short: fix the document instead where possible.
 */
const RULES = {
  // A proprietary service: there is no licence to declare, and naming one would mislead integrators.
  'info-license': 'off',
} as const;

type Json = Record<string, unknown>;
interface Document extends Json {
  paths: Record<string, Record<string, Json>>;
  components: { schemas: Record<string, Json> };
}

let api: TestApi;
const documents: Record<'organizer' | 'public', Document> = {} as Record<'organizer' | 'public', Document>;
beforeAll(async () => {
  api = await startTestApi();
  for (const [surface, url] of [
    ['organizer', '/api/v1/openapi.json'],
    ['public', '/api/public/openapi.json'],
  ] as const) {
    const response = await api.request({ method: 'GET', url });
    expect(response.statusCode).toBe(200);
    documents[surface] = response.json();
  }
});
afterAll(async () => {
  await api.close();
});

async function lint(document: unknown): Promise<string[]> {
  const config = await createConfig({ extends: ['recommended'], rules: RULES });
  const problems: NormalizedProblem[] = await lintFromString({
    source: JSON.stringify(document),
    absoluteRef: 'openapi.json',
    config,
  });
  return problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`);
}

const SCHEMA_REF = /"\$ref":"#\/components\/schemas\/([^"]+)"/g;
const refsIn = (value: unknown): string[] =>
  [...JSON.stringify(value ?? null).matchAll(SCHEMA_REF)].map((match) => match[1]!);

/** The component schemas an integrator can reach from the document's operations and webhooks. */
function reachableSchemas(document: Document): Set<string> {
  const reached = new Set<string>();
  const queue = refsIn({ paths: document.paths, webhooks: document.webhooks });
  while (queue.length) {
    const name = queue.pop()!;
    if (reached.has(name)) continue;
    reached.add(name);
    queue.push(...refsIn(document.components.schemas[name]));
  }
  return reached;
}

/** Property names that mean money wherever they appear (`refunded` is left out: it is also a count of sales). */
const MONEY_NAME =
  /^(price|priceFrom|periodPrice|unitPrice|subtotal|listSubtotal|discountAmount|discountPerTicket|(unit|buyer|organizer)?[sS]erviceFees?|serviceFeeFixed|seatingSurcharge|(unit|buyer|organizer)?[iI]va|(buyer)?[tT]otal|totalSpent|[a-z]*[aA]mount|gross|discounts|collected|collectedByOrganizer|gatewayCosts|costs|netPayable|charged|expectedAtGateway|netAtGateway|revenue)$/;
/** Money-sounding names that are not minor units, each with why. */
const NOT_MINOR_UNITS = new Map([
  ['Page.total', 'a count of items'],
  ['GatewayAPaymentConfiguration.amount', "major units: what gateway A's payment brick takes (contract part 2)"],
]);
const MINOR_UNITS = 'Integer, minor units';

interface MoneyField {
  where: string;
  type: unknown;
  description: string;
  examples: unknown;
}

/** Every numeric property of the document's schemas, named `<component>.<property>` or by JSON pointer. */
function numericProperties(document: Document): Array<MoneyField & { name: string }> {
  const found: Array<MoneyField & { name: string }> = [];
  const visit = (node: unknown, owner: string): void => {
    if (typeof node !== 'object' || node === null) return;
    const properties = (node as { properties?: Record<string, Json> }).properties ?? {};
    for (const [name, property] of Object.entries(properties)) {
      const branches = (property.anyOf as Json[] | undefined) ?? [property];
      const numeric = branches.find((branch) => branch.type === 'integer' || branch.type === 'number');
      if (!numeric) continue;
      found.push({
        name,
        where: `${owner}.${name}`,
        type: numeric.type,
        description: String(numeric.description ?? property.description ?? ''),
        examples: numeric.examples ?? property.examples,
      });
    }
    for (const value of Object.values(node)) visit(value, owner);
  };
  for (const [name, schema] of Object.entries(document.components.schemas)) visit(schema, name);
  for (const [path, operations] of Object.entries(document.paths)) visit(operations, path);
  return found;
}

describe('OpenAPI documents pass a maintained linter (Redocly recommended)', () => {
  test.each(['organizer', 'public'] as const)('the %s document has no lint error or warning', async (surface) => {
    expect(await lint(documents[surface])).toEqual([]);
  });

  test('the linter is live: a dangling $ref and a missing operationId are reported', async () => {
    const broken = structuredClone(documents.public);
    const operation = broken.paths['/events']!.get as { operationId?: string; responses: Json };
    delete operation.operationId;
    operation.responses['200'] = {
      description: 'x',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/NoSuchSchema' } } },
    };
    const problems = await lint(broken);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^error no-unresolved-refs/),
        expect.stringMatching(/^warn operation-operationId/),
      ]),
    );
  });
});

describe('what the reference promises integrators (issue 15)', () => {
  test.each(['organizer', 'public'] as const)(
    'the %s document holds only the schemas its operations use, each once',
    (surface) => {
      const document = documents[surface];
      const names = Object.keys(document.components.schemas);
      expect(names.filter((name) => !reachableSchemas(document).has(name))).toEqual([]);
      // The zod provider's input twin of an output schema is folded into it or left out when unused.
      expect(names.filter((name) => name.endsWith('Input') && names.includes(name.slice(0, -'Input'.length)))).toEqual(
        [],
      );
    },
  );

  test('the public document names no organizer-only schema', () => {
    const publicNames = Object.keys(documents.public.components.schemas);
    expect(publicNames).toEqual(expect.arrayContaining(['PublicAvailability', 'OrderCreated', 'Error']));
    for (const organizerOnly of ['Sale', 'SaleWithItems', 'CurrentUser', 'ApiKey', 'Settlement', 'StaffUser']) {
      expect(publicNames).not.toContain(organizerOnly);
    }
  });

  test('money fields say "Integer, minor units" and carry a realistic integer example', () => {
    const money = Object.values(documents)
      .flatMap(numericProperties)
      .filter(
        (field) =>
          field.description.includes(MINOR_UNITS) || (MONEY_NAME.test(field.name) && !NOT_MINOR_UNITS.has(field.where)),
      );
    const wrong = money
      .filter(
        (field) =>
          field.type !== 'integer' ||
          !field.description.includes(MINOR_UNITS) ||
          !Array.isArray(field.examples) ||
          field.examples.length === 0 ||
          !field.examples.every((example) => Number.isSafeInteger(example)),
      )
      .map(({ where, type, description, examples }) => ({ where, type, description, examples }));
    expect(wrong).toEqual([]);
    const where = money.map((field) => field.where);
    expect(where).toEqual(
      expect.arrayContaining(['Sale.total', 'SaleItem.unitPrice', 'PublicTicketType.buyerTotal', 'OrderCreated.total']),
    );
    expect(money.length).toBeGreaterThan(60);
    expect(documents.public.info).toMatchObject({ description: expect.stringContaining('85000 is COP 85.000') });
  });

  test('every operation has a unique operationId', () => {
    for (const document of Object.values(documents)) {
      const ids = Object.values(document.paths).flatMap((operations) =>
        Object.values(operations).map((operation) => operation.operationId),
      );
      expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z0-9]+$/.test(id))).toBe(true);
      expect(new Set(ids).size).toBe(ids.length);
    }
    expect(documents.organizer.paths['/sales/{id}/refund']!.post!.operationId).toBe('postSalesByIdRefund');
  });
});

/**
 * The snake_case names the documents may use, each because a standard or the contract spells it so; every other
 * property and query or path parameter is camelCase (issue 15, docs/api-guide.md "Buyer shapes").
 */
const SNAKE_CASE_ALLOWED = new Map([
  ['session_token', 'contract 4.1 and 5.6: POST /customer/auth/verify returns session_token'],
  ['acknowledge_open_payment', 'contract 3 and 4.8: the body field of POST /sales/{id}/cancel'],
  // The device grant speaks OAuth to OAuth clients: RFC 8628 section 3.2 and RFC 6749 sections 5.1 and 5.2.
  ...[
    'client_id',
    'device_code',
    'user_code',
    'verification_uri',
    'verification_uri_complete',
    'expires_in',
    'grant_type',
    'access_token',
    'token_type',
    'error_description',
  ].map((name): [string, string] => [name, 'OAuth 2.0 device authorization grant (RFC 8628)']),
  ['token_type_hint', 'OAuth 2.0 token revocation (RFC 7009 section 2.1): POST /auth/revoke'],
]);
const CAMEL_CASE = /^[a-z][a-zA-Z0-9]*$/;

/** Every property name of every schema in the document (components, paths, webhooks), with where it is. */
function propertyNames(document: Document): Array<{ name: string; where: string }> {
  const found: Array<{ name: string; where: string }> = [];
  const visit = (node: unknown, where: string): void => {
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      // Examples hold data, not schemas: their keys are the properties already found.
      if (key === 'example' || key === 'examples') continue;
      if (key === 'properties' && typeof value === 'object' && value !== null && !Array.isArray(value)) {
        for (const [name, schema] of Object.entries(value)) {
          found.push({ name, where: `${where}.${name}` });
          visit(schema, `${where}.${name}`);
        }
        continue;
      }
      visit(value, `${where}/${key}`);
    }
  };
  visit({ components: document.components, paths: document.paths, webhooks: document.webhooks }, '#');
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const parameter of (operation.parameters ?? []) as Array<{ name: string; in: string }>) {
        if (parameter.in === 'query' || parameter.in === 'path') {
          found.push({ name: parameter.name, where: `${method.toUpperCase()} ${path} ${parameter.in}` });
        }
      }
    }
  }
  return found;
}

describe('field casing (issue 15): camelCase everywhere except the snake_case names a standard or the contract uses', () => {
  test.each(['organizer', 'public'] as const)('every property and parameter name of the %s document', (surface) => {
    const names = propertyNames(documents[surface]);
    expect(names.length).toBeGreaterThan(surface === 'organizer' ? 500 : 100);
    expect(names.filter(({ name }) => !CAMEL_CASE.test(name) && !SNAKE_CASE_ALLOWED.has(name))).toEqual([]);
  });

  test('each allowed snake_case name is in use, so the list cannot outlive its reason', () => {
    const used = new Set(
      Object.values(documents).flatMap((document) => propertyNames(document).map(({ name }) => name)),
    );
    expect([...SNAKE_CASE_ALLOWED.keys()].filter((name) => !used.has(name))).toEqual([]);
  });

  test('the check is live: a snake_case property is reported where it is', () => {
    const broken = structuredClone(documents.public);
    const schema = Object.values(broken.components.schemas)[0] as { properties?: Record<string, Json> };
    schema.properties = { ...schema.properties, buyer_email: { type: 'string' } };
    const offending = propertyNames(broken).filter(
      ({ name }) => !CAMEL_CASE.test(name) && !SNAKE_CASE_ALLOWED.has(name),
    );
    expect(offending.map(({ name }) => name)).toEqual(['buyer_email']);
  });
});
