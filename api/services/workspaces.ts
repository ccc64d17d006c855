/**
 * Self-serve workspaces (POST /workspaces): the creator becomes ADMIN, and the workspace their default when they had
 * none. A workspace slug is a label, not an address (entities/workspace.ts): any slug outside the reserved words is
 * accepted whatever other workspaces use, so creating one reveals nothing about other tenants. Only the caller's own
 * workspaces must keep distinct slugs (409), so their own lists stay unambiguous.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../domain/errors.js';
import { validationFailed } from '../../domain/field-errors.js';
import { isReservedSlug, slugify } from '../../domain/slug.js';
import { newId } from '../../entities/ids.js';
import { User, Workspace, WorkspaceMember } from '../../entities/index.js';
import type { IWorkspace } from '../../entities/workspace.js';

export async function createWorkspace(
  em: EntityManager,
  input: { userId: string; name: string; slug?: string | undefined; currency: string },
): Promise<IWorkspace> {
  if (input.slug !== undefined && isReservedSlug(input.slug)) {
    throw validationFailed([{ field: 'body.slug', message: 'reserved by the service; choose another' }]);
  }
  const slug = input.slug ?? `${slugify(input.name, { maxLength: 60, fallback: 'workspace' })}-${newId().slice(-6)}`;
  return em.fork().transactional(async (tx) => {
    // Serializes one person's creations, so two at once cannot both take the same slug among their workspaces.
    await tx.execute('select id from users where id = ? for update', [input.userId]);
    const [own] = await tx.execute<{ id: string }[]>(
      `select w.id from workspaces w join workspace_members m on m.workspace_id = w.id
        where m.user_id = ? and w.slug = ? limit 1`,
      [input.userId, slug],
    );
    if (own) {
      throw new AppError('ALREADY_EXISTS', `You already have a workspace with the slug ${slug}; choose another`, {
        details: { fields: [{ field: 'body.slug', message: 'already used by one of your workspaces' }] },
      });
    }
    const created = tx.create(Workspace, { id: newId(), name: input.name, slug, currency: input.currency });
    tx.create(WorkspaceMember, {
      id: newId(),
      workspace: created.id,
      user: input.userId,
      role: 'ADMIN',
      sections: null,
      accessExpiresAt: null,
      revokedAt: null,
    });
    const user = await tx.findOneOrFail(User, { id: input.userId });
    if (!user.defaultWorkspaceId) user.defaultWorkspaceId = created.id;
    return created;
  });
}
