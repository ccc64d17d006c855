import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { signInRequester } from '../../../domain/sign-in-codes.js';
import { EmailSchema } from '../../http/email.js';
import { dataOf } from '../../http/envelope.js';
import { enforceRateLimit } from '../../http/limits.js';
import { customerAccess, publicAccess } from '../../http/route-access.js';
import { BUYER_SESSION_COOKIE, currentCustomer, signedInAnswer } from '../../plugins/customer-auth.js';
import { rateLimitClientKey } from '../../plugins/rate-limit.js';
import { endBuyerSession, sendSignInCode, signInWithCode, updateBuyerProfile } from '../../services/buyers.js';
import type { ApiServices } from '../../services.js';

const CODE_TTL_MS = 10 * 60 * 1000;
const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Rate-limit key for an (email, client address) pair. Both parts are length-prefixed so no email/address pair can
 * spell another pair's key (an IPv6 address contains ':' and an email may too).
 */
const signInKey = (email: string, client: string): string => `${email.length}:${email}:${client.length}:${client}`;

export const BuyerSchema = z
  .object({ id: z.string(), email: z.string(), name: z.string().nullable(), phone: z.string().nullable() })
  .meta({ id: 'Buyer' });

/** The answer of every way of signing a buyer in (code verification, enterprise exchange). */
export const BuyerSessionSchema = z
  .object({ session_token: z.string(), expiresAt: z.string(), buyer: BuyerSchema })
  .meta({ id: 'BuyerSession' });

export const customerAuthRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.post(
    '/customer/auth/request',
    {
      config: publicAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Email a one-time sign-in code (creates the buyer account on first verification)',
        body: z.object({ email: EmailSchema }),
        response: { 202: dataOf(z.object({ sent: z.literal(true), expiresInSeconds: z.number().int() })) },
      },
    },
    async (request, reply) => {
      const { email } = request.body;
      const client = rateLimitClientKey(request.ip);
      await enforceRateLimit(request, 'signInRequestPerClient', client);
      // Keyed on the email and the client together: a budget per email alone could be spent by anyone, locking the
      // buyer out of signing in from their own address.
      await enforceRateLimit(request, 'signInRequestPerEmailAndClient', signInKey(email, client));
      await sendSignInCode(services, email, signInRequester(client), CODE_TTL_MS);
      // The same answer whether or not the address has an account, so it reveals nothing.
      return reply.status(202).send({ data: { sent: true as const, expiresInSeconds: CODE_TTL_MS / 1000 } });
    },
  );

  app.post(
    '/customer/auth/verify',
    {
      config: publicAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Exchange the emailed code for a buyer session',
        body: z.object({ email: EmailSchema, code: z.string().regex(/^\d{6}$/, 'six digits') }),
        response: {
          200: dataOf(BuyerSessionSchema),
        },
      },
    },
    async (request, reply) => {
      const { email, code } = request.body;
      const client = rateLimitClientKey(request.ip);
      await enforceRateLimit(request, 'signInVerifyPerClient', client);
      // Per email and client, for the same reason as on request. Guessing a code from many clients stays bounded:
      // past MAX_SHARED_SIGN_IN_CODE_ATTEMPTS wrong guesses a code answers only its requester (domain/sign-in-codes.ts),
      // and wrong guesses never spend it, so nobody can lock the owner out.
      await enforceRateLimit(request, 'signInVerifyPerEmailAndClient', signInKey(email, client));
      const invalid = () =>
        new AppError('UNAUTHENTICATED', 'The code is wrong, expired or already used; request a new one');
      const session = await signInWithCode(request.em.fork(), {
        email,
        code,
        requester: signInRequester(client),
        sessionTtlMs: SESSION_TTL_MS,
      });
      if (!session) throw invalid();
      reply.setCookie(BUYER_SESSION_COOKIE, session.token, {
        httpOnly: true,
        sameSite: 'lax',
        secure: services.env.PUBLIC_ORIGIN.startsWith('https:'),
        path: '/',
        expires: session.row.expiresAt,
      });
      return signedInAnswer(session);
    },
  );

  app.get(
    '/customer/me',
    {
      config: customerAccess(),
      schema: { tags: ['customer'], summary: 'The signed-in buyer', response: { 200: dataOf(BuyerSchema) } },
    },
    async (request) => {
      const customer = currentCustomer(request);
      return { data: { id: customer.buyerId, email: customer.email, name: customer.name, phone: customer.phone } };
    },
  );

  app.get(
    '/customer/profile',
    {
      config: customerAccess(),
      schema: { tags: ['customer'], summary: "The buyer's profile", response: { 200: dataOf(BuyerSchema) } },
    },
    async (request) => {
      const customer = currentCustomer(request);
      return { data: { id: customer.buyerId, email: customer.email, name: customer.name, phone: customer.phone } };
    },
  );

  app.patch(
    '/customer/profile',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Update name and phone',
        body: z.object({
          name: z.string().trim().min(2).max(120).optional(),
          phone: z.string().trim().max(40).nullable().optional(),
        }),
        response: { 200: dataOf(BuyerSchema) },
      },
    },
    async (request) => {
      const customer = currentCustomer(request);
      const buyer = await updateBuyerProfile(request.em, customer.buyerId, request.body);
      return { data: { id: buyer.id, email: buyer.email, name: buyer.name ?? null, phone: buyer.phone ?? null } };
    },
  );

  app.post(
    '/customer/logout',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'End this buyer session',
        response: { 200: dataOf(z.object({ loggedOut: z.literal(true) })) },
      },
    },
    async (request, reply) => {
      const customer = currentCustomer(request);
      await endBuyerSession(request.em, customer.sessionId);
      reply.clearCookie(BUYER_SESSION_COOKIE, { path: '/' });
      return { data: { loggedOut: true as const } };
    },
  );
};
