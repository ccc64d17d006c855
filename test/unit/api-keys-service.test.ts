/**
 * API key rules (api/services/api-keys.ts), without the stack: another user's key is 404 (the query is scoped to the
 * caller), revoking a revoked key keeps its first revocation time and writes nothing, and a key is minted only with
 * an expiry in the future (or none).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { mintKey, revokeOwnKey } from '../../api/services/api-keys.js';
import type { IApiKey } from '../../entities/api-key.js';
import { appErrorOf } from '../support/app-errors.js';

const keyId = '0190a0b0-0000-7000-8000-000000000001';
const firstRevocation = new Date('2026-05-01T00:00:00Z');

/** Finds the key only when asked for it with its owner; counts flushes. */
const emWith = (key: IApiKey) => {
  const writes = { flushes: 0 };
  const em = {
    findOne: async (_entity: unknown, where: { id: string; user: string }) =>
      where.id === key.id && where.user === key.user ? key : null,
    flush: async () => {
      writes.flushes += 1;
    },
  } as unknown as EntityManager;
  return { em, writes };
};

describe('revoking your own API key', () => {
  test("another user's key, or an id that is not one, is 404", async () => {
    const { em } = emWith({ id: keyId, user: 'owner', revokedAt: null } as IApiKey);
    expect((await appErrorOf(revokeOwnKey(em, 'someone-else', keyId))).code).toBe('NOT_FOUND');
    expect((await appErrorOf(revokeOwnKey(em, 'owner', 'not-a-uuid'))).code).toBe('NOT_FOUND');
  });

  test('a live key is revoked now; a revoked one keeps its first revocation and nothing is written', async () => {
    const now = new Date('2026-06-01T00:00:00Z');
    const live = emWith({ id: keyId, user: 'owner', revokedAt: null } as IApiKey);
    const revoked = await revokeOwnKey(live.em, 'owner', keyId, now);
    expect([revoked.revokedNow, revoked.key.revokedAt, live.writes.flushes]).toEqual([true, now, 1]);

    const again = emWith({ id: keyId, user: 'owner', revokedAt: firstRevocation } as IApiKey);
    const second = await revokeOwnKey(again.em, 'owner', keyId, now);
    expect([second.revokedNow, second.key.revokedAt, again.writes.flushes]).toEqual([false, firstRevocation, 0]);
  });
});

describe('minting an API key', () => {
  const now = Date.parse('2026-06-01T00:00:00Z');
  const minting = { prefix: 'tk', userId: 'owner', workspaceId: 'workspace-1', name: 'ci', scope: 'read' as const };
  /** Records what was created and how often it was written. */
  const emRecording = () => {
    const writes = { created: 0, flushes: 0 };
    const em = {
      create: (_entity: unknown, row: Record<string, unknown>) => {
        writes.created += 1;
        return row;
      },
      flush: async () => {
        writes.flushes += 1;
      },
    } as unknown as EntityManager;
    return { em, writes };
  };

  test('an expiry that is not in the future is 422 on body.expiresAt and nothing is created', async () => {
    for (const expiresAt of [new Date(now).toISOString(), new Date(now - 1).toISOString()]) {
      const { em, writes } = emRecording();
      const error = await appErrorOf(mintKey(em, { ...minting, expiresAt }, now));
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.details).toEqual({ fields: [{ field: 'body.expiresAt', message: 'must be in the future' }] });
      expect(writes).toEqual({ created: 0, flushes: 0 });
    }
  });

  test('a key expiring later, or never, is written once and its plaintext answered', async () => {
    const later = emRecording();
    const minted = await mintKey(later.em, { ...minting, expiresAt: new Date(now + 1).toISOString() }, now);
    expect(minted.key.expiresAt).toEqual(new Date(now + 1));
    expect(minted.plaintext.startsWith('tk_live_')).toBe(true);
    expect(later.writes).toEqual({ created: 1, flushes: 1 });
    expect((await mintKey(emRecording().em, minting, now)).key.expiresAt).toBeNull();
  });
});
