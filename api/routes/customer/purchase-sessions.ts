import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { isUuid } from '../../../entities/ids.js';
import { EventDate, Workspace } from '../../../entities/index.js';
import {
  claimPurchaseSessionUpdate,
  finishPurchaseSessionOrderUpdate,
  legacyPurchaseSessionWorkflowId,
  openPurchaseSessionUpdate,
  type PurchaseSessionClaim,
  type PurchaseSessionRefusal,
  type PurchaseSessionView,
  purchaseSessionQuery,
  purchaseSessionWorkflowId,
  releasePurchaseSessionUpdate,
  SA,
} from '../../../workflows/definitions.js';
import type { purchaseSession } from '../../../workflows/purchase-session.js';
import { assertCustomerMayBuyIn } from '../../http/customer-scope.js';
import { dataOf } from '../../http/envelope.js';
import { enforceRateLimit, requireRedis } from '../../http/limits.js';
import { customerAccess } from '../../http/route-access.js';
import { currentCustomer } from '../../plugins/customer-auth.js';
import type { ApiServices } from '../../services.js';

/** The map clock of a purchase session (the hold token's lifetime at the seat-map provider). */
export const PURCHASE_SESSION_MINUTES = 15;
/** How long one order may keep its session claimed (PURCHASE_SESSION_BUSY for a second order meanwhile). */
const ORDER_LEASE_MS = 60_000;
/** Written by the API while executions were per workspace: a session id → its workspace (read for those only). */
const legacySessionKey = (id: string) => `purchase-session:${id}`;

const PurchaseSessionSchema = z
  .object({
    id: z.string(),
    state: z.enum(['ACTIVE', 'ORDERED', 'RELEASED', 'EXPIRED', 'SUPERSEDED']),
    eventDateId: z.string(),
    holdToken: z.string().meta({ description: 'Seat-map hold token: hold seats with it, then send it as holdToken' }),
    expiresAt: z.string().meta({ description: 'When the map clock runs out (the hold token expires)' }),
  })
  .meta({ id: 'PurchaseSession' });

const toSession = (view: PurchaseSessionView) => ({
  id: view.id,
  state: view.state,
  eventDateId: view.eventDateId,
  holdToken: view.holdToken,
  expiresAt: new Date(view.expiresAtMs).toISOString(),
});

const refusalError = (refusal: PurchaseSessionRefusal) =>
  new AppError(refusal.code, refusal.message, { details: { reason: refusal.reason } });

const UNKNOWN_SESSION: PurchaseSessionRefusal = {
  ok: false,
  code: 'PURCHASE_SESSION_REQUIRED',
  reason: 'purchase_session_unknown',
  message: 'No purchase session is open for this buyer',
};

type SessionHandle = ReturnType<ApiServices['temporal']['workflow']['getHandle']>;

const buyerExecution = (services: ApiServices, buyerId: string): SessionHandle =>
  services.temporal.workflow.getHandle(purchaseSessionWorkflowId(buyerId));

/**
 * A session opened while executions were per workspace lives in that workspace's execution, which knows nothing of
 * the buyer's newer sessions. Once the buyer's own execution exists, a session was opened there since: the old one
 * is superseded whatever its execution says (one live session per buyer).
 */
function supersededByBuyerExecution(view: PurchaseSessionView): PurchaseSessionView {
  return view.state === 'ACTIVE' || view.state === 'ORDERED' ? { ...view, state: 'SUPERSEDED' } : view;
}

/** The session `sessionId` of this buyer: in the buyer's execution, else in the legacy one of `workspaceId`. */
async function findSession(
  services: ApiServices,
  input: { buyerId: string; sessionId: string; workspaceId: () => Promise<string | null> },
): Promise<{ handle: SessionHandle; view: PurchaseSessionView } | null> {
  const handle = buyerExecution(services, input.buyerId);
  let buyerExecutionExists = true;
  const view = await handle.query(purchaseSessionQuery, input.sessionId).catch((error: unknown) => {
    if (error instanceof WorkflowNotFoundError) buyerExecutionExists = false;
    return null;
  });
  if (view) return { handle, view };
  const workspaceId = await input.workspaceId();
  if (!workspaceId) return null;
  const legacy = services.temporal.workflow.getHandle(legacyPurchaseSessionWorkflowId(workspaceId, input.buyerId));
  const old = await legacy.query(purchaseSessionQuery, input.sessionId).catch(() => null);
  if (!old) return null;
  return { handle: legacy, view: buyerExecutionExists ? supersededByBuyerExecution(old) : old };
}

async function claimIn(
  handle: SessionHandle,
  request: { sessionId: string | null; eventDateId: string; leaseMs: number },
): Promise<PurchaseSessionClaim | null> {
  try {
    return await handle.executeUpdate(claimPurchaseSessionUpdate, { args: [request] });
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}

/** The header `X-Purchase-Session`, if sent. */
export function presentedPurchaseSession(headers: Record<string, unknown>): string | null {
  const raw = headers['x-purchase-session'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

export async function requiresPurchaseSession(em: EntityManager, workspaceId: string): Promise<boolean> {
  const workspace = await em.findOne(Workspace, { id: workspaceId }, { filters: { tenant: false } });
  return workspace?.requiresPurchaseSession ?? false;
}

/**
 * How an order placed under a claimed session ended: not placed, or placed (the session becomes the one that
 * created it, and answers for its payment while the reservation lives).
 */
export type SessionOrderOutcome =
  | { ordered: false }
  | { ordered: true; holdTokenUsed: boolean; orderExpiresAtMs: number | null };

/** What an order does with the buyer's purchase session: claims it, then reports how the order ended. */
export interface SessionClaim {
  session: PurchaseSessionView;
  finish(outcome: SessionOrderOutcome): Promise<void>;
}

/**
 * Claims the buyer's purchase session for one order: the one named by the header, or (header absent) the live
 * one. Null when there is none and none was named.
 */
export async function claimPurchaseSession(
  services: ApiServices,
  input: { workspaceId: string; buyerId: string; sessionId: string | null; eventDateId: string },
): Promise<SessionClaim | null> {
  const request = { sessionId: input.sessionId, eventDateId: input.eventDateId, leaseMs: ORDER_LEASE_MS };
  let handle = buyerExecution(services, input.buyerId);
  let claim = await claimIn(handle, request);
  if (claim === null || (!claim.ok && claim.reason === UNKNOWN_SESSION.reason)) {
    // Unknown to the buyer's execution: perhaps a session from before executions were per buyer.
    const legacy = services.temporal.workflow.getHandle(
      legacyPurchaseSessionWorkflowId(input.workspaceId, input.buyerId),
    );
    if (claim === null) {
      const old = await claimIn(legacy, request);
      if (old) [handle, claim] = [legacy, old];
    } else if (input.sessionId) {
      const old = await legacy.query(purchaseSessionQuery, input.sessionId).catch(() => null);
      if (old) claim = sessionRefusal(supersededByBuyerExecution(old)) ?? claim;
    }
  }
  claim ??= UNKNOWN_SESSION;
  if (!claim.ok) {
    if (input.sessionId === null && claim.code === 'PURCHASE_SESSION_REQUIRED') return null;
    throw refusalError(claim);
  }
  const session = claim.session;
  return {
    session,
    finish: async (outcome) => {
      await handle
        .executeUpdate(finishPurchaseSessionOrderUpdate, { args: [{ sessionId: session.id, ...outcome }] })
        .catch(() => undefined);
    },
  };
}

/** The payment POSTs: the header is required when the workspace says so, and validated whenever present. */
export async function checkPurchaseSessionHeader(
  services: ApiServices,
  em: EntityManager,
  input: { headers: Record<string, unknown>; workspaceId: string; buyerId: string; eventDateId: string },
): Promise<void> {
  const sessionId = presentedPurchaseSession(input.headers);
  if (!sessionId) {
    if (await requiresPurchaseSession(em, input.workspaceId)) {
      throw new AppError('PURCHASE_SESSION_REQUIRED', 'This event needs the X-Purchase-Session header', {
        details: { reason: 'purchase_session_required' },
      });
    }
    return;
  }
  const found = await findSession(services, {
    buyerId: input.buyerId,
    sessionId,
    workspaceId: async () => input.workspaceId,
  });
  if (!found || found.view.eventDateId !== input.eventDateId) {
    throw new AppError('PURCHASE_SESSION_REQUIRED', "The purchase session is not this buyer's for this event date", {
      details: { reason: 'purchase_session_unknown' },
    });
  }
  const refused = sessionRefusal(found.view);
  if (refused) throw refusalError(refused);
}

/**
 * Why a payment may not go on under this session. ORDERED passes, whatever the map clock says: the session that
 * created the order counts until another session is opened, which makes it SUPERSEDED (contract 4.3); the order's
 * own reservation deadline is checked on the sale.
 */
function sessionRefusal(view: PurchaseSessionView): PurchaseSessionRefusal | null {
  if (view.state === 'SUPERSEDED') {
    return {
      ok: false,
      code: 'PURCHASE_SESSION_SUPERSEDED',
      reason: 'purchase_session_superseded',
      message: 'Another tab or device opened a newer purchase session',
    };
  }
  if (view.state === 'EXPIRED' || view.state === 'RELEASED') {
    return {
      ok: false,
      code: 'PURCHASE_SESSION_EXPIRED',
      reason: 'purchase_session_expired',
      message: 'The purchase session ran out; open a new one',
    };
  }
  return null;
}

async function sessionHandle(services: ApiServices, id: string, buyerId: string) {
  const found = isUuid(id)
    ? await findSession(services, {
        buyerId,
        sessionId: id,
        workspaceId: () => requireRedis('Purchase sessions', () => services.redis.get(legacySessionKey(id))),
      })
    : null;
  if (!found) throw new AppError('NOT_FOUND', 'Purchase session not found');
  return found;
}

/**
 * Contract 3 / 5.7: one live purchase session per buyer (a buyer is one account across workspaces); the buyer's
 * execution owns the live session's hold token and timer.
 */
export const customerPurchaseSessionRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (
  app,
  { services },
) => {
  app.post(
    '/customer/purchase-sessions',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: "Open a purchase session (seat-map hold token); supersedes the buyer's previous session",
        body: z.object({ eventDateId: z.string().min(1).max(100) }),
        response: { 201: dataOf(PurchaseSessionSchema) },
      },
    },
    async (request, reply) => {
      const customer = currentCustomer(request);
      const date = isUuid(request.body.eventDateId)
        ? await request.em.findOne(EventDate, { id: request.body.eventDateId }, { filters: { tenant: false } })
        : null;
      if (!date || date.deletedAt) throw new AppError('NOT_FOUND', 'Event date not found');
      await assertCustomerMayBuyIn(request, customer, date.workspace, 'Event date');
      await enforceRateLimit(request, 'purchaseSessionOpen', customer.buyerId);
      const sessionId = randomUUID();
      const start = new WithStartWorkflowOperation<typeof purchaseSession>('purchaseSession', {
        workflowId: purchaseSessionWorkflowId(customer.buyerId),
        taskQueue: services.env.TEMPORAL_TASK_QUEUE,
        args: [{ workspaceId: date.workspace, buyerId: customer.buyerId }],
        // Operators find a buyer's session execution by workspace in the Temporal UI; each open in another
        // workspace moves it there, and continue-as-new carries it.
        typedSearchAttributes: [{ key: SA.workspaceId, value: date.workspace }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      const view = await services.temporal.workflow.executeUpdateWithStart(openPurchaseSessionUpdate, {
        args: [
          {
            sessionId,
            eventDateId: date.id,
            expiresInMinutes: PURCHASE_SESSION_MINUTES,
            workspaceId: date.workspace,
          },
        ],
        startWorkflowOperation: start,
      });
      return reply.status(201).send({ data: toSession(view) });
    },
  );

  app.get(
    '/customer/purchase-sessions/:id',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'State, hold token and clock of a purchase session',
        params: z.object({ id: z.string().min(1).max(100) }),
        response: { 200: dataOf(PurchaseSessionSchema) },
      },
    },
    async (request) => {
      const { view } = await sessionHandle(services, request.params.id, currentCustomer(request).buyerId);
      return { data: toSession(view) };
    },
  );

  app.post(
    '/customer/purchase-sessions/:id/release',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Release a purchase session: its hold token expires and its seats are free again',
        params: z.object({ id: z.string().min(1).max(100) }),
        response: { 200: dataOf(PurchaseSessionSchema) },
      },
    },
    async (request) => {
      const { handle } = await sessionHandle(services, request.params.id, currentCustomer(request).buyerId);
      const result = await handle.executeUpdate(releasePurchaseSessionUpdate, {
        args: [{ sessionId: request.params.id }],
      });
      if (!result.ok) throw refusalError(result);
      return { data: toSession(result.session) };
    },
  );
};
