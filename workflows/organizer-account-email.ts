import { proxyActivities } from '@temporalio/workflow';
import type { OrganizerAccountActivities } from '../activities/organizer-accounts.js';
import type { OrganizerAccountEmailInput } from './organizer-account-definitions.js';

const mail = proxyActivities<OrganizerAccountActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 6 },
});

/**
 * Emails an organizer's sign-up link, sign-in code or staff invitation, retrying while the mail server is down for a
 * few minutes. The staff-invitation branch is new; histories of the two older kinds take the same path as before.
 */
export async function organizerAccountEmail(input: OrganizerAccountEmailInput): Promise<void> {
  if (input.kind === 'sign-up') await mail.sendSignUpEmail(input);
  else if (input.kind === 'staff-invitation') await mail.sendStaffInvitationEmail(input);
  else await mail.sendOrganizerSignInCode(input);
}
