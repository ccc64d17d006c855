import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../../domain/errors.js';
import { hashSecret } from '../../domain/secret-hash.js';
import type { IBuyerSession } from '../../entities/buyer.js';
import { newId } from '../../entities/ids.js';
import { BuyerSession } from '../../entities/index.js';
import { authenticateOrganizer, enforceKeyScope } from './auth.js';

export const BUYER_SESSION_COOKIE = 'buyer_session';

/** The buyer behind a customer request, from `X-Customer-Session` or the buyer-session cookie (contract 5.6). */
export interface CustomerContext {
  buyerId: string;
  email: string;
  name: string | null;
  phone: string | null;
  sessionId: string;
  /** Set when the request also carried an organizer API key: results are scoped to that key's workspace. */
  pinnedWorkspaceId: string | null;
  /**
   * Set when the session came from an enterprise SSO exchange: purchases are limited to the workspaces that
   * enterprise serves, and returnUrl to its allowlist (entities/enterprise.ts loadEnterpriseScope).
   */
  enterpriseId: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    customer: CustomerContext | null;
  }
}

export const hashSessionToken = hashSecret;

export function presentedSessionToken(request: FastifyRequest): string | undefined {
  const header = request.headers['x-customer-session'];
  if (typeof header === 'string' && header.trim() !== '') return header.trim();
  const cookie = request.cookies?.[BUYER_SESSION_COOKIE];
  return cookie && cookie !== '' ? cookie : undefined;
}

/** Resolves a buyer session token, or null when it is unknown, expired or ended. */
export async function resolveBuyerSession(request: FastifyRequest, token: string): Promise<CustomerContext | null> {
  // Every customer request asks this: the session and its buyer in one round trip, live sessions only.
  const rows = await request.em.execute<
    {
      session_id: string;
      buyer_id: string;
      email: string;
      name: string | null;
      phone: string | null;
      enterprise_id: string | null;
    }[]
  >(
    `select s.id as session_id, b.id as buyer_id, b.email, b.name, b.phone, b.enterprise_id
       from buyer_sessions s join buyers b on b.id = s.buyer_id
      where s.token_hash = ? and s.revoked_at is null and s.expires_at > now()`,
    [hashSessionToken(token)],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    buyerId: row.buyer_id,
    email: row.email,
    name: row.name,
    phone: row.phone,
    sessionId: row.session_id,
    pinnedWorkspaceId: null,
    enterpriseId: row.enterprise_id,
  };
}

/** Starts a buyer session; the token exists only in this return value (the row keeps its hash). */
export function issueBuyerSession(
  em: EntityManager,
  buyerId: string,
  ttlMs: number,
): { token: string; row: IBuyerSession } {
  const token = `bs_${randomBytes(32).toString('base64url')}`;
  const row = em.create(BuyerSession, {
    id: newId(),
    buyer: buyerId,
    tokenHash: hashSessionToken(token),
    expiresAt: new Date(Date.now() + ttlMs),
    revokedAt: null,
    createdAt: new Date(),
  });
  return { token, row };
}

/** The answer of every sign-in that opens a buyer session (emailed code, enterprise exchange). */
export function signedInAnswer(session: {
  token: string;
  row: IBuyerSession;
  buyer: { id: string; email: string; name?: string | null; phone?: string | null };
}) {
  return {
    data: {
      session_token: session.token,
      expiresAt: session.row.expiresAt.toISOString(),
      buyer: {
        id: session.buyer.id,
        email: session.buyer.email,
        name: session.buyer.name ?? null,
        phone: session.buyer.phone ?? null,
      },
    },
  };
}

/** The customer of a `customer` route; the hook below guarantees it is set. */
export function currentCustomer(request: FastifyRequest): CustomerContext {
  if (!request.customer) throw new AppError('CUSTOMER_SESSION_REQUIRED', 'Sign in first: send X-Customer-Session');
  return request.customer;
}

export const customerAuthPlugin = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('customer', null);
    app.addHook('onRequest', async (request) => {
      if (request.routeOptions.config?.access?.kind !== 'customer') return;
      const token = presentedSessionToken(request);
      if (!token) {
        throw new AppError(
          'CUSTOMER_SESSION_REQUIRED',
          'Sign in first: send the session_token from POST /customer/auth/verify as X-Customer-Session',
        );
      }
      const customer = await resolveBuyerSession(request, token);
      if (!customer)
        throw new AppError('CUSTOMER_SESSION_REQUIRED', 'The buyer session is invalid or has expired; sign in again');
      const hasKey = request.headers.authorization !== undefined || request.headers['x-api-key'] !== undefined;
      if (hasKey) {
        const organizer = await authenticateOrganizer(request, { preferKeyWorkspace: true });
        enforceKeyScope(request, organizer);
        request.organizer = organizer;
        customer.pinnedWorkspaceId = organizer.active?.workspaceId ?? null;
      }
      request.customer = customer;
    });
  },
  { name: 'customer-auth', dependencies: ['auth'] },
);
