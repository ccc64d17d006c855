import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { mintApiKey } from '../entities/api-key.js';
import { DeviceAuthorization, type IDeviceAuthorization } from '../entities/device-authorization.js';
import { newId } from '../entities/ids.js';
import {
  decidePoll,
  hashDeviceCode,
  newDeviceCode,
  newUserCode,
  type OAuthErrorCode,
  type PollDecision,
} from './device-codes.js';
import type { Scope } from './roles.js';

/** The stored side of the device authorization grant (RFC 8628); the rules themselves are in device-codes.ts. */

export interface StartedDeviceAuthorization {
  deviceCode: string;
  userCode: string;
  expiresAt: Date;
  intervalSeconds: number;
}

/** Tries before giving up on drawing a user code no pending request holds; a clash is already one in millions. */
const USER_CODE_DRAWS = 5;

/**
 * Records a new request and returns its codes; the device code exists only in this return value. The user code must
 * be unique among pending requests (a partial unique index says so): an expired request still marked pending gives
 * its code back first, and a clash with a live one draws again.
 */
export async function startDeviceAuthorization(
  em: EntityManager,
  input: { clientId: string; scope: Scope; ttlSeconds: number; intervalSeconds: number; requestedFrom: string },
): Promise<StartedDeviceAuthorization> {
  for (let draw = 1; ; draw += 1) {
    const deviceCode = newDeviceCode();
    const userCode = newUserCode();
    const expiresAt = new Date(Date.now() + input.ttlSeconds * 1000);
    try {
      await em.fork().transactional(async (tx) => {
        await tx.execute(
          "update device_authorizations set status = 'expired' where user_code = ? and status = 'pending' and expires_at <= now()",
          [userCode],
        );
        tx.create(DeviceAuthorization, {
          id: newId(),
          deviceCodeHash: hashDeviceCode(deviceCode),
          userCode,
          clientId: input.clientId,
          requestedFrom: input.requestedFrom.slice(0, 64),
          scope: input.scope,
          status: 'pending',
          intervalSeconds: input.intervalSeconds,
          lastPolledAt: null,
          expiresAt,
          user: null,
          workspace: null,
          decidedAt: null,
          apiKey: null,
          createdAt: new Date(),
        });
      });
      return { deviceCode, userCode, expiresAt, intervalSeconds: input.intervalSeconds };
    } catch (error) {
      if (!(error instanceof UniqueConstraintViolationException) || draw >= USER_CODE_DRAWS) throw error;
    }
  }
}

/** The pending, unexpired request a person typed the code of (already normalized), or null. */
export function findPendingByUserCode(em: EntityManager, userCode: string): Promise<IDeviceAuthorization | null> {
  return em.findOne(DeviceAuthorization, { userCode, status: 'pending', expiresAt: { $gt: new Date() } });
}

/**
 * Records the person's decision on a request still pending and unexpired; false when it no longer is (decided in
 * another tab, expired meanwhile). The caller checked the workspace is one the person may act in; a denial needs none.
 */
export async function decideDeviceAuthorization(
  em: EntityManager,
  input: { authorizationId: string; userId: string; workspaceId: string | null; decision: 'approve' | 'deny' },
): Promise<boolean> {
  const updated = await em.execute<{ id: string }[]>(
    `update device_authorizations set status = ?, user_id = ?, workspace_id = ?, decided_at = now()
     where id = ? and status = 'pending' and expires_at > now() returning id`,
    [input.decision === 'approve' ? 'approved' : 'denied', input.userId, input.workspaceId, input.authorizationId],
  );
  return updated.length === 1;
}

export type PollResult =
  | Exclude<PollDecision, { answer: 'issue_key' }>
  | { answer: 'key'; accessToken: string; scope: Scope };

/**
 * One poll of the token endpoint. The row is locked for the poll, so two concurrent polls are judged one after the
 * other (the second one is early) and an approved request turns into exactly one key: the first poll mints it in the
 * same transaction that marks the request consumed, and every later poll gets invalid_grant.
 */
export async function pollDeviceAuthorization(
  em: EntityManager,
  input: { deviceCode: string; clientId: string; apiKeyPrefix: string },
): Promise<PollResult> {
  return em.fork().transactional(async (tx): Promise<PollResult> => {
    const authorization = await tx.findOne(
      DeviceAuthorization,
      { deviceCodeHash: hashDeviceCode(input.deviceCode) },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!authorization) return unknownDeviceCode();
    const now = new Date();
    const decision = decidePoll(authorization, { clientId: input.clientId, now });
    if (decision.answer === 'issue_key') {
      if (!authorization.user || !authorization.workspace) return unknownDeviceCode();
      const { key, plaintext } = mintApiKey(tx, {
        prefix: input.apiKeyPrefix,
        userId: authorization.user,
        workspaceId: authorization.workspace,
        name: `${authorization.clientId} (device login)`,
        scope: authorization.scope,
      });
      authorization.status = 'consumed';
      authorization.apiKey = key.id;
      return { answer: 'key', accessToken: plaintext, scope: authorization.scope };
    }
    if (authorization.status === 'pending' && authorization.clientId === input.clientId) {
      authorization.lastPolledAt = now;
      if (decision.answer === 'slow_down') authorization.intervalSeconds = decision.intervalSeconds;
    }
    return decision;
  });
}

const unknownDeviceCode = (): { answer: 'error'; error: OAuthErrorCode & 'invalid_grant'; description: string } => ({
  answer: 'error',
  error: 'invalid_grant',
  description: 'The device_code is not valid',
});
