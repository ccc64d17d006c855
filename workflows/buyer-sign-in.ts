import { proxyActivities } from '@temporalio/workflow';
import type { BuyerAuthActivities } from '../activities/buyer-auth.js';
import type { BuyerSignInInput } from './definitions.js';

const mail = proxyActivities<BuyerAuthActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 6 },
});

/** Emails a one-time sign-in code, retrying while the mail server is down for a few minutes. */
export async function buyerSignIn(input: BuyerSignInInput): Promise<void> {
  await mail.sendSignInCode(input);
}
