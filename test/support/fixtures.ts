import { randomInt, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Role, Scope } from '../../domain/roles.js';
import { mintApiKey } from '../../entities/api-key.js';
import { newId } from '../../entities/ids.js';
import { User, Workspace, WorkspaceMember } from '../../entities/index.js';

export interface Organizer {
  userId: string;
  workspaceId: string;
  workspaceName: string;
  key: string;
  readKey: string;
  email: string;
}

/**
 * A user who operates one workspace with the given role, and a write and a read key. Users have no sign-up route
 * yet, so the user row is the one fixture written directly; everything else in tests goes through the API.
 */
export async function createOrganizer(
  em: EntityManager,
  options: { role?: Role; sections?: string[] | null; accessExpiresAt?: Date | null; workspaceId?: string } = {},
): Promise<Organizer> {
  const fork = em.fork();
  const suffix = randomUUID().slice(0, 8);
  const workspace = options.workspaceId
    ? await fork.findOneOrFail(Workspace, { id: options.workspaceId })
    : fork.create(Workspace, { id: newId(), name: `Workspace ${suffix}`, slug: `ws-${suffix}`, currency: 'COP' });
  const email = `organizer-${suffix}@example.test`;
  const user = fork.create(User, { id: newId(), name: `Organizer ${suffix}`, email, defaultWorkspaceId: workspace.id });
  fork.create(WorkspaceMember, {
    id: newId(),
    workspace: workspace.id,
    user: user.id,
    role: options.role ?? 'ADMIN',
    sections: options.sections ?? null,
    accessExpiresAt: options.accessExpiresAt ?? null,
    revokedAt: null,
  });
  const mint = (scope: Scope) =>
    mintApiKey(fork, { prefix: 'tkt', userId: user.id, workspaceId: workspace.id, name: `${scope} key`, scope });
  const write = mint('write');
  const read = mint('read');
  await fork.flush();
  return {
    userId: user.id,
    workspaceId: workspace.id,
    workspaceName: workspace.name,
    key: write.plaintext,
    readKey: read.plaintext,
    email,
  };
}

/** Gives an existing user access to another workspace. */
export async function addMembership(em: EntityManager, userId: string, workspaceId: string, role: Role): Promise<void> {
  const fork = em.fork();
  fork.create(WorkspaceMember, {
    id: newId(),
    workspace: workspaceId,
    user: userId,
    role,
    sections: null,
    accessExpiresAt: null,
    revokedAt: null,
  });
  await fork.flush();
}

export const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

/**
 * A client address no other test of the run uses: a random /64 of the IPv6 documentation prefix (per-IP limits count
 * an IPv6 client by its /64). Limits live in Redis, shared by every suite of a run, so a small IPv4 range picked at
 * random can land on an address another suite has already spent.
 */
export const uniqueClientAddress = (): string => {
  const group = () => randomInt(0, 0x10000).toString(16);
  return `2001:db8:${group()}:${group()}::1`;
};
