/**
 * Codes people and machines pass around: sale references and ticket codes.
 *
 * Both are built from random bytes the caller provides (`crypto.randomBytes` in activities and the API, the
 * workflow's deterministic randomness in workflow code), so this module stays pure and replay-safe.
 *
 * - Sale reference: `FT-` + 8 characters of a 32-character alphabet without 0/O/1/I, read aloud and typed by
 *   buyers and support. 5 random bytes = 40 bits, exactly 8 characters of 5 bits, so every character is uniform.
 *   40 bits collide by the birthday bound (≈ 50 % near a million references), so the column is UNIQUE and the
 *   writer draws again on a conflict.
 * - Ticket code: 18 random bytes (144 bits, ≥ 128) in base64url without padding, 24 characters, URL-safe: it is
 *   the bearer secret in the QR code and in /tickets/{ticketCode}, so it must not be guessable.
 */

export const SALE_REFERENCE_PREFIX = 'FT-';
/** 32 symbols: digits 2–9 and A–Z without I and O (0, O, 1 and I are easily confused). */
export const REFERENCE_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTUVWXYZ';
export const SALE_REFERENCE_RANDOM_BYTES = 5;
export const SALE_REFERENCE_BODY_LENGTH = 8;

const REFERENCE_PATTERN = new RegExp(`^FT-[${REFERENCE_ALPHABET}]{${SALE_REFERENCE_BODY_LENGTH}}$`);

function requireBytes(bytes: Uint8Array, count: number, what: string): Uint8Array {
  if (bytes.length < count) throw new RangeError(`${what} needs ${count} random bytes, got ${bytes.length}`);
  return bytes.subarray(0, count);
}

/** 8 unambiguous characters from the first 5 bytes of `randomBytes`: the body of every reference. */
function referenceBody(randomBytes: Uint8Array, what: string): string {
  const bytes = requireBytes(randomBytes, SALE_REFERENCE_RANDOM_BYTES, what);
  let bits = 0n;
  for (const byte of bytes) bits = (bits << 8n) | BigInt(byte);
  let body = '';
  for (let shift = 35n; shift >= 0n; shift -= 5n) body += REFERENCE_ALPHABET[Number((bits >> shift) & 31n)];
  return body;
}

/** `FT-` + 8 unambiguous characters from the first 5 bytes of `randomBytes`. */
export function saleReferenceFromBytes(randomBytes: Uint8Array): string {
  return SALE_REFERENCE_PREFIX + referenceBody(randomBytes, 'a sale reference');
}

/**
 * Membership payment reference: `MB-` + 8 characters of the same alphabet, sent to the gateway as the external
 * reference of a membership period's payment. Its own prefix lets a gateway notification be routed to the membership
 * workflow without a lookup in the sales table; parseSaleReference never accepts it.
 */
export const MEMBERSHIP_REFERENCE_PREFIX = 'MB-';
const MEMBERSHIP_REFERENCE_PATTERN = new RegExp(`^MB-[${REFERENCE_ALPHABET}]{${SALE_REFERENCE_BODY_LENGTH}}$`);

/** `MB-` + 8 unambiguous characters from the first 5 bytes of `randomBytes`. */
export function membershipReferenceFromBytes(randomBytes: Uint8Array): string {
  return MEMBERSHIP_REFERENCE_PREFIX + referenceBody(randomBytes, 'a membership reference');
}

/** True for a membership payment reference exactly as the service writes it (upper case, no spaces). */
export const isMembershipReference = (value: string): boolean => MEMBERSHIP_REFERENCE_PATTERN.test(value);

/** True for a reference exactly as the service writes it (`FT-` + 8 alphabet characters, upper case). */
export const isSaleReference = (value: string): boolean => REFERENCE_PATTERN.test(value);

/**
 * A reference as a person may type it, in canonical form, or null when it cannot be one: surrounding spaces,
 * lower case and a missing or unhyphenated `FT` prefix are accepted ("ft-ab23cd45", "FTAB23CD45", "ab23cd45").
 * A value with 0, O, 1 or I, or of another length, is not a reference (a sale id is a UUID, for instance).
 */
export function parseSaleReference(input: string): string | null {
  const upper = input.trim().toUpperCase();
  const body = upper.length === SALE_REFERENCE_BODY_LENGTH ? upper : upper.replace(/^FT-?/, '');
  const candidate = SALE_REFERENCE_PREFIX + body;
  return isSaleReference(candidate) ? candidate : null;
}

export const TICKET_CODE_RANDOM_BYTES = 18;
export const TICKET_CODE_LENGTH = 24;
const BASE64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const TICKET_CODE_PATTERN = /^[A-Za-z0-9_-]{24}$/;

/** A 144-bit ticket code, base64url (RFC 4648 §5) without padding, from the first 18 bytes of `randomBytes`. */
export function ticketCodeFromBytes(randomBytes: Uint8Array): string {
  const bytes = requireBytes(randomBytes, TICKET_CODE_RANDOM_BYTES, 'a ticket code');
  let code = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const chunk = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    for (let shift = 18; shift >= 0; shift -= 6) code += BASE64URL_ALPHABET[(chunk >> shift) & 63];
  }
  return code;
}

/** True for a well-formed ticket code (any 24 base64url characters; 18 bytes fill them exactly). Case-sensitive. */
export const isTicketCode = (value: string): boolean => TICKET_CODE_PATTERN.test(value);
