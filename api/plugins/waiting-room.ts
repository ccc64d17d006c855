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
import { type AdmissionLimits, DEFAULT_ADMISSION_LIMITS } from '../services/admission-controller.js';
import { TaskBacklogSampler, temporalTaskBacklog } from '../services/task-backlog.js';
import { ReservationLatencies, WaitingRoomTicker } from '../services/waiting-room-ticker.js';
import { RoomWatch } from '../services/waiting-room-watch.js';

declare module 'fastify' {
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
          const counted = await app.apiMetrics.shed.get();
          return counted.values.reduce((sum, value) => sum + value.value, 0);
        },
        pressure: () => (app.hasDecorator('apiMetrics') ? (app.apiMetrics.pressure?.() ?? null) : null),
      },
    });
    // Subscribing takes a connection of its own: a subscribed ioredis connection runs no other command.
    const watch = new RoomWatch(options.redis.duplicate());
    app.decorate('waitingRoomWatch', watch);
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
