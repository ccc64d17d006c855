/**
 * Ids and inputs of the organizer account emails (workflows/organizer-account-email.ts), shared by the API that
 * starts them and the workflow. Free of I/O.
 */

export const organizerAccountEmailWorkflowId = (requestId: string): string => `organizer-account-email/${requestId}`;

/**
 * What to mail. The secret (link token or code) is created and mailed inside one activity, so it never enters
 * workflow history; `publicOrigin` is the API's, so links point where the API that took the request is reached.
 */
export type OrganizerAccountEmailInput =
  /** A sign-up: a verification link for a new address, a sign-in pointer for an address that has an account. */
  | { kind: 'sign-up'; email: string; name: string; linkTtlMs: number; publicOrigin: string }
  /** A sign-in code for the web pages; nothing is sent to an address without an account. */
  | { kind: 'sign-in'; email: string; codeTtlMs: number; publicOrigin: string; requestedBy?: string }
  /** A staff invitation (POST /staff): the single-use link the invited person accepts it with. */
  | { kind: 'staff-invitation'; invitationId: string; publicOrigin: string };
