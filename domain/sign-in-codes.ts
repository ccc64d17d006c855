import { createHash } from 'node:crypto';
import type { EntityManager, EntityName, FilterQuery } from '@mikro-orm/postgresql';

/**
 * Wrong guesses a one-time sign-in code takes from anyone before it answers only to the client that asked for it.
 * Wrong guesses never spend the code: a stranger typing codes for someone's address must not lock its owner out, so
 * past this many the code still works, but only from the client address that requested it (the owner's), and the
 * stranger's guesses stay bounded by this count plus the per-address limits of the verify endpoints.
 */
export const MAX_SHARED_SIGN_IN_CODE_ATTEMPTS = 5;

/**
 * Who asked for a code: a hash of the client key the rate limits use (an IPv4 address, or an IPv6 /64), so the row
 * and the workflow history that carries it never hold the address itself.
 */
export const signInRequester = (clientKey: string): string =>
  createHash('sha256').update(`sign-in-requester:${clientKey}`).digest('hex');

/** The columns of a one-time sign-in code table (buyers' and organizers' codes live apart, with the same shape). */
export interface SignInCodeRow {
  id: string;
  email: string;
  codeHash: string;
  attempts: number;
  /** signInRequester of the client that asked for the code; null on codes made before it was recorded. */
  requestedBy?: string | null;
  expiresAt: Date;
  usedAt?: Date | null;
  createdAt: Date;
}

/**
 * Uses an emailed one-time code: the newest live codes of the address are compared with the hash of what was typed.
 * A wrong guess counts an attempt on every live code but never makes it unusable: a code past
 * MAX_SHARED_SIGN_IN_CODE_ATTEMPTS is accepted only from its requester. A right one is marked used once, even when two
 * requests race with it. Call inside the transaction that opens the session. True when this call used the code.
 */
export async function consumeSignInCode<Row extends SignInCodeRow>(
  tx: EntityManager,
  codes: EntityName<Row>,
  input: { email: string; codeHash: string; requester: string },
): Promise<boolean> {
  const live = { email: input.email, usedAt: null, expiresAt: { $gt: new Date() } } as FilterQuery<Row>;
  const candidates = await tx.find(codes, live, { orderBy: { createdAt: 'desc' } as never, limit: 3 });
  const usableHere = (candidate: Row) =>
    candidate.attempts < MAX_SHARED_SIGN_IN_CODE_ATTEMPTS ||
    (candidate.requestedBy !== null &&
      candidate.requestedBy !== undefined &&
      candidate.requestedBy === input.requester);
  const match = candidates.find((candidate) => candidate.codeHash === input.codeHash && usableHere(candidate));
  if (!match) {
    for (const candidate of candidates) candidate.attempts += 1;
    return false;
  }
  const used = await tx.nativeUpdate(
    codes,
    { id: match.id, usedAt: null } as FilterQuery<Row>,
    {
      usedAt: new Date(),
    } as never,
  );
  return used === 1;
}
