import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signatures of organizer webhook deliveries (contract part 6, plus a replay-resistant variant):
 * - `X-Ticketing-Signature`: hex HMAC-SHA256 of the raw body, keyed with the endpoint's signing secret (the
 *   contract's header, so it stays). The body carries `sentAt`, the instant of this attempt, so the signature covers
 *   it: a receiver that refuses a `sentAt` outside its freshness window (WEBHOOK_FRESHNESS_SECONDS, 5 minutes) cannot
 *   be fed a recorded delivery later, with this signature alone;
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

/** How far from the receiver's clock a delivery's signed `sentAt` (and `X-Ticketing-Timestamp`) may be. */
export const WEBHOOK_FRESHNESS_SECONDS = 300;

/** The body's signed `sentAt` in Unix seconds, or null when the body has none (or is not JSON). */
function sentAtSeconds(rawBody: string): number | null {
  try {
    const parsed: unknown = JSON.parse(rawBody);
    if (typeof parsed !== 'object' || parsed === null || !('sentAt' in parsed) || typeof parsed.sentAt !== 'string') {
      return null;
    }
    const ms = Date.parse(parsed.sentAt);
    return Number.isNaN(ms) ? null : ms / 1000;
  } catch {
    return null;
  }
}

/**
 * What a receiver does (and what our tests' receiver does): recompute over the raw body before parsing, compare in
 * constant time, and refuse a delivery sent outside the freshness window: its signed `sentAt`, and the timestamp of
 * the V2 signature when one is checked, must be within `toleranceSeconds` of now. A valid signature on an old body is
 * a replay.
 */
export function verifyWebhookSignature(input: {
  secret: string;
  rawBody: string;
  signature?: string | undefined;
  signatureV2?: string | undefined;
  timestamp?: string | undefined;
  nowSeconds?: number;
  toleranceSeconds?: number;
}): { ok: true } | { ok: false; reason: 'bad_signature' | 'bad_signature_v2' | 'stale_timestamp' | 'stale_sent_at' } {
  if (!sameHex(signBody(input.secret, input.rawBody), input.signature)) return { ok: false, reason: 'bad_signature' };
  const now = input.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = input.toleranceSeconds ?? WEBHOOK_FRESHNESS_SECONDS;
  const sentAt = sentAtSeconds(input.rawBody);
  if (sentAt === null || Math.abs(now - sentAt) > tolerance) return { ok: false, reason: 'stale_sent_at' };
  if (input.signatureV2 !== undefined || input.timestamp !== undefined) {
    const timestamp = Number(input.timestamp);
    if (!Number.isInteger(timestamp)) return { ok: false, reason: 'stale_timestamp' };
    if (Math.abs(now - timestamp) > tolerance) return { ok: false, reason: 'stale_timestamp' };
    if (!sameHex(signTimestampedBody(input.secret, timestamp, input.rawBody), input.signatureV2)) {
      return { ok: false, reason: 'bad_signature_v2' };
    }
  }
  return { ok: true };
}
