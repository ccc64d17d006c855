import { randomBytes, randomInt } from 'node:crypto';
import type { Scope } from './roles.js';
import { hashSecret } from './secret-hash.js';

/**
 * The OAuth 2.0 device authorization grant (RFC 8628): the codes and the rule that answers each poll. Storage lives
 * in domain/device-authorizations.ts; this module has no I/O so the rules can be read (and tested) on their own.
 */

export const DEVICE_CODE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';

/** RFC 8628 section 3.5: after `slow_down` the client adds 5 seconds to its interval; so does the server. */
export const SLOW_DOWN_STEP_SECONDS = 5;

/**
 * Consonants only, no vowels (no words spelled by accident) and none that people confuse when reading or typing
 * (RFC 8628 section 6.1's example alphabet). 20^8 ≈ 2.6·10^10 codes, with entry rate-limited on the page.
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

/** The errors of RFC 8628 section 3.5 and RFC 6749 section 5.2 this service answers, by name. */
export const OAUTH_ERROR_CODES = [
  'authorization_pending',
  'slow_down',
  'access_denied',
  'expired_token',
  'invalid_grant',
  'invalid_request',
  'invalid_client',
  'invalid_scope',
  'unsupported_grant_type',
] as const;
export type OAuthErrorCode = (typeof OAUTH_ERROR_CODES)[number];

/** A client id is a short name shown to people; no markup, no control characters, nothing to impersonate a URL with. */
export const CLIENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._ -]{0,63}$/;

export function newUserCode(): string {
  let code = '';
  for (let index = 0; index < USER_CODE_LENGTH; index += 1)
    code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** How people see and type a user code: two groups of four (`WDJB-MJHT`). */
export const formatUserCode = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`;

/** The stored form of what someone typed: case-insensitive, dash and spaces optional; null when it cannot be a code. */
export function normalizeUserCode(typed: string): string | null {
  const code = typed.replace(/[\s-]/g, '').toUpperCase();
  if (code.length !== USER_CODE_LENGTH) return null;
  for (const char of code) if (!USER_CODE_ALPHABET.includes(char)) return null;
  return code;
}

/** The secret the client polls with: 256 random bits, so a plain SHA-256 is enough to store it. */
export const newDeviceCode = (): string => randomBytes(32).toString('base64url');
export const hashDeviceCode = hashSecret;

/** What a poll can see of a device authorization. */
export interface PolledAuthorization {
  status: 'pending' | 'approved' | 'denied' | 'consumed' | 'expired';
  clientId: string;
  scope: Scope;
  intervalSeconds: number;
  lastPolledAt?: Date | null;
  expiresAt: Date;
}

export type PollDecision =
  | { answer: 'error'; error: Exclude<OAuthErrorCode, 'slow_down'>; description: string }
  | { answer: 'slow_down'; intervalSeconds: number; description: string }
  | { answer: 'issue_key' };

/**
 * The answer to one poll of the token endpoint (RFC 8628 section 3.5), in the order that reveals least: a code issued
 * to another client, or already exchanged, is invalid_grant; then the person's decision; then expiry; then the pace.
 * The pace is judged only while the request is pending: once approved, the key is handed over at the next poll.
 */
export function decidePoll(authorization: PolledAuthorization, poll: { clientId: string; now: Date }): PollDecision {
  if (authorization.clientId !== poll.clientId) {
    return { answer: 'error', error: 'invalid_grant', description: 'The device_code was issued to another client' };
  }
  if (authorization.status === 'consumed') {
    return { answer: 'error', error: 'invalid_grant', description: 'The device_code was already exchanged for a key' };
  }
  if (authorization.status === 'denied') {
    return { answer: 'error', error: 'access_denied', description: 'The request was denied on the verification page' };
  }
  if (authorization.status === 'expired' || authorization.expiresAt.getTime() <= poll.now.getTime()) {
    return {
      answer: 'error',
      error: 'expired_token',
      description: 'The device_code expired before it was approved; start the login again',
    };
  }
  if (authorization.status === 'approved') return { answer: 'issue_key' };
  const sinceLastPoll = authorization.lastPolledAt
    ? poll.now.getTime() - authorization.lastPolledAt.getTime()
    : Number.POSITIVE_INFINITY;
  if (sinceLastPoll < authorization.intervalSeconds * 1000) {
    const intervalSeconds = authorization.intervalSeconds + SLOW_DOWN_STEP_SECONDS;
    return {
      answer: 'slow_down',
      intervalSeconds,
      description: `Polled faster than the interval; wait ${intervalSeconds} seconds between polls from now on`,
    };
  }
  return {
    answer: 'error',
    error: 'authorization_pending',
    description: 'Waiting for the user to approve the request on the verification page',
  };
}
