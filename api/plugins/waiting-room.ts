/**
 * Runs this process's share of the waiting room (api/services/waiting-room-ticker.ts): it publishes the process's
 * health and, for the rooms whose lease it holds, sets admission from what the whole stack measures. Routes record
 * the latency of each reservation made with a turn through `app.waitingRoomLatencies`, and long-polling standings
 * wait on `app.waitingRoomWatch` (services/waiting-room-watch.ts).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import { AppError } from '../../domain/errors.js';
import { type AdmissionLimits, DEFAULT_ADMISSION_LIMITS } from '../services/admission-controller.js';
import { TaskBacklogSampler, temporalTaskBacklog } from '../services/task-backlog.js';
import {
  overloadShedTotal,
  ReservationLatencies,
  ROOM_BUDGET_SHED_REASON,
  WaitingRoomTicker,
} from '../services/waiting-room-ticker.js';
import {
  heldPollCapacity,
  RoomWatch,
  roomBusyRetryAfterSeconds,
  roomRequestCapacity,
} from '../services/waiting-room-watch.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A waiting-room route: counted against the process's room-request budget (see below). */
    waitingRoom?: boolean;
  }
  interface FastifyInstance {
    waitingRoomLatencies: ReservationLatencies;
    /** Long-polling waiters of this process (GET /api/public/queue/{id}?waitMs=…). */
    waitingRoomWatch: RoomWatch;
  }
}

export interface WaitingRoomPluginOptions {
  redis: Redis;
  orm: MikroORM;
  turnWindowMs: number;
  /**
   * Waiting-room requests this process holds at once (long polls held open, and joins and polls being answered);
   * from its heap limit when unset (services/waiting-room-watch.ts).
   */
  roomRequests?: number;
  /** The load-shedding thresholds, so admission slows at a fraction of them. */
  shedEventLoopUtilization: number;
  shedEventLoopDelayMs: number;
  /** The worker's task queue, whose backlog slows admission (services/task-backlog.ts). */
  temporal?: { client: Client; taskQueue: string };
}

export const waitingRoomPlugin = fp(
  async (app: FastifyInstance, options: WaitingRoomPluginOptions) => {
    const latencies = new ReservationLatencies();
    app.decorate('waitingRoomLatencies', latencies);
    const limits: AdmissionLimits = {
      ...DEFAULT_ADMISSION_LIMITS,
      shedEventLoopUtilization: options.shedEventLoopUtilization,
      shedEventLoopDelayMs: options.shedEventLoopDelayMs,
    };
    let backlogWarnedAt = 0;
    const ticker = new WaitingRoomTicker({
      redis: options.redis,
      turnWindowMs: options.turnWindowMs,
      orm: options.orm,
      latencies,
      limits,
      log: app.log,
      ...(options.temporal
        ? {
            taskBacklog: new TaskBacklogSampler(
              temporalTaskBacklog(options.temporal.client, options.temporal.taskQueue),
              (error) => {
                // Admission goes on without it; one line a minute at most while Temporal does not answer.
                if (Date.now() - backlogWarnedAt < 60_000) return;
                backlogWarnedAt = Date.now();
                app.log.warn({ err: error }, 'waiting room: task backlog not sampled; admission ignores it');
              },
            ),
          }
        : {}),
      health: {
        async shedTotal() {
          if (!app.hasDecorator('apiMetrics')) return 0;
          return overloadShedTotal((await app.apiMetrics.shed.get()).values);
        },
        pressure: () => (app.hasDecorator('apiMetrics') ? (app.apiMetrics.pressure?.() ?? null) : null),
      },
    });
    const roomRequests = options.roomRequests ?? roomRequestCapacity();
    // Subscribing takes a connection of its own: a subscribed ioredis connection runs no other command.
    const watch = new RoomWatch(options.redis.duplicate(), heldPollCapacity(roomRequests));
    app.decorate('waitingRoomWatch', watch);
    if (app.hasDecorator('apiMetrics')) {
      app.apiMetrics.heldPolls = () => ({ held: watch.held, capacity: watch.capacity });
    }

    /**
     * The room's routes are never shed on event-loop pressure (they are what keeps the crowd off the buying routes),
     * but a crowd can still hold more of them at once than the heap has room for: 20,000 joins within 10 s crashed a
     * 256 MB process. Past the budget a room request is refused before it costs anything, with the contract's 503 and a
     * Retry-After of a few seconds, spread; the buyer's browser asks again then.
     */
    let roomRequestsInFlight = 0;
    app.addHook('onRequest', async (request, reply) => {
      if (!request.routeOptions.config?.waitingRoom) return;
      if (roomRequestsInFlight >= roomRequests) {
        if (app.hasDecorator('apiMetrics')) app.apiMetrics.shed.inc({ reason: ROOM_BUDGET_SHED_REASON });
        const busy = new AppError(
          'SERVICE_UNAVAILABLE',
          'The waiting room is busy on this server; retry after the Retry-After delay',
          { details: { reason: 'waiting_room_busy' } },
        );
        // Sent here, not thrown: the error handler would log each refusal, the last thing a crowded process needs.
        return reply
          .status(busy.status)
          .header('retry-after', String(roomBusyRetryAfterSeconds()))
          .header('connection', 'close')
          .send(busy.toBody());
      }
      roomRequestsInFlight += 1;
      reply.raw.once('close', () => {
        roomRequestsInFlight -= 1;
      });
    });
    app.addHook('onReady', async () => {
      ticker.start();
      // Not awaited: a Redis that is down or never answers must not keep the API from starting (every other Redis use
      // degrades). Until the subscription holds, a long poll simply answers when its wait runs out.
      watch.start().catch((error: unknown) => {
        app.log.warn({ err: error }, 'waiting room: no room signals yet (Redis unavailable); long polls wait it out');
      });
    });
    // Before the server waits for in-flight requests: a long-poll answers now rather than holding shutdown 25 s.
    app.addHook('preClose', async () => watch.stop());
    app.addHook('onClose', async () => ticker.stop());
  },
  { name: 'waiting-room' },
);
