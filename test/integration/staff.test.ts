import { randomUUID } from 'node:crypto';
import type { Role } from '../../domain/roles.js';
import { newId } from '../../entities/ids.js';
import { User, WorkspaceMember } from '../../entities/index.js';
import { addMembership, bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { type InboxMessage, inbox } from '../support/purchase.js';
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
  'status',
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

const mailKey = (message: InboxMessage) => `${message.receivedAt}\n${message.text}`;

/** The token of the next invitation email to `email` that is not among `seen`. */
async function nextInvitationToken(email: string, seen: Set<string>): Promise<string> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    for (const message of await inbox(api.env.SANDBOX_URL, email.toLowerCase())) {
      const token = /\/invitations\/accept\?token=([A-Za-z0-9_-]+)/.exec(message.text)?.[1];
      if (token && /invited to the workspace/i.test(message.subject) && !seen.has(mailKey(message))) return token;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no invitation reached ${email}`);
}

/** POST /staff, and the token of the link it emailed. */
async function invite(admin: Organizer, payload: { email: string } & Record<string, unknown>) {
  const seen = new Set((await inbox(api.env.SANDBOX_URL, payload.email.toLowerCase())).map(mailKey));
  const response = await addStaff(admin, payload);
  if (response.statusCode !== 201) return { response, token: '' };
  return { response, token: await nextInvitationToken(payload.email, seen) };
}

const acceptPage = (token: string) => api.request({ method: 'GET', url: `/invitations/accept?token=${token}` });
const accept = (token: string) =>
  api.request({
    method: 'POST',
    url: '/invitations/accept',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token }).toString(),
  });

/** Invites the address and accepts from the emailed link, as the invited person does: what gave access before. */
async function grant(admin: Organizer, payload: { email: string } & Record<string, unknown>) {
  const { response, token } = await invite(admin, payload);
  expect(response.statusCode).toBe(201);
  const accepted = await accept(token);
  expect(accepted.statusCode).toBe(200);
  return response.json().data as { id: string };
}

const userIdOf = async (email: string) => (await em().findOneOrFail(User, { email: email.toLowerCase() })).id;

describe('staff CRUD (contract 4.10)', () => {
  test('POST /staff invites a new email: an INVITED row with the contract fields, access once the link is accepted', async () => {
    const admin = await createOrganizer(em());
    const email = newEmail();
    const { response: created, token } = await invite(admin, {
      name: 'Laura Taquilla',
      email: email.toUpperCase(),
      role: 'STAFF',
    });
    expect(created.statusCode).toBe(201);
    const invited = created.json().data;
    expect(Object.keys(invited).sort()).toEqual([...STAFF_USER_FIELDS, 'invitationExpiresAt'].sort());
    expect(invited).toEqual({
      id: expect.any(String),
      name: 'Laura Taquilla',
      email,
      role: 'STAFF',
      organizationId: admin.workspaceId,
      workspaceId: admin.workspaceId,
      workspaceName: admin.workspaceName,
      createdAt: expect.any(String),
      status: 'INVITED',
      invitationExpiresAt: expect.any(String),
    });
    // No account is made for the address until the person accepts.
    expect(await em().findOne(User, { email })).toBeNull();
    const read = await api.request({ method: 'GET', url: `/api/v1/staff/${invited.id}`, headers: as(admin) });
    expect(read.json().data).toEqual(invited);

    const page = await acceptPage(token);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(admin.workspaceName);
    const accepted = await accept(token);
    expect(accepted.statusCode).toBe(200);
    const userId = await userIdOf(email);
    const staff = (await api.request({ method: 'GET', url: `/api/v1/staff/${userId}`, headers: as(admin) })).json()
      .data;
    expect(Object.keys(staff).sort()).toEqual(STAFF_USER_FIELDS);
    expect(staff).toMatchObject({ id: userId, name: 'Laura Taquilla', email, role: 'STAFF', status: 'ACTIVE' });
    // The invitation is gone once accepted; the list shows the member.
    expect(
      (await api.request({ method: 'GET', url: `/api/v1/staff/${invited.id}`, headers: as(admin) })).statusCode,
    ).toBe(404);
    const list = await api.request({ method: 'GET', url: '/api/v1/staff', headers: as(admin) });
    expect(
      list
        .json()
        .data.map((row: { id: string }) => row.id)
        .sort(),
    ).toEqual([admin.userId, userId].sort());
  });

  test('inviting an existing account reveals nothing about it and changes nothing of theirs until they accept', async () => {
    const admin = await createOrganizer(em());
    const existing = await createOrganizer(em());
    const expiry = new Date(Date.now() + 7 * 86_400_000);
    const { response: created, token } = await invite(admin, {
      name: 'Another Name',
      email: existing.email,
      role: 'VIEWER',
      sections: ['events', 'sales'],
      accessExpiresAt: expiry.toISOString(),
    });
    expect(created.statusCode).toBe(201);
    const invited = created.json().data;
    // Not their real name, not their user id: the same answer an unknown address gets.
    expect(invited).toMatchObject({ name: 'Another Name', status: 'INVITED', role: 'VIEWER' });
    expect(invited.id).not.toBe(existing.userId);
    expect(JSON.stringify(created.json())).not.toContain(
      (await em().findOneOrFail(User, { id: existing.userId })).name,
    );
    // No access before accepting: their key cannot act in the inviting workspace.
    expect(await em().findOne(WorkspaceMember, { user: existing.userId, workspace: admin.workspaceId })).toBeNull();
    const before = await api.request({ method: 'GET', url: '/api/v1/me', headers: as(existing, admin.workspaceId) });
    expect(before.json().data.activeWorkspaceId).toBe(existing.workspaceId);

    expect((await accept(token)).statusCode).toBe(200);
    const user = await em().findOneOrFail(User, { id: existing.userId });
    expect(user.name).not.toBe('Another Name');
    expect(user.defaultWorkspaceId).toBe(existing.workspaceId);
    const member = await em().findOneOrFail(WorkspaceMember, { user: existing.userId, workspace: admin.workspaceId });
    expect(member.sections).toEqual(['events', 'sales']);
    expect(member.accessExpiresAt?.toISOString()).toBe(expiry.toISOString());
    // Their own workspace is untouched.
    const own = await em().findOneOrFail(WorkspaceMember, { user: existing.userId, workspace: existing.workspaceId });
    expect(own.role).toBe('ADMIN');
  });

  test('an onboarding account (no workspace yet) gets no default workspace from an invitation it has not accepted', async () => {
    const admin = await createOrganizer(em());
    const email = newEmail();
    const fork = em();
    const onboarding = fork.create(User, { id: newId(), name: 'Nueva Persona', email, defaultWorkspaceId: null });
    await fork.flush();
    const { response: created, token } = await invite(admin, { name: 'Whoever', email, role: 'ADMIN' });
    expect(created.statusCode).toBe(201);
    expect(created.json().data.name).toBe('Whoever');
    expect(JSON.stringify(created.json())).not.toContain('Nueva Persona');
    expect((await em().findOneOrFail(User, { id: onboarding.id })).defaultWorkspaceId).toBeNull();
    expect(await em().findOne(WorkspaceMember, { user: onboarding.id })).toBeNull();

    // Accepting is the person's choice: then the workspace is theirs to use, and their default as they had none.
    expect((await accept(token)).statusCode).toBe(200);
    expect((await em().findOneOrFail(User, { id: onboarding.id })).defaultWorkspaceId).toBe(admin.workspaceId);
    expect((await em().findOneOrFail(User, { id: onboarding.id })).name).toBe('Nueva Persona');
  });

  test('the link works once; a withdrawn or replaced invitation no longer works; GET never uses it up', async () => {
    const admin = await createOrganizer(em());
    const email = newEmail();
    const first = await invite(admin, { name: 'Pedro', email, role: 'STAFF' });
    // Invited again: only the newest link works.
    const second = await invite(admin, { name: 'Pedro', email, role: 'VIEWER' });
    expect(second.response.statusCode).toBe(201);
    expect((await acceptPage(first.token)).statusCode).toBe(410);
    expect((await accept(first.token)).statusCode).toBe(410);
    expect((await acceptPage(second.token)).statusCode).toBe(200);
    expect((await acceptPage(second.token)).statusCode).toBe(200);
    expect((await accept(second.token)).statusCode).toBe(200);
    expect((await accept(second.token)).statusCode).toBe(410);
    const member = await em().findOneOrFail(WorkspaceMember, {
      user: await userIdOf(email),
      workspace: admin.workspaceId,
    });
    expect(member.role).toBe('VIEWER');

    const other = newEmail();
    const withdrawn = await invite(admin, { name: 'Rosa', email: other, role: 'STAFF' });
    const deleted = await revoke(admin, withdrawn.response.json().data.id);
    expect(deleted.statusCode).toBe(200);
    expect((await accept(withdrawn.token)).statusCode).toBe(410);
    expect(await em().findOne(User, { email: other })).toBeNull();
    expect((await accept('')).statusCode).toBe(410);
  });

  test('POST /staff for someone who already has access is 409 ALREADY_EXISTS', async () => {
    const admin = await createOrganizer(em());
    const email = newEmail();
    await grant(admin, { name: 'Pedro', email, role: 'STAFF' });
    const again = await addStaff(admin, { name: 'Pedro', email: email.toUpperCase(), role: 'ADMIN' });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('ALREADY_EXISTS');
    const self = await addStaff(admin, { name: 'Me', email: admin.email, role: 'VIEWER' });
    expect(self.json().error.code).toBe('ALREADY_EXISTS');
  });

  test('a revoked user can be invited again, and accepting gives access back on the same row', async () => {
    const admin = await createOrganizer(em());
    const email = newEmail();
    await grant(admin, { name: 'Rosa', email, role: 'STAFF' });
    const id = await userIdOf(email);
    expect((await revoke(admin, id)).statusCode).toBe(200);
    await grant(admin, { name: 'Rosa', email, role: 'VIEWER' });
    const read = await api.request({ method: 'GET', url: `/api/v1/staff/${id}`, headers: as(admin) });
    expect(read.json().data).toMatchObject({ id, role: 'VIEWER', status: 'ACTIVE' });
    expect(await em().find(WorkspaceMember, { user: id, workspace: admin.workspaceId })).toHaveLength(1);
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
    await grant(admin, { name: 'X', email: person.email, role: 'VIEWER' });
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
    await grant(admin, { name: 'X', email: person.email, role: 'ADMIN' });
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

    // Asked for by name, the revoked workspace refuses with ACCESS_EXPIRED (contract: sections [] means revoked).
    const after = await api.request({ method: 'GET', url: '/api/v1/staff', headers: here });
    expect(after.statusCode).toBe(403);
    expect(after.json().error.code).toBe('ACCESS_EXPIRED');
    const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: as(person) });
    expect(me.json().data).toMatchObject({ activeWorkspaceId: person.workspaceId, role: 'ADMIN' });
    expect(me.json().data.workspaces).toEqual([
      expect.objectContaining({ id: person.workspaceId, sections: null }),
      expect.objectContaining({ id: admin.workspaceId, sections: [] }),
    ]);
    // Without the header the key acts in the workspace it still has, with no warning about the revoked one.
    const ownStaff = await api.request({ method: 'GET', url: '/api/v1/staff', headers: as(person) });
    expect(ownStaff.statusCode).toBe(200);
    expect(ownStaff.json().warnings).toBeUndefined();

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
    expect(after.json().error.code).toBe('ACCESS_EXPIRED');
    // The revoked row stays, with sections [] (contract: Current user), not an account with no workspace at all.
    const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: as(staff) });
    expect(me.statusCode).toBe(200);
    expect(me.json().data.activeWorkspaceId).toBe(admin.workspaceId);
    expect(me.json().data.workspaces).toEqual([expect.objectContaining({ id: admin.workspaceId, sections: [] })]);
    // Given access again, the same key acts there at once.
    await grant(admin, { name: 'Again', email: staff.email, role: 'STAFF' });
    const back = await api.request({ method: 'GET', url: '/api/v1/me', headers: as(staff) });
    expect(back.json().data.workspaces).toEqual([expect.objectContaining({ id: admin.workspaceId, sections: null })]);
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
