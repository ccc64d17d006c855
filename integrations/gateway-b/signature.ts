import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Gateway B (Bold-style payment button) signatures.
 *
 * Integrity signature: the button is configured in the browser with an order id, amount and currency, so the
 * server binds them with `hex(SHA-256(orderId + amount + currency + secretKey))`, computed server-side only.
 * The amount is the integer the button charges (whole pesos for COP, cents for USD: `toGatewayBAmount` in
 * amounts.ts), written without separators.
 *
 * Webhook signature: `x-bold-signature` is `hex(HMAC-SHA256(secretKey, base64(rawBody)))`: the raw body bytes
 * are Base64-encoded first and the HMAC is taken over that text. The gateway signs test-mode events with an
 * empty key; accepting an empty key is a decision for the caller's configuration, not for this helper.
 */

export function gatewayBIntegritySignature(input: {
  orderId: string;
  amount: number;
  currency: string;
  secretKey: string;
}): string {
  if (!Number.isSafeInteger(input.amount) || input.amount < 0) {
    throw new RangeError(`gateway B amounts are non-negative integers, got ${input.amount}`);
  }
  return createHash('sha256')
    .update(`${input.orderId}${input.amount}${input.currency}${input.secretKey}`, 'utf8')
    .digest('hex');
}

/** The `x-bold-signature` value for a raw body. */
export function signGatewayBWebhook(rawBody: string | Buffer, secret: string): string {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  return createHmac('sha256', secret).update(body.toString('base64'), 'utf8').digest('hex');
}

/**
 * True only when `header` is the signature of exactly these raw bytes. Pass the body as received, before any
 * JSON parsing: re-serialising changes the bytes. Constant-time; never throws.
 */
export function verifyGatewayBWebhook(
  rawBody: string | Buffer,
  header: string | null | undefined,
  secret: string,
): boolean {
  if (typeof header !== 'string') return false;
  const received = header.trim();
  if (!/^[0-9a-f]{64}$/i.test(received)) return false;
  const expected = Buffer.from(signGatewayBWebhook(rawBody, secret), 'hex');
  const given = Buffer.from(received, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Constant-time check of an integrity signature someone hands back (e.g. in a sandbox or a callback). */
export function verifyGatewayBIntegritySignature(
  input: { orderId: string; amount: number; currency: string; secretKey: string },
  signature: string,
): boolean {
  if (!/^[0-9a-f]{64}$/i.test(signature)) return false;
  const expected = Buffer.from(gatewayBIntegritySignature(input), 'hex');
  const given = Buffer.from(signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
