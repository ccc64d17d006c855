import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Gateway A (Mercado Pago-style) notification signatures.
 *
 * Each notification carries `x-request-id` and `x-signature: ts=<timestamp>,v1=<hex>`, where v1 is the
 * HMAC-SHA256 (hex) of a manifest, keyed with the application's webhook secret:
 *
 *   id:<data.id from the URL query>;request-id:<x-request-id>;ts:<ts>;
 *
 * - `data.id` is the one in the notification URL's query string, lower-cased when alphanumeric.
 * - A part whose value is absent from the notification is left out of the manifest.
 * - The gateway documents `ts` as a timestamp in milliseconds; seconds are accepted too when checking age.
 *
 * A valid signature only proves the notification came from the gateway. The payment's state must still be
 * re-read with GET /v1/payments/{id}: the notification body carries no status at all.
 */

export interface GatewayASignatureHeader {
  ts: string;
  v1: string;
}

/** Splits `ts=…,v1=…` (order and spacing free). Null when either part is missing. */
export function parseGatewayASignatureHeader(header: string | null | undefined): GatewayASignatureHeader | null {
  if (!header) return null;
  let ts: string | undefined;
  let v1: string | undefined;
  for (const part of header.split(',')) {
    const index = part.indexOf('=');
    if (index <= 0) continue;
    const key = part.slice(0, index).trim();
    const value = part.slice(index + 1).trim();
    if (key === 'ts') ts = value;
    else if (key === 'v1') v1 = value;
  }
  return ts && v1 ? { ts, v1 } : null;
}

export function gatewayANotificationManifest(parts: {
  dataId?: string | null;
  xRequestId?: string | null;
  ts?: string | null;
}): string {
  let manifest = '';
  if (parts.dataId) manifest += `id:${/^[a-z0-9]+$/i.test(parts.dataId) ? parts.dataId.toLowerCase() : parts.dataId};`;
  if (parts.xRequestId) manifest += `request-id:${parts.xRequestId};`;
  if (parts.ts) manifest += `ts:${parts.ts};`;
  return manifest;
}

/** The `x-signature` header value the gateway would send; used by tests and tools that replay notifications. */
export function signGatewayANotification(input: {
  dataId: string;
  xRequestId: string;
  secret: string;
  ts?: string;
}): string {
  const ts = input.ts ?? String(Date.now());
  const v1 = createHmac('sha256', input.secret)
    .update(gatewayANotificationManifest({ dataId: input.dataId, xRequestId: input.xRequestId, ts }))
    .digest('hex');
  return `ts=${ts},v1=${v1}`;
}

export interface VerifyGatewayANotificationInput {
  /** The `x-signature` header. */
  xSignature: string | null | undefined;
  /** The `x-request-id` header. */
  xRequestId: string | null | undefined;
  /** `data.id` from the notification URL's query string (not the body). */
  dataId: string | null | undefined;
  secret: string;
  /** Reject signatures older (or further in the future) than this; omitted = no age check. */
  maxAgeSeconds?: number;
  now?: Date;
}

/** True only for an authentic notification. Constant-time comparison; never throws. */
export function verifyGatewayANotification(input: VerifyGatewayANotificationInput): boolean {
  if (!input.secret) return false;
  const header = parseGatewayASignatureHeader(input.xSignature);
  if (!header || !input.dataId) return false;
  if (!/^[0-9a-f]{64}$/i.test(header.v1)) return false;

  if (input.maxAgeSeconds !== undefined) {
    const raw = Number(header.ts);
    if (!Number.isFinite(raw)) return false;
    const tsMs = raw < 1e11 ? raw * 1000 : raw;
    const nowMs = (input.now ?? new Date()).getTime();
    if (Math.abs(nowMs - tsMs) > input.maxAgeSeconds * 1000) return false;
  }

  const expected = createHmac('sha256', input.secret)
    .update(gatewayANotificationManifest({ dataId: input.dataId, xRequestId: input.xRequestId, ts: header.ts }))
    .digest();
  const received = Buffer.from(header.v1, 'hex');
  return received.length === expected.length && timingSafeEqual(received, expected);
}
