import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ROLES } from '../domain/roles.js';
import { User } from './user.js';
import { Workspace } from './workspace.js';

/**
 * An invitation to a workspace made by POST /staff, waiting for the invited person to accept it from the emailed
 * link. Until then nothing about the account behind the address is read or changed: the name is the one the inviter
 * typed, no `users` row is created and no default workspace is set. Accepting creates the membership (and the account
 * when the address has none). Only the link token's hash is kept; the link works once and expires.
 */
export const StaffInvitation = defineEntity({
  name: 'StaffInvitation',
  tableName: 'staff_invitations',
  indexes: [{ name: 'staff_invitations_workspace_email', properties: ['workspace', 'email'] }],
  properties: {
    id: p.string().columnType('uuid').primary(),
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    /** Lower-cased, as typed by the inviter. */
    email: p.string().length(254),
    /** The name the inviter typed; shown until the invitation is accepted (the account's own name never is). */
    name: p.string().length(120),
    role: p.enum(ROLES),
    sections: p.json<string[] | null>().nullable(),
    accessExpiresAt: p.datetime().columnType('timestamptz').nullable(),
    invitedBy: () => p.manyToOne(User).mapToPk().deleteRule('set null').nullable(),
    /** Set when the email is sent (the token is made and mailed inside one activity, never in workflow history). */
    tokenHash: p.string().length(64).nullable().unique(),
    expiresAt: p.datetime().columnType('timestamptz'),
    acceptedAt: p.datetime().columnType('timestamptz').nullable(),
    /** Withdrawn by DELETE /staff/{id} or replaced by a newer invitation of the same address. */
    cancelledAt: p.datetime().columnType('timestamptz').nullable(),
    createdAt: p.datetime().columnType('timestamptz'),
  },
});
export type IStaffInvitation = InferEntity<typeof StaffInvitation>;
