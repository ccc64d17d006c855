import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Env } from '../../config/env.js';
import { type OpenedWebSession, resolveWebSession, type WebSessionUser } from '../../domain/accounts.js';

/**
 * The organizer's browser session on the web pages (/device), and the CSRF token of their forms. The cookies are
 * HttpOnly, SameSite=Lax, Secure when the service is served over https, and scoped to /device: the API itself never
 * reads them (it takes API keys), so no API route can be driven by a browser's ambient credential.
 */

export const ORGANIZER_SESSION_COOKIE = 'organizer_session';
/** A random value per browser before it signs in: what the sign-in forms' CSRF token is bound to. */
const BROWSER_COOKIE = 'device_browser';
const COOKIE_PATH = '/device';

const cookieOptions = (env: Pick<Env, 'PUBLIC_ORIGIN'>) => ({
  httpOnly: true,
  sameSite: 'lax' as const,
  secure: env.PUBLIC_ORIGIN.startsWith('https:'),
  path: COOKIE_PATH,
});

const presented = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.cookies?.[name];
  return value && value !== '' ? value : undefined;
};

export function setSessionCookie(
  reply: FastifyReply,
  env: Pick<Env, 'PUBLIC_ORIGIN'>,
  session: OpenedWebSession,
): void {
  reply.setCookie(ORGANIZER_SESSION_COOKIE, session.token, { ...cookieOptions(env), expires: session.expiresAt });
}

/** The signed-in organizer of this browser, or null (no cookie, or a session that is unknown, expired or ended). */
export async function signedInOrganizer(request: FastifyRequest): Promise<WebSessionUser | null> {
  const token = presented(request, ORGANIZER_SESSION_COOKIE);
  return token ? resolveWebSession(request.em, token) : null;
}

/**
 * The secret this browser's CSRF tokens derive from: the session token once signed in (so a token is bound to the
 * session), before that the browser cookie, created here when missing. Null only when `reply` is absent and the
 * browser has neither, i.e. on a POST from a browser that never loaded a page.
 */
function csrfSecret(request: FastifyRequest, reply?: FastifyReply, env?: Pick<Env, 'PUBLIC_ORIGIN'>): string | null {
  const secret = presented(request, ORGANIZER_SESSION_COOKIE) ?? presented(request, BROWSER_COOKIE);
  if (secret || !reply || !env) return secret ?? null;
  const fresh = randomBytes(32).toString('base64url');
  reply.setCookie(BROWSER_COOKIE, fresh, cookieOptions(env));
  return fresh;
}

const deriveCsrfToken = (secret: string): string =>
  createHmac('sha256', secret).update('device-page-csrf').digest('base64url');

/** The CSRF token for the forms of the page being rendered (the synchronizer token pattern, without storage). */
export function csrfTokenFor(request: FastifyRequest, reply: FastifyReply, env: Pick<Env, 'PUBLIC_ORIGIN'>): string {
  return deriveCsrfToken(csrfSecret(request, reply, env) ?? '');
}

/** Whether a submitted form carries the token of this browser's current session (or pre-sign-in cookie). */
export function csrfTokenMatches(request: FastifyRequest, submitted: string | undefined): boolean {
  const secret = csrfSecret(request);
  if (!secret || !submitted) return false;
  const expected = Buffer.from(deriveCsrfToken(secret));
  const actual = Buffer.from(submitted);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
