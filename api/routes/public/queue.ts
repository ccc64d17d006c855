import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { isUuid } from '../../../entities/ids.js';
import { EventDate } from '../../../entities/index.js';
import { dataOf } from '../../http/envelope.js';
import { enforceRateLimit, requireRedis } from '../../http/limits.js';
import { joinQueue, queueTurn } from '../../http/queue.js';
import { publicAccess } from '../../http/route-access.js';
import { rateLimitClientKey } from '../../plugins/rate-limit.js';
import type { ApiServices } from '../../services.js';

const QueueTurnSchema = z
  .object({
    eventDateId: z.string(),
    token: z.string().meta({
      description: 'Turn token: send it as X-Queue-Token (or body queueToken on POST /orders) once admitted',
    }),
    position: z.number().int().meta({ description: 'Turns waiting ahead of this one plus one; 0 once admitted' }),
    admitted: z.boolean(),
    admittedAt: z.string().meta({ description: 'Instant the turn is (or was) admitted' }),
  })
  .meta({ id: 'QueueTurn' });

const Params = z.object({ eventDateId: z.string().min(1).max(100) });

/** The waiting room of a date flagged virtualQueue (the URL of QUEUE_REQUIRED's details.waitingRoomUrl). */
export const publicQueueRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  async function queuedDate(em: EntityManager, id: string) {
    const date = isUuid(id) ? await em.findOne(EventDate, { id }, { filters: { tenant: false } }) : null;
    if (!date || date.deletedAt || date.cancelledAt) throw new AppError('NOT_FOUND', 'Event date not found');
    if (!date.virtualQueue) throw new AppError('NOT_FOUND', 'This date has no waiting room');
    return date;
  }

  app.post(
    '/queue/:eventDateId',
    {
      config: publicAccess(),
      schema: {
        tags: ['orders'],
        summary: 'Join the waiting room of a high-demand date; returns a turn token and its position',
        params: Params,
        response: { 200: dataOf(QueueTurnSchema) },
      },
    },
    async (request, reply) => {
      const date = await queuedDate(request.em, request.params.eventDateId);
      await enforceRateLimit(request, 'queueJoin', `${date.id}:${rateLimitClientKey(request.ip)}`);
      reply.header('cache-control', 'no-store');
      const turn = await requireRedis('The waiting room', () =>
        joinQueue(services.redis, date.id, date.queueAdmissionsPerMinute),
      );
      return { data: { eventDateId: date.id, ...turn } };
    },
  );

  app.get(
    '/queue/:eventDateId',
    {
      config: publicAccess(),
      schema: {
        tags: ['orders'],
        summary: 'Position of a turn in the waiting room, and whether it is admitted',
        params: Params,
        querystring: z.object({ token: z.string().min(1).max(100) }),
        response: { 200: dataOf(QueueTurnSchema) },
      },
    },
    async (request, reply) => {
      const date = await queuedDate(request.em, request.params.eventDateId);
      reply.header('cache-control', 'no-store');
      const turn = await requireRedis('The waiting room', () =>
        queueTurn(services.redis, date.id, request.query.token),
      );
      if (!turn) throw new AppError('NOT_FOUND', 'Unknown turn token for this date; join the queue again');
      return { data: { eventDateId: date.id, ...turn } };
    },
  );
};
