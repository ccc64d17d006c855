import type { Role } from '../../domain/roles.js';
import { hashApiKey } from '../../entities/api-key.js';
import { ApiKey } from '../../entities/index.js';
import { addMembership, bearer, createOrganizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
});

const em = () => api.orm.em.fork();

describe('sending the key (contract 5.2)', () => {
  test('a key works as Authorization: Bearer and as x-api-key', async () => {
    const organizer = await createOrganizer(em());
    const viaBearer = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(organizer.key) });
    const viaHeader = await api.request({ method: 'GET', url: '/api/v1/me', headers: { 'x-api-key': organizer.key } });
    expect(viaBearer.statusCode).toBe(200);
    expect(viaHeader.statusCode).toBe(200);
    expect(viaBearer.json().data.email).toBe(organizer.email);
    expect(viaHeader.json().data.userId).toBe(organizer.userId);
  });

  test.each([
    ['missing', {}],
    ['unknown', bearer('tkt_live_doesnotexist')],
    ['malformed header', { authorization: 'Basic abc' }],
  ])('a %s key gets 401 with the error body', async (_label, headers) => {
    const response = await api.request({ method: 'GET', url: '/api/v1/me', headers });
    expect(response.statusCode).toBe(401);
    const body = response.json();
    expect(body.error).toEqual({
      code: expect.any(String),
      message: expect.any(String),
      retryable: false,
      details: null,
    });
    expect(['UNAUTHENTICATED', 'INVALID_API_KEY']).toContain(body.error.code);
  });

  test('a revoked key gets 401', async () => {
    const organizer = await createOrganizer(em());
    const minted = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(organizer.key),
      payload: { name: 'to revoke', scope: 'write' },
    });
    const { id, key } = minted.json().data;
    expect((await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(key) })).statusCode).toBe(200);
    const revoked = await api.request({
      method: 'DELETE',
      url: `/api/v1/api-keys/${id}`,
      headers: bearer(organizer.key),
    });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().data.revokedAt).not.toBeNull();
    const after = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(key) });
    expect(after.statusCode).toBe(401);
    expect(after.json().error.code).toBe('INVALID_API_KEY');
  });

  test('an expired key gets 401 once its expiry passes', async () => {
    const organizer = await createOrganizer(em());
    const minted = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(organizer.key),
      payload: { name: 'short lived', scope: 'read', expiresAt: new Date(Date.now() + 1500).toISOString() },
    });
    expect(minted.statusCode).toBe(201);
    const { key } = minted.json().data;
    expect((await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(key) })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1700));
    const after = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(key) });
    expect(after.statusCode).toBe(401);
    expect(after.json().error.message).toMatch(/expired/);
  });

  test('an expiry in the past is refused with 422 naming the field', async () => {
    const organizer = await createOrganizer(em());
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(organizer.key),
      payload: { name: 'past', expiresAt: '2001-01-01T00:00:00Z' },
    });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.details.fields[0].field).toBe('body.expiresAt');
  });
});

describe('keys are stored only as a hash (contract 5.1)', () => {
  test('the plaintext is returned once and never stored', async () => {
    const organizer = await createOrganizer(em());
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(organizer.key),
      payload: { name: 'integration', scope: 'write' },
    });
    expect(response.statusCode).toBe(201);
    const created = response.json().data;
    expect(created.key).toMatch(/^tkt_live_[A-Za-z0-9_-]{43}$/);
    expect(created.scope).toBe('write');

    const row = await em().findOneOrFail(ApiKey, { id: created.id });
    expect(row.secretHash).toBe(hashApiKey(created.key));
    const rawRow = await em()
      .getConnection()
      .execute<Record<string, unknown>[]>('select * from api_keys where id = ?', [created.id]);
    expect(JSON.stringify(rawRow)).not.toContain(created.key);
    expect(JSON.stringify(rawRow)).not.toContain(created.key.slice(9, 30));

    const list = await api.request({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(organizer.key) });
    const listed = list.json().data.find((k: { id: string }) => k.id === created.id);
    expect(listed).toBeDefined();
    expect(listed).not.toHaveProperty('key');
    expect(JSON.stringify(list.json())).not.toContain(created.key);
  });

  test('keys default to the read scope', async () => {
    const organizer = await createOrganizer(em());
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(organizer.key),
      payload: { name: 'default scope' },
    });
    expect(response.json().data.scope).toBe('read');
    const write = await api.request({
      method: 'POST',
      url: '/api/v1/workspaces',
      headers: bearer(response.json().data.key),
      payload: { name: 'Should fail' },
    });
    expect(write.json().error.code).toBe('READ_ONLY_KEY');
  });

  test("a user cannot see or revoke another user's key", async () => {
    const owner = await createOrganizer(em());
    const other = await createOrganizer(em());
    const minted = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(owner.key),
      payload: { name: 'mine' },
    });
    const id = minted.json().data.id;
    const revoke = await api.request({ method: 'DELETE', url: `/api/v1/api-keys/${id}`, headers: bearer(other.key) });
    expect(revoke.statusCode).toBe(404);
    const list = await api.request({ method: 'GET', url: '/api/v1/api-keys?limit=100', headers: bearer(other.key) });
    expect(list.json().data.map((k: { id: string }) => k.id)).not.toContain(id);
  });
});

describe('scopes and roles (contract 5.3, 5.4)', () => {
  type Expectation = 'allowed' | 'READ_ONLY_KEY' | 'INSUFFICIENT_ROLE';
  const operations: Array<{ name: string; method: 'GET' | 'POST'; url: string; payload?: object; minRole: Role }> = [
    { name: 'GET /me', method: 'GET', url: '/api/v1/me', minRole: 'VIEWER' },
    { name: 'GET /api-keys', method: 'GET', url: '/api/v1/api-keys', minRole: 'VIEWER' },
    { name: 'POST /api-keys', method: 'POST', url: '/api/v1/api-keys', payload: { name: 'matrix' }, minRole: 'ADMIN' },
  ];
  const rank: Record<Role, number> = { MINCULTURA: 1, VIEWER: 1, STAFF: 2, ADMIN: 3, SUPER_ADMIN: 4 };
  const cases: Array<[Role, 'read' | 'write', string, Expectation]> = [];
  for (const role of ['VIEWER', 'STAFF', 'ADMIN', 'SUPER_ADMIN', 'MINCULTURA'] as Role[]) {
    for (const scope of ['read', 'write'] as const) {
      for (const operation of operations) {
        let expected: Expectation = 'allowed';
        if (operation.method !== 'GET' && scope === 'read') expected = 'READ_ONLY_KEY';
        else if (rank[role] < rank[operation.minRole]) expected = 'INSUFFICIENT_ROLE';
        else if (operation.method !== 'GET' && role === 'MINCULTURA') expected = 'INSUFFICIENT_ROLE';
        cases.push([role, scope, operation.name, expected]);
      }
    }
  }

  test.each(cases)('%s with a %s key on %s → %s', async (role, scope, operationName, expected) => {
    const organizer = await createOrganizer(em(), { role });
    const operation = operations.find((o) => o.name === operationName)!;
    const response = await api.request({
      method: operation.method,
      url: operation.url,
      headers: bearer(scope === 'write' ? organizer.key : organizer.readKey),
      ...(operation.payload ? { payload: operation.payload } : {}),
    });
    if (expected === 'allowed') {
      expect([200, 201]).toContain(response.statusCode);
    } else {
      expect(response.statusCode).toBe(403);
      expect(response.json().error.code).toBe(expected);
    }
  });

  test('a role change applies on the next request without reissuing the key', async () => {
    const organizer = await createOrganizer(em(), { role: 'VIEWER' });
    const before = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(organizer.key),
      payload: { name: 'x' },
    });
    expect(before.json().error.code).toBe('INSUFFICIENT_ROLE');
    await em()
      .getConnection()
      .execute(`update workspace_members set role = 'ADMIN' where user_id = ?`, [organizer.userId]);
    const after = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(organizer.key),
      payload: { name: 'x' },
    });
    expect(after.statusCode).toBe(201);
  });

  test('expired workspace access gets ACCESS_EXPIRED; a section outside the grant gets SECTION_FORBIDDEN', async () => {
    const expired = await createOrganizer(em(), { role: 'ADMIN', accessExpiresAt: new Date(Date.now() - 1000) });
    const revoked = await createOrganizer(em(), { role: 'ADMIN', sections: [] });
    const limited = await createOrganizer(em(), { role: 'ADMIN', sections: ['events'] });
    const request = (key: string) =>
      api.request({ method: 'POST', url: '/api/v1/api-keys', headers: bearer(key), payload: { name: 'x' } });
    expect((await request(expired.key)).json().error.code).toBe('ACCESS_EXPIRED');
    expect((await request(revoked.key)).json().error.code).toBe('ACCESS_EXPIRED');
    const forbidden = await request(limited.key);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().error.code).toBe('SECTION_FORBIDDEN');
    // GET /me works with any valid key, and shows the empty section list that means "expired".
    const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(revoked.key) });
    expect(me.statusCode).toBe(200);
    expect(me.json().data.workspaces[0].sections).toEqual([]);
  });
});

describe('workspace selection (contract 5.5)', () => {
  test('X-Workspace-Id picks a reachable workspace; GET /me lists every reachable one with its role', async () => {
    const organizer = await createOrganizer(em(), { role: 'ADMIN' });
    const second = await createOrganizer(em(), { role: 'ADMIN' });
    await addMembership(em(), organizer.userId, second.workspaceId, 'VIEWER');

    const implicit = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(organizer.key) });
    expect(implicit.json().data.activeWorkspaceId).toBe(organizer.workspaceId);
    expect(implicit.json().data.workspaces).toHaveLength(2);
    const roles = Object.fromEntries(
      implicit.json().data.workspaces.map((w: { id: string; role: string }) => [w.id, w.role]),
    );
    expect(roles).toEqual({ [organizer.workspaceId]: 'ADMIN', [second.workspaceId]: 'VIEWER' });

    const explicit = await api.request({
      method: 'GET',
      url: '/api/v1/me',
      headers: { ...bearer(organizer.key), 'x-workspace-id': second.workspaceId },
    });
    expect(explicit.json().data.activeWorkspaceId).toBe(second.workspaceId);
    expect(explicit.json().data.role).toBe('VIEWER');

    // The role is the one in the targeted workspace: VIEWER there cannot mint keys.
    const mint = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: { ...bearer(organizer.key), 'x-workspace-id': second.workspaceId },
      payload: { name: 'x' },
    });
    expect(mint.json().error.code).toBe('INSUFFICIENT_ROLE');
  });

  test('an unreachable X-Workspace-Id is ignored with a warning; several workspaces without the header warn too', async () => {
    const organizer = await createOrganizer(em());
    const stranger = await createOrganizer(em());
    const ignored = await api.request({
      method: 'GET',
      url: '/api/v1/api-keys',
      headers: { ...bearer(organizer.key), 'x-workspace-id': stranger.workspaceId },
    });
    expect(ignored.statusCode).toBe(200);
    expect(ignored.json().warnings).toEqual([
      expect.objectContaining({
        code: 'WORKSPACE_NOT_ACCESSIBLE',
        field: 'X-Workspace-Id',
        activeWorkspaceId: organizer.workspaceId,
        accessibleWorkspaces: 1,
      }),
    ]);

    await addMembership(em(), organizer.userId, stranger.workspaceId, 'VIEWER');
    const ambiguous = await api.request({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(organizer.key) });
    expect(ambiguous.json().warnings).toEqual([
      expect.objectContaining({
        code: 'WORKSPACE_IMPLICIT',
        activeWorkspaceId: organizer.workspaceId,
        accessibleWorkspaces: 2,
      }),
    ]);
    const chosen = await api.request({
      method: 'GET',
      url: '/api/v1/api-keys',
      headers: { ...bearer(organizer.key), 'x-workspace-id': organizer.workspaceId },
    });
    expect(chosen.json().warnings).toBeUndefined();
  });

  test("without X-Workspace-Id the user's default workspace is used, even with a key minted in another one", async () => {
    // Default workspace: VIEWER there. The key is minted as ADMIN of a second workspace.
    const organizer = await createOrganizer(em(), { role: 'VIEWER' });
    const other = await createOrganizer(em(), { role: 'ADMIN' });
    await addMembership(em(), organizer.userId, other.workspaceId, 'ADMIN');
    const minted = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: { ...bearer(organizer.key), 'x-workspace-id': other.workspaceId },
      payload: { name: 'minted in the second workspace', scope: 'write' },
    });
    expect(minted.statusCode).toBe(201);
    const key = minted.json().data.key as string;

    const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(key) });
    expect(me.json().data).toMatchObject({ activeWorkspaceId: organizer.workspaceId, role: 'VIEWER' });
    // The role applied is the default workspace's: VIEWER cannot mint keys there.
    const mint = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(key),
      payload: { name: 'x' },
    });
    expect(mint.json().error.code).toBe('INSUFFICIENT_ROLE');
    const chosen = await api.request({
      method: 'GET',
      url: '/api/v1/me',
      headers: { ...bearer(key), 'x-workspace-id': other.workspaceId },
    });
    expect(chosen.json().data).toMatchObject({ activeWorkspaceId: other.workspaceId, role: 'ADMIN' });
  });

  test('GET /me role and activeWorkspaceId are strings for a user with a workspace (contract 2, 4.17)', async () => {
    const organizer = await createOrganizer(em(), { role: 'STAFF' });
    const expired = await createOrganizer(em(), { role: 'VIEWER', accessExpiresAt: new Date(Date.now() - 60_000) });
    const stranger = await createOrganizer(em());
    const cases = [
      { key: organizer.readKey, headers: {} },
      { key: organizer.readKey, headers: { 'x-workspace-id': stranger.workspaceId } },
      { key: organizer.readKey, headers: { 'x-workspace-id': organizer.workspaceId } },
      { key: expired.readKey, headers: {} },
    ];
    for (const { key, headers } of cases) {
      const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: { ...bearer(key), ...headers } });
      expect(me.statusCode).toBe(200);
      const data = me.json().data;
      expect(typeof data.role).toBe('string');
      expect(typeof data.activeWorkspaceId).toBe('string');
      expect(data.workspaces.map((w: { id: string }) => w.id)).toContain(data.activeWorkspaceId);
    }
  });

  test('POST /workspaces creates a workspace whose ADMIN is the caller', async () => {
    const organizer = await createOrganizer(em(), { role: 'VIEWER' });
    const created = await api.request({
      method: 'POST',
      url: '/api/v1/workspaces',
      headers: bearer(organizer.key),
      payload: { name: 'Festival Estéreo Picnic' },
    });
    expect(created.statusCode).toBe(201);
    const workspace = created.json().data;
    expect(workspace).toMatchObject({ name: 'Festival Estéreo Picnic', role: 'ADMIN', currency: 'COP' });
    expect(workspace.slug).toMatch(/^festival-estereo-picnic-/);
    const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(organizer.key) });
    expect(me.json().data.workspaces.map((w: { id: string }) => w.id)).toContain(workspace.id);

    const duplicate = await api.request({
      method: 'POST',
      url: '/api/v1/workspaces',
      headers: bearer(organizer.key),
      payload: { name: 'Again', slug: workspace.slug },
    });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().error.code).toBe('ALREADY_EXISTS');
  });
});
