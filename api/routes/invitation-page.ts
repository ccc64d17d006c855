import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { escapeHtml } from '../../domain/html.js';
import { acceptFormBodies } from '../http/form-body.js';
import { hiddenField, postedFromAnotherSite, renderPage, sendPage } from '../http/html-page.js';
import { publicAccess } from '../http/route-access.js';
import { acceptStaffInvitation, openInvitation } from '../services/staff.js';
import type { ApiServices } from '../services.js';

const TOKEN = z.string().max(200).default('');

const linkGone = renderPage({
  title: 'This invitation no longer works',
  body:
    '<p class="error" id="error">The invitation link is invalid, expired, withdrawn or already used.</p>' +
    '<p>Ask the workspace administrator to invite you again.</p>',
});

/**
 * The link of a staff invitation email (POST /api/v1/staff). Opening it shows what is offered and an accept button:
 * mail scanners and link previews fetch links with GET, so GET never uses the link up; the button's POST accepts it
 * once, which gives the access (and creates the account if the address has none). Then the person signs in on the
 * device page to connect the command-line client.
 */
export const invitationPageRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  acceptFormBodies(app);

  app.get(
    '/invitations/accept',
    {
      config: publicAccess(),
      // The address carries the link's secret, and Fastify's request log lines carry the address: warnings only.
      logLevel: 'warn',
      schema: { hide: true, querystring: z.object({ token: TOKEN }) },
    },
    async (request, reply) => {
      const opened = await openInvitation(request.em, request.query.token);
      if (!opened) return sendPage(reply, 410, linkGone);
      const { invitation, workspaceName } = opened;
      return sendPage(
        reply,
        200,
        renderPage({
          title: 'Join a workspace?',
          body:
            '<form method="post" action="/invitations/accept">' +
            hiddenField('token', request.query.token) +
            `<p id="offer">You are invited to the workspace <b id="workspace">${escapeHtml(workspaceName)}</b> ` +
            `as <b id="role">${escapeHtml(invitation.role)}</b>, with the address ${escapeHtml(invitation.email)}.</p>` +
            '<p>Accept only if you expected it. Nothing changes for you unless you accept.</p>' +
            '<button type="submit" id="accept">Accept the invitation</button></form>',
        }),
      );
    },
  );

  app.post(
    '/invitations/accept',
    {
      config: publicAccess(),
      logLevel: 'warn',
      schema: { hide: true, body: z.object({ token: TOKEN }) },
    },
    async (request, reply) => {
      // A page on another site must not accept an invitation for this browser's person (the token is the secret,
      // but a form posted from elsewhere is refused all the same).
      if (postedFromAnotherSite(request, services.env.PUBLIC_ORIGIN)) return sendPage(reply, 403, linkGone);
      const accepted = await acceptStaffInvitation(request.em, request.body.token);
      if (!accepted) return sendPage(reply, 410, linkGone);
      app.log.info({ userId: accepted.userId, workspaceId: accepted.workspaceId }, 'staff invitation accepted');
      return sendPage(
        reply,
        200,
        renderPage({
          title: 'Invitation accepted',
          body:
            `<p id="result" data-workspace-id="${escapeHtml(accepted.workspaceId)}">You now have access to ` +
            `<b>${escapeHtml(accepted.workspaceName)}</b> as ${escapeHtml(accepted.role)}.</p>` +
            '<p>To use it from the command line, run <code>ticketing login</code> and sign in on the ' +
            '<a href="/device">device page</a> with this address.</p>',
        }),
      );
    },
  );
};
