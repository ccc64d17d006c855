import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SALE_STATUSES } from '../../../domain/sale-state.js';
import { SALE_CHANNELS } from '../../../entities/sale.js';
import { dataOf, listOf, type Page } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import {
  loadItems,
  loadTickets,
  SaleSchema,
  SaleWithItemsSchema,
  TicketSummarySchema,
  toSaleFor,
} from '../../http/sale-views.js';
import { IdParamSchema, IsoDateTimeSchema } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import { createConfirmedSale, findSale, listSales, paymentAttemptsOf } from '../../services/sales.js';
import type { ApiServices } from '../../services.js';

const SalesQuery = PageQuerySchema.extend({
  status: z.enum(SALE_STATUSES).optional(),
  channel: z.enum(SALE_CHANNELS).optional(),
  event: z.string().max(100).optional(),
  eventDate: z.string().max(100).optional(),
  reference: z.string().min(1).max(20).optional(),
  buyer: z.string().min(1).max(120).optional(),
  from: IsoDateTimeSchema.optional(),
  to: IsoDateTimeSchema.optional(),
});

const PaymentAttemptSchema = z
  .object({
    id: z.string(),
    gateway: z.string(),
    kind: z.string(),
    providerPaymentId: z.string().nullable(),
    status: z.string().nullable(),
    statusDetail: z.string().nullable(),
    amount: minorUnits('Amount the gateway charged or refunded in this attempt', 173230).nullable(),
    note: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'PaymentAttempt' });

const CreateSaleBody = z.object({
  eventDateId: z.string().min(1).max(100),
  ticketTypeId: z.string().min(1).max(100),
  quantity: z.number().int().min(1).max(30),
  channel: z.enum(['ADMIN', 'POS']).default('ADMIN'),
  complimentary: z
    .boolean()
    .default(false)
    .meta({ description: 'true: free tickets (100% discount); false: paid offline at the box office' }),
  buyer: z.object({
    name: z.string().trim().min(2).max(120),
    email: z.email().max(254),
    phone: z.string().max(40).optional(),
  }),
});

/**
 * A sale's tickets and attempts are bounded by the sale itself, so they come whole; the list envelope (contract
 * part 2) still applies, with a page that says there is nothing more.
 */
const SINGLE_PAGE: Page = { nextCursor: null, hasMore: false };

export const salesRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.get(
    '/sales',
    {
      config: organizer('VIEWER', 'sales'),
      schema: {
        tags: ['sales'],
        summary: 'List sales, newest first, with filters (contract 4.7)',
        querystring: SalesQuery,
        response: { 200: listOf(SaleSchema) },
      },
    },
    async (request) => {
      const { role } = activeWorkspace(request);
      const q = request.query;
      const rows = await listSales(request.em, q, role, decodeCursor(q.cursor), q.limit + 1);
      const { items, page } = toPage(rows, q.limit);
      return {
        data: items.map((sale) => toSaleFor(sale, role)),
        page,
        ...(request.warnings.length ? { warnings: request.warnings } : {}),
      };
    },
  );

  app.get(
    '/sales/:id',
    {
      config: organizer('STAFF', 'sales'),
      schema: {
        tags: ['sales'],
        summary: 'A sale with its items',
        params: IdParamSchema,
        response: { 200: dataOf(SaleWithItemsSchema) },
      },
    },
    async (request) => {
      const sale = await findSale(request.em, request.params.id);
      const { role } = activeWorkspace(request);
      return { data: { ...toSaleFor(sale, role), items: await loadItems(request.em, sale.id) } };
    },
  );

  app.get(
    '/sales/:id/tickets',
    {
      config: organizer('STAFF', 'sales'),
      schema: {
        tags: ['sales'],
        summary: 'Tickets of a sale, in one page',
        params: IdParamSchema,
        response: { 200: listOf(TicketSummarySchema) },
      },
    },
    async (request) => {
      const sale = await findSale(request.em, request.params.id);
      return {
        data: await loadTickets(request.em, sale.id),
        page: SINGLE_PAGE,
        ...(request.warnings.length ? { warnings: request.warnings } : {}),
      };
    },
  );

  app.get(
    '/sales/:id/attempts',
    {
      config: organizer('STAFF', 'sales'),
      schema: {
        tags: ['sales'],
        summary: 'Payment attempt history: opens, charges, gateway notifications, refunds; in one page',
        params: IdParamSchema,
        response: { 200: listOf(PaymentAttemptSchema) },
      },
    },
    async (request) => {
      const sale = await findSale(request.em, request.params.id);
      const attempts = await paymentAttemptsOf(request.em, sale.id);
      return {
        data: attempts.map((attempt) => ({
          id: attempt.id,
          gateway: attempt.gateway,
          kind: attempt.kind,
          providerPaymentId: attempt.providerPaymentId ?? null,
          status: attempt.status ?? null,
          statusDetail: attempt.statusDetail ?? null,
          amount: attempt.amount ?? null,
          note: attempt.note ?? null,
          createdAt: attempt.createdAt.toISOString(),
        })),
        page: SINGLE_PAGE,
        ...(request.warnings.length ? { warnings: request.warnings } : {}),
      };
    },
  );

  app.post(
    '/sales',
    {
      config: organizer('ADMIN', 'sales'),
      schema: {
        tags: ['sales'],
        summary: 'Create a confirmed sale without a gateway: complimentary tickets or a box-office (POS) sale',
        body: CreateSaleBody,
        response: { 201: dataOf(SaleWithItemsSchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const body = request.body;
      const reserved = await createConfirmedSale(services, workspace.workspaceId, {
        eventDateId: body.eventDateId,
        ticketTypeId: body.ticketTypeId,
        quantity: body.quantity,
        channel: body.channel,
        complimentary: body.complimentary,
        buyer: body.buyer,
      });
      const sale = await findSale(request.em, reserved.saleId);
      return reply
        .status(201)
        .send({ data: { ...toSaleFor(sale, workspace.role), items: await loadItems(request.em, sale.id) } });
    },
  );
};
