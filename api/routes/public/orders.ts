import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { reserveThroughCheckout, type SaleKey, saleIdFor } from '../../http/checkout.js';
import { assertCustomerMayBuyIn } from '../../http/customer-scope.js';
import { dataOf } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { askCheckoutToCheckPayment } from '../../http/payment-check.js';
import { reserveWithTurn } from '../../http/queue.js';
import { publicAccess } from '../../http/route-access.js';
import { loadTickets, PublicOrderStatusSchema, publicStatusOf } from '../../http/sale-views.js';
import { presentedSessionToken, resolveBuyerSession } from '../../plugins/customer-auth.js';
import {
  dateHasVirtualQueue,
  openOrderPayment,
  orderedTypes,
  orderForStatusPage,
  orderGateway,
} from '../../services/public-orders.js';
import type { ApiServices } from '../../services.js';
import { presentedQueueToken } from '../customer/orders.js';

/** Items per storefront order; the contract sets no number, this keeps one order's transaction short. */
const MAX_ITEMS_PER_ORDER = 10;

const CreatePublicOrderBody = z.object({
  // A realistic address for the reference's "Try it out" (its generator otherwise fills the email pattern at random).
  buyerEmail: z
    .email()
    .max(254)
    .meta({ examples: ['ana.gomez@example.com'] }),
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

/** Anonymous storefront orders (contract 4.18): reserve, then hand back where the buyer pays. */
export const publicOrderRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.post(
    '/orders',
    {
      config: { ...publicAccess(), servedWithAdmittedTurn: true },
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
      const token = presentedSessionToken(request);
      const buyer = token ? await resolveBuyerSession(request, token) : null;
      if (body.items.some((item) => item.seats?.length)) {
        buyerId = buyer?.buyerId ?? null;
        if (!buyer) {
          throw new AppError(
            'CUSTOMER_SESSION_REQUIRED',
            'Orders with seats need a buyer session (X-Customer-Session or the buyer-session cookie)',
          );
        }
      }
      const type = await orderedTypes(request.em, body.items);
      // A session from an enterprise SSO exchange buys only where its enterprise sells, on this surface as on the
      // customer one (404 workspace_not_served), whether or not the order is linked to it.
      if (buyer) await assertCustomerMayBuyIn(request, buyer, type.workspace, 'Ticket type');
      const virtualQueue = await dateHasVirtualQueue(request.em, type.eventDate);
      const queueToken = presentedQueueToken(request.headers) ?? body.queueToken ?? null;
      const items = body.items.map((item) => ({
        ticketTypeId: item.ticketTypeId,
        quantity: item.quantity,
        seats: item.seats ?? null,
      }));
      const first = items[0]!;
      const saleKey: SaleKey = { origin: 'public-order', idempotencyKey: request.idempotencyKey };
      const turnOrder = {
        date: { id: type.eventDate, virtualQueue },
        queueToken,
        saleId: saleKey.idempotencyKey ? saleIdFor(saleKey) : null,
        units: items.reduce((sum, item) => sum + item.quantity, 0),
      };
      const sale = await reserveWithTurn(request, services, turnOrder, (queueTurnAdmitted) =>
        reserveThroughCheckout(
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
            buyer: {
              name: body.buyerName,
              phone: body.buyerPhone ?? null,
              idType: null,
              idNumber: null,
              nitDigit: null,
            },
            returnUrl: null,
            confirmImmediately: false,
            complimentary: false,
            queueTurnAdmitted,
          },
          // Anonymous orders are keyed by client address (see plugins/idempotency.ts), orders with seats by buyer.
          saleKey,
        ),
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
      const checkoutUrl = await openOrderPayment(services, sale, await orderGateway(request.em, type));
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
        description:
          'Answers for storefront orders and, as the page a bank returns a buyer to, for headless customer orders ' +
          "(status only: their tickets are read with the buyer's session at GET /customer/orders/{id}).",
        params: z.object({ id: z.string().min(1).max(100) }),
        response: { 200: dataOf(PublicOrderSchema) },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const found = await orderForStatusPage(request.em, request.params.id);
      if (!found) throw new AppError('NOT_FOUND', 'Order not found');
      const { sale } = found;
      askCheckoutToCheckPayment(services, request.log, sale);
      const view = publicStatusOf(sale);
      const tickets = view.status === 'paid' && found.showTickets ? await loadTickets(request.em, sale.id) : [];
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
