import { randomBytes } from 'node:crypto';
import { defineEntity, type EntityManager, type InferEntity, p } from '@mikro-orm/core';
import { SCOPES, type Scope } from '../domain/roles.js';
import { hashSecret } from '../domain/secret-hash.js';
import { baseProperties } from './common.js';
import { newId } from './ids.js';
import { User } from './user.js';
import { Workspace } from './workspace.js';

/**
 * An organizer API key. Only the SHA-256 of the plaintext is stored (the secret has 256 bits of entropy, so a
 * fast hash is enough); `preview` shows the prefix and last characters so people can tell keys apart.
 */
export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    ...baseProperties,
    user: () => p.manyToOne(User).mapToPk().deleteRule('cascade').index(),
    /** The workspace the key was minted in; requests with this key are scoped to it. */
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    name: p.string().length(120),
    scope: p.enum(SCOPES),
    secretHash: p.string().length(64).unique(),
    preview: p.string().length(40),
    expiresAt: p.datetime().columnType('timestamptz').nullable(),
    revokedAt: p.datetime().columnType('timestamptz').nullable(),
    lastUsedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IApiKey = InferEntity<typeof ApiKey>;

export const hashApiKey = hashSecret;

/**
 * Creates a key and returns its plaintext, which exists only in this return value: the row keeps the hash.
 * Format: `<prefix>_live_<43 url-safe chars>` (256 random bits).
 */
export function mintApiKey(
  em: EntityManager,
  input: { prefix: string; userId: string; workspaceId: string; name: string; scope: Scope; expiresAt?: Date | null },
): { key: IApiKey; plaintext: string } {
  const plaintext = `${input.prefix}_live_${randomBytes(32).toString('base64url')}`;
  const key = em.create(ApiKey, {
    id: newId(),
    user: input.userId,
    workspace: input.workspaceId,
    name: input.name,
    scope: input.scope,
    secretHash: hashApiKey(plaintext),
    preview: `${plaintext.slice(0, input.prefix.length + 10)}…${plaintext.slice(-4)}`,
    expiresAt: input.expiresAt ?? null,
    revokedAt: null,
    lastUsedAt: null,
  });
  return { key, plaintext };
}
