import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { enterpriseTokenAudience, verifyEnterpriseToken } from '../../../domain/enterprise.js';
import { AppError } from '../../../domain/errors.js';
import { claimTokenUse, findActiveEnterpriseSecret, upsertEnterpriseBuyer } from '../../../entities/enterprise.js';
import { dataOf } from '../../http/envelope.js';
import { publicAccess } from '../../http/route-access.js';
import { issueBuyerSession, signedInAnswer } from '../../plugins/customer-auth.js';
import type { ApiServices } from '../../services.js';
import { BuyerSessionSchema } from './auth.js';

/** Contract 4.1: this one customer operation lives outside /api/v1. */
export const ENTERPRISE_EXCHANGE_PATH = '/api/customer-auth/enterprise-exchange';

/**
 * Shorter than a first-party sign-in's 30 days: the enterprise's own sign-in stays the authority, and it can hand
 * the user over again at any time with a fresh token.
 */
const ENTERPRISE_SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export const enterpriseExchangeRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  const audience = enterpriseTokenAudience(services.env.PUBLIC_ORIGIN);

  app.post(
    ENTERPRISE_EXCHANGE_PATH,
    {
      config: publicAccess(),
      schema: {
        tags: ['customer'],
        summary: "Exchange an enterprise's one-time SSO token for a buyer session",
        description:
          'The token is a JWT signed with HS256 and the enterprise signing secret (as UTF-8 bytes), with claims ' +
          "`iss` (enterprise id), `aud` (this service's origin), `sub` (the user's id at the enterprise), `email`, " +
          'optional `name`, `iat`, `exp` (at most 300 s after iat) and `jti` (each token is accepted once). The ' +
          "session buys only in the enterprise's workspaces, and returnUrl follows the enterprise's allowlist. " +
          'A refused token answers 401 UNAUTHENTICATED with `error.details.reason`: token_malformed, ' +
          'unknown_issuer, bad_signature, wrong_audience, token_expired, token_not_yet_valid, lifetime_too_long ' +
          'or token_replayed.',
        // The operation is at the root, not under the document's /api/v1 server.
        servers: [{ url: '/' }],
        body: z.object({ token: z.string().min(1).max(8192).meta({ description: 'The one-time SSO token (JWT)' }) }),
        response: { 200: dataOf(BuyerSessionSchema) },
      },
    },
    async (request) => {
      const em = request.em.fork();
      const verdict = await verifyEnterpriseToken(request.body.token, {
        audience,
        findEnterprise: (enterpriseId) =>
          findActiveEnterpriseSecret(em, enterpriseId, services.env.SECRETS_ENCRYPTION_KEY),
      });
      if (!verdict.ok) {
        request.log.info({ reason: verdict.reason }, 'enterprise token refused');
        throw new AppError('UNAUTHENTICATED', verdict.message, { details: { reason: verdict.reason } });
      }
      const { claims } = verdict;
      // The token's single use, the buyer and the session commit together: a refused or failed exchange leaves
      // the token unused, and a used token always has its session.
      const session = await em.transactional(async (tx) => {
        const firstUse = await claimTokenUse(tx, {
          enterpriseId: claims.enterpriseId,
          jti: claims.jti,
          acceptableUntil: claims.acceptableUntil,
        });
        if (!firstUse) return null;
        const buyer = await upsertEnterpriseBuyer(tx, {
          enterpriseId: claims.enterpriseId,
          subject: claims.subject,
          email: claims.email,
          name: claims.name,
        });
        return { ...issueBuyerSession(tx, buyer.id, ENTERPRISE_SESSION_TTL_MS), buyer };
      });
      if (!session) {
        request.log.info({ enterpriseId: claims.enterpriseId }, 'enterprise token replayed');
        throw new AppError('UNAUTHENTICATED', 'This token was already exchanged; each token is accepted once', {
          details: { reason: 'token_replayed' },
        });
      }
      // No cookie, unlike the code sign-in: a cookie set here would let any page that posts someone's token sign a
      // visitor's browser in as that someone. Headless integrators send X-Customer-Session.
      return signedInAnswer(session);
    },
  );
};
