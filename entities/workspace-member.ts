import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ROLES } from '../domain/roles.js';
import { baseProperties } from './common.js';
import { User } from './user.js';
import { Workspace } from './workspace.js';

/** A user's access to one workspace: the role, and optionally the sections and the date the access ends. */
export const WorkspaceMember = defineEntity({
  name: 'WorkspaceMember',
  tableName: 'workspace_members',
  uniques: [{ properties: ['workspace', 'user'] }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    user: () => p.manyToOne(User).mapToPk().deleteRule('cascade').index(),
    role: p.enum(ROLES),
    /** null: unrestricted; []: access expired or revoked; otherwise the sections covered. */
    sections: p.json<string[] | null>().nullable(),
    accessExpiresAt: p.datetime().columnType('timestamptz').nullable(),
    revokedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IWorkspaceMember = InferEntity<typeof WorkspaceMember>;
