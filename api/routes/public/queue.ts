import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { isUuid } from '../../../entities/ids.js';
import { EventDate } from '../../../entities/index.js';
import { dataOf } from '../../http/envelope.js';
import { enforceRateLimit, requireRedis } from '../../http/limits.js';
import { publicAccess } from '../../http/route-access.js';
import { hashSessionToken, presentedSessionToken } from '../../plugins/customer-auth.js';
import { enforcePublicLimit, rateLimitClientKey } from '../../plugins/rate-limit.js';
import { joinRoom, soldOutTurn, turnStanding, waitingRoomOf, watchedTurn } from '../../services/waiting-room.js';
import { MAX_WAIT_MS, unheldPollAfterMs } from '../../services/waiting-room-watch.js';
import type { ApiServices } from '../../services.js';
import { presentedQueueToken } from '../customer/orders.js';

const QueueTurnSchema = z
  .object({
    eventDateId: z.string(),
    token: z.string().meta({
      description: 'Turn token: send it as X-Queue-Token (or body queueToken on POST /orders) once admitted',
    }),
    status: z.enum(['waiting', 'admitted', 'reserving', 'used', 'expired', 'sold_out']).meta({
      description:
        'waiting: in line; admitted: order now, before turnExpiresAt; reserving: an order with this turn is in ' +
        'flight; used: an order was made with it (a turn is used once); expired: not used in time, join again; ' +
        'sold_out: nothing left to sell (kept in line: if held tickets come back, waiting resumes)',
    }),
    position: z.number().int().meta({ description: 'Turns waiting ahead of this one plus one while waiting; else 0' }),
    admitted: z.boolean().meta({ description: 'Whether an order may be placed with this turn now' }),
    admittedAt: z.string().nullable().meta({ description: 'Instant the turn was admitted; null while waiting' }),
    turnExpiresAt: z
      .string()
      .nullable()
      .meta({ description: 'While admitted: the turn lapses (its slot goes to the next buyer) unless used by then' }),
    estimatedWaitSeconds: z.number().int().nullable().meta({
      description: 'While waiting: expected wait at the measured admission rate; 0 once admitted; else null',
    }),
    pollAfterMs: z.number().int().meta({ description: 'Ask again after this long' }),
  })
  .meta({ id: 'QueueTurn' });

const ROOM_MEMORY_MS = 1_000;
const ROOM_SEEN_MS = 10 * 60_000;

const Params = z.object({ eventDateId: z.string().min(1).max(100) });

/**
 * The waiting room of a date flagged virtualQueue (the URL of QUEUE_REQUIRED's details.waitingRoomUrl). Its two
 * routes are never shed: the room is what keeps the crowd off the buying routes, it costs Redis only, and a buyer
 * shed from it would only come back (the admission controller slows admission when the buying routes strain).
 */
export const publicQueueRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  /**
   * A crowd polls every second: which dates have a room is remembered for a second per process, so the polls of
   * thousands of buyers cost Redis, not a database query each.
   */
  const knownRooms = new Map<string, number>();
  /**
   * Dates this process found with a room in the last minutes: re-reading one of them is the room's own upkeep, while
   * a date never seen (made up, or deleted) is a look-up a client asked for, paced by its address.
   */
  const roomsSeen = new Map<string, number>();
  /** Takes the request, not its EntityManager: `request.em` forks one on first use, which a remembered room never needs. */
  async function queuedDate(
    request: FastifyRequest,
    id: string,
    beforeUnseenLookup: () => Promise<unknown> = async () => undefined,
  ): Promise<{ id: string }> {
    const now = Date.now();
    if ((knownRooms.get(id) ?? 0) > now) return { id };
    if ((roomsSeen.get(id) ?? 0) <= now) await beforeUnseenLookup();
    const date = isUuid(id) ? await request.em.findOne(EventDate, { id }, { filters: { tenant: false } }) : null;
    if (!date || date.deletedAt || date.cancelledAt) throw new AppError('NOT_FOUND', 'Event date not found');
    if (!date.virtualQueue) throw new AppError('NOT_FOUND', 'This date has no waiting room');
    if (knownRooms.size > 10_000) knownRooms.clear();
    if (roomsSeen.size > 10_000) roomsSeen.clear();
    knownRooms.set(id, Date.now() + ROOM_MEMORY_MS);
    roomsSeen.set(id, Date.now() + ROOM_SEEN_MS);
    return { id: date.id };
  }

  app.post(
    '/queue/:eventDateId',
    {
      config: { ...publicAccess(), neverShed: true, waitingRoom: true },
      schema: {
        tags: ['orders'],
        summary: 'Join the waiting room of a high-demand date; returns a turn token and its position',
        description:
          'One live turn per buyer session (X-Customer-Session or the buyer-session cookie) and per presented ' +
          'X-Queue-Token: joining again while that turn waits or is admitted answers the same turn.',
        params: Params,
        response: { 200: dataOf(QueueTurnSchema) },
      },
    },
    async (request, reply) => {
      const date = await queuedDate(request, request.params.eventDateId);
      await enforceRateLimit(request, 'queueJoin', `${date.id}:${rateLimitClientKey(request.ip)}`);
      reply.header('cache-control', 'no-store');
      // The session only dedupes turns (one live turn per session), so its hash names it without a database look-up
      // per join: a made-up token gains nothing a fresh anonymous join would not.
      const sessionToken = presentedSessionToken(request);
      const turn = await requireRedis('The waiting room', () =>
        joinRoom(waitingRoomOf(services), date.id, {
          buyerSession: sessionToken ? hashSessionToken(sessionToken) : null,
          presentedToken: presentedQueueToken(request.headers),
        }),
      );
      return { data: { eventDateId: date.id, ...turn } };
    },
  );

  app.get(
    '/queue/:eventDateId',
    {
      // A crowd behind one NAT shares an address: the per-address limit would refuse it as one client. Polls are
      // counted per turn token instead, and only what presents no known turn counts against the address.
      config: { ...publicAccess(), neverShed: true, limitedPerTurn: true, waitingRoom: true },
      schema: {
        tags: ['orders'],
        summary: 'Standing of a turn in the waiting room: position, estimated wait, admitted, expired or sold out',
        description:
          'Limited per turn token (WAITING_ROOM_POLLS_PER_10_SECONDS, 25 per 10 s by default), not per client address: ' +
          'buyers behind one address poll independently. A token polling faster gets 429 RATE_LIMITED with ' +
          'Retry-After; an unknown token counts against the address like any other public request.',
        params: Params,
        querystring: z.object({
          token: z.string().min(1).max(100),
          waitMs: z.coerce
            .number()
            .int()
            .min(0)
            .max(MAX_WAIT_MS)
            .optional()
            .meta({
              description:
                'Long poll: while the turn waits (or the date is sold out), answer only when it is admitted, the ' +
                `date sells out or stock comes back, or after this many ms (at most ${MAX_WAIT_MS}). 0 or absent: at once`,
            }),
          since: z
            .enum(['waiting', 'sold_out'])
            .optional()
            .meta({
              description:
                'The status this buyer last heard (default waiting). A long poll is held only while the turn still ' +
                'has it: a buyer last told waiting hears sold_out at once, and one told sold_out waits for stock to ' +
                'come back',
            }),
        }),
        response: { 200: dataOf(QueueTurnSchema) },
      },
    },
    async (request, reply) => {
      // A look-up of a date this process has not seen with a room is paced by the address, as before.
      const date = await queuedDate(request, request.params.eventDateId, () =>
        enforcePublicLimit(app, request.ip, reply),
      );
      reply.header('cache-control', 'no-store');
      const room = waitingRoomOf(services);
      const token = request.query.token;
      const first = await requireRedis('The waiting room', () => watchedTurn(room, date.id, token));
      if (!first) {
        // Made-up tokens are not turns: guessing them is paced by the address, as any other public request.
        await enforcePublicLimit(app, request.ip, reply);
        throw new AppError('NOT_FOUND', 'Unknown turn token for this date; join the queue again');
      }
      await enforceRateLimit(request, 'queueStanding', `${date.id}:${token}`);
      let turn = first.turn;
      const waitMs = request.query.waitMs ?? 0;
      // Held only while nothing changed from what the buyer last heard: news (sold out, admitted) is answered at once.
      if (waitMs > 0 && turn.status === (request.query.since ?? 'waiting')) {
        const soldOut = turn.status === 'sold_out';
        const wake = await app.waitingRoomWatch.wait(date.id, { seq: first.seq, soldOut }, waitMs);
        if (wake === 'sold_out' && turn.status === 'waiting') {
          // The room's own signal says so, and a waiting turn of a sold-out room reads sold_out: every held poll
          // wakes on it at once, and answering them without a Redis read each is what gets the news out within the
          // second.
          turn = soldOutTurn(turn);
        } else if (wake !== 'unheld') {
          turn = (await requireRedis('The waiting room', () => turnStanding(room, date.id, token))) ?? turn;
        } else {
          // This process holds all the long polls its heap allows: the buyer comes back at about half its estimated
          // wait, spread so the unheld part of the crowd does not return at once.
          turn = { ...turn, pollAfterMs: unheldPollAfterMs(waitMs, turn.estimatedWaitSeconds) };
          // Nor does it keep an idle connection open for the buyer meanwhile: connections cost heap too.
          reply.header('connection', 'close');
        }
      }
      return { data: { eventDateId: date.id, ...turn } };
    },
  );
};
