import type { EntityManager, EntityName, FilterQuery } from '@mikro-orm/postgresql';

/** Wrong guesses a one-time sign-in code survives. */
export const MAX_SIGN_IN_CODE_ATTEMPTS = 5;

/** The columns of a one-time sign-in code table (buyers' and organizers' codes live apart, with the same shape). */
export interface SignInCodeRow {
  id: string;
  email: string;
  codeHash: string;
  attempts: number;
  expiresAt: Date;
  usedAt?: Date | null;
  createdAt: Date;
}

/**
 * Uses an emailed one-time code: the newest live codes of the address are compared with the hash of what was typed.
 * A wrong guess burns an attempt of every live code, so guessing is bounded per code; a right one is marked used
 * once, even when two requests race with it. Call inside the transaction that opens the session. True when this call
 * used the code.
 */
export async function consumeSignInCode<Row extends SignInCodeRow>(
  tx: EntityManager,
  codes: EntityName<Row>,
  input: { email: string; codeHash: string },
): Promise<boolean> {
  const live = {
    email: input.email,
    usedAt: null,
    expiresAt: { $gt: new Date() },
    attempts: { $lt: MAX_SIGN_IN_CODE_ATTEMPTS },
  } as FilterQuery<Row>;
  const candidates = await tx.find(codes, live, { orderBy: { createdAt: 'desc' } as never, limit: 3 });
  const match = candidates.find((candidate) => candidate.codeHash === input.codeHash);
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
