import { SignJWT, UnsecuredJWT } from 'jose';
import {
  ENTERPRISE_TOKEN_CLOCK_SKEW_SECONDS,
  type EnterpriseSecretLookup,
  enterpriseTokenAudience,
  verifyEnterpriseToken,
} from '../../domain/enterprise.js';

const ENTERPRISE_ID = '01937a4e-0000-7000-8000-000000000001';
const SECRET = 'ent_sk_unit-test-secret-with-enough-bytes-0123456789';
const AUDIENCE = 'https://tickets.example.test';
const NOW = new Date('2026-11-25T12:00:00Z');
const nowSeconds = Math.floor(NOW.getTime() / 1000);

const findEnterprise: EnterpriseSecretLookup = async (id) => (id === ENTERPRISE_ID ? { id, secret: SECRET } : null);

interface TokenOptions {
  claims?: Record<string, unknown>;
  iss?: string;
  aud?: string;
  iat?: number;
  exp?: number;
  secret?: string;
  alg?: string;
}

function token(options: TokenOptions = {}): Promise<string> {
  const iat = options.iat ?? nowSeconds;
  return new SignJWT({ email: 'Ana@Acme.test', name: 'Ana Acme', ...options.claims })
    .setProtectedHeader({ alg: options.alg ?? 'HS256' })
    .setIssuer(options.iss ?? ENTERPRISE_ID)
    .setAudience(options.aud ?? AUDIENCE)
    .setSubject('user-42')
    .setJti(`jti-${Math.random()}`)
    .setIssuedAt(iat)
    .setExpirationTime(options.exp ?? iat + 120)
    .sign(new TextEncoder().encode(options.secret ?? SECRET));
}

const verify = async (jwt: string) => verifyEnterpriseToken(jwt, { audience: AUDIENCE, findEnterprise, now: NOW });
const reasonOf = async (jwt: string) => {
  const verdict = await verify(jwt);
  return verdict.ok ? 'accepted' : verdict.reason;
};

describe('enterprise SSO token checks (issue 16)', () => {
  test('a well-formed token yields the enterprise, the subject and the user, email in lower case', async () => {
    const verdict = await verify(await token({ exp: nowSeconds + 300 }));
    expect(verdict).toMatchObject({
      ok: true,
      claims: { enterpriseId: ENTERPRISE_ID, subject: 'user-42', email: 'ana@acme.test', name: 'Ana Acme' },
    });
    // Its use must be remembered until no copy could be accepted: exp plus the skew allowance.
    if (!verdict.ok) throw new Error('refused');
    expect(verdict.claims.acceptableUntil.getTime()).toBe(
      (nowSeconds + 300 + ENTERPRISE_TOKEN_CLOCK_SKEW_SECONDS) * 1000,
    );
  });

  test('a token signed with another secret is refused (bad_signature)', async () => {
    expect(await reasonOf(await token({ secret: 'ent_sk_another-secret-of-some-other-enterprise-0000' }))).toBe(
      'bad_signature',
    );
  });

  test('a token whose signature was tampered with after signing is refused', async () => {
    const [header, , signature] = (await token()).split('.');
    const forgedPayload = Buffer.from(
      JSON.stringify({
        iss: ENTERPRISE_ID,
        aud: AUDIENCE,
        sub: 'admin',
        email: 'x@x.test',
        jti: 'j',
        iat: nowSeconds,
        exp: nowSeconds + 60,
      }),
    ).toString('base64url');
    expect(await reasonOf(`${header}.${forgedPayload}.${signature}`)).toBe('bad_signature');
  });

  test('an unsigned token (alg none) or another algorithm is refused before any key is used', async () => {
    const unsecured = new UnsecuredJWT({ email: 'a@a.test', jti: 'x' })
      .setIssuer(ENTERPRISE_ID)
      .setAudience(AUDIENCE)
      .setSubject('user-42')
      .setIssuedAt(nowSeconds)
      .setExpirationTime(nowSeconds + 60)
      .encode();
    expect(await reasonOf(unsecured)).toBe('token_malformed');
    expect(await reasonOf(await token({ alg: 'HS512' }))).toBe('token_malformed');
    expect(await reasonOf('not-a-jwt')).toBe('token_malformed');
  });

  test('an issuer we do not know, or one that is not an enterprise id, is refused (unknown_issuer)', async () => {
    expect(await reasonOf(await token({ iss: '01937a4e-0000-7000-8000-0000000000ff' }))).toBe('unknown_issuer');
    expect(await reasonOf(await token({ iss: "' or 1=1 --" }))).toBe('unknown_issuer');
  });

  test('a token meant for another service is refused (wrong_audience)', async () => {
    expect(await reasonOf(await token({ aud: 'https://other.example.test' }))).toBe('wrong_audience');
  });

  test('expiry allows the clock skew and no more (token_expired)', async () => {
    const skew = ENTERPRISE_TOKEN_CLOCK_SKEW_SECONDS;
    expect(await reasonOf(await token({ iat: nowSeconds - 100, exp: nowSeconds - (skew - 5) }))).toBe('accepted');
    expect(await reasonOf(await token({ iat: nowSeconds - 100, exp: nowSeconds - (skew + 5) }))).toBe('token_expired');
  });

  test('a token issued in the future beyond the skew is refused (token_not_yet_valid)', async () => {
    const skew = ENTERPRISE_TOKEN_CLOCK_SKEW_SECONDS;
    expect(await reasonOf(await token({ iat: nowSeconds + skew - 5 }))).toBe('accepted');
    expect(await reasonOf(await token({ iat: nowSeconds + skew + 60 }))).toBe('token_not_yet_valid');
  });

  test('a token living more than five minutes is refused even while fresh (lifetime_too_long)', async () => {
    expect(await reasonOf(await token({ exp: nowSeconds + 300 }))).toBe('accepted');
    expect(await reasonOf(await token({ exp: nowSeconds + 301 }))).toBe('lifetime_too_long');
    expect(await reasonOf(await token({ exp: nowSeconds + 24 * 3600 }))).toBe('lifetime_too_long');
  });

  test('a token without email, or with an invalid one, is refused (token_malformed)', async () => {
    expect(await reasonOf(await token({ claims: { email: undefined } }))).toBe('token_malformed');
    expect(await reasonOf(await token({ claims: { email: 'not-an-email' } }))).toBe('token_malformed');
  });

  test('the audience is the service origin without a trailing slash', () => {
    expect(enterpriseTokenAudience('https://tickets.example.test/')).toBe('https://tickets.example.test');
    expect(enterpriseTokenAudience('http://127.0.0.1:3300')).toBe('http://127.0.0.1:3300');
  });
});
