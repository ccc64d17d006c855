import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, notFound } from '../../../domain/errors.js';
import { ROLES, type Role, roleAtLeast } from '../../../domain/roles.js';
import { isUuid, newId } from '../../../entities/ids.js';
import { User, WorkspaceMember } from '../../../entities/index.js';
import type { IUser } from '../../../entities/user.js';
import type { IWorkspaceMember } from '../../../entities/workspace-member.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, encodeCursor, PageQuerySchema } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema } from '../../http/schemas.js';
import { activeWorkspace, type WorkspaceAccess } from '../../plugins/auth.js';

/** Section of the dashboard these routes belong to; members restricted to other sections cannot manage staff. */
const STAFF_SECTION = 'staff';

export const StaffUserSchema = z
  .object({
    id: z.string().meta({ description: 'The user id (the same person in every workspace)' }),
    name: z.string(),
    email: z.string(),
    role: z.enum(ROLES).meta({ description: 'Role in this workspace' }),
    organizationId: z.string().nullable().meta({ description: 'The workspace (organization) id' }),
    workspaceId: z.string().optional(),
    workspaceName: z.string().optional(),
    createdAt: z.string().meta({ description: 'When this user was given access to this workspace' }),
  })
  .meta({ id: 'StaffUser' });

const StaffRevocationSchema = z
  .object({
    id: z.string().meta({ description: 'The user id' }),
    workspaceId: z.string(),
    revokedAt: z.string(),
  })
  .meta({ id: 'StaffRevocation' });

const SectionsSchema = z
  .array(z.string().trim().min(1).max(60))
  .max(50)
  .nullable()
  .meta({ description: 'Sections the user may use; null or omitted: every section' });

const CreateStaffBody = z.object({
  name: z
    .string()
    .trim()
    .min(1)
    .max(120)
    .meta({ description: "Used only when the email is new; an existing user's name is kept" }),
  email: z.email().max(254),
  role: z.enum(ROLES),
  sections: SectionsSchema.optional(),
  accessExpiresAt: IsoDateTimeSchema.optional().meta({ description: 'When the access ends; must be in the future' }),
});

const ChangeRoleBody = z.object({ role: z.enum(ROLES) });

const StaffListQuery = PageQuerySchema.extend({ role: z.enum(ROLES).optional() });

const toStaffUser = (member: IWorkspaceMember, user: IUser, workspace: WorkspaceAccess) => ({
  id: user.id,
  name: user.name,
  email: user.email,
  role: member.role,
  organizationId: workspace.workspaceId,
  workspaceId: workspace.workspaceId,
  workspaceName: workspace.name,
  createdAt: member.createdAt.toISOString(),
});

const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** Only a SUPER_ADMIN may grant SUPER_ADMIN, or change or revoke a SUPER_ADMIN (an ADMIN never acts above itself). */
function requireSuperAdminFor(callerRole: Role, targetRoles: Role[]): void {
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
async function lockMember(tx: EntityManager, workspaceId: string, userId: string): Promise<IWorkspaceMember> {
  if (!isUuid(userId)) throw notFound('Staff user');
  await tx.execute('select id from workspaces where id = ? for update', [workspaceId]);
  const member = await tx.findOne(WorkspaceMember, { workspace: workspaceId, user: userId, revokedAt: null });
  if (!member) throw notFound('Staff user');
  return member;
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

export const staffRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/staff',
    {
      config: organizer('ADMIN', STAFF_SECTION),
      schema: {
        tags: ['staff'],
        summary: 'List the users with access to the active workspace (newest first)',
        querystring: StaffListQuery,
        response: { 200: listOf(StaffUserSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const after = decodeCursor(request.query.cursor);
      const members = await request.em.find(
        WorkspaceMember,
        {
          workspace: workspace.workspaceId,
          revokedAt: null,
          ...(request.query.role ? { role: request.query.role } : {}),
          ...(after ? { id: { $lt: after } } : {}),
        },
        { orderBy: { id: 'desc' }, limit: request.query.limit + 1 },
      );
      const hasMore = members.length > request.query.limit;
      const page = hasMore ? members.slice(0, request.query.limit) : members;
      const users = await request.em.find(User, { id: { $in: page.map((member) => member.user) } });
      const byId = new Map(users.map((user) => [user.id, user]));
      const last = page[page.length - 1];
      return {
        data: page.flatMap((member) => {
          const user = byId.get(member.user);
          return user ? [toStaffUser(member, user, workspace)] : [];
        }),
        page: { nextCursor: hasMore && last ? encodeCursor(last.id) : null, hasMore },
        ...(request.warnings.length ? { warnings: request.warnings } : {}),
      };
    },
  );

  app.post(
    '/staff',
    {
      config: organizer('ADMIN', STAFF_SECTION),
      schema: {
        tags: ['staff'],
        summary: 'Give a user access to the active workspace, creating the user when the email is new',
        description:
          'An existing user (same email, case-insensitive) is added to this workspace with the role; the name sent is ' +
          'then ignored. 409 ALREADY_EXISTS when the user already has access here. Only a SUPER_ADMIN may grant ' +
          'SUPER_ADMIN.',
        body: CreateStaffBody,
        response: { 201: dataOf(StaffUserSchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const { role, sections, accessExpiresAt: expiry } = request.body;
      requireSuperAdminFor(workspace.role, [role]);
      const accessExpiresAt = expiry ? new Date(expiry) : null;
      if (accessExpiresAt && accessExpiresAt.getTime() <= Date.now()) {
        throw new AppError('VALIDATION_FAILED', 'accessExpiresAt must be in the future', {
          details: { fields: [{ field: 'body.accessExpiresAt', message: 'must be in the future' }] },
        });
      }
      const email = normalizeEmail(request.body.email);
      const alreadyMember = () =>
        new AppError('ALREADY_EXISTS', `${email} already has access to workspace ${workspace.name}`, {
          details: { fields: [{ field: 'body.email', message: 'already a member of this workspace' }] },
        });
      try {
        const { member, user } = await request.em.fork().transactional(async (tx) => {
          const [existing] = await tx.execute<{ id: string }[]>('select id from users where lower(email) = ? limit 1', [
            email,
          ]);
          const user = existing
            ? await tx.findOneOrFail(User, { id: existing.id })
            : tx.create(User, {
                id: newId(),
                name: request.body.name,
                email,
                defaultWorkspaceId: workspace.workspaceId,
              });
          if (!user.defaultWorkspaceId) user.defaultWorkspaceId = workspace.workspaceId;
          const previous = existing
            ? await tx.findOne(WorkspaceMember, { workspace: workspace.workspaceId, user: user.id })
            : null;
          if (previous && !previous.revokedAt) throw alreadyMember();
          const fields = { role, sections: sections ?? null, accessExpiresAt, revokedAt: null };
          // A revoked member is given access again on the same row (one row per user and workspace).
          const member = previous
            ? Object.assign(previous, fields)
            : tx.create(WorkspaceMember, { id: newId(), workspace: workspace.workspaceId, user: user.id, ...fields });
          return { member, user };
        });
        request.log.info({ staffUserId: user.id, role }, 'staff access granted');
        return reply.status(201).send({ data: toStaffUser(member, user, workspace) });
      } catch (error) {
        // Two requests adding the same person at once: the loser sees the winner's row.
        if (error instanceof UniqueConstraintViolationException) throw alreadyMember();
        throw error;
      }
    },
  );

  app.get(
    '/staff/:id',
    {
      config: organizer('ADMIN', STAFF_SECTION),
      schema: {
        tags: ['staff'],
        summary: 'A user with access to the active workspace, by user id',
        params: IdParamSchema,
        response: { 200: dataOf(StaffUserSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const member = isUuid(request.params.id)
        ? await request.em.findOne(WorkspaceMember, {
            workspace: workspace.workspaceId,
            user: request.params.id,
            revokedAt: null,
          })
        : null;
      if (!member) throw notFound('Staff user');
      const user = await request.em.findOneOrFail(User, { id: member.user });
      return { data: toStaffUser(member, user, workspace) };
    },
  );

  app.patch(
    '/staff/:id/role',
    {
      config: organizer('ADMIN', STAFF_SECTION),
      schema: {
        tags: ['staff'],
        summary: "Change a user's role in the active workspace; applies to their keys on the next request",
        description:
          'Only a SUPER_ADMIN may grant SUPER_ADMIN or change a SUPER_ADMIN (403). Demoting the last ADMIN of the ' +
          'workspace is refused with 409.',
        params: IdParamSchema,
        body: ChangeRoleBody,
        response: { 200: dataOf(StaffUserSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const { role } = request.body;
      const member = await request.em.fork().transactional(async (tx) => {
        const target = await lockMember(tx, workspace.workspaceId, request.params.id);
        requireSuperAdminFor(workspace.role, [role, target.role]);
        if (!roleAtLeast(role, 'ADMIN')) await keepLastAdmin(tx, target, 'demote');
        target.role = role;
        return target;
      });
      const user = await request.em.findOneOrFail(User, { id: member.user });
      request.log.info({ staffUserId: user.id, role }, 'staff role changed');
      return { data: toStaffUser(member, user, workspace) };
    },
  );

  app.delete(
    '/staff/:id',
    {
      config: organizer('ADMIN', STAFF_SECTION),
      schema: {
        tags: ['staff'],
        summary: "Revoke a user's access to the active workspace (their other workspaces are unaffected)",
        description:
          'Takes effect on the next request: the user and their API keys can no longer act in this workspace. ' +
          'Revoking the last ADMIN is refused with 409; only a SUPER_ADMIN may revoke a SUPER_ADMIN.',
        params: IdParamSchema,
        response: { 200: dataOf(StaffRevocationSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const member = await request.em.fork().transactional(async (tx) => {
        const target = await lockMember(tx, workspace.workspaceId, request.params.id);
        requireSuperAdminFor(workspace.role, [target.role]);
        await keepLastAdmin(tx, target, 'revoke');
        target.revokedAt = new Date();
        return target;
      });
      request.log.info({ staffUserId: member.user }, 'staff access revoked');
      return {
        data: { id: member.user, workspaceId: workspace.workspaceId, revokedAt: member.revokedAt!.toISOString() },
      };
    },
  );
};
