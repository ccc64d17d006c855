import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { hostForLog, parseHostList } from '../../../domain/return-url.js';
import { isUuid } from '../../../entities/ids.js';
import type { ISale } from '../../../entities/sale.js';
import type { ReservedSale } from '../../../workflows/definitions.js';
import { reserveThroughCheckout, type SaleKey, saleIdFor, saleMadeWithKey } from '../../http/checkout.js';
import { assertCustomerMayBuyIn } from '../../http/customer-scope.js';
import { dataOf, WarningSchema } from '../../http/envelope.js';
import { enforceRateLimit } from '../../http/limits.js';
import { minorUnits } from '../../http/money.js';
import { askCheckoutToCheckPayment } from '../../http/payment-check.js';
import { reserveWithTurn } from '../../http/queue.js';
import { customerAccess, publicAccess } from '../../http/route-access.js';
import {
  findSaleByIdOrReference,
  loadItems,
  loadTickets,
  PublicOrderStatusSchema,
  publicStatusOf,
  requireOwnedSale,
  SALE_AMOUNTS,
  SaleItemSchema,
  TicketSummarySchema,
} from '../../http/sale-views.js';
import { currentCustomer } from '../../plugins/customer-auth.js';
import {
  assertPayable,
  chargeCard,
  claimSessionForOrder,
  openPayment,
  openPse,
  orderableDate,
  orderReturnUrl,
  paymentReturnTarget,
  releaseOrder,
  repeatedCardCharge,
  unfinishedOrder,
} from '../../services/customer-orders.js';
import type { SessionOrderOutcome } from '../../services/purchase-sessions.js';
import type { ApiServices } from '../../services.js';
import { presentedPurchaseSession } from './purchase-sessions.js';

/** The virtual-queue turn token (POST /api/public/queue/{eventDateId}), as X-Queue-Token. */
export function presentedQueueToken(headers: Record<string, unknown>): string | null {
  const raw = headers['x-queue-token'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

const ID_TYPES = ['CC', 'CE', 'NIT', 'PP', 'TI', 'PEP'] as const;

/** Contract 4.2 with the limits of part 8. */
const CreateCustomerOrderBody = z
  .object({
    eventDateId: z.string().min(1).max(100),
    items: z
      .array(
        z.object({
          ticketTypeId: z.string().min(1).max(100),
          quantity: z.number().int().min(1).max(30),
          seats: z.array(z.string().min(1).max(120)).max(30).optional(),
        }),
      )
      .min(1)
      .max(1),
    holdToken: z.string().min(1).max(120).optional(),
    discountCode: z.string().min(1).max(40).optional(),
    buyer: z.object({
      name: z.string().trim().min(2).max(120),
      phone: z.string().trim().max(40),
      idType: z.enum(ID_TYPES),
      idNumber: z.string().trim().min(5).max(20),
      nitDigit: z.string().max(1).optional(),
    }),
    returnUrl: z.string().max(2048),
  })
  .superRefine((body, ctx) => {
    if (body.buyer.idType === 'NIT' && !body.buyer.nitDigit) {
      ctx.addIssue({ code: 'custom', path: ['buyer', 'nitDigit'], message: 'required when idType is NIT' });
    }
    if (body.items[0]?.seats?.length && !body.holdToken) {
      ctx.addIssue({ code: 'custom', path: ['holdToken'], message: 'required when seats are sent' });
    }
  });

const CustomerOrderCreateResultSchema = z
  .object({
    free: z.boolean(),
    reference: z.string(),
    saleId: z.string().nullable(),
    total: minorUnits('Amount to charge; null when free', 173230).nullable(),
    currency: z.string().nullable(),
    expiresAt: z.string().nullable(),
  })
  .meta({ id: 'CustomerOrderCreateResult' });

const CustomerOrderSchema = z
  .object({
    id: z.string(),
    reference: z.string(),
    status: z.string().meta({
      description: 'Sale status: PENDING, CONFIRMED, ABANDONED (expired or released unpaid), CANCELLED, REFUNDED',
    }),
    publicStatus: PublicOrderStatusSchema,
    eventId: z.string(),
    eventDateId: z.string(),
    items: z.array(SaleItemSchema),
    ...SALE_AMOUNTS,
    currency: z.string(),
    expiresAt: z.string().nullable(),
    confirmedAt: z.string().nullable(),
    paymentProvider: z.string().nullable(),
    paymentStatus: z.string().nullable(),
    declineCode: z.string().nullable(),
    tickets: z.array(TicketSummarySchema).meta({ description: 'Issued tickets; empty until the sale is CONFIRMED' }),
  })
  .meta({ id: 'CustomerOrder' });

const GatewayAConfigSchema = z
  .object({
    publicKey: z.string(),
    amount: z.number().meta({
      description: "Major currency unit (pesos, not cents), as gateway A's payment brick takes it; NOT minor units",
      examples: [173230],
    }),
    currency: z.string(),
    reference: z.string(),
    payerEmail: z.string(),
  })
  .meta({ id: 'GatewayAPaymentConfiguration' });
const GatewayBConfigSchema = z
  .object({
    orderId: z.string(),
    amount: minorUnits('Amount to charge; gateway B takes whole pesos', 173230),
    currency: z.string(),
    apiKey: z.string(),
    integritySignature: z.string(),
    renderMode: z.string(),
    redirectionUrl: z.string(),
    description: z.string(),
    expirationDate: z.number().meta({ description: 'Epoch nanoseconds' }),
  })
  .meta({ id: 'GatewayBPaymentConfiguration' });

const OrderIdParams = z.object({ id: z.string().min(1).max(100) });

function toCustomerOrder(
  sale: ISale,
  items: Awaited<ReturnType<typeof loadItems>>,
  tickets: Awaited<ReturnType<typeof loadTickets>>,
) {
  const view = publicStatusOf(sale);
  return {
    id: sale.id,
    reference: sale.reference,
    status: sale.status,
    publicStatus: view.status,
    eventId: sale.event,
    eventDateId: sale.eventDate,
    items,
    subtotal: sale.subtotal,
    discountAmount: sale.discountAmount,
    serviceFee: sale.serviceFee,
    iva: sale.iva,
    total: sale.total,
    currency: sale.currency,
    expiresAt: view.expiresAt,
    confirmedAt: sale.confirmedAt?.toISOString() ?? null,
    paymentProvider: sale.paymentProvider ?? null,
    paymentStatus: sale.paymentStatus ?? null,
    declineCode: sale.declineCode ?? null,
    tickets: sale.status === 'CONFIRMED' ? tickets : [],
  };
}

/** CustomerOrderCreateResult (contract part 2): a free order is confirmed at once and has nothing left to pay. */
const toCreateResult = (sale: ReservedSale) =>
  sale.free
    ? { free: true, reference: sale.reference, saleId: null, total: null, currency: null, expiresAt: null }
    : {
        free: false,
        reference: sale.reference,
        saleId: sale.saleId,
        total: sale.total,
        currency: sale.currency,
        expiresAt: sale.expiresAtMs ? new Date(sale.expiresAtMs).toISOString() : null,
      };

export const customerOrderRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  // Parsed once, so a malformed RETURN_URL_ALLOWED_HOSTS stops the start instead of silently dropping return links.
  const serviceReturnUrlHosts = parseHostList(services.env.RETURN_URL_ALLOWED_HOSTS);

  /** The sale a payment POST names, when it is this buyer's and the buyer is within the rate limit. */
  async function ownSale(
    request: Parameters<typeof currentCustomer>[0],
    id: string,
    limit: 'paymentOpen' | 'paymentCard',
  ): Promise<ISale> {
    const customer = currentCustomer(request);
    const sale = requireOwnedSale(await findSaleByIdOrReference(request.em, id), customer);
    await enforceRateLimit(request, limit, customer.buyerId);
    return sale;
  }

  /** The payment POSTs: the sale must be this buyer's and still payable; everything else is the workflow's call. */
  async function payableSale(
    request: Parameters<typeof currentCustomer>[0],
    id: string,
    limit: 'paymentOpen' | 'paymentCard',
    sale?: ISale,
  ): Promise<ISale> {
    sale ??= await ownSale(request, id, limit);
    const customer = currentCustomer(request);
    await assertPayable(
      services,
      request.em,
      sale,
      { buyerId: customer.buyerId, presentedSessionId: presentedPurchaseSession(request.headers) },
      Date.now(),
    );
    return sale;
  }

  app.post(
    '/customer/orders',
    {
      config: { ...customerAccess(), servedWithAdmittedTurn: true },
      schema: {
        tags: ['customer'],
        summary: 'Reserve tickets and create a PENDING sale (or a confirmed one when a 100% discount makes it free)',
        body: CreateCustomerOrderBody,
        response: {
          201: dataOf(CustomerOrderCreateResultSchema).extend({
            warnings: z
              .array(WarningSchema)
              .optional()
              .meta({
                description:
                  'RETURN_URL_IGNORED when returnUrl is not allowed for this event (contract 4.2: the purchase ' +
                  "proceeds and the buyer returns to the service's own order page)",
              }),
          }),
        },
      },
    },
    async (request, reply) => {
      const customer = currentCustomer(request);
      const body = request.body;
      const item = body.items[0]!;
      if (!isUuid(body.eventDateId) || !isUuid(item.ticketTypeId))
        throw new AppError('NOT_FOUND', 'Event date or ticket type not found');
      const saleKey: SaleKey = { origin: 'customer-order', idempotencyKey: request.idempotencyKey };
      // A retry whose first attempt made the sale (its answer lost) gets that sale, before the purchase-session
      // checks, which that sale has since consumed.
      const earlier = await saleMadeWithKey(services, saleKey, {
        buyerId: customer.buyerId,
        buyerEmail: customer.email,
        eventDateId: body.eventDateId,
      });
      if (earlier) return reply.status(201).send({ data: toCreateResult(earlier) });
      const date = await orderableDate(request.em, body.eventDateId);
      const enterprise = await assertCustomerMayBuyIn(request, customer, date.workspace, 'Event date');
      const returnUrl = orderReturnUrl(body.returnUrl, enterprise, serviceReturnUrlHosts, date.workspace);
      if (!returnUrl) {
        request.log.info({ returnUrlHost: hostForLog(body.returnUrl) }, 'returnUrl not allowed; ignored');
        // Ignored as the contract says, but never silently: the integrator learns its allowlist does not cover it.
        request.warnings.push({
          code: 'RETURN_URL_IGNORED',
          message:
            "returnUrl is not on the allowlist for this event's workspace; it was ignored and the buyer returns to " +
            "the service's own order page",
          field: 'body.returnUrl',
        });
      }
      const seated = Boolean(item.seats?.length);
      const claim = await claimSessionForOrder(services, request.em, {
        workspaceId: date.workspace,
        buyerId: customer.buyerId,
        eventDateId: date.id,
        presentedSessionId: presentedPurchaseSession(request.headers),
        seated,
        holdToken: body.holdToken ?? null,
      });
      let outcome: SessionOrderOutcome = { ordered: false };
      let sale: Awaited<ReturnType<typeof reserveThroughCheckout>>;
      try {
        const turnOrder = {
          date,
          queueToken: presentedQueueToken(request.headers),
          saleId: saleKey.idempotencyKey ? saleIdFor(saleKey) : null,
          units: item.quantity,
        };
        sale = await reserveWithTurn(request, services, turnOrder, (queueTurnAdmitted) =>
          reserveThroughCheckout(
            services,
            {
              origin: 'CUSTOMER',
              channel: 'WEB',
              pinnedWorkspaceId: customer.pinnedWorkspaceId,
              eventDateId: body.eventDateId,
              ticketTypeId: item.ticketTypeId,
              quantity: item.quantity,
              seats: item.seats ?? null,
              holdToken: body.holdToken ?? null,
              discountCode: body.discountCode ?? null,
              buyerId: customer.buyerId,
              buyerEmail: customer.email,
              buyer: {
                name: body.buyer.name,
                phone: body.buyer.phone,
                idType: body.buyer.idType,
                idNumber: body.buyer.idNumber,
                nitDigit: body.buyer.nitDigit ?? null,
              },
              returnUrl,
              confirmImmediately: false,
              complimentary: false,
              queueTurnAdmitted,
            },
            saleKey,
          ),
        );
        // Seated or not, the session that created the order stays valid for its payment (contract 4.3); only a
        // seated order takes the session's hold token.
        outcome = { ordered: true, holdTokenUsed: seated, orderExpiresAtMs: sale.expiresAtMs };
      } finally {
        // Before the answer: a buyer reading the session right after the 201 finds it ORDERED, not still ACTIVE.
        await claim?.finish(outcome);
      }
      return reply
        .status(201)
        .send({ data: toCreateResult(sale), ...(request.warnings.length ? { warnings: request.warnings } : {}) });
    },
  );

  app.get(
    '/customer/orders',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: "The buyer's unfinished (PENDING, unexpired) purchase for an event date, or null",
        querystring: z.object({ eventDateId: z.string().min(1).max(100) }),
        response: { 200: dataOf(CustomerOrderSchema.nullable()) },
      },
    },
    async (request) => {
      const sale = await unfinishedOrder(request.em, currentCustomer(request), request.query.eventDateId, new Date());
      if (!sale) return { data: null };
      return { data: toCustomerOrder(sale, await loadItems(request.em, sale.id), []) };
    },
  );

  app.get(
    '/customer/orders/:id',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Authoritative status of a purchase (id or reference), with its tickets once paid',
        params: OrderIdParams,
        response: { 200: dataOf(CustomerOrderSchema) },
      },
    },
    async (request) => {
      const sale = requireOwnedSale(
        await findSaleByIdOrReference(request.em, request.params.id),
        currentCustomer(request),
      );
      askCheckoutToCheckPayment(services, request.log, sale);
      return {
        data: toCustomerOrder(sale, await loadItems(request.em, sale.id), await loadTickets(request.em, sale.id)),
      };
    },
  );

  app.post(
    '/customer/orders/:id/payment',
    {
      config: { ...customerAccess(), neverShed: true },
      schema: {
        tags: ['customer'],
        summary: 'Open payment: returns the gateway A or gateway B configuration (idempotent)',
        params: OrderIdParams,
        response: { 200: dataOf(z.union([GatewayAConfigSchema, GatewayBConfigSchema])) },
      },
    },
    async (request) => {
      const sale = await payableSale(request, request.params.id, 'paymentOpen');
      return { data: await openPayment(services, request.log, request.em, sale) };
    },
  );

  app.post(
    '/customer/orders/:id/payment/card',
    {
      config: { ...customerAccess(), neverShed: true },
      schema: {
        tags: ['customer'],
        summary: 'Charge a gateway A card token; answers with the payment outcome and the resulting sale status',
        params: OrderIdParams,
        body: z.object({
          token: z.string().min(8).max(200).meta({ description: 'Card token from the gateway A payment brick' }),
          paymentMethodId: z.string().max(40).optional(),
          installments: z.number().int().min(1).max(36).default(1),
        }),
        response: {
          200: dataOf(
            z
              .object({
                paymentId: z.string(),
                status: z.string(),
                statusDetail: z.string().nullable(),
                declineCode: z.string().nullable(),
                saleStatus: z.string(),
              })
              .meta({ id: 'CardChargeResult' }),
          ),
        },
      },
    },
    async (request) => {
      const owned = await ownSale(request, request.params.id, 'paymentCard');
      // The same token sent again after its charge confirmed the sale (a retry after the 503) answers that charge.
      const result =
        (await repeatedCardCharge(request.em, owned, request.body.token)) ??
        (await chargeCard(services, request.log, await payableSale(request, request.params.id, 'paymentCard', owned), {
          cardToken: request.body.token,
          paymentMethodId: request.body.paymentMethodId ?? null,
          installments: request.body.installments,
        }));
      return {
        data: {
          paymentId: result.paymentId,
          status: result.paymentStatus,
          statusDetail: result.statusDetail,
          declineCode: result.declineCode,
          saleStatus: result.saleStatus,
        },
      };
    },
  );

  app.post(
    '/customer/orders/:id/payment/pse',
    {
      config: { ...customerAccess(), neverShed: true },
      schema: {
        tags: ['customer'],
        summary: 'PSE bank transfer: returns the gateway A address to redirect the browser to',
        params: OrderIdParams,
        response: { 200: dataOf(z.object({ redirectUrl: z.string() }).meta({ id: 'PsePaymentResult' })) },
      },
    },
    async (request) => {
      const sale = await payableSale(request, request.params.id, 'paymentOpen');
      return { data: { redirectUrl: await openPse(services, request.log, sale) } };
    },
  );

  app.post(
    '/customer/orders/:id/release',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Release a reservation the buyer will not pay for; the stock returns at once',
        params: OrderIdParams,
        response: { 200: dataOf(z.object({ id: z.string(), reference: z.string(), status: z.string() })) },
      },
    },
    async (request) => {
      const sale = requireOwnedSale(
        await findSaleByIdOrReference(request.em, request.params.id),
        currentCustomer(request),
      );
      const status = await releaseOrder(services, request.log, sale);
      return { data: { id: sale.id, reference: sale.reference, status } };
    },
  );

  // The browser lands here after paying at the gateway; it goes on to the shop's page, which must then ask
  // GET /customer/orders/{id} for the real status (never infer it from this redirect).
  app.get(
    '/customer/orders/:id/payment/return',
    { config: publicAccess(), schema: { hide: true, params: OrderIdParams } },
    async (request, reply) => {
      const target = await paymentReturnTarget(request.em, request.params.id, services.env.PUBLIC_ORIGIN);
      return reply.redirect(target, 302);
    },
  );
};
