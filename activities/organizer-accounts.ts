import { randomInt } from 'node:crypto';
import { issueInvitationToken } from '../api/services/staff.js';
import { newSignUpToken } from '../domain/accounts.js';
import { escapeHtml } from '../domain/html.js';
import { newId } from '../entities/ids.js';
import { User } from '../entities/index.js';
import {
  hashAccountSecret,
  hashOrganizerSignInCode,
  OrganizerLoginCode,
  OrganizerSignUp,
} from '../entities/organizer-account.js';
import type { OrganizerAccountEmailInput } from '../workflows/organizer-account-definitions.js';
import type { ActivityDeps } from './deps.js';

type SignUpInput = Extract<OrganizerAccountEmailInput, { kind: 'sign-up' }>;
type SignInInput = Extract<OrganizerAccountEmailInput, { kind: 'sign-in' }>;
type StaffInvitationInput = Extract<OrganizerAccountEmailInput, { kind: 'staff-invitation' }>;

const pageUrl = (origin: string, path: string): string => new URL(path, origin).toString();

const durationText = (ms: number): string => {
  const minutes = Math.max(1, Math.round(ms / 60_000));
  return minutes % 60 === 0 ? `${minutes / 60} hour${minutes === 60 ? '' : 's'}` : `${minutes} minutes`;
};

export function createOrganizerAccountActivities(deps: ActivityDeps) {
  return {
    /**
     * A new address gets a verification link (the row keeps the token's hash only). An address that already has an
     * account gets a pointer to sign in instead, so the sign-up answer stays the same for both and the owner learns
     * someone tried; its account is left untouched.
     */
    async sendSignUpEmail(input: SignUpInput): Promise<void> {
      const email = input.email.toLowerCase();
      const em = deps.orm.em.fork();
      if (await em.findOne(User, { email })) {
        const signIn = pageUrl(input.publicOrigin, '/device');
        await deps.providers.mail.send({
          to: email,
          subject: 'You already have an organizer account',
          text: `Someone, maybe you, tried to sign up with this address, which already has an account. Sign in at ${signIn} with a code we email you. If it was not you, ignore this email; nothing changed.`,
          html: `<p>Someone, maybe you, tried to sign up with this address, which already has an account.</p><p><a href="${signIn}">Sign in</a> with a code we email you. If it was not you, ignore this email; nothing changed.</p>`,
        });
        return;
      }
      const token = newSignUpToken();
      em.create(OrganizerSignUp, {
        id: newId(),
        email,
        name: input.name,
        tokenHash: hashAccountSecret(token),
        expiresAt: new Date(Date.now() + input.linkTtlMs),
        verifiedAt: null,
        createdAt: new Date(),
      });
      await em.flush();
      const link = pageUrl(input.publicOrigin, `/auth/verify?token=${token}`);
      const validity = durationText(input.linkTtlMs);
      await deps.providers.mail.send({
        to: email,
        subject: 'Verify your email to finish signing up',
        text: `Open this link to verify your email and sign in: ${link}\nIt works once and expires in ${validity}. If you did not sign up, ignore this email.`,
        html: `<p><a href="${link}">Verify your email and sign in</a>.</p><p>The link works once and expires in ${validity}. If you did not sign up, ignore this email.</p>`,
      });
    },

    /** A 6-digit code (only its hash is stored) for an address with an account; nothing for any other address. */
    async sendOrganizerSignInCode(input: SignInInput): Promise<void> {
      const email = input.email.toLowerCase();
      const em = deps.orm.em.fork();
      if (!(await em.findOne(User, { email }))) return;
      const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      em.create(OrganizerLoginCode, {
        id: newId(),
        email,
        codeHash: hashOrganizerSignInCode(email, code),
        attempts: 0,
        requestedBy: input.requestedBy ?? null,
        expiresAt: new Date(Date.now() + input.codeTtlMs),
        usedAt: null,
        createdAt: new Date(),
      });
      await em.flush();
      const validity = durationText(input.codeTtlMs);
      await deps.providers.mail.send({
        to: email,
        subject: `Your organizer sign-in code: ${code}`,
        text: `Your code is ${code}. Enter it on ${pageUrl(input.publicOrigin, '/device')}. It works once and expires in ${validity}. If you did not ask for it, ignore this email.`,
        html: `<p>Your code is <b style="font-size:1.4em;letter-spacing:0.2em">${code}</b>.</p><p>It works once and expires in ${validity}. If you did not ask for it, ignore this email.</p>`,
      });
    },

    /**
     * The link of a staff invitation. Its token is made here and only its hash stored (a retry makes a new one, and
     * the older link stops working); nothing is sent once the invitation was accepted, withdrawn or expired.
     */
    async sendStaffInvitationEmail(input: StaffInvitationInput): Promise<void> {
      const mail = await issueInvitationToken(deps.orm.em.fork(), input.invitationId);
      if (!mail) return;
      const link = pageUrl(input.publicOrigin, `/invitations/accept?token=${mail.token}`);
      const by = mail.inviterEmail ? ` by ${mail.inviterEmail}` : '';
      const until = mail.expiresAt.toISOString().slice(0, 10);
      await deps.providers.mail.send({
        to: mail.email,
        subject: `You are invited to the workspace ${mail.workspaceName}`,
        text: `You were invited${by} to the organizer workspace ${mail.workspaceName} as ${mail.role}. Open this link to accept: ${link}\nIt works once, until ${until}. Nothing changes for you unless you accept; if you do not know this workspace, ignore this email.`,
        html: `<p>You were invited${escapeHtml(by)} to the organizer workspace <b>${escapeHtml(mail.workspaceName)}</b> as ${escapeHtml(mail.role)}.</p><p><a href="${link}">Review and accept the invitation</a>. The link works once, until ${until}.</p><p>Nothing changes for you unless you accept; if you do not know this workspace, ignore this email.</p>`,
      });
    },
  };
}
export type OrganizerAccountActivities = ReturnType<typeof createOrganizerAccountActivities>;
