import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../../domain/errors.js';
import { isReadOnlyRole, type Role, roleAtLeast, type Scope } from '../../domain/roles.js';
import { hashApiKey } from '../../entities/api-key.js';
import { ApiKey, User, Workspace, WorkspaceMember } from '../../entities/index.js';
import type { Warning } from '../http/envelope.js';
import type { ApiServices } from '../services.js';

export interface WorkspaceAccess {
  workspaceId: string;
  name: string;
  slug: string;
  role: Role;
  /** null: every section; []: access expired or was revoked (contract: Current user). */
  sections: string[] | null;
  accessExpiresAt: Date | null;
  /** Revoked by DELETE /staff: kept so the user is told ACCESS_EXPIRED there, never chosen for them by default. */
  revoked: boolean;
}

/** Who is calling the organizer API, resolved from the API key on every request (contract 5.1–5.5). */
export interface OrganizerContext {
  apiKeyId: string;
  scope: Scope;
  user: { id: string; name: string; email: string };
  /** Every workspace the user can reach, for GET /me and workspace selection. */
  workspaces: WorkspaceAccess[];
  /** The workspace this request acts in; null only when the user has none yet. */
  active: WorkspaceAccess | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    em: EntityManager;
    organizer: OrganizerContext | null;
    warnings: Warning[];
  }
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function readPresentedKey(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match?.[1]) return match[1];
  }
  const header = request.headers['x-api-key'];
  return typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined;
}

/** Every workspace the user was given, the live ones first; a revoked one keeps its row with `sections: []`. */
async function loadWorkspaces(em: EntityManager, userId: string): Promise<WorkspaceAccess[]> {
  const found = await em.find(WorkspaceMember, { user: userId }, { orderBy: { createdAt: 'asc' } });
  const members = [...found.filter((m) => !m.revokedAt), ...found.filter((m) => m.revokedAt)];
  if (members.length === 0) return [];
  const workspaces = await em.find(Workspace, { id: { $in: members.map((m) => m.workspace) } });
  const byId = new Map(workspaces.map((w) => [w.id, w]));
  return members.flatMap((m) => {
    const workspace = byId.get(m.workspace);
    return workspace
      ? [
          {
            workspaceId: workspace.id,
            name: workspace.name,
            slug: workspace.slug,
            role: m.role,
            sections: m.revokedAt ? [] : (m.sections ?? null),
            accessExpiresAt: m.accessExpiresAt ?? null,
            revoked: Boolean(m.revokedAt),
          },
        ]
      : [];
  });
}

/**
 * Picks the workspace of the request: the `X-Workspace-Id` header when the user can reach it, otherwise the user's
 * default workspace (contract 5.5), otherwise the first reachable one. Customer routes pass `preferKeyWorkspace`:
 * there the key pins its own workspace (contract 5.6), so it outranks the default. Ambiguous choices are reported
 * as warnings instead of failing, as the contract asks (an unreachable id is ignored).
 */
function selectWorkspace(
  request: FastifyRequest,
  workspaces: WorkspaceAccess[],
  keyWorkspaceId: string,
  defaultWorkspaceId: string | null,
  preferKeyWorkspace: boolean,
): WorkspaceAccess | null {
  // A revoked workspace is chosen only when asked for by name (to be told ACCESS_EXPIRED) or when nothing else is left.
  const live = workspaces.filter((w) => !w.revoked);
  const within = (list: WorkspaceAccess[], id: string | null) =>
    id === null ? undefined : list.find((w) => w.workspaceId === id);
  const [first, second] = preferKeyWorkspace
    ? [keyWorkspaceId, defaultWorkspaceId]
    : [defaultWorkspaceId, keyWorkspaceId];
  const fallback =
    within(live, first) ??
    within(live, second) ??
    live[0] ??
    within(workspaces, first) ??
    within(workspaces, second) ??
    workspaces[0] ??
    null;
  const header = request.headers['x-workspace-id'];
  const requested = typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined;
  if (requested !== undefined) {
    const match = workspaces.find((w) => w.workspaceId === requested);
    if (match) return match;
    request.warnings.push({
      code: 'WORKSPACE_NOT_ACCESSIBLE',
      message: `X-Workspace-Id ${requested.slice(0, 64)} is not a workspace this key can reach; the default workspace was used`,
      field: 'X-Workspace-Id',
      ...(fallback ? { activeWorkspaceId: fallback.workspaceId, activeWorkspaceName: fallback.name } : {}),
      accessibleWorkspaces: live.length,
    });
    return fallback;
  }
  if (fallback && live.length > 1) {
    request.warnings.push({
      code: 'WORKSPACE_IMPLICIT',
      message: `No X-Workspace-Id was sent and this key reaches ${live.length} workspaces; ${fallback.name} was used`,
      field: 'X-Workspace-Id',
      activeWorkspaceId: fallback.workspaceId,
      activeWorkspaceName: fallback.name,
      accessibleWorkspaces: live.length,
    });
  }
  return fallback;
}

/**
 * The scope rule of contract 5.3, shared by every surface that accepts an API key (organizer routes and the
 * customer routes where the key is optional), so a read key can never mutate through either.
 */
export function enforceKeyScope(request: FastifyRequest, context: OrganizerContext): void {
  if (MUTATING.has(request.method) && context.scope === 'read') {
    throw new AppError('READ_ONLY_KEY', 'This API key has the read scope; create a write key to change data');
  }
}

function enforceAccess(
  request: FastifyRequest,
  context: OrganizerContext,
  access: { minRole: Role; section: string; workspaceOptional?: boolean },
): void {
  enforceKeyScope(request, context);
  const active = context.active;
  if (!active) {
    if (access.workspaceOptional) return;
    throw new AppError('FORBIDDEN', 'You have no workspace yet; create one with POST /workspaces');
  }
  if (access.workspaceOptional && access.minRole === 'VIEWER') return;
  const expired = active.accessExpiresAt !== null && active.accessExpiresAt.getTime() <= Date.now();
  if (expired || (active.sections !== null && active.sections.length === 0)) {
    throw new AppError('ACCESS_EXPIRED', `Your access to workspace ${active.name} has expired or was revoked`);
  }
  if (active.sections !== null && !active.sections.includes(access.section)) {
    throw new AppError(
      'SECTION_FORBIDDEN',
      `Your access to workspace ${active.name} does not cover ${access.section}`,
      {
        details: { section: access.section, sections: active.sections },
      },
    );
  }
  if (!roleAtLeast(active.role, access.minRole) || (MUTATING.has(request.method) && isReadOnlyRole(active.role))) {
    throw new AppError('INSUFFICIENT_ROLE', `This operation needs the ${access.minRole} role; you are ${active.role}`, {
      details: { requiredRole: access.minRole, role: active.role },
    });
  }
}

export async function authenticateOrganizer(
  request: FastifyRequest,
  options: { preferKeyWorkspace?: boolean } = {},
): Promise<OrganizerContext> {
  const presented = readPresentedKey(request);
  if (!presented) {
    throw new AppError('UNAUTHENTICATED', 'Send an API key as `Authorization: Bearer <key>` or `x-api-key: <key>`');
  }
  const em = request.em;
  const key = await em.findOne(ApiKey, { secretHash: hashApiKey(presented) });
  if (!key) throw new AppError('INVALID_API_KEY', 'The API key is not valid');
  if (key.revokedAt) throw new AppError('INVALID_API_KEY', 'The API key was revoked');
  if (key.expiresAt && key.expiresAt.getTime() <= Date.now()) {
    throw new AppError('INVALID_API_KEY', 'The API key has expired');
  }
  const user = await em.findOneOrFail(User, { id: key.user });
  const workspaces = await loadWorkspaces(em, user.id);
  const active = selectWorkspace(
    request,
    // A key on the customer routes pins the workspace its buyer calls are for: never one its user was revoked from.
    options.preferKeyWorkspace === true ? workspaces.filter((w) => !w.revoked) : workspaces,
    key.workspace,
    user.defaultWorkspaceId ?? null,
    options.preferKeyWorkspace === true,
  );
  // Last use is informational; a lost update under concurrency is harmless, so it skips the unit of work.
  void em
    .getConnection()
    .execute(
      "update api_keys set last_used_at = now() where id = ? and (last_used_at is null or last_used_at < now() - interval '1 minute')",
      [key.id],
    )
    .catch(() => undefined);
  return {
    apiKeyId: key.id,
    scope: key.scope,
    user: { id: user.id, name: user.name, email: user.email },
    workspaces,
    active,
  };
}

/** The active workspace of an organizer request; routes that need one call this instead of re-checking. */
export function activeWorkspace(request: FastifyRequest): WorkspaceAccess & { userId: string } {
  const organizer = request.organizer;
  if (!organizer?.active) throw new AppError('FORBIDDEN', 'This operation needs a workspace');
  return { ...organizer.active, userId: organizer.user.id };
}

export const authPlugin = fp(
  async (app: FastifyInstance, services: ApiServices) => {
    // Forked on first use: requests that never touch the database (docs, health, rejected early) pay nothing.
    const forkedEms = new WeakMap<FastifyRequest, EntityManager>();
    app.decorateRequest('em', {
      getter(this: FastifyRequest): EntityManager {
        let em = forkedEms.get(this);
        if (!em) {
          em = services.orm.em.fork() as EntityManager;
          forkedEms.set(this, em);
        }
        return em;
      },
    });
    app.decorateRequest('organizer', null);
    app.decorateRequest('warnings', null as unknown as Warning[]);

    // Every API route must say how it is protected; a route that forgets fails the start, not a security review.
    app.addHook('onRoute', (route) => {
      const url = route.url ?? route.path ?? '';
      if (!url.startsWith('/api/') || /^\/api\/[a-z0-9]+\/docs/.test(url)) return;
      if (!route.config?.access) throw new Error(`route ${route.method} ${url} declares no config.access`);
    });

    app.addHook('onRequest', async (request) => {
      request.warnings = [];
      const access = request.routeOptions.config?.access;
      if (access?.kind !== 'organizer') return;
      const context = await authenticateOrganizer(request);
      request.organizer = context;
      enforceAccess(request, context, access);
      if (context.active) request.em.setFilterParams('tenant', { workspaceId: context.active.workspaceId });
    });
  },
  { name: 'auth' },
);
