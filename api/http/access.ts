import type { Role } from '../../domain/roles.js';

/**
 * How a route is protected, declared on the route itself (`config.access`) and enforced by one hook
 * (`plugins/auth.ts`). A route without `access` on the organizer surface is refused at startup, so no route
 * can be left open by forgetting a check.
 */
export type RouteAccess =
  | {
      kind: 'organizer';
      /** Lowest workspace role allowed (contract part 5.4). */
      minRole: Role;
      /** Section of the dashboard the route belongs to; members restricted to other sections get SECTION_FORBIDDEN. */
      section: string;
      /** Routes that work before the caller has any workspace (GET /me, POST /workspaces). */
      workspaceOptional?: boolean;
    }
  /** Buyer endpoints: a buyer session is required; an organizer API key is optional and pins the workspace. */
  | { kind: 'customer' }
  | { kind: 'public' };

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
}
