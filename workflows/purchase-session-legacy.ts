/**
 * The purchase session as it ran before patch `purchase-session-v2` (continue-as-new, no orphaned hold token):
 * kept verbatim so executions recorded by that code replay unchanged. `purchaseSession` runs it only for those
 * executions (`patched('purchase-session-v2')` is false when replaying them). Delete it, with the patch check, once
 * no execution started before the patch is open (they end at most an idle hour after their last session).
 */
import { condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { SeatActivities } from '../activities/seats.js';
import {
  claimPurchaseSessionUpdate,
  finishPurchaseSessionOrderUpdate,
  openPurchaseSessionUpdate,
  type PurchaseSessionClaim,
  type PurchaseSessionInput,
  type PurchaseSessionView,
  purchaseSessionQuery,
  releasePurchaseSessionUpdate,
} from './definitions.js';

const seats = proxyActivities<SeatActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

interface Session extends PurchaseSessionView {
  busyUntilMs: number;
}

/** Sessions remembered so an old id still answers SUPERSEDED / EXPIRED instead of an unknown session. */
const REMEMBERED = 50;

export async function purchaseSessionLegacy(input: PurchaseSessionInput): Promise<void> {
  const sessions = new Map<string, Session>();
  let currentId: string | null = null;
  const toExpire: string[] = [];
  let lastActivityMs = Date.now();
  let wake = 0;

  const view = (session: Session): PurchaseSessionView => ({
    id: session.id,
    state: session.state,
    eventDateId: session.eventDateId,
    holdToken: session.holdToken,
    expiresAtMs: session.expiresAtMs,
    busy: session.busyUntilMs > Date.now(),
  });
  const touch = () => {
    lastActivityMs = Date.now();
    wake += 1;
  };
  const refreshClock = (session: Session) => {
    if (session.state === 'ACTIVE' && session.busyUntilMs <= Date.now() && Date.now() >= session.expiresAtMs) {
      session.state = 'EXPIRED';
    }
  };
  const refusal = (session: Session | undefined): PurchaseSessionClaim | null => {
    if (!session) {
      return {
        ok: false,
        code: 'PURCHASE_SESSION_REQUIRED',
        reason: 'purchase_session_unknown',
        message: 'No such purchase session for this buyer; open one with POST /customer/purchase-sessions',
      };
    }
    refreshClock(session);
    if (session.state === 'SUPERSEDED') {
      return {
        ok: false,
        code: 'PURCHASE_SESSION_SUPERSEDED',
        reason: 'purchase_session_superseded',
        message: 'Another tab or device opened a newer purchase session',
      };
    }
    if (session.state === 'EXPIRED' || session.state === 'RELEASED') {
      return {
        ok: false,
        code: 'PURCHASE_SESSION_EXPIRED',
        reason: session.state === 'RELEASED' ? 'purchase_session_released' : 'purchase_session_expired',
        message: 'The purchase session ran out; open a new one',
      };
    }
    return null;
  };

  // A query must not change state (it is not in the history): the clock is applied to a copy.
  setHandler(purchaseSessionQuery, (sessionId) => {
    const session = sessions.get(sessionId);
    if (!session) return null;
    const copy = { ...session };
    refreshClock(copy);
    return view(copy);
  });

  setHandler(openPurchaseSessionUpdate, async (request) => {
    const known = sessions.get(request.sessionId);
    if (known) return view(known);
    const token = await seats.createSessionHoldToken({ expiresInMinutes: request.expiresInMinutes });
    const previous = currentId ? sessions.get(currentId) : undefined;
    if (previous && previous.state === 'ACTIVE') {
      previous.state = 'SUPERSEDED';
      // An order in flight keeps its token until it settles (finishPurchaseSessionOrder).
      if (previous.busyUntilMs <= Date.now()) await seats.expireHoldToken({ holdToken: previous.holdToken });
    }
    const session: Session = {
      id: request.sessionId,
      state: 'ACTIVE',
      eventDateId: request.eventDateId,
      holdToken: token.holdToken,
      expiresAtMs: token.expiresAtMs,
      busy: false,
      busyUntilMs: 0,
    };
    sessions.set(session.id, session);
    currentId = session.id;
    while (sessions.size > REMEMBERED) sessions.delete(sessions.keys().next().value!);
    touch();
    return view(session);
  });

  setHandler(claimPurchaseSessionUpdate, (request): PurchaseSessionClaim => {
    const id = request.sessionId ?? currentId;
    const session = id ? sessions.get(id) : undefined;
    const refused = refusal(session);
    if (refused || !session) return refused!;
    if (session.state === 'ORDERED') {
      return {
        ok: false,
        code: 'PURCHASE_SESSION_EXPIRED',
        reason: 'purchase_session_used',
        message: 'This purchase session already placed its order; open a new one',
      };
    }
    if (session.eventDateId !== request.eventDateId) {
      return {
        ok: false,
        code: 'PURCHASE_SESSION_REQUIRED',
        reason: 'purchase_session_other_date',
        message: 'This purchase session is for another event date',
      };
    }
    if (session.busyUntilMs > Date.now()) {
      return {
        ok: false,
        code: 'PURCHASE_SESSION_BUSY',
        reason: 'purchase_session_busy',
        message: 'An order is already in flight with this purchase session',
      };
    }
    session.busyUntilMs = Date.now() + request.leaseMs;
    touch();
    return { ok: true, session: view(session) };
  });

  setHandler(finishPurchaseSessionOrderUpdate, (request) => {
    const session = sessions.get(request.sessionId);
    if (!session) return;
    session.busyUntilMs = 0;
    if (request.ordered) {
      if (session.state === 'ACTIVE') session.state = 'ORDERED';
    } else if (session.state === 'SUPERSEDED') {
      toExpire.push(session.holdToken);
    }
    touch();
  });

  setHandler(releasePurchaseSessionUpdate, async (request): Promise<PurchaseSessionClaim> => {
    const session = sessions.get(request.sessionId);
    const refused = refusal(session);
    if (refused || !session) return refused!;
    if (session.state === 'ACTIVE') {
      session.state = 'RELEASED';
      await seats.expireHoldToken({ holdToken: session.holdToken });
    }
    touch();
    return { ok: true, session: view(session) };
  });

  const idleMs = input.idleMs ?? 60 * 60_000;
  for (;;) {
    const current = currentId ? sessions.get(currentId) : undefined;
    const live = current?.state === 'ACTIVE';
    const deadline = live ? Math.max(current.expiresAtMs, current.busyUntilMs) : lastActivityMs + idleMs;
    const seen = wake;
    await condition(() => toExpire.length > 0 || wake !== seen, Math.max(1, deadline - Date.now()));
    while (toExpire.length > 0) {
      await seats.expireHoldToken({ holdToken: toExpire.shift()! });
    }
    if (current) refreshClock(current);
    const busy = [...sessions.values()].some((session) => session.busyUntilMs > Date.now());
    const anyLive = currentId !== null && sessions.get(currentId)?.state === 'ACTIVE';
    if (!anyLive && !busy && Date.now() >= lastActivityMs + idleMs && toExpire.length === 0) return;
  }
}
