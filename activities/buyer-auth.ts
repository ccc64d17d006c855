import { randomInt } from 'node:crypto';
import { hashSignInCode } from '../entities/buyer.js';
import { newId } from '../entities/ids.js';
import { BuyerLoginCode } from '../entities/index.js';
import type { BuyerSignInInput } from '../workflows/definitions.js';
import type { ActivityDeps } from './deps.js';

export function createBuyerAuthActivities(deps: ActivityDeps) {
  return {
    /** Creates a 6-digit code (only its hash is stored) and emails it. */
    async sendSignInCode(input: BuyerSignInInput): Promise<void> {
      const email = input.email.toLowerCase();
      const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      const em = deps.orm.em.fork();
      em.create(BuyerLoginCode, {
        id: newId(),
        email,
        codeHash: hashSignInCode(email, code),
        attempts: 0,
        requestedBy: input.requestedBy ?? null,
        expiresAt: new Date(Date.now() + input.codeTtlMs),
        usedAt: null,
        createdAt: new Date(),
      });
      await em.flush();
      const minutes = Math.round(input.codeTtlMs / 60_000);
      await deps.providers.mail.send({
        to: email,
        subject: `Your sign-in code: ${code}`,
        text: `Your code is ${code}. It works once and expires in ${minutes} minutes. If you did not ask for it, ignore this email.`,
        html: `<p>Your code is <b style="font-size:1.4em;letter-spacing:0.2em">${code}</b>.</p><p>It works once and expires in ${minutes} minutes. If you did not ask for it, ignore this email.</p>`,
      });
    },
  };
}
export type BuyerAuthActivities = ReturnType<typeof createBuyerAuthActivities>;
