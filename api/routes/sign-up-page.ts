import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { signUpLinkUsable, verifySignUpLink } from '../../domain/accounts.js';
import { acceptFormBodies } from '../http/form-body.js';
import { hiddenField, postedFromAnotherSite, renderPage, sendPage } from '../http/html-page.js';
import { setSessionCookie } from '../http/organizer-web-session.js';
import { publicAccess } from '../http/route-access.js';
import type { ApiServices } from '../services.js';

const TOKEN = z.string().max(200).default('');

const linkGone = renderPage({
  title: 'This link no longer works',
  body:
    '<p class="error" id="error">The verification link is invalid, expired or already used.</p>' +
    '<p>If you already verified your email, <a href="/device">sign in</a> with a code we email you. ' +
    'Otherwise sign up again to get a new link.</p>',
});

/**
 * The link of the sign-up email (POST /api/v1/auth/signup). Opening it shows a confirmation button: mail scanners
 * and link previews fetch links with GET, so GET never uses the link up; the button's POST verifies the address
 * once, creates the account, signs the browser in and continues on the device page, where a new organizer names
 * their first workspace and approves their first key.
 */
export const signUpPageRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  acceptFormBodies(app);
  const noStore = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' };

  app.get(
    '/auth/verify',
    {
      config: publicAccess(),
      // The address carries the link's secret, and Fastify's request log lines carry the address: warnings only.
      logLevel: 'warn',
      schema: { hide: true, querystring: z.object({ token: TOKEN }) },
    },
    async (request, reply) => {
      const { token } = request.query;
      if (token === '' || !(await signUpLinkUsable(request.em, token))) return sendPage(reply, 410, linkGone);
      reply.headers(noStore);
      return sendPage(
        reply,
        200,
        renderPage({
          title: 'Confirm your email',
          body:
            '<form method="post" action="/auth/verify">' +
            hiddenField('token', token) +
            '<p>Confirm this address to create your organizer account.</p>' +
            '<button type="submit" id="confirm">Confirm my email</button></form>',
        }),
      );
    },
  );

  app.post(
    '/auth/verify',
    {
      config: publicAccess(),
      logLevel: 'warn',
      schema: { hide: true, body: z.object({ token: TOKEN }) },
    },
    async (request, reply) => {
      // A page on another site must not sign this browser in to an account of its choosing (login CSRF).
      if (postedFromAnotherSite(request, services.env.PUBLIC_ORIGIN)) return sendPage(reply, 403, linkGone);
      const { token } = request.body;
      const session = token === '' ? null : await verifySignUpLink(request.em, token);
      if (!session) return sendPage(reply, 410, linkGone);
      setSessionCookie(reply, services.env, session);
      app.log.info({ userId: session.userId }, 'organizer sign-up verified');
      return reply.headers(noStore).redirect('/device', 303);
    },
  );
};
