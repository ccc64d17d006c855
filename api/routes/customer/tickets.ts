import { WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { isTicketAdmissible, SALE_STATUSES, TICKET_STATUSES } from '../../../domain/sale-state.js';
import { isUuid } from '../../../entities/ids.js';
import type { ISale } from '../../../entities/sale.js';
import { checkoutWorkflowId, releaseUpdate } from '../../../workflows/definitions.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { customerAccess } from '../../http/route-access.js';
import { findSaleByIdOrReference, requireOwnedSale } from '../../http/sale-views.js';
import { findBuyerTickets, type TicketRow } from '../../http/ticket-views.js';
import { currentCustomer } from '../../plugins/customer-auth.js';
import type { ApiServices } from '../../services.js';

const CustomerTicketSchema = z
  .object({
    id: z.string(),
    code: z.string().meta({ description: 'The code printed in the QR; show it at the door' }),
    status: z.enum(TICKET_STATUSES),
    valid: z.boolean().meta({ description: 'true when the ticket would be admitted now' }),
    saleId: z.string(),
    saleReference: z.string(),
    saleStatus: z.enum(SALE_STATUSES),
    eventId: z.string(),
    eventName: z.string(),
    eventDateId: z.string(),
    startsAt: z.string(),
    ticketTypeId: z.string(),
    ticketTypeName: z.string(),
    seatLabel: z.string().nullable(),
    checkedInAt: z.string().nullable(),
  })
  .meta({ id: 'CustomerTicket' });

const CustomerCancelResultSchema = z
  .object({
    saleId: z.string(),
    reference: z.string(),
    status: z.enum(SALE_STATUSES).meta({ description: 'ABANDONED once released (the contract leaves the name open)' }),
  })
  .meta({ id: 'CustomerCancelResult' });

const toCustomerTicket = (row: TicketRow) => ({
  id: row.id,
  code: row.code,
  status: row.status,
  valid: isTicketAdmissible(row.status, row.sale_status),
  saleId: row.sale_id,
  saleReference: row.sale_reference,
  saleStatus: row.sale_status,
  eventId: row.event_id,
  eventName: row.event_name,
  eventDateId: row.event_date_id,
  startsAt: new Date(row.starts_at).toISOString(),
  ticketTypeId: row.ticket_type_id,
  ticketTypeName: row.ticket_type_name,
  seatLabel: row.seat_label,
  checkedInAt: row.checked_in_at ? new Date(row.checked_in_at).toISOString() : null,
});

const IdParams = z.object({ id: z.string().min(1).max(100) });

export const customerTicketRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.get(
    '/customer/tickets',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: "The buyer's tickets, newest first",
        querystring: PageQuerySchema,
        response: { 200: listOf(CustomerTicketSchema) },
      },
    },
    async (request) => {
      const customer = currentCustomer(request);
      const rows = await findBuyerTickets(request.em, {
        buyerId: customer.buyerId,
        workspaceId: customer.pinnedWorkspaceId,
        beforeId: decodeCursor(request.query.cursor),
        limit: request.query.limit + 1,
      });
      const { items, page } = toPage(rows, request.query.limit);
      return { data: items.map(toCustomerTicket), page };
    },
  );

  app.get(
    '/customer/tickets/:id',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'One of the buyer’s tickets',
        params: IdParams,
        response: { 200: dataOf(CustomerTicketSchema) },
      },
    },
    async (request) => {
      const customer = currentCustomer(request);
      const rows = isUuid(request.params.id)
        ? await findBuyerTickets(request.em, {
            buyerId: customer.buyerId,
            workspaceId: customer.pinnedWorkspaceId,
            ticketId: request.params.id,
            limit: 1,
          })
        : [];
      if (!rows[0]) throw new AppError('NOT_FOUND', 'Ticket not found');
      return { data: toCustomerTicket(rows[0]) };
    },
  );

  app.post(
    '/customer/tickets/:id/cancel',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Cancel an unpaid purchase (contract part 3, rule 6): its reservation is released',
        description:
          'id is one of the buyer’s tickets, or the purchase itself (sale id or FT- reference: an unpaid purchase has ' +
          'no tickets yet). A PENDING purchase is released through its checkout and becomes ABANDONED, its stock ' +
          'back on sale; a paid one gets 409 INVALID_STATE with details.reason already_paid (only the organizer ' +
          'can refund it). Repeating the cancel of a released purchase answers 200 again.',
        params: IdParams,
        response: { 200: dataOf(CustomerCancelResultSchema) },
      },
    },
    async (request) => {
      const customer = currentCustomer(request);
      const id = request.params.id;
      let sale: ISale | null = null;
      if (isUuid(id)) {
        const ticket = await findBuyerTickets(request.em, {
          buyerId: customer.buyerId,
          workspaceId: customer.pinnedWorkspaceId,
          ticketId: id,
          limit: 1,
        });
        sale = await findSaleByIdOrReference(request.em, ticket[0]?.sale_id ?? id);
      } else {
        sale = await findSaleByIdOrReference(request.em, id);
      }
      const owned = requireOwnedSale(sale, customer);
      const answer = (status: ISale['status']) => ({ data: { saleId: owned.id, reference: owned.reference, status } });
      if (owned.status === 'CONFIRMED' || owned.status === 'REFUNDED') {
        throw new AppError('INVALID_STATE', 'This purchase is already paid; only the organizer can refund it', {
          details: { reason: 'already_paid', status: owned.status },
        });
      }
      if (owned.status !== 'PENDING') return answer(owned.status);
      let released: Awaited<ReturnType<typeof releaseThroughCheckout>> | null;
      try {
        released = await releaseThroughCheckout(services, owned.id);
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
        released = null;
      }
      const now = requireOwnedSale(await findSaleByIdOrReference(request.em.fork(), owned.id), customer);
      if (now.status === 'CONFIRMED' || (released?.ok && released.saleStatus === 'CONFIRMED')) {
        throw new AppError('INVALID_STATE', 'The payment was confirmed first; this purchase is paid', {
          details: { reason: 'already_paid', status: 'CONFIRMED' },
        });
      }
      return answer(now.status);
    },
  );
};

async function releaseThroughCheckout(services: ApiServices, saleId: string) {
  return services.temporal.workflow
    .getHandle(checkoutWorkflowId(saleId))
    .executeUpdate(releaseUpdate, { args: [{ reason: 'buyer_release', acknowledgeOpenPayment: false }] });
}
