import type { Role } from '../../domain/roles.js';
import type { RouteAccess } from './access.js';

/** `config: organizer('ADMIN', 'staff')` on a route: the declarative role/section rule the auth hook enforces. */
export const organizer = (
  minRole: Role,
  section: string,
  options: { workspaceOptional?: boolean } = {},
): { access: RouteAccess } => ({ access: { kind: 'organizer', minRole, section, ...options } });

export const publicAccess = (): { access: RouteAccess } => ({ access: { kind: 'public' } });

export const customerAccess = (): { access: RouteAccess } => ({ access: { kind: 'customer' } });
