import { describe, expect, it } from '@jest/globals';
import {
  gatewayBIntegritySignature,
  signGatewayBWebhook,
  verifyGatewayBIntegritySignature,
  verifyGatewayBWebhook,
} from '../../integrations/gateway-b/signature.js';

// Vectors computed independently with openssl: sha256 of the concatenation, and HMAC-SHA256 over base64(body).
const BODY = '{"id":"evt-1","type":"SALE_APPROVED","data":{"metadata":{"reference":"FT-ABC123"}}}';
const SIGNED_WITH_SECRET = '07434bec2476c3970a1a3bf6fed46e217676243d0ec5b3757d086743e2c9c93b';
const SIGNED_WITH_EMPTY_KEY = '5a8b3d8ae10f92f4081e4c25d7e34346194215ac0338a6b2fbea0a4d5193f9ec';

describe('gateway B integrity signature', () => {
  it('is the hex SHA-256 of order id + amount + currency + secret key', () => {
    expect(
      gatewayBIntegritySignature({ orderId: 'FT-ABC123', amount: 50000, currency: 'COP', secretKey: 'dev-secret' }),
    ).toBe('985a8ef0f77d06440fbc9d5e4214c7371f2a68357f27377d69a491f5e3e7e74a');
  });

  it('changes with the amount, so a tampered amount is detected', () => {
    const input = { orderId: 'FT-ABC123', amount: 50000, currency: 'COP', secretKey: 'dev-secret' };
    const signature = gatewayBIntegritySignature(input);
    expect(verifyGatewayBIntegritySignature(input, signature)).toBe(true);
    expect(verifyGatewayBIntegritySignature({ ...input, amount: 5000 }, signature)).toBe(false);
    expect(verifyGatewayBIntegritySignature({ ...input, currency: 'USD' }, signature)).toBe(false);
  });

  it('refuses amounts that are not non-negative integers', () => {
    expect(() => gatewayBIntegritySignature({ orderId: 'x', amount: 10.5, currency: 'COP', secretKey: 's' })).toThrow(
      RangeError,
    );
  });
});

describe('gateway B webhook signature', () => {
  it('is the hex HMAC-SHA256 of the base64 of the raw body (known vectors)', () => {
    expect(signGatewayBWebhook(BODY, 'dev-secret')).toBe(SIGNED_WITH_SECRET);
    expect(signGatewayBWebhook(Buffer.from(BODY), '')).toBe(SIGNED_WITH_EMPTY_KEY);
  });

  it('accepts the exact bytes that were signed, in any hex case', () => {
    expect(verifyGatewayBWebhook(BODY, SIGNED_WITH_SECRET, 'dev-secret')).toBe(true);
    expect(verifyGatewayBWebhook(Buffer.from(BODY), SIGNED_WITH_SECRET.toUpperCase(), 'dev-secret')).toBe(true);
  });

  it.each([
    ['a re-serialised body', JSON.stringify(JSON.parse(BODY), null, 2), SIGNED_WITH_SECRET, 'dev-secret'],
    ['a changed reference', BODY.replace('FT-ABC123', 'FT-ABC124'), SIGNED_WITH_SECRET, 'dev-secret'],
    ['the wrong key', BODY, SIGNED_WITH_SECRET, 'other'],
    ['a test-mode signature against a real key', BODY, SIGNED_WITH_EMPTY_KEY, 'dev-secret'],
    ['a truncated header', BODY, SIGNED_WITH_SECRET.slice(0, 10), 'dev-secret'],
    ['no header', BODY, undefined, 'dev-secret'],
  ])('rejects %s', (_label, body, header, secret) => {
    expect(verifyGatewayBWebhook(body, header, secret)).toBe(false);
  });
});
