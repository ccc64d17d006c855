import { createHash } from 'node:crypto';
import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties } from './common.js';
import { Enterprise } from './enterprise.js';

/**
 * A ticket buyer. A first-party buyer is identified by an email they proved they read (one-time code) and is shared
 * across workspaces. An enterprise's buyer (enterprise SSO exchange) is identified by the enterprise and its own id
 * for the user (`enterpriseSubject`), never by email: the same address may belong to a first-party buyer and to
 * buyers of several enterprises, each a separate account.
 */
export const Buyer = defineEntity({
  name: 'Buyer',
  tableName: 'buyers',
  uniques: [
    { name: 'buyers_email_unique', properties: ['email'], where: 'enterprise_id is null' },
    { properties: ['enterprise', 'enterpriseSubject'] },
  ],
  properties: {
    ...baseProperties,
    email: p.string().length(254),
    name: p.string().length(120).nullable(),
    phone: p.string().length(40).nullable(),
    // Restrict: an enterprise is disabled, never deleted; its buyers must not turn into first-party accounts.
    enterprise: () => p.manyToOne(Enterprise).mapToPk().nullable().deleteRule('restrict'),
    enterpriseSubject: p.string().length(255).nullable(),
  },
});
export type IBuyer = InferEntity<typeof Buyer>;

/** A one-time sign-in code. Only its hash is kept; attempts are counted so it cannot be guessed. */
export const BuyerLoginCode = defineEntity({
  name: 'BuyerLoginCode',
  tableName: 'buyer_login_codes',
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
export type IBuyerLoginCode = InferEntity<typeof BuyerLoginCode>;

/** A buyer session (X-Customer-Session / cookie). The token is shown once; the row keeps its hash. */
export const BuyerSession = defineEntity({
  name: 'BuyerSession',
  tableName: 'buyer_sessions',
  properties: {
    id: p.string().columnType('uuid').primary(),
    buyer: () => p.manyToOne(Buyer).mapToPk().deleteRule('cascade').index(),
    tokenHash: p.string().length(64).unique(),
    expiresAt: p.datetime().columnType('timestamptz'),
    revokedAt: p.datetime().columnType('timestamptz').nullable(),
    createdAt: p.datetime().columnType('timestamptz'),
  },
});
export type IBuyerSession = InferEntity<typeof BuyerSession>;

/** Codes are short, so the hash is salted with the address: equal codes of two buyers never share a hash. */
export const hashSignInCode = (email: string, code: string): string =>
  createHash('sha256').update(`${email.toLowerCase()}:${code}`).digest('hex');
