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
import { dataOf } from '../../http/envelope.js';
import { enforceRateLimit } from '../../http/limits.js';
import { customerAccess } from '../../http/route-access.js';
import { currentCustomer } from '../../plugins/customer-auth.js';
import type { ApiServices } from '../../services.js';

/** The map clock of a purchase session (the hold token's lifetime at the seat-map provider). */
export const PURCHASE_SESSION_MINUTES = 15;
/** How long one order may keep its session claimed (PURCHASE_SESSION_BUSY for a second order meanwhile). */
const ORDER_LEASE_MS = 60_000;
const sessionKey = (id: string) => `purchase-session:${id}`;

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

/** What an order does with the buyer's purchase session: claims it, then reports how the order ended. */
export interface SessionClaim {
  session: PurchaseSessionView;
  finish(ordered: boolean): Promise<void>;
}

/**
 * Claims the buyer's purchase session for one order: the one named by the header, or (header absent) the live
 * one. Null when there is none and none was named.
 */
export async function claimPurchaseSession(
  services: ApiServices,
  input: { workspaceId: string; buyerId: string; sessionId: string | null; eventDateId: string },
): Promise<SessionClaim | null> {
  const handle = services.temporal.workflow.getHandle(purchaseSessionWorkflowId(input.workspaceId, input.buyerId));
  let claim: PurchaseSessionClaim;
  try {
    claim = await handle.executeUpdate(claimPurchaseSessionUpdate, {
      args: [{ sessionId: input.sessionId, eventDateId: input.eventDateId, leaseMs: ORDER_LEASE_MS }],
    });
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    claim = {
      ok: false,
      code: 'PURCHASE_SESSION_REQUIRED',
      reason: 'purchase_session_unknown',
      message: 'No purchase session is open for this buyer',
    };
  }
  if (!claim.ok) {
    if (input.sessionId === null && claim.code === 'PURCHASE_SESSION_REQUIRED') return null;
    throw refusalError(claim);
  }
  const session = claim.session;
  return {
    session,
    finish: async (ordered) => {
      await handle
        .executeUpdate(finishPurchaseSessionOrderUpdate, { args: [{ sessionId: session.id, ordered }] })
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
  const handle = services.temporal.workflow.getHandle(purchaseSessionWorkflowId(input.workspaceId, input.buyerId));
  const view = await handle.query(purchaseSessionQuery, sessionId).catch(() => null);
  if (!view || view.eventDateId !== input.eventDateId) {
    throw new AppError('PURCHASE_SESSION_REQUIRED', "The purchase session is not this buyer's for this event date", {
      details: { reason: 'purchase_session_unknown' },
    });
  }
  if (view.state === 'SUPERSEDED') {
    throw new AppError('PURCHASE_SESSION_SUPERSEDED', 'Another tab or device opened a newer purchase session', {
      details: { reason: 'purchase_session_superseded' },
    });
  }
  if (view.state === 'EXPIRED' || view.state === 'RELEASED') {
    throw new AppError('PURCHASE_SESSION_EXPIRED', 'The purchase session ran out; open a new one', {
      details: { reason: 'purchase_session_expired' },
    });
  }
}

async function sessionHandle(services: ApiServices, id: string, buyerId: string) {
  const workspaceId = isUuid(id) ? await services.redis.get(sessionKey(id)) : null;
  if (!workspaceId) throw new AppError('NOT_FOUND', 'Purchase session not found');
  const handle = services.temporal.workflow.getHandle(purchaseSessionWorkflowId(workspaceId, buyerId));
  const view = await handle.query(purchaseSessionQuery, id).catch(() => null);
  if (!view) throw new AppError('NOT_FOUND', 'Purchase session not found');
  return { handle, view };
}

/** Contract 3 / 5.7: one live purchase session per buyer; each one is a workflow owning its hold token and timer. */
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
      if (
        !date ||
        date.deletedAt ||
        (customer.pinnedWorkspaceId !== null && date.workspace !== customer.pinnedWorkspaceId)
      ) {
        throw new AppError('NOT_FOUND', 'Event date not found');
      }
      await enforceRateLimit(services.redis, {
        key: `purchase-session-open:${customer.buyerId}`,
        limit: 20,
        windowSeconds: 60,
        message: 'At most 20 purchase sessions per minute; retry after the time in Retry-After',
      });
      const sessionId = randomUUID();
      await services.redis.set(sessionKey(sessionId), date.workspace, 'EX', 7 * 86_400);
      const start = new WithStartWorkflowOperation<typeof purchaseSession>('purchaseSession', {
        workflowId: purchaseSessionWorkflowId(date.workspace, customer.buyerId),
        taskQueue: services.env.TEMPORAL_TASK_QUEUE,
        args: [{ workspaceId: date.workspace, buyerId: customer.buyerId }],
        // Operators find a buyer's session execution by workspace in the Temporal UI; continue-as-new carries it.
        typedSearchAttributes: [{ key: SA.workspaceId, value: date.workspace }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      const view = await services.temporal.workflow.executeUpdateWithStart(openPurchaseSessionUpdate, {
        args: [{ sessionId, eventDateId: date.id, expiresInMinutes: PURCHASE_SESSION_MINUTES }],
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
