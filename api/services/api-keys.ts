/**
 * API keys: minting one (expiring in the future, if at all), listing and revoking one's own (never blocked by role: revoking a leaked credential must always work),
 * and revoking whichever key is presented. Routes keep the HTTP side.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../domain/errors.js';
import type { Scope } from '../../domain/roles.js';
import { ApiKey, hashApiKey, type IApiKey, mintApiKey } from '../../entities/api-key.js';
import { isUuid } from '../../entities/ids.js';

/** The user's own keys, newest first, one more than `limit`; `after` is the last id seen. */
export const listOwnKeys = (
  em: EntityManager,
  userId: string,
  after: string | undefined,
  limit: number,
): Promise<IApiKey[]> =>
  em.find(
    ApiKey,
    { user: userId, ...(after ? { id: { $lt: after } } : {}) },
    { orderBy: { id: 'desc' }, limit: limit + 1 },
  );

/** Revokes one of the user's own keys (404 for anyone else's); revoking a revoked key changes nothing. */
export async function revokeOwnKey(
  em: EntityManager,
  userId: string,
  id: string,
  now = new Date(),
): Promise<{ key: IApiKey; revokedNow: boolean }> {
  const key = isUuid(id) ? await em.findOne(ApiKey, { id, user: userId }) : null;
  if (!key) throw new AppError('NOT_FOUND', 'API key not found');
  if (key.revokedAt) return { key, revokedNow: false };
  key.revokedAt = now;
  await em.flush();
  return { key, revokedNow: true };
}

/**
 * Revokes the API key whose plaintext is presented (OAuth token revocation, RFC 7009): whoever holds a key may end
 * it, whatever its scope, since holding it already grants everything it can do. Answers the revoked key's id, or
 * null when no live key matches (unknown, already revoked): the caller answers the same either way, so the endpoint
 * tells nobody which strings are keys.
 */
export async function revokePresentedKey(
  em: EntityManager,
  plaintext: string,
  now = new Date(),
): Promise<string | null> {
  const key = await em.findOne(ApiKey, { secretHash: hashApiKey(plaintext) });
  if (!key || key.revokedAt) return null;
  key.revokedAt = now;
  await em.flush();
  return key.id;
}

/** Mints a key of the user in the workspace; the plaintext is answered this once. An expiry must be in the future. */
export async function mintKey(
  em: EntityManager,
  input: {
    prefix: string;
    userId: string;
    workspaceId: string;
    name: string;
    scope: Scope;
    /** ISO date-time; absent or null: never expires. */
    expiresAt?: string | null | undefined;
  },
  now = Date.now(),
): Promise<{ key: IApiKey; plaintext: string }> {
  const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
  if (expiresAt && expiresAt.getTime() <= now) {
    throw new AppError('VALIDATION_FAILED', 'expiresAt must be in the future', {
      details: { fields: [{ field: 'body.expiresAt', message: 'must be in the future' }] },
    });
  }
  const minted = mintApiKey(em, { ...input, expiresAt });
  await em.flush();
  return minted;
}
