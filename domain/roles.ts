/** Workspace roles, ordered by what they may do (contract part 5.4). */
export const ROLES = ['VIEWER', 'STAFF', 'ADMIN', 'SUPER_ADMIN', 'MINCULTURA'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Rank used for "minimum role" checks. MINCULTURA is the culture ministry's auditor: it reads like a VIEWER
 * and never writes, so it ranks with VIEWER. SUPER_ADMIN is the platform operator and outranks ADMIN.
 */
const RANK: Record<Role, number> = { MINCULTURA: 10, VIEWER: 10, STAFF: 20, ADMIN: 30, SUPER_ADMIN: 40 };

export const roleAtLeast = (role: Role, minimum: Role): boolean => RANK[role] >= RANK[minimum];

export const SCOPES = ['read', 'write'] as const;
export type Scope = (typeof SCOPES)[number];

/** Read-only roles may never mutate, whatever the key's scope. */
export const isReadOnlyRole = (role: Role): boolean => role === 'MINCULTURA';
