import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../entities/ids.js';
import { User, Workspace, WorkspaceMember } from '../entities/index.js';
import {
  hashAccountSecret,
  hashOrganizerSignInCode,
  OrganizerLoginCode,
  OrganizerWebSession,
} from '../entities/organizer-account.js';
import type { Role } from './roles.js';
import { consumeSignInCode } from './sign-in-codes.js';
import { slugify } from './slug.js';

/**
 * Organizer accounts on the web: verifying a sign-up's email link, signing in with an emailed code, the browser
 * session both open, and the first workspace of a new organizer. Emails are compared lower-cased everywhere.
 */

/** A browser session only serves the verification pages, so it lasts a working day, not a month. */
export const WEB_SESSION_TTL_MS = 12 * 60 * 60 * 1000;
export const SIGN_IN_CODE_TTL_MS = 10 * 60 * 1000;

export interface OpenedWebSession {
  token: string;
  expiresAt: Date;
  userId: string;
}

export interface WebSessionUser {
  sessionId: string;
  userId: string;
  name: string;
  email: string;
  defaultWorkspaceId: string | null;
}

/** A workspace the person may act in now: membership not revoked, access not expired, some section covered. */
export interface UsableWorkspace {
  id: string;
  name: string;
  role: Role;
}

export const newSignUpToken = (): string => randomBytes(32).toString('base64url');

function openWebSession(tx: EntityManager, userId: string): OpenedWebSession {
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(Date.now() + WEB_SESSION_TTL_MS);
  tx.create(OrganizerWebSession, {
    id: newId(),
    user: userId,
    tokenHash: hashAccountSecret(token),
    expiresAt,
    revokedAt: null,
    createdAt: new Date(),
  });
  return { token, expiresAt, userId };
}

/** Whether an emailed sign-up link would still verify (unused, unexpired), without using it. */
export async function signUpLinkUsable(em: EntityManager, token: string): Promise<boolean> {
  const rows = await em
    .fork()
    .execute<{ id: string }[]>(
      'select id from organizer_sign_ups where token_hash = ? and verified_at is null and expires_at > now()',
      [hashAccountSecret(token)],
    );
  return rows.length > 0;
}

/**
 * Opens the emailed link of a sign-up: once, before it expires. The account (the `users` row) is created now, from
 * the name given at sign-up; when the address already has one (two sign-ups verified, or a colleague added it as
 * staff meanwhile) that account is kept as it is. Either way the browser is signed in. Null: unknown, used or expired.
 */
export async function verifySignUpLink(em: EntityManager, token: string): Promise<OpenedWebSession | null> {
  return em.fork().transactional(async (tx) => {
    const used = await tx.execute<{ email: string; name: string }[]>(
      `update organizer_sign_ups set verified_at = now()
       where token_hash = ? and verified_at is null and expires_at > now() returning email, name`,
      [hashAccountSecret(token)],
    );
    const signUp = used[0];
    if (!signUp) return null;
    // On conflict the existing account wins; nothing about it changes.
    await tx.execute(
      `insert into users (id, created_at, updated_at, name, email, default_workspace_id)
       values (?, now(), now(), ?, ?, null) on conflict (email) do nothing`,
      [newId(), signUp.name, signUp.email],
    );
    const user = await tx.findOneOrFail(User, { email: signUp.email });
    return openWebSession(tx, user.id);
  });
}

/**
 * Exchanges an emailed sign-in code for a browser session. Wrong codes never spend the owner's code; past a few of them
 * it answers only the client that asked for it (domain/sign-in-codes.ts); a right one works once. `requester` is the
 * signInRequester of the client typing the code. Null: wrong, expired, used or no account.
 */
export async function verifyOrganizerSignInCode(
  em: EntityManager,
  input: { email: string; code: string; requester: string },
): Promise<OpenedWebSession | null> {
  const email = input.email.toLowerCase();
  return em.fork().transactional(async (tx) => {
    const codeHash = hashOrganizerSignInCode(email, input.code);
    if (!(await consumeSignInCode(tx, OrganizerLoginCode, { email, codeHash, requester: input.requester }))) {
      return null;
    }
    const user = await tx.findOne(User, { email });
    return user ? openWebSession(tx, user.id) : null;
  });
}

/** The organizer behind a browser session token, or null when it is unknown, expired or ended. */
export async function resolveWebSession(em: EntityManager, token: string): Promise<WebSessionUser | null> {
  const session = await em.findOne(OrganizerWebSession, { tokenHash: hashAccountSecret(token) });
  if (!session || session.revokedAt || session.expiresAt.getTime() <= Date.now()) return null;
  const user = await em.findOne(User, { id: session.user });
  if (!user) return null;
  return {
    sessionId: session.id,
    userId: user.id,
    name: user.name,
    email: user.email,
    defaultWorkspaceId: user.defaultWorkspaceId ?? null,
  };
}

/** The person's usable workspaces, the default one first. */
export async function usableWorkspaces(em: EntityManager, user: WebSessionUser): Promise<UsableWorkspace[]> {
  const now = Date.now();
  const members = await em.find(
    WorkspaceMember,
    { user: user.userId, revokedAt: null },
    { orderBy: { createdAt: 'asc' } },
  );
  const usable = members.filter(
    (member) =>
      (member.accessExpiresAt === null ||
        member.accessExpiresAt === undefined ||
        member.accessExpiresAt.getTime() > now) &&
      (member.sections === null || member.sections === undefined || member.sections.length > 0),
  );
  if (usable.length === 0) return [];
  const workspaces = await em.find(Workspace, { id: { $in: usable.map((member) => member.workspace) } });
  const names = new Map(workspaces.map((workspace) => [workspace.id, workspace.name]));
  const listed = usable.flatMap((member) => {
    const name = names.get(member.workspace);
    return name === undefined ? [] : [{ id: member.workspace, name, role: member.role }];
  });
  return listed.sort((a, b) => Number(b.id === user.defaultWorkspaceId) - Number(a.id === user.defaultWorkspaceId));
}

/**
 * A new organizer's first workspace, made from the verification page so that the first key (which belongs to a
 * workspace) can be approved there: the person becomes its ADMIN and it becomes their default, as with
 * POST /workspaces. Refused (null) once the person has a workspace; more are created through the API.
 */
export async function createFirstWorkspace(
  em: EntityManager,
  input: { user: WebSessionUser; name: string },
): Promise<{ id: string; name: string } | null> {
  if ((await usableWorkspaces(em, input.user)).length > 0) return null;
  const slug = `${slugify(input.name, { maxLength: 60, fallback: 'workspace' })}-${newId().slice(-6)}`;
  return em.fork().transactional(async (tx) => {
    const workspace = tx.create(Workspace, { id: newId(), name: input.name, slug, currency: 'COP' });
    tx.create(WorkspaceMember, {
      id: newId(),
      workspace: workspace.id,
      user: input.user.userId,
      role: 'ADMIN',
      sections: null,
      accessExpiresAt: null,
      revokedAt: null,
    });
    const user = await tx.findOneOrFail(User, { id: input.user.userId });
    user.defaultWorkspaceId = workspace.id;
    return { id: workspace.id, name: workspace.name };
  });
}
