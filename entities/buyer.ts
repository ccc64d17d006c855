import { createHash } from 'node:crypto';
import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties } from './common.js';

/** A ticket buyer, identified by an email they proved they read (one-time code). Shared across workspaces. */
export const Buyer = defineEntity({
  name: 'Buyer',
  tableName: 'buyers',
  properties: {
    ...baseProperties,
    email: p.string().length(254).unique(),
    name: p.string().length(120).nullable(),
    phone: p.string().length(40).nullable(),
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
