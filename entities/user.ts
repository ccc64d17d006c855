import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties } from './common.js';

/** A person who operates workspaces (organizer side). Buyers are a separate aggregate. */
export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    ...baseProperties,
    name: p.string().length(120),
    email: p.string().length(254).unique(),
    /** Workspace used when a request names none (contract 5.5). */
    defaultWorkspaceId: p.string().columnType('uuid').nullable(),
  },
});
export type IUser = InferEntity<typeof User>;
