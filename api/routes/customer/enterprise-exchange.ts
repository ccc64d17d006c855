import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { enterpriseTokenAudience, verifyEnterpriseToken } from '../../../domain/enterprise.js';
import { AppError } from '../../../domain/errors.js';
import { findActiveEnterpriseSecret } from '../../../entities/enterprise.js';
import { dataOf } from '../../http/envelope.js';
import { publicAccess } from '../../http/route-access.js';
import { signedInAnswer } from '../../plugins/customer-auth.js';
import { signInEnterpriseBuyer } from '../../services/buyers.js';
import type { ApiServices } from '../../services.js';
import { BuyerSessionSchema } from './auth.js';

/** Contract 4.1 lists this one customer operation at /api/customer-auth, outside /api/v1. */
export const ENTERPRISE_EXCHANGE_PATH = '/api/customer-auth/enterprise-exchange';
/**
 * Contract 4.0 makes every B2B path relative to {base_url} (/api/v1), so a client that reads 4.1 literally posts
 * here: the same operation is served at both addresses, with the same answers.
 */
export const ENTERPRISE_EXCHANGE_V1_PATH = '/api/v1/customer-auth/enterprise-exchange';

/**
 * Shorter than a first-party sign-in's 30 days: the enterprise's own sign-in stays the authority, and it can hand
 * the user over again at any time with a fresh token.
 */
const ENTERPRISE_SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export const enterpriseExchangeRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  const audience = enterpriseTokenAudience(services.env.PUBLIC_ORIGIN);

  const exchange = (path: string, atRoot: boolean) =>
    app.post(
      path,
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
          // At the root the operation is not under the document's /api/v1 server.
          ...(atRoot ? { servers: [{ url: '/' }] } : {}),
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
        const session = await signInEnterpriseBuyer(em, claims, ENTERPRISE_SESSION_TTL_MS);
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
  exchange(ENTERPRISE_EXCHANGE_PATH, true);
  exchange(ENTERPRISE_EXCHANGE_V1_PATH, false);
};
