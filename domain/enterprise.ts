import { decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { z } from 'zod';

/**
 * The one-time SSO token an enterprise's own system issues so one of its signed-in users becomes a buyer session
 * here (POST /api/customer-auth/enterprise-exchange, issue 16). It is a JWT signed with HS256, keyed with the UTF-8
 * bytes of the enterprise's signing secret, carrying:
 *
 * - `iss`: the enterprise id we gave the enterprise;
 * - `aud`: this service, i.e. its public origin (PUBLIC_ORIGIN, for example `https://tickets.example.com`);
 * - `sub`: the user's stable id at the enterprise (our buyer is found or created per enterprise and `sub`);
 * - `email`, and optionally `name`: who the user is, for receipts and tickets;
 * - `iat`, `exp`: at most five minutes apart, since the token only carries the user across one redirect;
 * - `jti`: a unique id; each token is exchanged once (the caller records it).
 *
 * Clocks may disagree by up to 30 seconds. Any other algorithm (`none`, RS256, …) is refused, so a token cannot
 * choose how it is checked.
 */

export const ENTERPRISE_TOKEN_MAX_LIFETIME_SECONDS = 300;
export const ENTERPRISE_TOKEN_CLOCK_SKEW_SECONDS = 30;
export const ENTERPRISE_TOKEN_ALGORITHM = 'HS256';

/** The `aud` every enterprise token must carry: this service's public origin, without a trailing slash. */
export const enterpriseTokenAudience = (publicOrigin: string): string => new URL(publicOrigin).origin;

/** Why a token was refused, as `error.details.reason` (stable slugs integrators may branch on). */
export type EnterpriseTokenRefusal =
  | 'token_malformed'
  | 'unknown_issuer'
  | 'bad_signature'
  | 'wrong_audience'
  | 'token_expired'
  | 'token_not_yet_valid'
  | 'lifetime_too_long'
  | 'token_replayed';

export interface EnterpriseTokenClaims {
  enterpriseId: string;
  subject: string;
  email: string;
  name: string | null;
  jti: string;
  /** Past this instant (`exp` plus the skew allowance) no copy of the token can be accepted, so its use can be forgotten. */
  acceptableUntil: Date;
}

export type EnterpriseTokenVerdict =
  | { ok: true; claims: EnterpriseTokenClaims }
  | { ok: false; reason: EnterpriseTokenRefusal; message: string };

const ClaimsSchema = z.object({
  sub: z.string().min(1).max(255),
  email: z
    .email()
    .max(254)
    .transform((value) => value.toLowerCase()),
  name: z.string().trim().min(1).max(120).optional(),
  jti: z.string().min(1).max(255),
  iat: z.number().int(),
  exp: z.number().int(),
});

const refuse = (reason: EnterpriseTokenRefusal, message: string): EnterpriseTokenVerdict => ({
  ok: false,
  reason,
  message,
});

/** The secret of the enterprise a token names, looked up by the caller (null: no such active enterprise). */
export type EnterpriseSecretLookup = (enterpriseId: string) => Promise<{ id: string; secret: string } | null>;

/**
 * Checks an enterprise SSO token: form, issuer, signature, audience, times and claims. It does not check single
 * use; the caller records `jti` in the same transaction that issues the session.
 */
export async function verifyEnterpriseToken(
  token: string,
  options: { audience: string; findEnterprise: EnterpriseSecretLookup; now?: Date },
): Promise<EnterpriseTokenVerdict> {
  let issuer: unknown;
  try {
    if (decodeProtectedHeader(token).alg !== ENTERPRISE_TOKEN_ALGORITHM) {
      return refuse('token_malformed', `The token must be signed with ${ENTERPRISE_TOKEN_ALGORITHM}`);
    }
    issuer = decodeJwt(token).iss;
  } catch {
    return refuse('token_malformed', 'The token is not a JWT');
  }
  // Enterprise ids are UUIDs; anything else cannot name one, and must not reach the database as one.
  if (typeof issuer !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(issuer)) {
    return refuse('unknown_issuer', 'The token names no enterprise we know (iss)');
  }
  const enterprise = await options.findEnterprise(issuer.toLowerCase());
  if (!enterprise) return refuse('unknown_issuer', 'The token names no enterprise we know (iss)');

  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, new TextEncoder().encode(enterprise.secret), {
      algorithms: [ENTERPRISE_TOKEN_ALGORITHM],
      issuer,
      audience: options.audience,
      clockTolerance: ENTERPRISE_TOKEN_CLOCK_SKEW_SECONDS,
      maxTokenAge: ENTERPRISE_TOKEN_MAX_LIFETIME_SECONDS,
      requiredClaims: ['sub', 'jti', 'iat', 'exp'],
      ...(options.now ? { currentDate: options.now } : {}),
    }));
  } catch (error) {
    return refusalOf(error);
  }

  const claims = ClaimsSchema.safeParse(payload);
  if (!claims.success) {
    const fields = [...new Set(claims.error.issues.map((issue) => issue.path.join('.')))].join(', ');
    return refuse('token_malformed', `The token's claims are missing or invalid: ${fields}`);
  }
  const { sub, email, name, jti, iat, exp } = claims.data;
  if (exp - iat > ENTERPRISE_TOKEN_MAX_LIFETIME_SECONDS) {
    return refuse(
      'lifetime_too_long',
      `The token lives ${exp - iat} s; at most ${ENTERPRISE_TOKEN_MAX_LIFETIME_SECONDS} s between iat and exp is accepted`,
    );
  }
  return {
    ok: true,
    claims: {
      enterpriseId: enterprise.id,
      subject: sub,
      email,
      name: name ?? null,
      jti,
      acceptableUntil: new Date((exp + ENTERPRISE_TOKEN_CLOCK_SKEW_SECONDS) * 1000),
    },
  };
}

function refusalOf(error: unknown): EnterpriseTokenVerdict {
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
    return refuse('bad_signature', "The token's signature does not match the enterprise's signing secret");
  }
  if (error instanceof joseErrors.JWTExpired) {
    return error.claim === 'iat'
      ? refuse('token_expired', `The token was issued more than ${ENTERPRISE_TOKEN_MAX_LIFETIME_SECONDS} s ago`)
      : refuse('token_expired', 'The token has expired (exp)');
  }
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.reason === 'missing') return refuse('token_malformed', `The token has no ${error.claim} claim`);
    if (error.claim === 'aud') return refuse('wrong_audience', 'The token is meant for another service (aud)');
    if (error.claim === 'iss') return refuse('unknown_issuer', 'The token names no enterprise we know (iss)');
    if (error.claim === 'iat' || error.claim === 'nbf') {
      return refuse('token_not_yet_valid', `The token is not valid yet (${error.claim} is in the future)`);
    }
    return refuse('token_malformed', `The token's ${error.claim} claim is invalid`);
  }
  return refuse('token_malformed', 'The token could not be read');
}
