import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signatures of organizer webhook deliveries (contract part 6, plus a replay-resistant variant):
 * - `X-Ticketing-Signature`: hex HMAC-SHA256 of the raw body, keyed with the endpoint's signing secret (the
 *   contract's header);
 * - `X-Ticketing-Timestamp`: Unix seconds when the attempt was sent;
 * - `X-Ticketing-Signature-V2`: hex HMAC-SHA256 of `<timestamp>.<raw body>`, so a receiver that also rejects old
 *   timestamps cannot be fed a recorded delivery again (the scheme Stripe and Ticket Tailor use).
 */
export const SIGNATURE_HEADER = 'x-ticketing-signature';
export const SIGNATURE_V2_HEADER = 'x-ticketing-signature-v2';
export const TIMESTAMP_HEADER = 'x-ticketing-timestamp';
export const EVENT_ID_HEADER = 'x-ticketing-event-id';
export const EVENT_HEADER = 'x-ticketing-event';

export const signBody = (secret: string, body: string): string =>
  createHmac('sha256', secret).update(body, 'utf8').digest('hex');

export const signTimestampedBody = (secret: string, timestamp: number | string, body: string): string =>
  createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');

function sameHex(expected: string, presented: string | undefined): boolean {
  if (!presented || !/^[0-9a-f]+$/i.test(presented) || presented.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(presented.toLowerCase(), 'hex'));
}

/**
 * What a receiver does (and what our tests' receiver does): recompute over the raw body before parsing, compare in
 * constant time, and refuse timestamps older than `toleranceSeconds`.
 */
export function verifyWebhookSignature(input: {
  secret: string;
  rawBody: string;
  signature?: string | undefined;
  signatureV2?: string | undefined;
  timestamp?: string | undefined;
  nowSeconds?: number;
  toleranceSeconds?: number;
}): { ok: true } | { ok: false; reason: 'bad_signature' | 'bad_signature_v2' | 'stale_timestamp' } {
  if (!sameHex(signBody(input.secret, input.rawBody), input.signature)) return { ok: false, reason: 'bad_signature' };
  if (input.signatureV2 !== undefined || input.timestamp !== undefined) {
    const timestamp = Number(input.timestamp);
    if (!Number.isInteger(timestamp)) return { ok: false, reason: 'stale_timestamp' };
    const now = input.nowSeconds ?? Math.floor(Date.now() / 1000);
    if (Math.abs(now - timestamp) > (input.toleranceSeconds ?? 300)) return { ok: false, reason: 'stale_timestamp' };
    if (!sameHex(signTimestampedBody(input.secret, timestamp, input.rawBody), input.signatureV2)) {
      return { ok: false, reason: 'bad_signature_v2' };
    }
  }
  return { ok: true };
}
