import { createHash } from 'node:crypto';
import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { hashSecret } from '../domain/secret-hash.js';
import { User } from './user.js';

/**
 * A self-service sign-up waiting for its email to be verified: the unverified account. The `users` row is created
 * only when the emailed link is opened, so an address nobody verified never blocks its owner from signing up, and
 * nothing else in the service (staff, keys, workspaces) ever sees an unproven address. Only the link token's hash is
 * kept; the link works once and expires.
 */
export const OrganizerSignUp = defineEntity({
  name: 'OrganizerSignUp',
  tableName: 'organizer_sign_ups',
  properties: {
    id: p.string().columnType('uuid').primary(),
    email: p.string().length(254).index(),
    name: p.string().length(120),
    tokenHash: p.string().length(64).unique(),
    expiresAt: p.datetime().columnType('timestamptz'),
    verifiedAt: p.datetime().columnType('timestamptz').nullable(),
    createdAt: p.datetime().columnType('timestamptz'),
  },
});
export type IOrganizerSignUp = InferEntity<typeof OrganizerSignUp>;

/**
 * A one-time code that signs an existing organizer in on the web pages (the device verification page). Separate from
 * the buyers' codes so a buyer's code can never open an organizer session. Only a hash is kept; attempts are counted.
 */
export const OrganizerLoginCode = defineEntity({
  name: 'OrganizerLoginCode',
  tableName: 'organizer_login_codes',
  properties: {
    id: p.string().columnType('uuid').primary(),
    email: p.string().length(254).index(),
    codeHash: p.string().length(64),
    attempts: p.integer().default(0),
    /** Hash of the client that asked for the code (domain/sign-in-codes.ts signInRequester). */
    requestedBy: p.string().length(64).nullable(),
    expiresAt: p.datetime().columnType('timestamptz'),
    usedAt: p.datetime().columnType('timestamptz').nullable(),
    createdAt: p.datetime().columnType('timestamptz'),
  },
});
export type IOrganizerLoginCode = InferEntity<typeof OrganizerLoginCode>;

/** An organizer's browser session on the web pages (HttpOnly cookie). The cookie holds the token; the row its hash. */
export const OrganizerWebSession = defineEntity({
  name: 'OrganizerWebSession',
  tableName: 'organizer_web_sessions',
  properties: {
    id: p.string().columnType('uuid').primary(),
    user: () => p.manyToOne(User).mapToPk().deleteRule('cascade').index(),
    tokenHash: p.string().length(64).unique(),
    expiresAt: p.datetime().columnType('timestamptz'),
    revokedAt: p.datetime().columnType('timestamptz').nullable(),
    createdAt: p.datetime().columnType('timestamptz'),
  },
});
export type IOrganizerWebSession = InferEntity<typeof OrganizerWebSession>;

/** SHA-256 of a high-entropy secret (link token, session token): 256 random bits need no slow hash. */
export const hashAccountSecret = hashSecret;

/** Codes are short, so the hash is salted with the address and a purpose: an equal buyer code never matches. */
export const hashOrganizerSignInCode = (email: string, code: string): string =>
  createHash('sha256').update(`organizer:${email.toLowerCase()}:${code}`).digest('hex');
