import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { ticketResendWorkflowId } from '../../../workflows/definitions.js';
import type { ticketResend } from '../../../workflows/ticket-resend.js';
import { dataOf } from '../../http/envelope.js';
import { organizer } from '../../http/route-access.js';
import { findTicketByCode, TicketAccessSchema, type TicketRow, toTicketAccess } from '../../http/ticket-views.js';
import { activeWorkspace } from '../../plugins/auth.js';
import { checkInRefusal, checkInTicket, reassignTicket } from '../../services/tickets.js';
import type { ApiServices } from '../../services.js';

const TicketCodeParams = z.object({ ticketCode: z.string().min(1).max(100) });

const ReassignBody = z
  .object({
    eventDateId: z.string().min(1).max(100).optional(),
    ticketTypeId: z.string().min(1).max(100).optional(),
  })
  .refine((body) => body.eventDateId !== undefined || body.ticketTypeId !== undefined, {
    message: 'send eventDateId, ticketTypeId or both',
  });

const CheckinResultSchema = TicketAccessSchema.extend({
  admitted: z.literal(true).meta({ description: 'This scan consumed the ticket: let the holder in' }),
}).meta({ id: 'CheckinResult' });

const AcceptedSchema = z.object({ accepted: z.literal(true) }).meta({ id: 'Accepted' });

async function requireTicket(em: EntityManager, code: string, workspaceId: string): Promise<TicketRow> {
  const ticket = await findTicketByCode(em, code, workspaceId);
  if (!ticket) throw new AppError('NOT_FOUND', 'Ticket not found');
  return ticket;
}

/** Starts (or joins) the resend workflow of a ticket; the email goes out from the worker. */
export async function startTicketResend(services: ApiServices, ticketId: string): Promise<void> {
  await services.temporal.workflow.start<typeof ticketResend>('ticketResend', {
    workflowId: ticketResendWorkflowId(ticketId),
    taskQueue: services.env.TEMPORAL_TASK_QUEUE,
    args: [{ ticketId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}

export const ticketRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.get(
    '/tickets/:ticketCode/access',
    {
      config: organizer('STAFF', 'tickets'),
      schema: {
        tags: ['tickets'],
        summary: 'Validity check at the door, without consuming the ticket (contract 4.11)',
        params: TicketCodeParams,
        response: { 200: dataOf(TicketAccessSchema) },
      },
    },
    async (request) => {
      const ticket = await requireTicket(request.em, request.params.ticketCode, activeWorkspace(request).workspaceId);
      return { data: toTicketAccess(ticket) };
    },
  );

  app.post(
    '/tickets/:ticketCode/checkin',
    {
      config: organizer('STAFF', 'tickets'),
      schema: {
        tags: ['tickets'],
        summary: 'Check in at the door: consumes the ticket once (VALID → USED, sale CONFIRMED)',
        description:
          'A second scan gets 409 TICKET_ALREADY_USED with details.checkedInAt; concurrent scans at two doors admit ' +
          'exactly one. A ticket of a sale that is not CONFIRMED, or an INVALID ticket, gets 409 INVALID_STATE.',
        params: TicketCodeParams,
        response: { 200: dataOf(CheckinResultSchema) },
      },
    },
    async (request) => {
      const workspaceId = activeWorkspace(request).workspaceId;
      const code = request.params.ticketCode;
      await requireTicket(request.em, code, workspaceId);
      const admitted = await checkInTicket(request.em.fork(), code, workspaceId);
      const ticket = await requireTicket(request.em.fork(), code, workspaceId);
      if (admitted) return { data: { ...toTicketAccess(ticket), admitted: true as const } };
      throw checkInRefusal(ticket);
    },
  );

  app.patch(
    '/tickets/:ticketCode',
    {
      config: organizer('ADMIN', 'tickets'),
      schema: {
        tags: ['tickets'],
        summary: 'Reassign a sold ticket to another date and/or ticket type of the same event, moving its stock unit',
        description:
          'One transaction: one unit is taken from the new ticket type (409 when sold out) and one returned to the old ' +
          "one, and the sale's allocation follows, so availability stays exact. Without ticketTypeId, the type with the " +
          'same name on the new date is used. The price is not changed. Numbered (seated) tickets cannot be moved here.',
        params: TicketCodeParams,
        body: ReassignBody,
        response: { 200: dataOf(TicketAccessSchema) },
      },
    },
    async (request) => {
      const workspaceId = activeWorkspace(request).workspaceId;
      const ticketCode = request.params.ticketCode;
      await requireTicket(request.em, ticketCode, workspaceId);
      await reassignTicket(request.em.fork(), { workspaceId, ticketCode, to: request.body });
      return { data: toTicketAccess(await requireTicket(request.em.fork(), ticketCode, workspaceId)) };
    },
  );

  app.post(
    '/tickets/:ticketCode/resend',
    {
      config: organizer('STAFF', 'tickets'),
      schema: {
        tags: ['tickets'],
        summary: "Resend the ticket and its QR code to the buyer's email (only a VALID ticket of a CONFIRMED sale)",
        params: TicketCodeParams,
        response: { 202: dataOf(AcceptedSchema) },
      },
    },
    async (request, reply) => {
      const ticket = await requireTicket(request.em, request.params.ticketCode, activeWorkspace(request).workspaceId);
      await startTicketResend(services, ticket.id);
      return reply.status(202).send({ data: { accepted: true as const } });
    },
  );
};
