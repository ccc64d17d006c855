import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { dataOf } from '../../http/envelope.js';
import { publicAccess } from '../../http/route-access.js';
import { findTicketByCode } from '../../http/ticket-views.js';
import { consumeRateLimit, rateLimitClientKey } from '../../plugins/rate-limit.js';
import type { ApiServices } from '../../services.js';
import { startTicketResend } from '../v1/tickets.js';

/** Per client (IP, or IPv6 /64): resend requests allowed per window; over it → 429 whatever the code. */
export const PUBLIC_RESEND_LIMIT = { limit: 5, windowSeconds: 600 };
/** Per ticket: emails actually sent per window, so nobody can flood a buyer's inbox; over it the request is ignored. */
const PER_TICKET_LIMIT = { limit: 3, windowSeconds: 3600 };

export const publicTicketRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.post(
    '/tickets/:code/resend',
    {
      config: publicAccess(),
      schema: {
        tags: ['tickets'],
        summary: "Resend a ticket's confirmation email and QR code to its buyer (anonymous)",
        description:
          'Always 202 { data: { accepted: true } }, whether or not the code exists, so the answer reveals nothing; the ' +
          "email goes only to the buyer's address on the purchase, and only for a valid ticket of a confirmed sale. " +
          `Limited to ${PUBLIC_RESEND_LIMIT.limit} requests per ${PUBLIC_RESEND_LIMIT.windowSeconds / 60} minutes per ` +
          `client (429 with Retry-After) and ${PER_TICKET_LIMIT.limit} emails per hour per ticket.`,
        params: z.object({ code: z.string().min(1).max(100) }),
        response: { 202: dataOf(z.object({ accepted: z.literal(true) }).meta({ id: 'ResendAccepted' })) },
      },
    },
    async (request, reply) => {
      const client = rateLimitClientKey(request.ip);
      const perClient = await consumeRateLimit(
        services.redis,
        `ratelimit:ticket-resend:ip:${client}`,
        PUBLIC_RESEND_LIMIT.limit,
        PUBLIC_RESEND_LIMIT.windowSeconds,
      );
      if (!perClient.allowed) {
        throw new AppError('RATE_LIMITED', `Too many resend requests; retry in ${perClient.resetSeconds} s`, {
          headers: { 'Retry-After': String(perClient.resetSeconds) },
          details: { ...PUBLIC_RESEND_LIMIT, retryAfterSeconds: perClient.resetSeconds },
        });
      }
      const ticket = await findTicketByCode(request.em, request.params.code, null);
      if (ticket) {
        const perTicket = await consumeRateLimit(
          services.redis,
          `ratelimit:ticket-resend:ticket:${ticket.id}`,
          PER_TICKET_LIMIT.limit,
          PER_TICKET_LIMIT.windowSeconds,
        );
        if (perTicket.allowed) {
          // Not awaited: the answer must not take longer when the code exists.
          void startTicketResend(services, ticket.id).catch((error: unknown) =>
            request.log.warn({ err: error }, 'ticket resend could not be started'),
          );
        }
      }
      return reply.status(202).send({ data: { accepted: true as const } });
    },
  );
};
