import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  createFirstWorkspace,
  SIGN_IN_CODE_TTL_MS,
  type UsableWorkspace,
  usableWorkspaces,
  verifyOrganizerSignInCode,
  type WebSessionUser,
} from '../../domain/accounts.js';
import { decideDeviceAuthorization, findPendingByUserCode } from '../../domain/device-authorizations.js';
import { formatUserCode, normalizeUserCode } from '../../domain/device-codes.js';
import { AppError } from '../../domain/errors.js';
import { escapeHtml } from '../../domain/html.js';
import { signInRequester } from '../../domain/sign-in-codes.js';
import type { IDeviceAuthorization } from '../../entities/device-authorization.js';
import { organizerAccountEmailWorkflowId } from '../../workflows/organizer-account-definitions.js';
import type { organizerAccountEmail } from '../../workflows/organizer-account-email.js';
import { EmailSchema } from '../http/email.js';
import { acceptFormBodies } from '../http/form-body.js';
import { hiddenField, renderPage, sendPage } from '../http/html-page.js';
import { enforceRateLimit } from '../http/limits.js';
import { csrfTokenFor, csrfTokenMatches, setSessionCookie, signedInOrganizer } from '../http/organizer-web-session.js';
import { publicAccess } from '../http/route-access.js';
import { rateLimitClientKey } from '../plugins/rate-limit.js';
import type { ApiServices } from '../services.js';

/**
 * The verification page of the device authorization grant (RFC 8628 section 3.3), at `verification_uri`: a person
 * signs in (email, then an emailed code), enters the code their device shows (or arrives with it in the address from
 * `verification_uri_complete`), sees which client asks for which scope in which workspace, and approves or denies.
 * A new organizer without a workspace first names one here, since a key always acts in a workspace. Plain HTML forms,
 * no script; every POST carries a CSRF token bound to the browser's session.
 */

/** What a person may have typed as a user code; whether it is one is decided by normalizeUserCode. */
const TypedUserCode = z.string().trim().max(20).default('');
const Csrf = z.string().max(100).optional();

const SCOPE_TEXT = {
  write: 'read and change data (events, sales, refunds, …), within your role',
  read: 'read data only',
} as const;

/** Rate-limit key for an (email, client) pair, length-prefixed so no pair can spell another's. */
const signInKey = (email: string, client: string): string => `${email.length}:${email}:${client.length}:${client}`;

const deviceUrl = (userCode: string): string =>
  userCode === '' ? '/device' : `/device?user_code=${encodeURIComponent(userCode)}`;

const errorLine = (message: string | undefined): string =>
  message ? `<p class="error" id="error">${escapeHtml(message)}</p>` : '';

interface PageContext {
  request: FastifyRequest;
  reply: FastifyReply;
  services: ApiServices;
}

const csrfField = (context: PageContext): string =>
  hiddenField('csrf', csrfTokenFor(context.request, context.reply, context.services.env));

function signInPage(context: PageContext, input: { userCode: string; email?: string; error?: string }, status = 200) {
  return sendPage(
    context.reply,
    status,
    renderPage({
      title: 'Sign in to approve a device',
      body:
        errorLine(input.error) +
        '<p>Sign in with your organizer email; we will email you a one-time code.</p>' +
        '<form id="sign-in" method="post" action="/device/sign-in">' +
        '<label for="email">Email</label>' +
        `<input type="email" id="email" name="email" required maxlength="254" autocomplete="email" value="${escapeHtml(input.email ?? '')}">` +
        hiddenField('user_code', input.userCode) +
        csrfField(context) +
        '<button type="submit">Email me a code</button></form>' +
        '<p>New here? Sign up through the API (POST /api/v1/auth/signup) and open the link we email you.</p>',
    }),
  );
}

function codePage(context: PageContext, input: { email: string; userCode: string; error?: string }, status = 200) {
  return sendPage(
    context.reply,
    status,
    renderPage({
      title: 'Enter your sign-in code',
      body:
        errorLine(input.error) +
        `<p>If an organizer account uses <b id="email-shown">${escapeHtml(input.email)}</b>, we emailed it a 6-digit code. ` +
        'It expires in 10 minutes.</p>' +
        '<form id="sign-in-code" method="post" action="/device/sign-in/code">' +
        '<label for="code">Code</label>' +
        '<input type="text" id="code" name="code" required inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code">' +
        hiddenField('email', input.email) +
        hiddenField('user_code', input.userCode) +
        csrfField(context) +
        '<button type="submit">Sign in</button></form>' +
        `<p><a href="${escapeHtml(deviceUrl(input.userCode))}">Use another email</a></p>`,
    }),
  );
}

function firstWorkspacePage(context: PageContext, user: WebSessionUser, userCode: string, error?: string) {
  return sendPage(
    context.reply,
    error ? 422 : 200,
    renderPage({
      title: 'Create your first workspace',
      body:
        errorLine(error) +
        `<p>Welcome, ${escapeHtml(user.name)}. You are signed in as ${escapeHtml(user.email)}. Keys act in a workspace, ` +
        'so name yours first; you will be its administrator and can invite your team later.</p>' +
        '<form id="first-workspace" method="post" action="/device/workspace">' +
        '<label for="name">Workspace name</label>' +
        '<input type="text" id="name" name="name" required minlength="2" maxlength="120" placeholder="e.g. Teatro Colón">' +
        hiddenField('user_code', userCode) +
        csrfField(context) +
        '<button type="submit">Create workspace</button></form>',
    }),
  );
}

function enterCodePage(
  context: PageContext,
  user: WebSessionUser,
  input: { userCode: string; error?: string },
  status = 200,
) {
  return sendPage(
    context.reply,
    status,
    renderPage({
      title: 'Connect a device',
      body:
        errorLine(input.error) +
        `<p>Signed in as ${escapeHtml(user.email)}. Enter the code your device or command-line client shows.</p>` +
        '<form id="enter-code" method="get" action="/device">' +
        '<label for="user_code">Code</label>' +
        `<input type="text" id="user_code" name="user_code" required maxlength="20" autocomplete="off" autocapitalize="characters" placeholder="XXXX-XXXX" value="${escapeHtml(input.userCode)}">` +
        '<button type="submit">Continue</button></form>',
    }),
  );
}

/**
 * The client's name is whatever the device sent: any program can call itself `ticketing-cli`, so the page never
 * presents it as verified. What tells the person's own request apart is where and when it was made.
 */
function clientLabel(clientId: string): string {
  return `<code>${escapeHtml(clientId)}</code> (the name the device gave itself; anyone can use any name, so we cannot vouch for it)`;
}

/** When the request was made, in UTC and as an age, for the person to compare with when they started their login. */
function requestedAtText(createdAt: Date, now = Date.now()): string {
  const minutes = Math.max(0, Math.round((now - createdAt.getTime()) / 60_000));
  const age = minutes === 0 ? 'less than a minute ago' : `${minutes} minute${minutes === 1 ? '' : 's'} ago`;
  return `${createdAt.toISOString().replace('T', ' ').slice(0, 19)} UTC (${age})`;
}

/**
 * The workspace the key is minted in, the person's default one preselected. With several, the page says what the
 * choice does: organizer requests act in the default workspace unless they name another (contract 5.5), while
 * customer endpoints called with the key stay in the key's own workspace (5.6).
 */
function workspaceChoice(workspaces: UsableWorkspace[]): string {
  const [preselected, ...others] = workspaces;
  if (!preselected) return '';
  if (others.length === 0) {
    return (
      `<dt>Workspace</dt><dd id="workspace">${escapeHtml(preselected.name)} (you are ${escapeHtml(preselected.role)})</dd>` +
      hiddenField('workspace_id', preselected.id, `id="workspace-choice" data-selected="${escapeHtml(preselected.id)}"`)
    );
  }
  const options = workspaces
    .map(
      (workspace, index) =>
        `<option value="${escapeHtml(workspace.id)}"${index === 0 ? ' selected' : ''}>` +
        `${escapeHtml(workspace.name)} (you are ${escapeHtml(workspace.role)})</option>`,
    )
    .join('');
  return (
    '<dt><label for="workspace-choice">Workspace of the key</label></dt>' +
    `<dd><select id="workspace-choice" name="workspace_id" data-selected="${escapeHtml(preselected.id)}">${options}</select>` +
    `<br><small>Requests act in your default workspace, ${escapeHtml(preselected.name)}, unless they send ` +
    'X-Workspace-Id with another of yours; customer endpoints called with this key stay in the workspace chosen here.</small></dd>'
  );
}

function confirmationPage(
  context: PageContext,
  user: WebSessionUser,
  authorization: IDeviceAuthorization,
  workspaces: UsableWorkspace[],
) {
  return sendPage(
    context.reply,
    200,
    renderPage({
      title: 'Approve this device?',
      body:
        `<p>Check that your device shows <span class="code" id="user-code">${formatUserCode(authorization.userCode)}</span>. ` +
        'Approve only if you started this login yourself.</p>' +
        '<p class="error" id="warning">If someone sent you this code or link, or the address and time below do not ' +
        'match the device you are logging in from, deny: approving gives whoever asked a key that acts as you.</p>' +
        '<form id="confirm" method="post" action="/device/decision"><dl>' +
        `<dt>Client</dt><dd id="client-id" data-client-id="${escapeHtml(authorization.clientId)}">${clientLabel(authorization.clientId)}</dd>` +
        `<dt>Requested from</dt><dd id="requested-from" data-address="${escapeHtml(authorization.requestedFrom ?? '')}">` +
        `${escapeHtml(authorization.requestedFrom ?? 'unknown address')}` +
        `<br><small>This browser is at ${escapeHtml(context.request.ip)}; a device on the same network usually shows ` +
        'the same address.</small></dd>' +
        `<dt>Requested at</dt><dd id="requested-at" data-at="${authorization.createdAt.toISOString()}">` +
        `${escapeHtml(requestedAtText(authorization.createdAt))}</dd>` +
        `<dt>Access asked for</dt><dd id="scope" data-scope="${authorization.scope}"><b>${authorization.scope}</b>: ${escapeHtml(SCOPE_TEXT[authorization.scope])}</dd>` +
        `<dt>Signed in as</dt><dd>${escapeHtml(user.email)}</dd>` +
        `${workspaceChoice(workspaces)}</dl>` +
        '<p>The device receives an API key that acts as you in that workspace, with your role there.</p>' +
        hiddenField('authorization_id', authorization.id) +
        csrfField(context) +
        '<button type="submit" name="decision" value="approve">Approve</button>' +
        '<button type="submit" name="decision" value="deny">Deny</button></form>',
    }),
  );
}

function resultPage(context: PageContext, result: 'approved' | 'denied' | 'gone') {
  const text = {
    approved: 'Approved. Your device now receives its key; you can close this page and return to it.',
    denied: 'Denied. The device gets no key. If you did not start this login, nothing else is needed.',
    gone: 'This request was already decided or has expired. Start the login on your device again.',
  }[result];
  return sendPage(
    context.reply,
    result === 'gone' ? 410 : 200,
    renderPage({
      title: result === 'gone' ? 'Request no longer open' : 'Done',
      body: `<p id="result" data-result="${result}">${escapeHtml(text)}</p>`,
    }),
  );
}

function messagePage(reply: FastifyReply, status: number, title: string, message: string) {
  return sendPage(
    reply,
    status,
    renderPage({
      title,
      body: `<p class="error" id="error">${escapeHtml(message)}</p><p><a href="/device">Back to the device page</a></p>`,
    }),
  );
}

/** A form whose CSRF token is not this browser's: refused before anything else is read from it. */
function requireCsrf(request: FastifyRequest, submitted: string | undefined): void {
  if (!csrfTokenMatches(request, submitted)) {
    throw new AppError('FORBIDDEN', 'This form expired or did not come from this site; reload the page and try again');
  }
}

export const devicePageRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  acceptFormBodies(app);
  // Errors of these routes are pages, not the API's JSON bodies: a person reads them.
  app.setErrorHandler((error, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      return messagePage(reply, 422, 'Something is missing', 'The form was incomplete or malformed; please try again.');
    }
    if (error instanceof AppError && error.status < 500) {
      reply.headers(error.headers);
      return messagePage(reply, error.status, 'That did not work', error.message);
    }
    request.log.error({ err: error }, 'device page failed');
    return messagePage(reply, 500, 'Something went wrong', 'Please try again in a moment.');
  });

  app.get(
    '/device',
    {
      config: publicAccess(),
      schema: { hide: true, querystring: z.object({ user_code: TypedUserCode }) },
    },
    async (request, reply) => {
      const context = { request, reply, services };
      const typed = request.query.user_code;
      const user = await signedInOrganizer(request);
      if (!user) return signInPage(context, { userCode: typed });
      const workspaces = await usableWorkspaces(request.em, user);
      if (workspaces.length === 0) return firstWorkspacePage(context, user, typed);
      if (typed === '') return enterCodePage(context, user, { userCode: '' });
      await enforceRateLimit(request, 'deviceUserCodePerClient', rateLimitClientKey(request.ip));
      const userCode = normalizeUserCode(typed);
      if (!userCode) {
        return enterCodePage(context, user, { userCode: typed, error: 'A code has 8 letters, like WDJB-MJHT.' }, 400);
      }
      const authorization = await findPendingByUserCode(request.em, userCode);
      if (!authorization) {
        const error = 'No open request has that code: it may have expired or been used. Check your device.';
        return enterCodePage(context, user, { userCode: typed, error }, 404);
      }
      return confirmationPage(context, user, authorization, workspaces);
    },
  );

  app.post(
    '/device/sign-in',
    {
      config: publicAccess(),
      schema: { hide: true, body: z.object({ email: z.string().max(254), user_code: TypedUserCode, csrf: Csrf }) },
    },
    async (request, reply) => {
      const context = { request, reply, services };
      requireCsrf(request, request.body.csrf);
      const parsed = EmailSchema.safeParse(request.body.email.trim());
      if (!parsed.success) {
        return signInPage(
          context,
          { userCode: request.body.user_code, email: request.body.email, error: 'That is not an email address.' },
          422,
        );
      }
      const email = parsed.data;
      const client = rateLimitClientKey(request.ip);
      await enforceRateLimit(request, 'organizerSignInRequestPerClient', client);
      await enforceRateLimit(request, 'organizerSignInRequestPerEmailAndClient', signInKey(email, client));
      await services.temporal.workflow.start<typeof organizerAccountEmail>('organizerAccountEmail', {
        taskQueue: services.env.TEMPORAL_TASK_QUEUE,
        workflowId: organizerAccountEmailWorkflowId(randomUUID()),
        args: [
          {
            kind: 'sign-in',
            email,
            codeTtlMs: SIGN_IN_CODE_TTL_MS,
            publicOrigin: services.env.PUBLIC_ORIGIN,
            requestedBy: signInRequester(client),
          },
        ],
        workflowExecutionTimeout: '10 minutes',
      });
      // The same page whether or not the address has an account, so it reveals nothing.
      return codePage(context, { email, userCode: request.body.user_code });
    },
  );

  app.post(
    '/device/sign-in/code',
    {
      config: publicAccess(),
      schema: {
        hide: true,
        body: z.object({ email: EmailSchema, code: z.string().trim().max(20), user_code: TypedUserCode, csrf: Csrf }),
      },
    },
    async (request, reply) => {
      const context = { request, reply, services };
      requireCsrf(request, request.body.csrf);
      const { email, code, user_code: userCode } = request.body;
      const client = rateLimitClientKey(request.ip);
      await enforceRateLimit(request, 'organizerSignInVerifyPerClient', client);
      await enforceRateLimit(request, 'organizerSignInVerifyPerEmailAndClient', signInKey(email, client));
      const requester = signInRequester(client);
      const session = /^\d{6}$/.test(code)
        ? await verifyOrganizerSignInCode(request.em, { email, code, requester })
        : null;
      if (!session) {
        const error = 'That code is wrong, expired or already used. Check the latest email or ask for a new code.';
        return codePage(context, { email, userCode, error }, 401);
      }
      setSessionCookie(reply, services.env, session);
      return reply.redirect(deviceUrl(userCode), 303);
    },
  );

  app.post(
    '/device/workspace',
    {
      config: publicAccess(),
      schema: { hide: true, body: z.object({ name: z.string().max(200), user_code: TypedUserCode, csrf: Csrf }) },
    },
    async (request, reply) => {
      const context = { request, reply, services };
      const user = await signedInOrganizer(request);
      if (!user) return signInPage(context, { userCode: request.body.user_code }, 401);
      requireCsrf(request, request.body.csrf);
      const name = request.body.name.trim();
      if (name.length < 2 || name.length > 120) {
        return firstWorkspacePage(context, user, request.body.user_code, 'A workspace name has 2 to 120 characters.');
      }
      const created = await createFirstWorkspace(request.em, { user, name });
      if (!created) {
        throw new AppError('ALREADY_EXISTS', 'You already have a workspace; create more through POST /workspaces');
      }
      return reply.redirect(deviceUrl(request.body.user_code), 303);
    },
  );

  app.post(
    '/device/decision',
    {
      config: publicAccess(),
      schema: {
        hide: true,
        body: z.object({
          authorization_id: z.uuid(),
          workspace_id: z.string().max(64).default(''),
          decision: z.enum(['approve', 'deny']),
          csrf: Csrf,
        }),
      },
    },
    async (request, reply) => {
      const context = { request, reply, services };
      const user = await signedInOrganizer(request);
      if (!user) return signInPage(context, { userCode: '' }, 401);
      requireCsrf(request, request.body.csrf);
      const { authorization_id: authorizationId, workspace_id: workspaceId, decision } = request.body;
      const workspaces = await usableWorkspaces(request.em, user);
      const workspace = workspaces.find((candidate) => candidate.id === workspaceId);
      if (decision === 'approve' && !workspace) {
        throw new AppError('FORBIDDEN', 'Choose one of your workspaces for the key to act in');
      }
      const decided = await decideDeviceAuthorization(request.em, {
        authorizationId,
        userId: user.userId,
        workspaceId: workspace?.id ?? null,
        decision,
      });
      if (!decided) return resultPage(context, 'gone');
      request.log.info({ deviceAuthorizationId: authorizationId, decision }, 'device authorization decided');
      return resultPage(context, decision === 'approve' ? 'approved' : 'denied');
    },
  );
};
