/**
 * Generated from the routes themselves: every organizer route under /api/v1 is walked, and its declared access rule
 * (`config.access`) is checked over HTTP with VIEWER, STAFF and ADMIN keys. A new route is covered without editing
 * this file.
 */
import Fastify, { type FastifyInstance, type HTTPMethods } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { API_V1_PREFIX } from '../../api/app.js';
import type { RouteAccess } from '../../api/http/access.js';
import { organizerRoutes } from '../../api/routes/v1/index.js';
import type { ApiServices } from '../../api/services.js';
import { type Role, roleAtLeast } from '../../domain/roles.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

interface WalkedRoute {
  method: HTTPMethods;
  url: string;
  access: RouteAccess | undefined;
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const ROLES: Role[] = ['VIEWER', 'STAFF', 'ADMIN'];
/** Stands in for every path parameter: a well-formed UUIDv7 that names no row. */
const PLACEHOLDER = '00000000-0000-7000-8000-000000000000';

/** The organizer routes with their options, collected by an onRoute hook while the route groups register. */
async function collectOrganizerRoutes(services: ApiServices): Promise<WalkedRoute[]> {
  const collector = Fastify({ logger: false });
  collector.setValidatorCompiler(validatorCompiler);
  collector.setSerializerCompiler(serializerCompiler);
  const routes: WalkedRoute[] = [];
  collector.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      routes.push({ method: method as HTTPMethods, url: route.url ?? route.path, access: route.config?.access });
    }
  });
  await collector.register(organizerRoutes, { prefix: API_V1_PREFIX, services });
  await collector.ready();
  await collector.close();
  return routes;
}

/** Every method and path the real app serves, read back from its router tree (`printRoutes`). */
function servedRoutes(app: FastifyInstance): Array<{ method: string; url: string }> {
  const served: Array<{ method: string; url: string }> = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? '').length / 4;
    stack.length = depth;
    const url = `${stack[depth - 1] ?? ''}${match[2]}`;
    stack[depth] = url;
    for (const method of match[3]?.split(', ') ?? []) served.push({ method, url });
  }
  return served;
}

const isCustomer = (url: string) => url.startsWith(`${API_V1_PREFIX}/customer`);
const isDocumentation = (url: string) =>
  url.startsWith(`${API_V1_PREFIX}/docs`) || url === `${API_V1_PREFIX}/openapi.json`;

const api: TestApi = await startTestApi();
const walked = (await collectOrganizerRoutes(api.services)).filter(
  (route) => route.method !== 'HEAD' && !isCustomer(route.url),
);
const checked = walked.filter((route) => route.access?.kind === 'organizer');

const organizers = {} as Record<Role, Organizer>;
beforeAll(async () => {
  for (const role of ROLES) organizers[role] = await createOrganizer(api.orm.em.fork(), { role });
});
afterAll(async () => {
  await api.close();
});

const send = (route: WalkedRoute, key: string) =>
  api.request({
    method: route.method,
    url: route.url.replace(/:[A-Za-z0-9_]+/g, PLACEHOLDER),
    headers: bearer(key),
    ...(['POST', 'PUT', 'PATCH'].includes(route.method) ? { payload: {} } : {}),
  });

/**
 * Minimum roles the contract states (part 5.4 and 4.11–4.16), by method and path under /api/v1, for the routes this
 * service serves. A rule that matches no served route fails the walk below instead of passing vacuously.
 */
const CONTRACT_MINIMUMS: Array<{ method: string; path: RegExp; minRole: Role; rule: string }> = [
  { method: 'GET', path: /^\/sales$/, minRole: 'VIEWER', rule: 'GET /sales: VIEWER' },
  { method: 'GET', path: /^\/tickets\/:[^/]+\/access$/, minRole: 'STAFF', rule: 'ticket access check: STAFF' },
  { method: '*', path: /^\/staff(\/|$)/, minRole: 'ADMIN', rule: 'staff: ADMIN' },
  { method: '*', path: /^\/discounts(\/|$)/, minRole: 'ADMIN', rule: 'discounts: ADMIN' },
  { method: '*', path: /^\/webhooks(\/|$)/, minRole: 'ADMIN', rule: 'webhooks: ADMIN' },
  { method: 'DELETE', path: /^\/ticket-types\/:[^/]+$/, minRole: 'ADMIN', rule: 'DELETE /ticket-types/{id}: ADMIN' },
  { method: 'POST', path: /^\/api-keys$/, minRole: 'ADMIN', rule: 'POST /api-keys: ADMIN' },
  { method: '*', path: /^\/settlements(\/|$)/, minRole: 'ADMIN', rule: 'settlements: ADMIN' },
];

describe('the route walk', () => {
  const key = (route: { method: string; url: string }) => `${route.method} ${route.url}`;
  const served = servedRoutes(api.app)
    .filter((route) => route.url.startsWith(`${API_V1_PREFIX}/`) && route.method !== 'HEAD')
    .filter((route) => !isCustomer(route.url) && !isDocumentation(route.url))
    .map(key);

  test('the walk and the routes the app serves under /api/v1 are the same set (docs and /customer aside)', () => {
    const inWalk = walked.map(key);
    expect(served.filter((route) => !inWalk.includes(route))).toEqual([]);
    expect(inWalk.filter((route) => !served.includes(route))).toEqual([]);
    expect(checked.length).toBeGreaterThan(20);
  });

  test('every organizer route declares config.access', () => {
    expect(walked.filter((route) => !route.access).map(key)).toEqual([]);
  });

  /** Organizer routes a contract rule applies to (the rule's method, or any for `*`). */
  const governedBy = (rule: (typeof CONTRACT_MINIMUMS)[number]) =>
    checked.filter(
      (route) =>
        (rule.method === '*' || rule.method === route.method) && rule.path.test(route.url.slice(API_V1_PREFIX.length)),
    );

  test.each(CONTRACT_MINIMUMS.map((rule) => [rule.rule, rule] as const))(
    'the contract rule "%s" governs at least one organizer route the app serves',
    (_name, rule) => {
      expect(governedBy(rule).map(key)).not.toEqual([]);
      for (const route of governedBy(rule)) expect(served).toContain(key(route));
    },
  );

  test("declared minimum roles match the contract's known minimums (5.4)", () => {
    const wrong = checked.flatMap((route) => {
      const path = route.url.slice(API_V1_PREFIX.length);
      const declared = (route.access as Extract<RouteAccess, { kind: 'organizer' }>).minRole;
      return CONTRACT_MINIMUMS.filter(
        (rule) => (rule.method === '*' || rule.method === route.method) && rule.path.test(path),
      )
        .filter((rule) => rule.minRole !== declared)
        .map((rule) => `${key(route)} declares ${declared}; contract: ${rule.rule}`);
    });
    expect(wrong).toEqual([]);
  });
});

describe('declared access is enforced (contract 5.3, 5.4)', () => {
  const cases = checked.map((route) => {
    const access = route.access as Extract<RouteAccess, { kind: 'organizer' }>;
    return [`${route.method} ${route.url}`, access.minRole, route] as const;
  });

  /** What each role got, where it differs from what the declared rule says it must get. */
  const mismatches = async (
    route: WalkedRoute,
    keyOf: (organizer: Organizer) => string,
    expected: (role: Role) => string,
  ) => {
    const found: string[] = [];
    for (const role of ROLES) {
      const response = await send(route, keyOf(organizers[role]));
      const got =
        response.statusCode === 401 || response.statusCode === 403
          ? `${response.statusCode} ${response.json().error?.code}`
          : 'let through';
      if (got !== expected(role))
        found.push(`${role}: expected ${expected(role)}, got ${got} (${response.statusCode})`);
    }
    return found;
  };

  test.each(cases)(
    '%s (minimum %s): a lower role gets 403 INSUFFICIENT_ROLE, an allowed role is let through',
    async (_name, minRole, route) => {
      const expected = (role: Role) => (roleAtLeast(role, minRole) ? 'let through' : '403 INSUFFICIENT_ROLE');
      expect(await mismatches(route, (organizer) => organizer.key, expected)).toEqual([]);
    },
  );

  const mutating = cases.filter(([, , route]) => MUTATING.has(route.method));
  test.each(mutating)(
    '%s: a read key on a mutating method gets 403 READ_ONLY_KEY, whatever the role',
    async (_name, _minRole, route) => {
      expect(
        await mismatches(
          route,
          (organizer) => organizer.readKey,
          () => '403 READ_ONLY_KEY',
        ),
      ).toEqual([]);
    },
  );

  const reads = cases.filter(([, , route]) => !MUTATING.has(route.method));
  test.each(reads)('%s (minimum %s): a read key of an allowed role may call it', async (_name, minRole, route) => {
    const expected = (role: Role) => (roleAtLeast(role, minRole) ? 'let through' : '403 INSUFFICIENT_ROLE');
    expect(await mismatches(route, (organizer) => organizer.readKey, expected)).toEqual([]);
  });
});

/**
 * The customer routes accept an optional organizer API key (contract 5.6); when one is presented, its scope binds
 * exactly as on organizer routes (5.3). Walked from the routes too, so a new customer route is covered unedited.
 */
describe('a read key on a mutating customer route gets 403 READ_ONLY_KEY (contract 5.3)', () => {
  const customerRoutes = collectOrganizerRoutes(api.services).then((routes) =>
    routes.filter((route) => route.method !== 'HEAD' && route.access?.kind === 'customer'),
  );
  let buyerSession: string;
  beforeAll(async () => {
    buyerSession = await signInBuyer(api, `read-key-${Math.random().toString(36).slice(2, 10)}@buyers.test`);
  });

  const sendAsBuyer = (route: WalkedRoute, key: string) =>
    api.request({
      method: route.method,
      url: route.url.replace(/:[A-Za-z0-9_]+/g, PLACEHOLDER),
      headers: { ...session(buyerSession), ...bearer(key) },
      ...(['POST', 'PUT', 'PATCH'].includes(route.method) ? { payload: {} } : {}),
    });

  test('the walk covers the mutating customer routes the contract names', async () => {
    const mutating = (await customerRoutes).filter((route) => MUTATING.has(route.method));
    const paths = mutating.map((route) => `${route.method} ${route.url.slice(API_V1_PREFIX.length)}`);
    for (const expected of [
      /^POST \/customer\/orders$/,
      /^POST \/customer\/orders\/:[^/]+\/payment$/,
      /^POST \/customer\/orders\/:[^/]+\/payment\/card$/,
      /^POST \/customer\/orders\/:[^/]+\/payment\/pse$/,
      /^POST \/customer\/orders\/:[^/]+\/release$/,
      /^POST \/customer\/purchase-sessions$/,
      /^POST \/customer\/purchase-sessions\/:[^/]+\/release$/,
      /^POST \/customer\/tickets\/:[^/]+\/cancel$/,
      /^PATCH \/customer\/profile$/,
      /^POST \/customer\/logout$/,
    ]) {
      expect(paths.filter((path) => expected.test(path))).toHaveLength(1);
    }
  });

  test('every mutating customer route refuses a read key, whatever the role, with the contract error body', async () => {
    const found: string[] = [];
    for (const route of (await customerRoutes).filter((r) => MUTATING.has(r.method))) {
      for (const role of ROLES) {
        const response = await sendAsBuyer(route, organizers[role].readKey);
        const body = response.json();
        if (response.statusCode !== 403 || body.error?.code !== 'READ_ONLY_KEY' || body.error.retryable !== false) {
          found.push(`${route.method} ${route.url} (${role}): ${response.statusCode} ${body.error?.code}`);
        }
      }
    }
    expect(found).toEqual([]);
  });

  test('a write key on a mutating customer route and a read key on a customer read are not refused for scope', async () => {
    // Logout with a write key really ends the buyer session, so it goes last.
    const isLogout = (route: WalkedRoute) => route.url.endsWith('/customer/logout');
    const routes = [...(await customerRoutes)].sort((a, b) => Number(isLogout(a)) - Number(isLogout(b)));
    const found: string[] = [];
    for (const route of routes) {
      const key = MUTATING.has(route.method) ? organizers.VIEWER.key : organizers.VIEWER.readKey;
      const response = await sendAsBuyer(route, key);
      if (response.json().error?.code === 'READ_ONLY_KEY') found.push(`${route.method} ${route.url}`);
    }
    expect(found).toEqual([]);
  });
});
