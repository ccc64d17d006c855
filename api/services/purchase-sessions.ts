/**
 * Purchase sessions (contract 3, 5.7): one live session per buyer (a buyer is one account across workspaces), owned by
 * the buyer's execution with its hold token and map clock; which session an order claims and a payment runs under,
 * and the refusals when it is unknown, superseded or expired. Routes keep the HTTP side (the header, schemas).
 */
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import { AppError } from '../../domain/errors.js';
import type { IEventDate } from '../../entities/event-date.js';
import { isUuid } from '../../entities/ids.js';
import { EventDate, Workspace } from '../../entities/index.js';
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
} from '../../workflows/definitions.js';
import type { purchaseSession } from '../../workflows/purchase-session.js';
import { lostUpdateError } from '../http/workflow-refusals.js';
import type { ApiServices } from '../services.js';

/** The map clock of a purchase session (the hold token's lifetime at the seat-map provider). */
export const PURCHASE_SESSION_MINUTES = 15;
/** How long one order may keep its session claimed (PURCHASE_SESSION_BUSY for a second order meanwhile). */
const ORDER_LEASE_MS = 60_000;

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

/** The session `sessionId` in the buyer's execution. */
async function findSession(
  services: ApiServices,
  input: { buyerId: string; sessionId: string },
): Promise<{ handle: SessionHandle; view: PurchaseSessionView } | null> {
  const handle = buyerExecution(services, input.buyerId);
  const view = await handle.query(purchaseSessionQuery, input.sessionId).catch(() => null);
  return view ? { handle, view } : null;
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
  const handle = buyerExecution(services, input.buyerId);
  let claim = await claimIn(handle, request);
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

/**
 * The payment POSTs: a session (X-Purchase-Session) is required when the workspace says so, and validated whenever
 * one is presented (`sessionId`, null when none).
 */
export async function checkPaymentSession(
  services: ApiServices,
  em: EntityManager,
  input: { sessionId: string | null; workspaceId: string; buyerId: string; eventDateId: string },
): Promise<void> {
  const { sessionId } = input;
  if (!sessionId) {
    if (await requiresPurchaseSession(em, input.workspaceId)) {
      throw new AppError('PURCHASE_SESSION_REQUIRED', 'This event needs the X-Purchase-Session header', {
        details: { reason: 'purchase_session_required' },
      });
    }
    return;
  }
  const found = await findSession(services, { buyerId: input.buyerId, sessionId });
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

/** The buyer's session `id` and the execution that holds it (404 when it is not theirs or unknown). */
export async function findOwnedSession(services: ApiServices, id: string, buyerId: string) {
  const found = isUuid(id) ? await findSession(services, { buyerId, sessionId: id }) : null;
  if (!found) throw new AppError('NOT_FOUND', 'Purchase session not found');
  return found;
}

/** A date a session can be opened for: one that exists and is not deleted (404 otherwise). */
export async function sessionDate(em: EntityManager, eventDateId: string): Promise<IEventDate> {
  const date = isUuid(eventDateId)
    ? await em.findOne(EventDate, { id: eventDateId }, { filters: { tenant: false } })
    : null;
  if (!date || date.deletedAt) throw new AppError('NOT_FOUND', 'Event date not found');
  return date;
}

/** Opens a new session for the date in the buyer's execution (started if needed); it supersedes their previous one. */
export async function openPurchaseSession(
  services: ApiServices,
  buyerId: string,
  date: IEventDate,
): Promise<PurchaseSessionView> {
  const sessionId = randomUUID();
  const start = new WithStartWorkflowOperation<typeof purchaseSession>('purchaseSession', {
    workflowId: purchaseSessionWorkflowId(buyerId),
    taskQueue: services.env.TEMPORAL_TASK_QUEUE,
    args: [{ workspaceId: date.workspace, buyerId }],
    // Operators find a buyer's session execution by workspace in the Temporal UI; each open in another
    // workspace moves it there, and continue-as-new carries it.
    typedSearchAttributes: [{ key: SA.workspaceId, value: date.workspace }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  try {
    return await services.temporal.workflow.executeUpdateWithStart(openPurchaseSessionUpdate, {
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
  } catch (error) {
    // Opening again is safe: each open supersedes the buyer's previous session.
    throw lostUpdateError(error, 'The purchase session got no answer in time; open it again') ?? error;
  }
}

/** Releases the buyer's session `id`: its hold token expires and its seats are free again. */
export async function releasePurchaseSession(
  services: ApiServices,
  id: string,
  buyerId: string,
): Promise<PurchaseSessionView> {
  const { handle } = await findOwnedSession(services, id, buyerId);
  const result = await handle.executeUpdate(releasePurchaseSessionUpdate, { args: [{ sessionId: id }] });
  if (!result.ok) throw refusalError(result);
  return result.session;
}
