import { randomUUID } from 'node:crypto';
import type { Role } from '../../domain/roles.js';
import { User, WorkspaceMember } from '../../entities/index.js';
import { addMembership, bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
});

const em = () => api.orm.em.fork();

const STAFF_USER_FIELDS = [
  'createdAt',
  'email',
  'id',
  'name',
  'organizationId',
  'role',
  'workspaceId',
  'workspaceName',
].sort();

const as = (organizer: Organizer, workspaceId?: string) => ({
  ...bearer(organizer.key),
  ...(workspaceId ? { 'x-workspace-id': workspaceId } : {}),
});

const addStaff = (admin: Organizer, payload: Record<string, unknown>) =>
  api.request({ method: 'POST', url: '/api/v1/staff', headers: as(admin), payload });

const changeRole = (admin: Organizer, userId: string, role: Role) =>
  api.request({ method: 'PATCH', url: `/api/v1/staff/${userId}/role`, headers: as(admin), payload: { role } });

const revoke = (admin: Organizer, userId: string) =>
  api.request({ method: 'DELETE', url: `/api/v1/staff/${userId}`, headers: as(admin) });

const newEmail = () => `staff-${randomUUID().slice(0, 8)}@example.test`;

describe('staff CRUD (contract 4.10)', () => {
  test('POST /staff creates a user for a new email; the StaffUser has exactly the contract fields', async () => {
    const admin = await createOrganizer(em());
    const email = newEmail();
    const created = await addStaff(admin, { name: 'Laura Taquilla', email: email.toUpperCase(), role: 'STAFF' });
    expect(created.statusCode).toBe(201);
    const staff = created.json().data;
    expect(Object.keys(staff).sort()).toEqual(STAFF_USER_FIELDS);
    expect(staff).toEqual({
      id: expect.any(String),
      name: 'Laura Taquilla',
      email,
      role: 'STAFF',
      organizationId: admin.workspaceId,
      workspaceId: admin.workspaceId,
      workspaceName: admin.workspaceName,
      createdAt: expect.any(String),
    });

    const read = await api.request({ method: 'GET', url: `/api/v1/staff/${staff.id}`, headers: as(admin) });
    expect(read.statusCode).toBe(200);
    expect(read.json().data).toEqual(staff);

    const list = await api.request({ method: 'GET', url: '/api/v1/staff', headers: as(admin) });
    expect(list.statusCode).toBe(200);
    expect(
      list
        .json()
        .data.map((row: { id: string }) => row.id)
        .sort(),
    ).toEqual([admin.userId, staff.id].sort());
  });

  test('POST /staff for an existing user adds a membership and keeps their name; sections and expiry are stored', async () => {
    const admin = await createOrganizer(em());
    const existing = await createOrganizer(em());
    const expiry = new Date(Date.now() + 7 * 86_400_000);
    const created = await addStaff(admin, {
      name: 'Another Name',
      email: existing.email,
      role: 'VIEWER',
      sections: ['events', 'sales'],
      accessExpiresAt: expiry.toISOString(),
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().data).toMatchObject({ id: existing.userId, role: 'VIEWER', workspaceId: admin.workspaceId });
    const user = await em().findOneOrFail(User, { id: existing.userId });
    expect(user.name).not.toBe('Another Name');
    const member = await em().findOneOrFail(WorkspaceMember, { user: existing.userId, workspace: admin.workspaceId });
    expect(member.sections).toEqual(['events', 'sales']);
    expect(member.accessExpiresAt?.toISOString()).toBe(expiry.toISOString());
    // Their own workspace is untouched.
    const own = await em().findOneOrFail(WorkspaceMember, { user: existing.userId, workspace: existing.workspaceId });
    expect(own.role).toBe('ADMIN');
  });

  test('POST /staff for someone who already has access is 409 ALREADY_EXISTS', async () => {
    const admin = await createOrganizer(em());
    const email = newEmail();
    expect((await addStaff(admin, { name: 'Pedro', email, role: 'STAFF' })).statusCode).toBe(201);
    const again = await addStaff(admin, { name: 'Pedro', email: email.toUpperCase(), role: 'ADMIN' });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('ALREADY_EXISTS');
    const self = await addStaff(admin, { name: 'Me', email: admin.email, role: 'VIEWER' });
    expect(self.json().error.code).toBe('ALREADY_EXISTS');
  });

  test('a revoked user can be given access again', async () => {
    const admin = await createOrganizer(em());
    const email = newEmail();
    const { id } = (await addStaff(admin, { name: 'Rosa', email, role: 'STAFF' })).json().data;
    expect((await revoke(admin, id)).statusCode).toBe(200);
    const again = await addStaff(admin, { name: 'Rosa', email, role: 'VIEWER' });
    expect(again.statusCode).toBe(201);
    expect(again.json().data).toMatchObject({ id, role: 'VIEWER' });
  });

  test('GET /staff pages with limit and cursor and filters by role', async () => {
    const admin = await createOrganizer(em());
    const added: string[] = [];
    for (const role of ['STAFF', 'VIEWER', 'STAFF', 'MINCULTURA'] as Role[]) {
      added.push((await addStaff(admin, { name: `Persona ${role}`, email: newEmail(), role })).json().data.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const response = await api.request({
        method: 'GET',
        url: `/api/v1/staff?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        headers: as(admin),
      });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.data.length).toBeLessThanOrEqual(2);
      seen.push(...body.data.map((row: { id: string }) => row.id));
      cursor = body.page.hasMore ? body.page.nextCursor : null;
    } while (cursor);
    expect(seen).toEqual([...added.reverse(), admin.userId]);

    const staffOnly = await api.request({ method: 'GET', url: '/api/v1/staff?role=STAFF', headers: as(admin) });
    expect(staffOnly.json().data.map((row: { role: string }) => row.role)).toEqual(['STAFF', 'STAFF']);
    const badRole = await api.request({ method: 'GET', url: '/api/v1/staff?role=OWNER', headers: as(admin) });
    expect(badRole.statusCode).toBe(422);
  });

  test('an id that is not a UUID, an unknown user and a member of another workspace are 404', async () => {
    const admin = await createOrganizer(em());
    const stranger = await createOrganizer(em());
    for (const id of ['not-a-uuid', randomUUID(), stranger.userId]) {
      for (const response of [
        await api.request({ method: 'GET', url: `/api/v1/staff/${id}`, headers: as(admin) }),
        await changeRole(admin, id, 'VIEWER'),
        await revoke(admin, id),
      ]) {
        expect(response.statusCode).toBe(404);
        expect(response.json().error.code).toBe('NOT_FOUND');
      }
    }
  });

  test('invalid bodies are 422 naming the field', async () => {
    const admin = await createOrganizer(em());
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: 'X', email: 'not-an-email', role: 'STAFF' }, 'body.email'],
      [{ name: 'X', email: newEmail(), role: 'OWNER' }, 'body.role'],
      [
        { name: 'X', email: newEmail(), role: 'STAFF', accessExpiresAt: '2001-01-01T00:00:00Z' },
        'body.accessExpiresAt',
      ],
    ];
    for (const [payload, field] of cases) {
      const response = await addStaff(admin, payload);
      expect(response.statusCode).toBe(422);
      expect(response.json().error.details.fields[0].field).toBe(field);
    }
    const staff = await createOrganizer(em(), { workspaceId: admin.workspaceId, role: 'STAFF' });
    const badRole = await api.request({
      method: 'PATCH',
      url: `/api/v1/staff/${staff.userId}/role`,
      headers: as(admin),
      payload: { role: 'OWNER' },
    });
    expect(badRole.statusCode).toBe(422);
  });

  test('staff management needs the ADMIN role (403 INSUFFICIENT_ROLE below it)', async () => {
    const admin = await createOrganizer(em());
    for (const role of ['STAFF', 'VIEWER', 'MINCULTURA'] as Role[]) {
      const member = await createOrganizer(em(), { workspaceId: admin.workspaceId, role });
      const list = await api.request({ method: 'GET', url: '/api/v1/staff', headers: as(member) });
      expect(list.statusCode).toBe(403);
      expect(list.json().error.code).toBe('INSUFFICIENT_ROLE');
    }
  });
});

describe('role changes (PATCH /staff/{id}/role)', () => {
  test("a role change applies to the user's existing key on the next request", async () => {
    const admin = await createOrganizer(em());
    const person = await createOrganizer(em());
    await addStaff(admin, { name: 'X', email: person.email, role: 'VIEWER' });
    const inAdminWorkspace = as(person, admin.workspaceId);

    const before = await api.request({ method: 'GET', url: '/api/v1/staff', headers: inAdminWorkspace });
    expect(before.json().error.code).toBe('INSUFFICIENT_ROLE');

    const changed = await changeRole(admin, person.userId, 'ADMIN');
    expect(changed.statusCode).toBe(200);
    expect(changed.json().data).toMatchObject({ id: person.userId, role: 'ADMIN' });
    const after = await api.request({ method: 'GET', url: '/api/v1/staff', headers: inAdminWorkspace });
    expect(after.statusCode).toBe(200);

    await changeRole(admin, person.userId, 'STAFF');
    const demoted = await api.request({ method: 'GET', url: '/api/v1/staff', headers: inAdminWorkspace });
    expect(demoted.json().error.code).toBe('INSUFFICIENT_ROLE');
  });

  test('only a SUPER_ADMIN may grant SUPER_ADMIN, or change or revoke one (403 otherwise)', async () => {
    const admin = await createOrganizer(em());
    const staff = await createOrganizer(em(), { workspaceId: admin.workspaceId, role: 'STAFF' });
    const promote = await changeRole(admin, staff.userId, 'SUPER_ADMIN');
    expect(promote.statusCode).toBe(403);
    expect(promote.json().error.code).toBe('INSUFFICIENT_ROLE');
    const create = await addStaff(admin, { name: 'X', email: newEmail(), role: 'SUPER_ADMIN' });
    expect(create.statusCode).toBe(403);

    const superAdmin = await createOrganizer(em(), { workspaceId: admin.workspaceId, role: 'SUPER_ADMIN' });
    expect((await changeRole(admin, superAdmin.userId, 'VIEWER')).statusCode).toBe(403);
    expect((await revoke(admin, superAdmin.userId)).statusCode).toBe(403);

    const granted = await changeRole(superAdmin, staff.userId, 'SUPER_ADMIN');
    expect(granted.statusCode).toBe(200);
    expect(granted.json().data.role).toBe('SUPER_ADMIN');
  });

  test('the last ADMIN of a workspace cannot be demoted or revoked (409); with a second ADMIN they can', async () => {
    const admin = await createOrganizer(em());
    for (const response of [await changeRole(admin, admin.userId, 'STAFF'), await revoke(admin, admin.userId)]) {
      expect(response.statusCode).toBe(409);
      expect(response.json().error).toMatchObject({ code: 'CONFLICT', details: { reason: 'last_admin' } });
    }
    // An ADMIN whose access has expired or does not cover staff cannot take over, so does not count.
    await createOrganizer(em(), {
      workspaceId: admin.workspaceId,
      role: 'ADMIN',
      accessExpiresAt: new Date(Date.now() - 1000),
    });
    await createOrganizer(em(), { workspaceId: admin.workspaceId, role: 'ADMIN', sections: ['events'] });
    expect((await changeRole(admin, admin.userId, 'STAFF')).statusCode).toBe(409);

    const second = await createOrganizer(em(), { workspaceId: admin.workspaceId, role: 'ADMIN' });
    const demoted = await changeRole(second, admin.userId, 'STAFF');
    expect(demoted.statusCode).toBe(200);
    expect((await revoke(second, second.userId)).statusCode).toBe(409);
  });

  test('two ADMINs demoting each other at the same time leave one ADMIN, never none', async () => {
    const first = await createOrganizer(em());
    const second = await createOrganizer(em(), { workspaceId: first.workspaceId, role: 'ADMIN' });
    const results = await Promise.all([
      changeRole(first, second.userId, 'VIEWER'),
      changeRole(second, first.userId, 'VIEWER'),
    ]);
    // The loser is refused either by the last-admin rule (409) or, if it arrives after the winner committed, by
    // its own new role (403); what matters is that exactly one change went through.
    const statuses = results.map((response) => response.statusCode).sort();
    expect(statuses[0]).toBe(200);
    expect([403, 409]).toContain(statuses[1]);
    const admins = await em().find(WorkspaceMember, { workspace: first.workspaceId, role: 'ADMIN' });
    expect(admins).toHaveLength(1);
  });
});

describe('revocation (DELETE /staff/{id})', () => {
  test('revokes this workspace only: the key stops acting here at once, the other workspace is unaffected', async () => {
    const admin = await createOrganizer(em());
    const person = await createOrganizer(em());
    await addStaff(admin, { name: 'X', email: person.email, role: 'ADMIN' });
    const here = as(person, admin.workspaceId);
    const before = await api.request({ method: 'GET', url: '/api/v1/me', headers: here });
    expect(before.json().data.activeWorkspaceId).toBe(admin.workspaceId);

    const revoked = await revoke(admin, person.userId);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().data).toEqual({
      id: person.userId,
      workspaceId: admin.workspaceId,
      revokedAt: expect.any(String),
    });

    // The revoked workspace is no longer reachable: the request is not acted on there.
    const after = await api.request({ method: 'GET', url: '/api/v1/staff', headers: here });
    expect(after.statusCode).toBe(200);
    expect(after.json().warnings).toEqual([expect.objectContaining({ code: 'WORKSPACE_NOT_ACCESSIBLE' })]);
    expect(after.json().data.every((row: { workspaceId: string }) => row.workspaceId === person.workspaceId)).toBe(
      true,
    );
    const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: here });
    expect(me.json().data.workspaces.map((w: { id: string }) => w.id)).toEqual([person.workspaceId]);

    // Gone from this workspace's staff, still ADMIN of their own.
    const read = await api.request({ method: 'GET', url: `/api/v1/staff/${person.userId}`, headers: as(admin) });
    expect(read.statusCode).toBe(404);
    const own = await api.request({ method: 'GET', url: `/api/v1/staff/${person.userId}`, headers: as(person) });
    expect(own.json().data).toMatchObject({ role: 'ADMIN', workspaceId: person.workspaceId });
  });

  test('a user revoked from their only workspace can no longer act in any workspace', async () => {
    const admin = await createOrganizer(em());
    const staff = await createOrganizer(em(), { workspaceId: admin.workspaceId, role: 'ADMIN' });
    expect((await revoke(admin, staff.userId)).statusCode).toBe(200);
    const after = await api.request({ method: 'GET', url: '/api/v1/staff', headers: as(staff) });
    expect(after.statusCode).toBe(403);
  });

  test('a user with two workspaces revoked from one keeps the other with its role', async () => {
    const first = await createOrganizer(em());
    const second = await createOrganizer(em());
    const person = await createOrganizer(em(), { workspaceId: first.workspaceId, role: 'STAFF' });
    await addMembership(em(), person.userId, second.workspaceId, 'ADMIN');
    expect((await revoke(first, person.userId)).statusCode).toBe(200);
    const inSecond = await api.request({
      method: 'GET',
      url: '/api/v1/staff',
      headers: as(person, second.workspaceId),
    });
    expect(inSecond.statusCode).toBe(200);
    expect(inSecond.json().warnings).toBeUndefined();
    const stillThere = await api.request({ method: 'GET', url: `/api/v1/staff/${person.userId}`, headers: as(second) });
    expect(stillThere.json().data.role).toBe('ADMIN');
  });
});
