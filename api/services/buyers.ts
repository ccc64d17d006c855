/**
 * A buyer's own account: signing in with an emailed code (first-party buyers only) or an enterprise's token, the profile they may change, and
 * ending the session they present. Routes keep the HTTP side (schemas, rate limits, the session cookie).
 */
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EnterpriseTokenClaims } from '../../domain/enterprise.js';
import { consumeSignInCode } from '../../domain/sign-in-codes.js';
import { hashSignInCode, type IBuyer } from '../../entities/buyer.js';
import { claimTokenUse, upsertEnterpriseBuyer } from '../../entities/enterprise.js';
import { newId } from '../../entities/ids.js';
import { Buyer, BuyerLoginCode } from '../../entities/index.js';
import type { buyerSignIn } from '../../workflows/buyer-sign-in.js';
import { buyerSignInWorkflowId } from '../../workflows/definitions.js';
import { issueBuyerSession } from '../plugins/customer-auth.js';
import type { ApiServices } from '../services.js';

/** Starts the execution that mails a sign-in code to the address, whether or not it has an account. */
export async function sendSignInCode(
  services: ApiServices,
  email: string,
  requestedBy: string,
  codeTtlMs: number,
): Promise<void> {
  await services.temporal.workflow.start<typeof buyerSignIn>('buyerSignIn', {
    taskQueue: services.env.TEMPORAL_TASK_QUEUE,
    workflowId: buyerSignInWorkflowId(randomUUID()),
    args: [{ email, codeTtlMs, requestedBy }],
    workflowExecutionTimeout: '10 minutes',
  });
}

/**
 * Exchanges a live code for a new buyer session, creating the first-party buyer on first sign-in; null when the code
 * is wrong, expired or used (a wrong guess never spends it: domain/sign-in-codes.ts).
 */
export async function signInWithCode(
  em: EntityManager,
  attempt: { email: string; code: string; requester: string; sessionTtlMs: number },
) {
  const { email } = attempt;
  return em.transactional(async (tx) => {
    const presented = { email, codeHash: hashSignInCode(email, attempt.code), requester: attempt.requester };
    if (!(await consumeSignInCode(tx, BuyerLoginCode, presented))) {
      return null;
    }
    // First-party buyers only: an enterprise's buyer with this address is another account (entities/buyer.ts).
    let buyer = await tx.findOne(Buyer, { email, enterprise: null });
    if (!buyer) buyer = tx.create(Buyer, { id: newId(), email, name: null, phone: null });
    const { token, row } = issueBuyerSession(tx, buyer.id, attempt.sessionTtlMs);
    return { token, row, buyer };
  });
}

/** Name and phone change when given; a null phone clears it. */
export async function updateBuyerProfile(
  em: EntityManager,
  buyerId: string,
  change: { name?: string | undefined; phone?: string | null | undefined },
): Promise<IBuyer> {
  const buyer = await em.findOneOrFail(Buyer, { id: buyerId });
  if (change.name !== undefined) buyer.name = change.name;
  if (change.phone !== undefined) buyer.phone = change.phone;
  await em.flush();
  return buyer;
}

/** Revokes the session at once; a session already revoked stays as it was. */
export async function endBuyerSession(em: EntityManager, sessionId: string): Promise<void> {
  await em.execute('update buyer_sessions set revoked_at = now() where id = ? and revoked_at is null', [sessionId]);
}

/**
 * Exchanges a verified enterprise token for a session of the enterprise's buyer; null when the token was already
 * exchanged. The token's single use, the buyer and the session commit together: a refused or failed exchange leaves
 * the token unused, and a used token always has its session.
 */
export async function signInEnterpriseBuyer(em: EntityManager, claims: EnterpriseTokenClaims, sessionTtlMs: number) {
  return em.transactional(async (tx) => {
    const firstUse = await claimTokenUse(tx, {
      enterpriseId: claims.enterpriseId,
      jti: claims.jti,
      acceptableUntil: claims.acceptableUntil,
    });
    if (!firstUse) return null;
    const buyer = await upsertEnterpriseBuyer(tx, {
      enterpriseId: claims.enterpriseId,
      subject: claims.subject,
      email: claims.email,
      name: claims.name,
    });
    return { ...issueBuyerSession(tx, buyer.id, sessionTtlMs), buyer };
  });
}
