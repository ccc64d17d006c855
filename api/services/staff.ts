/**
 * Staff of a workspace (contract 4.10): who may grant, change and revoke which role, the last-ADMIN rule, and the
 * invitation a new member accepts. POST /staff never gives access by itself: it records an invitation and emails the
 * address a single-use link; until the person opens it and accepts, nothing about the account behind the address is
 * revealed to the inviter (the answer carries the name the inviter typed) and nothing of theirs changes (no account
 * created, no default workspace set, no membership). Routes keep the HTTP side.
 */
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../../domain/errors.js';
import { type Role, roleAtLeast } from '../../domain/roles.js';
import { hashSecret } from '../../domain/secret-hash.js';
import { isUuid, newId } from '../../entities/ids.js';
import { StaffInvitation, User, Workspace, WorkspaceMember } from '../../entities/index.js';
import type { IStaffInvitation } from '../../entities/staff-invitation.js';
import type { IUser } from '../../entities/user.js';
import type { IWorkspaceMember } from '../../entities/workspace-member.js';

/** Section of the dashboard staff management belongs to; members restricted to other sections cannot manage staff. */
export const STAFF_SECTION = 'staff';

/** How long an emailed invitation link works. */
export const STAFF_INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/** A staff row as the routes show it: an ACTIVE member (their account) or an INVITED address (the inviter's words). */
export type StaffEntry =
  | { status: 'ACTIVE'; member: IWorkspaceMember; user: IUser }
  | { status: 'INVITED'; invitation: IStaffInvitation };

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** Only a SUPER_ADMIN may grant SUPER_ADMIN, or change or revoke a SUPER_ADMIN (an ADMIN never acts above itself). */
export function requireSuperAdminFor(callerRole: Role, targetRoles: Role[]): void {
  if (targetRoles.includes('SUPER_ADMIN') && callerRole !== 'SUPER_ADMIN') {
    throw new AppError('INSUFFICIENT_ROLE', 'Only a SUPER_ADMIN may grant, change or revoke the SUPER_ADMIN role', {
      details: { requiredRole: 'SUPER_ADMIN', role: callerRole },
    });
  }
}

/** An ADMIN-level member who can still manage staff: not revoked, not expired, and the staff section covered. */
const managesStaff = (member: IWorkspaceMember, now: number): boolean =>
  roleAtLeast(member.role, 'ADMIN') &&
  !member.revokedAt &&
  (!member.accessExpiresAt || member.accessExpiresAt.getTime() > now) &&
  (!member.sections || member.sections.includes(STAFF_SECTION));

/**
 * Loads the live membership of `userId` in the workspace under a lock on the workspace row, so two admins
 * demoting or revoking each other at the same time are serialized and cannot leave the workspace without one.
 */
async function lockMember(tx: EntityManager, workspaceId: string, userId: string): Promise<IWorkspaceMember | null> {
  if (!isUuid(userId)) return null;
  await tx.execute('select id from workspaces where id = ? for update', [workspaceId]);
  return tx.findOne(WorkspaceMember, { workspace: workspaceId, user: userId, revokedAt: null });
}

/** Refuses a change that would leave the workspace with no ADMIN able to manage staff (409). */
async function keepLastAdmin(tx: EntityManager, target: IWorkspaceMember, action: string): Promise<void> {
  const now = Date.now();
  if (!managesStaff(target, now)) return;
  const admins = await tx.find(WorkspaceMember, {
    workspace: target.workspace,
    revokedAt: null,
    role: { $in: ['ADMIN', 'SUPER_ADMIN'] },
  });
  if (admins.filter((member) => managesStaff(member, now)).length <= 1) {
    throw new AppError('CONFLICT', `Cannot ${action} the last ADMIN of this workspace; make someone else ADMIN first`, {
      details: { reason: 'last_admin' },
    });
  }
}

/** The pending-invitation condition: not accepted, not withdrawn, not expired. */
const pending = () => ({ acceptedAt: null, cancelledAt: null, expiresAt: { $gt: new Date() } });

export interface InviteInput {
  workspaceId: string;
  workspaceName: string;
  callerRole: Role;
  invitedBy: string;
  name: string;
  email: string;
  role: Role;
  sections: string[] | null;
  accessExpiresAt: Date | null;
}

/**
 * Records an invitation (the caller emails it). 409 ALREADY_EXISTS when the address already has live access here
 * (which this workspace's admins can see anyway); an earlier pending invitation of the address is replaced, so only
 * the newest link works. Nothing outside this workspace is read beyond that, and nothing at all is changed.
 */
export async function inviteStaff(em: EntityManager, input: InviteInput): Promise<IStaffInvitation> {
  requireSuperAdminFor(input.callerRole, [input.role]);
  if (input.accessExpiresAt && input.accessExpiresAt.getTime() <= Date.now()) {
    throw new AppError('VALIDATION_FAILED', 'accessExpiresAt must be in the future', {
      details: { fields: [{ field: 'body.accessExpiresAt', message: 'must be in the future' }] },
    });
  }
  const email = normalizeEmail(input.email);
  return em.fork().transactional(async (tx) => {
    await tx.execute('select id from workspaces where id = ? for update', [input.workspaceId]);
    const [member] = await tx.execute<{ id: string }[]>(
      `select m.id from workspace_members m join users u on u.id = m.user_id
        where m.workspace_id = ? and lower(u.email) = ? and m.revoked_at is null limit 1`,
      [input.workspaceId, email],
    );
    if (member) {
      throw new AppError('ALREADY_EXISTS', `${email} already has access to workspace ${input.workspaceName}`, {
        details: { fields: [{ field: 'body.email', message: 'already a member of this workspace' }] },
      });
    }
    await tx.nativeUpdate(
      StaffInvitation,
      { workspace: input.workspaceId, email, acceptedAt: null, cancelledAt: null },
      { cancelledAt: new Date() },
    );
    return tx.create(StaffInvitation, {
      id: newId(),
      workspace: input.workspaceId,
      email,
      name: input.name,
      role: input.role,
      sections: input.sections,
      accessExpiresAt: input.accessExpiresAt,
      invitedBy: input.invitedBy,
      tokenHash: null,
      expiresAt: new Date(Date.now() + STAFF_INVITATION_TTL_MS),
      acceptedAt: null,
      cancelledAt: null,
      createdAt: new Date(),
    });
  });
}

/** A member (by user id) or a pending invitation (by its id) of the workspace; 404 otherwise. */
export async function findStaff(em: EntityManager, workspaceId: string, id: string): Promise<StaffEntry> {
  if (!isUuid(id)) throw notFound('Staff user');
  const member = await em.findOne(WorkspaceMember, { workspace: workspaceId, user: id, revokedAt: null });
  if (member) return { status: 'ACTIVE', member, user: await em.findOneOrFail(User, { id: member.user }) };
  const invitation = await em.findOne(StaffInvitation, { id, workspace: workspaceId, ...pending() });
  if (invitation) return { status: 'INVITED', invitation };
  throw notFound('Staff user');
}

/**
 * One page of the workspace's staff, newest first: live members and pending invitations together (ids are
 * time-ordered UUIDs, so one keyset over both keeps the order stable).
 */
export async function listStaff(
  em: EntityManager,
  input: { workspaceId: string; role?: Role; after: string | null; limit: number },
): Promise<{ entries: StaffEntry[]; hasMore: boolean; lastId: string | null }> {
  const common = {
    workspace: input.workspaceId,
    ...(input.role ? { role: input.role } : {}),
    ...(input.after ? { id: { $lt: input.after } } : {}),
  };
  const options = { orderBy: { id: 'desc' as const }, limit: input.limit + 1 };
  const [members, invitations] = await Promise.all([
    em.find(WorkspaceMember, { ...common, revokedAt: null }, options),
    em.fork().find(StaffInvitation, { ...common, ...pending() }, options),
  ]);
  const users = await em.find(User, { id: { $in: members.map((member) => member.user) } });
  const byId = new Map(users.map((user) => [user.id, user]));
  const rows: Array<{ id: string; entry: StaffEntry }> = [
    ...members.flatMap((member) => {
      const user = byId.get(member.user);
      return user ? [{ id: member.id, entry: { status: 'ACTIVE' as const, member, user } }] : [];
    }),
    ...invitations.map((invitation) => ({ id: invitation.id, entry: { status: 'INVITED' as const, invitation } })),
  ].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  const hasMore = rows.length > input.limit;
  const page = rows.slice(0, input.limit);
  return { entries: page.map((row) => row.entry), hasMore, lastId: page[page.length - 1]?.id ?? null };
}

/** PATCH /staff/{id}/role: members only (an invitation is withdrawn and sent again instead). */
export async function changeStaffRole(
  em: EntityManager,
  input: { workspaceId: string; callerRole: Role; userId: string; role: Role },
): Promise<{ member: IWorkspaceMember; user: IUser }> {
  const member = await em.fork().transactional(async (tx) => {
    const target = await lockMember(tx, input.workspaceId, input.userId);
    if (!target) throw notFound('Staff user');
    requireSuperAdminFor(input.callerRole, [input.role, target.role]);
    if (!roleAtLeast(input.role, 'ADMIN')) await keepLastAdmin(tx, target, 'demote');
    target.role = input.role;
    return target;
  });
  return { member, user: await em.findOneOrFail(User, { id: member.user }) };
}

/**
 * DELETE /staff/{id}: revokes a member's access here (their row stays, with `sections: []`), or withdraws a pending
 * invitation (its link stops working).
 */
export async function revokeStaff(
  em: EntityManager,
  input: { workspaceId: string; callerRole: Role; id: string },
): Promise<{ id: string; revokedAt: Date; invitation: boolean }> {
  return em.fork().transactional(async (tx) => {
    const target = await lockMember(tx, input.workspaceId, input.id);
    if (target) {
      requireSuperAdminFor(input.callerRole, [target.role]);
      await keepLastAdmin(tx, target, 'revoke');
      target.revokedAt = new Date();
      return { id: target.user, revokedAt: target.revokedAt, invitation: false };
    }
    const invitation = isUuid(input.id)
      ? await tx.findOne(StaffInvitation, { id: input.id, workspace: input.workspaceId, ...pending() })
      : null;
    if (!invitation) throw notFound('Staff user');
    requireSuperAdminFor(input.callerRole, [invitation.role]);
    invitation.cancelledAt = new Date();
    return { id: invitation.id, revokedAt: invitation.cancelledAt, invitation: true };
  });
}

/** What the invitation email says, and the secret of its link (made here, so it never enters workflow history). */
export interface InvitationMail {
  email: string;
  token: string;
  workspaceName: string;
  role: Role;
  inviterEmail: string | null;
  expiresAt: Date;
}

/**
 * Gives a pending invitation a fresh link token (only its hash is stored) for the email about to be sent; an earlier
 * token of the same invitation stops working. Null when the invitation was accepted, withdrawn or expired meanwhile.
 */
export async function issueInvitationToken(em: EntityManager, invitationId: string): Promise<InvitationMail | null> {
  return em.fork().transactional(async (tx) => {
    const invitation = await tx.findOne(StaffInvitation, { id: invitationId, ...pending() });
    if (!invitation) return null;
    const token = randomBytes(32).toString('base64url');
    invitation.tokenHash = hashSecret(token);
    const workspace = await tx.findOneOrFail(Workspace, { id: invitation.workspace }, { filters: false });
    const inviter = invitation.invitedBy ? await tx.findOne(User, { id: invitation.invitedBy }) : null;
    return {
      email: invitation.email,
      token,
      workspaceName: workspace.name,
      role: invitation.role,
      inviterEmail: inviter?.email ?? null,
      expiresAt: invitation.expiresAt,
    };
  });
}

/** The pending invitation a link token opens, with its workspace's name; null when unknown, used, withdrawn or expired. */
export async function openInvitation(
  em: EntityManager,
  token: string,
): Promise<{ invitation: IStaffInvitation; workspaceName: string } | null> {
  if (token === '') return null;
  const fork = em.fork();
  const invitation = await fork.findOne(StaffInvitation, { tokenHash: hashSecret(token), ...pending() });
  if (!invitation) return null;
  const workspace = await fork.findOne(Workspace, { id: invitation.workspace }, { filters: false });
  return workspace ? { invitation, workspaceName: workspace.name } : null;
}

/**
 * Accepts an invitation from its emailed link, once. Opening the link proves the address, so the person's account
 * is created now when the address has none (with the name the inviter typed, which they can change), their
 * membership is created (or a revoked one given back), and the workspace becomes their default only if they had
 * none. Null: the link is unknown, used, withdrawn or expired.
 */
export async function acceptStaffInvitation(
  em: EntityManager,
  token: string,
): Promise<{ userId: string; workspaceId: string; workspaceName: string; role: Role } | null> {
  if (token === '') return null;
  return em.fork().transactional(async (tx) => {
    const [claimed] = await tx.execute<{ id: string }[]>(
      `update staff_invitations set accepted_at = now()
        where token_hash = ? and accepted_at is null and cancelled_at is null and expires_at > now() returning id`,
      [hashSecret(token)],
    );
    if (!claimed) return null;
    const invitation = await tx.findOneOrFail(StaffInvitation, { id: claimed.id });
    await tx.execute('select id from workspaces where id = ? for update', [invitation.workspace]);
    // On conflict the existing account wins; nothing about it changes here but what the invitation grants.
    await tx.execute(
      `insert into users (id, created_at, updated_at, name, email, default_workspace_id)
       values (?, now(), now(), ?, ?, null) on conflict (email) do nothing`,
      [newId(), invitation.name, invitation.email],
    );
    const [found] = await tx.execute<{ id: string }[]>('select id from users where lower(email) = ? limit 1', [
      invitation.email,
    ]);
    const user = await tx.findOneOrFail(User, { id: found?.id ?? '' });
    const grant = {
      role: invitation.role,
      sections: invitation.sections ?? null,
      accessExpiresAt: invitation.accessExpiresAt ?? null,
      revokedAt: null,
    };
    const previous = await tx.findOne(WorkspaceMember, { workspace: invitation.workspace, user: user.id });
    // One row per user and workspace: a revoked member gets access back on the same row; a live one keeps theirs.
    if (!previous) {
      tx.create(WorkspaceMember, { id: newId(), workspace: invitation.workspace, user: user.id, ...grant });
    } else if (previous.revokedAt) {
      Object.assign(previous, grant);
    }
    if (!user.defaultWorkspaceId) user.defaultWorkspaceId = invitation.workspace;
    const workspace = await tx.findOneOrFail(Workspace, { id: invitation.workspace }, { filters: false });
    return {
      userId: user.id,
      workspaceId: workspace.id,
      workspaceName: workspace.name,
      role: previous && !previous.revokedAt ? previous.role : invitation.role,
    };
  });
}
