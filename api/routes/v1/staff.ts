import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ROLES } from '../../../domain/roles.js';
import { organizerAccountEmailWorkflowId } from '../../../workflows/organizer-account-definitions.js';
import type { organizerAccountEmail } from '../../../workflows/organizer-account-email.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, encodeCursor, PageQuerySchema } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema } from '../../http/schemas.js';
import { activeWorkspace, type WorkspaceAccess } from '../../plugins/auth.js';
import {
  changeStaffRole,
  findStaff,
  inviteStaff,
  listStaff,
  revokeStaff,
  STAFF_SECTION,
  type StaffEntry,
} from '../../services/staff.js';
import type { ApiServices } from '../../services.js';

export const StaffUserSchema = z
  .object({
    id: z.string().meta({
      description: 'The user id (the same person in every workspace); for an INVITED row, the id of the invitation',
    }),
    name: z.string().meta({
      description: "The user's name; for an INVITED row, the name the inviter typed (the account is not revealed)",
    }),
    email: z.string(),
    role: z.enum(ROLES).meta({ description: 'Role in this workspace (granted when the invitation is accepted)' }),
    organizationId: z.string().nullable().meta({ description: 'The workspace (organization) id' }),
    workspaceId: z.string().optional(),
    workspaceName: z.string().optional(),
    createdAt: z.string().meta({ description: 'When this user was given access to this workspace, or was invited' }),
    status: z
      .enum(['ACTIVE', 'INVITED'])
      .optional()
      .meta({
        description:
          'ACTIVE: has access. INVITED: emailed an invitation link; no access (and nothing of their account shown) ' +
          'until they accept it',
      }),
    invitationExpiresAt: z
      .string()
      .optional()
      .meta({ description: 'INVITED only: when the emailed link stops working' }),
  })
  .meta({ id: 'StaffUser' });

const StaffRevocationSchema = z
  .object({
    id: z.string().meta({ description: 'The user id, or the id of the withdrawn invitation' }),
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
    .meta({ description: 'How to address the person in the invitation (their account, if any, keeps its own name)' }),
  email: z.email().max(254),
  role: z.enum(ROLES),
  sections: SectionsSchema.optional(),
  accessExpiresAt: IsoDateTimeSchema.optional().meta({ description: 'When the access ends; must be in the future' }),
});

const ChangeRoleBody = z.object({ role: z.enum(ROLES) });

const StaffListQuery = PageQuerySchema.extend({ role: z.enum(ROLES).optional() });

const toStaffUser = (entry: StaffEntry, workspace: WorkspaceAccess) => {
  const place = {
    organizationId: workspace.workspaceId,
    workspaceId: workspace.workspaceId,
    workspaceName: workspace.name,
  };
  if (entry.status === 'INVITED') {
    const { invitation } = entry;
    return {
      id: invitation.id,
      name: invitation.name,
      email: invitation.email,
      role: invitation.role,
      ...place,
      createdAt: invitation.createdAt.toISOString(),
      status: 'INVITED' as const,
      invitationExpiresAt: invitation.expiresAt.toISOString(),
    };
  }
  const { member, user } = entry;
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    role: member.role,
    ...place,
    createdAt: member.createdAt.toISOString(),
    status: 'ACTIVE' as const,
  };
};

export const staffRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.get(
    '/staff',
    {
      config: organizer('ADMIN', STAFF_SECTION),
      schema: {
        tags: ['staff'],
        summary: 'List the users with access to the active workspace, and pending invitations (newest first)',
        querystring: StaffListQuery,
        response: { 200: listOf(StaffUserSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const { entries, hasMore, lastId } = await listStaff(request.em, {
        workspaceId: workspace.workspaceId,
        ...(request.query.role ? { role: request.query.role } : {}),
        after: decodeCursor(request.query.cursor) ?? null,
        limit: request.query.limit,
      });
      return {
        data: entries.map((entry) => toStaffUser(entry, workspace)),
        page: { nextCursor: hasMore && lastId ? encodeCursor(lastId) : null, hasMore },
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
        summary: 'Invite someone to the active workspace by email; they get access once they accept',
        description:
          'Emails the address a single-use link (valid 7 days). The answer is an INVITED row with the name you sent ' +
          'and the id of the invitation, whether or not the address has an account; no access is given and nothing ' +
          'of their account changes until they open the link and accept. Inviting the address again replaces the ' +
          'earlier link; DELETE /staff/{id} withdraws it. 409 ALREADY_EXISTS when the address already has access ' +
          'here. Only a SUPER_ADMIN may invite a SUPER_ADMIN.',
        body: CreateStaffBody,
        response: { 201: dataOf(StaffUserSchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const { name, email, role, sections, accessExpiresAt } = request.body;
      const invitation = await inviteStaff(request.em, {
        workspaceId: workspace.workspaceId,
        workspaceName: workspace.name,
        callerRole: workspace.role,
        invitedBy: workspace.userId,
        name,
        email,
        role,
        sections: sections ?? null,
        accessExpiresAt: accessExpiresAt ? new Date(accessExpiresAt) : null,
      });
      await services.temporal.workflow.start<typeof organizerAccountEmail>('organizerAccountEmail', {
        taskQueue: services.env.TEMPORAL_TASK_QUEUE,
        workflowId: organizerAccountEmailWorkflowId(invitation.id),
        args: [{ kind: 'staff-invitation', invitationId: invitation.id, publicOrigin: services.env.PUBLIC_ORIGIN }],
        workflowExecutionTimeout: '10 minutes',
      });
      request.log.info({ invitationId: invitation.id, role }, 'staff invited');
      return reply.status(201).send({ data: toStaffUser({ status: 'INVITED', invitation }, workspace) });
    },
  );

  app.get(
    '/staff/:id',
    {
      config: organizer('ADMIN', STAFF_SECTION),
      schema: {
        tags: ['staff'],
        summary: 'A user with access to the active workspace (by user id), or a pending invitation (by its id)',
        params: IdParamSchema,
        response: { 200: dataOf(StaffUserSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      return { data: toStaffUser(await findStaff(request.em, workspace.workspaceId, request.params.id), workspace) };
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
          'workspace is refused with 409. A pending invitation is not changed here (404): invite the address again.',
        params: IdParamSchema,
        body: ChangeRoleBody,
        response: { 200: dataOf(StaffUserSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const { role } = request.body;
      const { member, user } = await changeStaffRole(request.em, {
        workspaceId: workspace.workspaceId,
        callerRole: workspace.role,
        userId: request.params.id,
        role,
      });
      request.log.info({ staffUserId: user.id, role }, 'staff role changed');
      return { data: toStaffUser({ status: 'ACTIVE', member, user }, workspace) };
    },
  );

  app.delete(
    '/staff/:id',
    {
      config: organizer('ADMIN', STAFF_SECTION),
      schema: {
        tags: ['staff'],
        summary: "Revoke a user's access to the active workspace, or withdraw a pending invitation",
        description:
          'Takes effect on the next request: the user and their API keys can no longer act in this workspace ' +
          '(their other workspaces are unaffected); a withdrawn invitation link stops working. Revoking the last ' +
          'ADMIN is refused with 409; only a SUPER_ADMIN may revoke a SUPER_ADMIN.',
        params: IdParamSchema,
        response: { 200: dataOf(StaffRevocationSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const revoked = await revokeStaff(request.em, {
        workspaceId: workspace.workspaceId,
        callerRole: workspace.role,
        id: request.params.id,
      });
      request.log.info(
        { [revoked.invitation ? 'invitationId' : 'staffUserId']: revoked.id },
        revoked.invitation ? 'staff invitation withdrawn' : 'staff access revoked',
      );
      return {
        data: { id: revoked.id, workspaceId: workspace.workspaceId, revokedAt: revoked.revokedAt.toISOString() },
      };
    },
  );
};
