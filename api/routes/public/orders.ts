import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { type PaymentGateway, saleGateway } from '../../../domain/gateways.js';
import { isUuid } from '../../../entities/ids.js';
import { Event, EventDate, Sale, TicketType, Workspace } from '../../../entities/index.js';
import type { ITicketType } from '../../../entities/ticket-type.js';
import {
  checkoutWorkflowId,
  openPaymentUpdate,
  openPseUpdate,
  type ReservedSale,
  releaseUpdate,
} from '../../../workflows/definitions.js';
import { reserveThroughCheckout } from '../../http/checkout.js';
import { dataOf } from '../../http/envelope.js';
import { requireRedis } from '../../http/limits.js';
import { minorUnits } from '../../http/money.js';
import { askCheckoutToCheckPayment } from '../../http/payment-check.js';
import { hasAdmittedTurn } from '../../http/queue.js';
import { publicAccess } from '../../http/route-access.js';
import { loadTickets, PublicOrderStatusSchema, publicStatusOf } from '../../http/sale-views.js';
import { presentedSessionToken, resolveBuyerSession } from '../../plugins/customer-auth.js';
import type { ApiServices } from '../../services.js';
import { presentedQueueToken } from '../customer/orders.js';
import { orderPaymentPageUrl } from './order-payment-page.js';

/** Items per storefront order; the contract sets no number, this keeps one order's transaction short. */
const MAX_ITEMS_PER_ORDER = 10;

const CreatePublicOrderBody = z.object({
  buyerEmail: z.email().max(254),
  buyerName: z.string().trim().min(2).max(120),
  buyerPhone: z.string().trim().max(40).optional(),
  items: z
    .array(
      z.object({
        ticketTypeId: z.string().min(1).max(100),
        quantity: z.number().int().min(1).max(30),
        seats: z.array(z.string().min(1).max(120)).max(30).optional(),
      }),
    )
    .min(1)
    .max(MAX_ITEMS_PER_ORDER)
    .refine((items) => new Set(items.map((item) => item.ticketTypeId)).size === items.length, {
      message: 'each ticket type at most once per order: put all its units in one item',
    })
    .meta({
      description:
        `1 to ${MAX_ITEMS_PER_ORDER} items, each a different ticket type. All items must be ticket types of one ` +
        'event date of one organizer, in one currency: items of another organizer are refused with 409 ' +
        'MULTIPLE_ORGS, of another currency with 409 MIXED_CURRENCY, and of several dates of one organizer with ' +
        '422 VALIDATION_FAILED (one order per date). Numbered (seated) ticket types are sold in one-item orders ' +
        'only (422 otherwise). The stock of every item is reserved together or not at all: when one item is sold ' +
        'out the answer is 409 with details.reason sold_out and details.ticketTypeId, and nothing is reserved.',
    }),
  queueToken: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .meta({ description: 'Admitted virtual-queue turn (or header X-Queue-Token) for dates with a waiting room' }),
});

const OrderCreatedSchema = z
  .object({
    orderId: z.string(),
    reference: z.string(),
    status: PublicOrderStatusSchema,
    total: minorUnits('What the buyer pays for the order', 190230),
    currency: z.string(),
    checkoutUrl: z.string().meta({
      description:
        'Where to send the buyer to pay. Gateway A events: the gateway A checkout page, where the buyer pays by card ' +
        "or PSE. Gateway B events: the order's hosted payment page (GET /orders/{id}/pay), which shows gateway B's " +
        "payment button. For an order with nothing to pay (status paid at once), the order's own status address " +
        '(GET /orders/{id}), which lists its tickets',
    }),
    expiresAt: z.string().meta({
      description:
        'Exact instant the reservation expires; use it as returned. An order paid at once (nothing to pay) has no ' +
        'reservation left: the instant it was confirmed',
    }),
  })
  .meta({ id: 'OrderCreated' });

const PublicOrderSchema = z
  .object({
    orderId: z.string(),
    reference: z.string(),
    status: PublicOrderStatusSchema,
    total: minorUnits('What the buyer pays for the order', 190230),
    currency: z.string(),
    expiresAt: z.string().nullable().meta({ description: 'Repeated while pending; null afterwards' }),
    tickets: z.array(z.object({ code: z.string(), ticketTypeId: z.string(), seatLabel: z.string().nullable() })),
  })
  .meta({ id: 'PublicOrder' });

/** The gateway the order's event charges through (domain/gateways.ts); the checkout checks it again on open. */
async function gatewayOf(
  em: FastifyRequest['em'],
  type: { event: string; workspace: string },
): Promise<PaymentGateway> {
  const event = await em.findOne(Event, { id: type.event }, { filters: { tenant: false } });
  const workspace = await em.findOne(Workspace, { id: type.workspace });
  return event && workspace ? saleGateway(event, workspace) : 'GATEWAY_A';
}

/**
 * Opens the order's payment through its checkout, so the checkout knows the attempt (and asks the gateway about it
 * until the sale settles), and answers where the buyer pays: gateway A's checkout page (card or PSE), or for a
 * gateway B event our hosted page with gateway B's button.
 */
async function openOrderPayment(services: ApiServices, sale: ReservedSale, gateway: PaymentGateway): Promise<string> {
  const handle = services.temporal.workflow.getHandle(checkoutWorkflowId(sale.saleId));
  try {
    if (gateway === 'GATEWAY_B') {
      const opened = await handle.executeUpdate(openPaymentUpdate);
      if (!opened.ok) throw new AppError('PAYMENT_UNAVAILABLE', opened.message, { details: { reason: opened.reason } });
      // The checkout decides the rail: an event that left gateway B meanwhile pays at gateway A's page after all.
      if (opened.configuration.gateway === 'GATEWAY_B') return orderPaymentPageUrl(services.env, sale.saleId);
    }
    const link = await handle.executeUpdate(openPseUpdate, { args: [{ bankCode: null, methods: 'card_or_pse' }] });
    if (!link.ok) throw new AppError('PAYMENT_UNAVAILABLE', link.message, { details: { reason: link.reason } });
    return link.redirectUrl;
  } catch (error) {
    // No payment link, no order: the stock goes straight back instead of waiting for the window to expire.
    await handle
      .executeUpdate(releaseUpdate, { args: [{ reason: 'buyer_release', acknowledgeOpenPayment: false }] })
      .catch(() => undefined);
    if (error instanceof AppError) throw error;
    if (error instanceof WorkflowUpdateFailedError) {
      throw new AppError(
        'PROVIDER_UNAVAILABLE',
        'The payment provider did not answer; the order was not created, retry',
      );
    }
    throw error;
  }
}

const itemsProblem = (message: string, details: Record<string, unknown> = {}): AppError =>
  new AppError('VALIDATION_FAILED', `body.items: ${message}`, {
    details: { fields: [{ field: 'body.items', message }], ...details },
  });

/**
 * The ticket types of an order's items, refused in the contract's order: an unknown type (404), types of several
 * organizers (409 MULTIPLE_ORGS), of several currencies (409 MIXED_CURRENCY), of several dates (422: a sale belongs
 * to one date), and numbered types mixed with other items (422). Answers the first item's type, which names the
 * order's date, event and workspace.
 */
async function orderedTypes(
  em: FastifyRequest['em'],
  items: ReadonlyArray<{ ticketTypeId: string; seats?: string[] | undefined }>,
): Promise<ITicketType> {
  const ids = items.map((item) => item.ticketTypeId);
  const found = ids.every(isUuid)
    ? await em.find(TicketType, { id: { $in: ids } }, { filters: { tenant: false } })
    : [];
  const byId = new Map(found.map((type) => [type.id, type]));
  const types = ids.map((id) => byId.get(id));
  const missing = ids.filter((_, index) => !types[index]);
  if (missing.length > 0) {
    throw new AppError('NOT_FOUND', 'Ticket type not found', { details: { ticketTypeIds: missing } });
  }
  const known = types as ITicketType[];
  const distinct = (pick: (type: ITicketType) => string): string[] => [...new Set(known.map(pick))];
  if (distinct((type) => type.workspace).length > 1) {
    throw new AppError('MULTIPLE_ORGS', 'All tickets of one order must come from a single organizer');
  }
  const currencies = distinct((type) => type.currency);
  if (currencies.length > 1) {
    throw new AppError('MIXED_CURRENCY', 'All tickets of one order must be sold in the same currency', {
      details: { currencies },
    });
  }
  const dates = distinct((type) => type.eventDate);
  if (dates.length > 1) {
    throw itemsProblem('all items must be tickets of one event date: place one order per date', {
      eventDateIds: dates,
    });
  }
  const numbered = known.some((type) => type.seatMapCategoryKey !== null);
  if (items.length > 1 && (numbered || items.some((item) => item.seats?.length))) {
    throw itemsProblem('numbered (seated) tickets are sold in one-item orders: place one order for them');
  }
  return known[0]!;
}

/** Anonymous storefront orders (contract 4.18): reserve, then hand back where the buyer pays. */
export const publicOrderRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.post(
    '/orders',
    {
      config: publicAccess(),
      schema: {
        tags: ['orders'],
        summary: 'Create an order and get the payment link (anonymous for general admission)',
        description:
          'One order is one sale of one event date. It may hold several items (ticket types of that date, each ' +
          'once); items of several dates are refused with 422 VALIDATION_FAILED naming body.items: place one order ' +
          'per date. Items of several organizers: 409 MULTIPLE_ORGS; of several currencies: 409 MIXED_CURRENCY. ' +
          "Every item's stock is reserved in one transaction, all or nothing (sold out: 409, details.reason " +
          'sold_out, details.ticketTypeId). Numbered ticket types sell in one-item orders only. The total is the ' +
          "sum of the items' prices, each priced as the availability quotes it (buyerTotal × quantity).",
        body: CreatePublicOrderBody,
        response: { 200: dataOf(OrderCreatedSchema) },
      },
    },
    async (request) => {
      const body = request.body;
      let buyerId: string | null = null;
      if (body.items.some((item) => item.seats?.length)) {
        const token = presentedSessionToken(request);
        const buyer = token ? await resolveBuyerSession(request, token) : null;
        buyerId = buyer?.buyerId ?? null;
        if (!buyer) {
          throw new AppError(
            'CUSTOMER_SESSION_REQUIRED',
            'Orders with seats need a buyer session (X-Customer-Session or the buyer-session cookie)',
          );
        }
      }
      const type = await orderedTypes(request.em, body.items);
      const date = await request.em.findOne(EventDate, { id: type.eventDate }, { filters: { tenant: false } });
      const queueToken = presentedQueueToken(request.headers) ?? body.queueToken ?? null;
      const queueTurnAdmitted = date?.virtualQueue
        ? await requireRedis('The waiting room', () => hasAdmittedTurn(services.redis, date.id, queueToken))
        : false;
      const items = body.items.map((item) => ({
        ticketTypeId: item.ticketTypeId,
        quantity: item.quantity,
        seats: item.seats ?? null,
      }));
      const first = items[0]!;
      const sale = await reserveThroughCheckout(
        services,
        {
          origin: 'PUBLIC',
          channel: 'WEB',
          pinnedWorkspaceId: null,
          eventDateId: type.eventDate,
          ticketTypeId: first.ticketTypeId,
          quantity: first.quantity,
          seats: first.seats,
          // One-item orders keep the one-item request shape the checkout has always been sent.
          ...(items.length > 1 ? { items } : {}),
          holdToken: null,
          discountCode: null,
          // An order with seats belongs to the buyer account; general admission stays anonymous.
          buyerId,
          buyerEmail: body.buyerEmail.toLowerCase(),
          buyer: { name: body.buyerName, phone: body.buyerPhone ?? null, idType: null, idNumber: null, nitDigit: null },
          returnUrl: null,
          confirmImmediately: false,
          complimentary: false,
          queueTurnAdmitted,
        },
        // Anonymous orders are keyed by client address (see plugins/idempotency.ts), orders with seats by buyer.
        { origin: 'public-order', idempotencyKey: request.idempotencyKey },
      );
      if (sale.free) {
        // Nothing to pay (a price-0 ticket): the checkout confirmed the sale and mails its tickets. The order's own
        // status address stands in for a payment link, and the instant it was settled for the expiry.
        return {
          data: {
            orderId: sale.saleId,
            reference: sale.reference,
            status: 'paid' as const,
            total: sale.total,
            currency: sale.currency,
            checkoutUrl: new URL(`/api/public/orders/${sale.saleId}`, services.env.PUBLIC_ORIGIN).toString(),
            expiresAt: new Date().toISOString(),
          },
        };
      }
      const checkoutUrl = await openOrderPayment(services, sale, await gatewayOf(request.em, type));
      return {
        data: {
          orderId: sale.saleId,
          reference: sale.reference,
          status: 'pending' as const,
          total: sale.total,
          currency: sale.currency,
          checkoutUrl,
          expiresAt: new Date(sale.expiresAtMs ?? Date.now()).toISOString(),
        },
      };
    },
  );

  app.get(
    '/orders/:id',
    {
      config: publicAccess(),
      schema: {
        tags: ['orders'],
        summary: 'Status of an order, with its tickets once paid',
        params: z.object({ id: z.string().min(1).max(100) }),
        response: { 200: dataOf(PublicOrderSchema) },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const sale = isUuid(request.params.id)
        ? await request.em.findOne(Sale, { id: request.params.id }, { filters: { tenant: false } })
        : null;
      if (sale?.origin !== 'PUBLIC') throw new AppError('NOT_FOUND', 'Order not found');
      askCheckoutToCheckPayment(services, request.log, sale);
      const view = publicStatusOf(sale);
      const tickets = view.status === 'paid' ? await loadTickets(request.em, sale.id) : [];
      return {
        data: {
          orderId: sale.id,
          reference: sale.reference,
          status: view.status,
          total: sale.total,
          currency: sale.currency,
          expiresAt: view.expiresAt,
          tickets: tickets.map((ticket) => ({
            code: ticket.code,
            ticketTypeId: ticket.ticketTypeId,
            seatLabel: ticket.seatLabel,
          })),
        },
      };
    },
  );
};
