import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { isUuid } from '../../../entities/ids.js';
import { takeStock } from '../../../entities/stock.js';
import { returnUnits } from '../../../entities/stock-moves.js';
import { ticketResendWorkflowId } from '../../../workflows/definitions.js';
import type { ticketResend } from '../../../workflows/ticket-resend.js';
import { dataOf } from '../../http/envelope.js';
import { organizer } from '../../http/route-access.js';
import { findTicketByCode, TicketAccessSchema, type TicketRow, toTicketAccess } from '../../http/ticket-views.js';
import { activeWorkspace } from '../../plugins/auth.js';
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

interface ReassignTarget {
  type_id: string;
  type_name: string;
  event_date_id: string;
  event_id: string;
  seat_map_category_key: string | null;
  currency: string;
  starts_at: Date;
  date_cancelled_at: Date | null;
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
      const outcome = await request.em.fork().transactional(async (tx) => {
        // Share-lock the sale: a cancel or refund (which lock it for update) waits for this scan, or this scan for it.
        const sales = await tx.execute<{ status: string }[]>(
          `select s.status from sales s join tickets t on t.sale_id = s.id
            where t.code = ? and t.workspace_id = ? for share of s`,
          [code, workspaceId],
        );
        if (sales[0]?.status !== 'CONFIRMED') return { admitted: false as const };
        const used = await tx.execute<{ id: string }[]>(
          `update tickets set status = 'USED', checked_in_at = now(), updated_at = now()
            where code = ? and workspace_id = ? and status = 'VALID' returning id`,
          [code, workspaceId],
        );
        return { admitted: used.length === 1 };
      });
      const ticket = await requireTicket(request.em.fork(), code, workspaceId);
      if (outcome.admitted) return { data: { ...toTicketAccess(ticket), admitted: true as const } };
      if (ticket.status === 'USED') {
        throw new AppError('TICKET_ALREADY_USED', 'This ticket was already used at the door', {
          details: {
            ticketCode: ticket.code,
            checkedInAt: ticket.checked_in_at ? new Date(ticket.checked_in_at).toISOString() : null,
          },
        });
      }
      throw new AppError(
        'INVALID_STATE',
        ticket.status === 'INVALID'
          ? 'This ticket is not valid (its sale was cancelled or refunded)'
          : `The sale is ${ticket.sale_status}, not CONFIRMED`,
        {
          details: {
            reason: ticket.status === 'INVALID' ? 'ticket_invalid' : 'sale_not_confirmed',
            ticketStatus: ticket.status,
            saleStatus: ticket.sale_status,
          },
        },
      );
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
      const code = request.params.ticketCode;
      const body = request.body;
      await requireTicket(request.em, code, workspaceId);
      await request.em.fork().transactional(async (tx) => {
        const locked = await tx.execute<
          {
            id: string;
            sale_id: string;
            status: string;
            sale_status: string;
            ticket_type_id: string;
            event_id: string;
            event_date_id: string;
            seat_label: string | null;
          }[]
        >(
          `select t.id, t.sale_id, t.status, s.status as sale_status, t.ticket_type_id, t.event_id, t.event_date_id, t.seat_label
             from tickets t join sales s on s.id = t.sale_id
            where t.code = ? and t.workspace_id = ? for update of t, s`,
          [code, workspaceId],
        );
        const ticket = locked[0];
        if (!ticket) throw new AppError('NOT_FOUND', 'Ticket not found');
        if (ticket.status !== 'VALID' || ticket.sale_status !== 'CONFIRMED') {
          throw new AppError('INVALID_STATE', 'Only a VALID ticket of a CONFIRMED sale can be reassigned', {
            details: { ticketStatus: ticket.status, saleStatus: ticket.sale_status },
          });
        }
        const dateId = body.eventDateId ?? ticket.event_date_id;
        if (!isUuid(dateId) || (body.ticketTypeId !== undefined && !isUuid(body.ticketTypeId))) {
          throw new AppError('NOT_FOUND', 'Event date or ticket type not found');
        }
        const current = await tx.execute<{ name: string; seat_map_category_key: string | null; currency: string }[]>(
          'select name, seat_map_category_key, currency from ticket_types where id = ?',
          [ticket.ticket_type_id],
        );
        const targetFilter = body.ticketTypeId ? 'tt.id = ?' : 'tt.name = ?';
        const targets = await tx.execute<ReassignTarget[]>(
          `select tt.id as type_id, tt.name as type_name, d.id as event_date_id, d.event_id, tt.seat_map_category_key,
                  tt.currency, d.starts_at, d.cancelled_at as date_cancelled_at
             from ticket_types tt join event_dates d on d.id = tt.event_date_id
            where d.id = ? and ${targetFilter} and tt.workspace_id = ? and tt.deleted_at is null and d.deleted_at is null
            order by tt.sort_order, tt.id limit 1`,
          [dateId, body.ticketTypeId ?? current[0]?.name ?? '', workspaceId],
        );
        const target = targets[0];
        if (!target) {
          throw new AppError(
            body.ticketTypeId ? 'NOT_FOUND' : 'VALIDATION_FAILED',
            body.ticketTypeId
              ? 'Ticket type not found on that event date'
              : `No ticket type named "${current[0]?.name ?? ''}" on that date; send ticketTypeId`,
            body.ticketTypeId
              ? {}
              : { details: { fields: [{ field: 'ticketTypeId', message: 'required for this date' }] } },
          );
        }
        if (target.event_id !== ticket.event_id) {
          throw new AppError('CONFLICT', 'A ticket can only move to a date of its own event', {
            details: { reason: 'other_event' },
          });
        }
        if (target.date_cancelled_at || new Date(target.starts_at).getTime() <= Date.now()) {
          throw new AppError('CONFLICT', 'The target date is cancelled or has already started', {
            details: { reason: 'date_not_available' },
          });
        }
        if (ticket.seat_label || target.seat_map_category_key || current[0]?.seat_map_category_key) {
          throw new AppError('CONFLICT', 'Numbered (seated) tickets cannot be reassigned here', {
            details: { reason: 'numbered_not_supported' },
          });
        }
        if (target.currency !== current[0]?.currency) {
          throw new AppError('CONFLICT', 'The target ticket type is sold in another currency', {
            details: { reason: 'currency_mismatch' },
          });
        }
        if (target.type_id === ticket.ticket_type_id && target.event_date_id === ticket.event_date_id) return;
        const taken = await takeStock(tx, { saleId: ticket.sale_id, ticketTypeId: target.type_id, quantity: 1 });
        if (!taken) {
          throw new AppError('CONFLICT', 'The target ticket type is sold out', {
            details: { reason: 'sold_out', ticketTypeId: target.type_id },
          });
        }
        const returned = await returnUnits(tx, {
          saleId: ticket.sale_id,
          ticketTypeId: ticket.ticket_type_id,
          quantity: 1,
        });
        if (returned !== 1)
          throw new Error(`sale ${ticket.sale_id} holds no unit of ${ticket.ticket_type_id} to return`);
        await tx.execute('update tickets set ticket_type_id = ?, event_date_id = ?, updated_at = now() where id = ?', [
          target.type_id,
          target.event_date_id,
          ticket.id,
        ]);
      });
      return { data: toTicketAccess(await requireTicket(request.em.fork(), code, workspaceId)) };
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
