/**
 * Purchase session: the buyer's one live seat-map session, across workspaces (contract part 3). The execution owns
 * the hold token of the live session and its timer (the map clock):
 *
 * open ─▶ ACTIVE ──order placed──▶ ORDERED (seats: the checkout owns the token now) ──another open──▶ SUPERSEDED
 *           ├─ another open ──────▶ SUPERSEDED (token expired, seats free)
 *           ├─ buyer releases ────▶ RELEASED (token expired, seats free)
 *           └─ clock runs out ────▶ EXPIRED (token expired, seats free)
 *
 * An ORDERED session that is superseded keeps no say over its order: the order's checkout keeps the token and its
 * own reservation timer, and the old session id answers SUPERSEDED to the payment POSTs (contract 4.3: the session
 * that created an order counts only as long as no other session was opened since). An order without seats makes the
 * session ORDERED as well, so no map clock refuses that order's payment; its expiry then follows the order, and its
 * token, which no checkout takes, is expired.
 *
 * A session claimed by an order in flight keeps its token until the order settles, even if superseded or released
 * meanwhile; the token is expired when the order ends without using it, or when its claim lapses.
 *
 * No hold token is left behind: every token this execution created is either handed to an order's checkout or
 * expired at the provider. An expiry that fails (the provider is down) keeps the token in a to-expire list that is
 * retried with backoff and without a cap, and the execution does not end, nor drop the list when it continues as new,
 * until the list is empty. The provider being down never fails the execution.
 *
 * History stays small: after `continueAsNewAfter` updates (or when Temporal suggests it) the run waits for the
 * handlers in flight and continues as new with the sessions it remembers, the live one and the tokens to expire.
 */
import {
  allHandlersFinished,
  condition,
  isCancellation,
  makeContinueAsNewFunc,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SeatActivities } from '../activities/seats.js';
import {
  type CarriedPurchaseSession,
  claimPurchaseSessionUpdate,
  finishPurchaseSessionOrderUpdate,
  openPurchaseSessionUpdate,
  type PurchaseSessionCarriedState,
  type PurchaseSessionClaim,
  type PurchaseSessionInput,
  type PurchaseSessionView,
  purchaseSessionQuery,
  releasePurchaseSessionUpdate,
  SA,
} from './definitions.js';

/** Creating the token is what the buyer waits for; it is retried until the provider answers. */
const seats = proxyActivities<SeatActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
/**
 * One try at expiring a token: a few quick attempts, then the token waits in the to-expire list, so an update
 * handler never hangs on a provider that is down and the workflow's own backoff takes over.
 */
const expiry = proxyActivities<SeatActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 3 },
});

/** Sessions remembered so an old id still answers SUPERSEDED / EXPIRED instead of an unknown session. */
const REMEMBERED = 50;
const DEFAULT_CONTINUE_AS_NEW_AFTER = 500;
const EXPIRE_RETRY_FIRST_MS = 5_000;
const EXPIRE_RETRY_MAX_MS = 5 * 60_000;
type Session = CarriedPurchaseSession;

export async function purchaseSession(input: PurchaseSessionInput): Promise<void> {
  return purchaseSessionWithCleanup(input);
}

async function purchaseSessionWithCleanup(input: PurchaseSessionInput): Promise<void> {
  const carried = input.carried;
  const sessions = new Map<string, Session>(carried?.sessions.map((session) => [session.id, { ...session }]) ?? []);
  let currentId: string | null = carried?.currentId ?? null;
  const toExpire: string[] = [...(carried?.toExpire ?? [])];
  let lastActivityMs = carried?.lastActivityMs ?? Date.now();
  let workspaceId = input.workspaceId;
  let wake = 0;
  let handledUpdates = 0;

  const view = (session: Session): PurchaseSessionView => ({
    id: session.id,
    state: session.state,
    eventDateId: session.eventDateId,
    holdToken: session.holdToken,
    expiresAtMs: session.expiresAtMs,
    busy: session.busyUntilMs > Date.now(),
  });
  const nudge = () => {
    wake += 1;
  };
  const touch = () => {
    lastActivityMs = Date.now();
    nudge();
  };
  const refreshClock = (session: Session) => {
    if (session.state === 'ACTIVE' && session.busyUntilMs <= Date.now() && Date.now() >= session.expiresAtMs) {
      session.state = 'EXPIRED';
    }
  };
  const ended = (session: Session) => session.state !== 'ACTIVE' && session.state !== 'ORDERED';
  /** The token is ours to expire now: the session ended and no order in flight still uses the token. */
  const tokenDue = (session: Session) => session.tokenOwned && ended(session) && session.busyUntilMs <= Date.now();
  const queueExpiry = (token: string) => {
    if (!toExpire.includes(token)) toExpire.push(token);
    nudge();
  };

  /** Expires the token now if the provider answers; otherwise it waits in the to-expire list. */
  async function expireOrQueue(session: Session): Promise<void> {
    session.tokenOwned = false;
    try {
      await expiry.expireHoldToken({ holdToken: session.holdToken });
    } catch (error) {
      if (isCancellation(error)) throw error;
      queueExpiry(session.holdToken);
    }
  }

  /** Ended sessions whose token nobody expired yet (clock ran out, order claim lapsed or ended unused). */
  function collectDueTokens(): void {
    const current = currentId ? sessions.get(currentId) : undefined;
    if (current) refreshClock(current);
    for (const session of sessions.values()) {
      if (tokenDue(session)) {
        session.tokenOwned = false;
        queueExpiry(session.holdToken);
      }
    }
  }

  /** One try for every queued token; those that fail stay queued. True when all went through. */
  async function flushExpiries(): Promise<boolean> {
    const batch = toExpire.splice(0);
    const failed: string[] = [];
    for (const token of batch) {
      try {
        await expiry.expireHoldToken({ holdToken: token });
      } catch (error) {
        if (isCancellation(error)) throw error;
        failed.push(token);
      }
    }
    for (const token of failed) if (!toExpire.includes(token)) toExpire.push(token);
    return failed.length === 0;
  }

  /** Forgets the oldest sessions beyond REMEMBERED, never one whose token still needs us. */
  function forgetOldSessions(): void {
    for (const [id, session] of sessions) {
      if (sessions.size <= REMEMBERED) break;
      if (id !== currentId && !session.tokenOwned) sessions.delete(id);
    }
  }

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
    handledUpdates += 1;
    const known = sessions.get(request.sessionId);
    if (known) return view(known);
    // Counts as activity at once, so the execution cannot end idle while the token is being created.
    touch();
    const token = await seats.createSessionHoldToken({ expiresInMinutes: request.expiresInMinutes });
    const previous = currentId ? sessions.get(currentId) : undefined;
    // Every session still in play is replaced, the one that already placed its order too.
    for (const older of sessions.values()) {
      if (older.state === 'ACTIVE' || older.state === 'ORDERED') older.state = 'SUPERSEDED';
    }
    if (request.workspaceId && request.workspaceId !== workspaceId) {
      // Operators find the buyer's execution under the workspace of the live session.
      workspaceId = request.workspaceId;
      upsertSearchAttributes([{ key: SA.workspaceId, value: workspaceId }]);
    }
    const session: Session = {
      id: request.sessionId,
      state: 'ACTIVE',
      eventDateId: request.eventDateId,
      holdToken: token.holdToken,
      expiresAtMs: token.expiresAtMs,
      busyUntilMs: 0,
      tokenOwned: true,
    };
    sessions.set(session.id, session);
    currentId = session.id;
    forgetOldSessions();
    // Expired before answering, so the superseded seats are free when the buyer sees the new session. An order in
    // flight keeps its token until it settles (finishPurchaseSessionOrder, or its claim lapses).
    if (previous && tokenDue(previous)) await expireOrQueue(previous);
    touch();
    return view(session);
  });

  setHandler(claimPurchaseSessionUpdate, (request): PurchaseSessionClaim => {
    handledUpdates += 1;
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
    handledUpdates += 1;
    const session = sessions.get(request.sessionId);
    if (!session) return;
    session.busyUntilMs = 0;
    if (request.ordered && request.holdTokenUsed === false) {
      // The session that created an order answers for its payment until a newer one supersedes it (contract 4.3):
      // ORDERED has no map clock, so the order's own reservation is what bounds the payment.
      if (session.state === 'ACTIVE') {
        session.state = 'ORDERED';
        if (request.orderExpiresAtMs) session.expiresAtMs = request.orderExpiresAtMs;
      }
      // No seats went with the order, so no checkout took the token: it is ours to expire (an ORDERED session
      // places no other order, so nothing held with it could still be bought).
      if (session.tokenOwned) {
        session.tokenOwned = false;
        queueExpiry(session.holdToken);
      }
    } else if (request.ordered) {
      if (session.state === 'ACTIVE') session.state = 'ORDERED';
      // The order placed with this token owns it now (even if the session was superseded meanwhile).
      session.tokenOwned = false;
    }
    // Not ordered: a session that ended meanwhile has its token expired by the main loop.
    touch();
  });

  setHandler(releasePurchaseSessionUpdate, async (request): Promise<PurchaseSessionClaim> => {
    handledUpdates += 1;
    const session = sessions.get(request.sessionId);
    const refused = refusal(session);
    if (refused || !session) return refused!;
    if (session.state === 'ACTIVE') {
      session.state = 'RELEASED';
      if (tokenDue(session)) await expireOrQueue(session);
    }
    touch();
    return { ok: true, session: view(session) };
  });

  const idleMs = input.idleMs ?? 60 * 60_000;
  const continueAsNewAfter = input.continueAsNewAfter ?? DEFAULT_CONTINUE_AS_NEW_AFTER;
  let expireRetryAtMs = 0;
  let expireRetryMs = EXPIRE_RETRY_FIRST_MS;

  const wantsContinueAsNew = () => handledUpdates >= continueAsNewAfter || workflowInfo().continueAsNewSuggested;
  const snapshot = (): PurchaseSessionCarriedState => ({
    sessions: [...sessions.values()].map((session) => ({ ...session })),
    currentId,
    toExpire: [...toExpire],
    lastActivityMs,
  });
  /**
   * The next instant something is due: the idle end, the live session's clock, a lapsing order claim, an expiry
   * retry. Only future instants: an idle end already past waits on the others (or on a handler), never on a timer
   * that would fire at once, again and again.
   */
  const nextDueMs = (): number | null => {
    const now = Date.now();
    const due: number[] = [];
    if (lastActivityMs + idleMs > now) due.push(lastActivityMs + idleMs);
    const current = currentId ? sessions.get(currentId) : undefined;
    if (current?.state === 'ACTIVE') due.push(Math.max(current.expiresAtMs, current.busyUntilMs));
    for (const session of sessions.values()) if (session.busyUntilMs > now) due.push(session.busyUntilMs);
    if (toExpire.length > 0) due.push(expireRetryAtMs);
    return due.length > 0 ? Math.min(...due) : null;
  };
  const finished = (): boolean => {
    const current = currentId ? sessions.get(currentId) : undefined;
    return (
      current?.state !== 'ACTIVE' &&
      toExpire.length === 0 &&
      ![...sessions.values()].some((session) => session.tokenOwned || session.busyUntilMs > Date.now()) &&
      Date.now() >= lastActivityMs + idleMs &&
      allHandlersFinished()
    );
  };

  for (;;) {
    collectDueTokens();
    if (toExpire.length > 0 && Date.now() >= expireRetryAtMs) {
      if (await flushExpiries()) {
        expireRetryMs = EXPIRE_RETRY_FIRST_MS;
      } else {
        expireRetryAtMs = Date.now() + expireRetryMs;
        expireRetryMs = Math.min(expireRetryMs * 2, EXPIRE_RETRY_MAX_MS);
      }
      continue;
    }
    // Updates accepted by this run must answer from this run, so it continues as new only once every handler has
    // finished. The wait is the loop's own (below), so expiries and the map clock go on while a handler is slow.
    if (wantsContinueAsNew() && allHandlersFinished()) {
      collectDueTokens();
      // WorkspaceId given explicitly: executions started before the API set it get it from here on.
      await makeContinueAsNewFunc<typeof purchaseSession>({
        typedSearchAttributes: [{ key: SA.workspaceId, value: workspaceId }],
      })({
        workspaceId,
        buyerId: input.buyerId,
        idleMs: input.idleMs,
        continueAsNewAfter: input.continueAsNewAfter,
        carried: snapshot(),
      });
    }
    if (finished()) return;
    const seen = wake;
    const woken = () => wake !== seen || (wantsContinueAsNew() && allHandlersFinished());
    const dueMs = nextDueMs();
    if (dueMs === null) await condition(woken);
    else
      await condition(woken, Math.max(1, dueMs - Date.now()), {
        summary: 'next session deadline (expiry, idle, retry)',
      });
  }
}
