import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { rateLimitsFrom } from '../../../config/rate-limits.js';
import { dataOf } from '../../http/envelope.js';
import { consumeRateLimit, enforceRateLimit } from '../../http/limits.js';
import { publicAccess } from '../../http/route-access.js';
import { findTicketByCode } from '../../http/ticket-views.js';
import { rateLimitClientKey } from '../../plugins/rate-limit.js';
import type { ApiServices } from '../../services.js';
import { startTicketResend } from '../v1/tickets.js';

/**
 * Two limits (config/rate-limits.ts): per client (IP, or IPv6 /64) on requests, over it 429 whatever the code; and
 * per ticket on emails actually sent, so nobody can flood a buyer's inbox; over that one the request is ignored.
 */
export const publicTicketRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  const { ticketResendPerClient: perClient, ticketResendPerTicket: perTicket } = rateLimitsFrom(services.env);
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
          `Limited to ${perClient.points} requests per ${perClient.windowSeconds / 60} minutes per client (429 with ` +
          `Retry-After) and ${perTicket.points} emails per ${perTicket.windowSeconds / 60} minutes per ticket.`,
        params: z.object({ code: z.string().min(1).max(100) }),
        response: { 202: dataOf(z.object({ accepted: z.literal(true) }).meta({ id: 'ResendAccepted' })) },
      },
    },
    async (request, reply) => {
      await enforceRateLimit(request, 'ticketResendPerClient', rateLimitClientKey(request.ip));
      const ticket = await findTicketByCode(request.em, request.params.code, null);
      if (ticket) {
        if ((await consumeRateLimit(request, 'ticketResendPerTicket', ticket.id)).allowed) {
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
