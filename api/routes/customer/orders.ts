import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { hostForLog, parseHostList, type ReturnUrlAuthority, returnUrlForOrder } from '../../../domain/return-url.js';
import { isUuid } from '../../../entities/ids.js';
import { EventDate, Sale } from '../../../entities/index.js';
import type { ISale } from '../../../entities/sale.js';
import {
  chargeCardUpdate,
  checkoutWorkflowId,
  openPaymentUpdate,
  openPseUpdate,
  type PaymentUnavailable,
  type ReservedSale,
  releaseUpdate,
} from '../../../workflows/definitions.js';
import { openGatewayACardPayment } from '../../http/card-payment-open.js';
import { reserveThroughCheckout, type SaleKey, saleMadeWithKey } from '../../http/checkout.js';
import { assertCustomerMayBuyIn } from '../../http/customer-scope.js';
import { dataOf } from '../../http/envelope.js';
import { enforceRateLimit, requireRedis } from '../../http/limits.js';
import { minorUnits } from '../../http/money.js';
import { askCheckoutToCheckPayment } from '../../http/payment-check.js';
import { hasAdmittedTurn } from '../../http/queue.js';
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
import { refusalError } from '../../http/workflow-refusals.js';
import { currentCustomer } from '../../plugins/customer-auth.js';
import type { ApiServices } from '../../services.js';
import {
  checkPurchaseSessionHeader,
  claimPurchaseSession,
  presentedPurchaseSession,
  requiresPurchaseSession,
  type SessionClaim,
  type SessionOrderOutcome,
} from './purchase-sessions.js';

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

const paymentUnavailable = (result: PaymentUnavailable) =>
  new AppError('PAYMENT_UNAVAILABLE', result.message, { details: { reason: result.reason } });

export const customerOrderRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  // Parsed once, so a malformed RETURN_URL_ALLOWED_HOSTS stops the start instead of silently dropping return links.
  const serviceReturnUrlHosts = parseHostList(services.env.RETURN_URL_ALLOWED_HOSTS);

  /** The payment POSTs: the sale must be this buyer's and still payable; everything else is the workflow's call. */
  async function payableSale(
    request: Parameters<typeof currentCustomer>[0],
    id: string,
    limit: 'paymentOpen' | 'paymentCard',
  ): Promise<ISale> {
    const customer = currentCustomer(request);
    const sale = requireOwnedSale(await findSaleByIdOrReference(request.em, id), customer);
    await enforceRateLimit(request, limit, customer.buyerId);
    await checkPurchaseSessionHeader(services, request.em, {
      headers: request.headers,
      workspaceId: sale.workspace,
      buyerId: customer.buyerId,
      eventDateId: sale.eventDate,
    });
    if (sale.status !== 'PENDING') {
      throw new AppError('PAYMENT_UNAVAILABLE', `The sale is ${sale.status}, not pending`, {
        details: { reason: 'not_pending' },
      });
    }
    if (!sale.expiresAt || sale.expiresAt.getTime() <= Date.now()) {
      throw new AppError('PAYMENT_UNAVAILABLE', 'The reservation has expired; start the purchase again', {
        details: { reason: 'reservation_expired' },
      });
    }
    return sale;
  }

  /** Runs an update on the sale's checkout; a closed execution means the sale cannot take payments any more. */
  async function updateCheckout<T>(
    saleId: string,
    run: (handle: ReturnType<typeof services.temporal.workflow.getHandle>) => Promise<T>,
  ): Promise<T> {
    try {
      return await run(services.temporal.workflow.getHandle(checkoutWorkflowId(saleId)));
    } catch (error) {
      const refused = refusalError(error);
      if (refused) throw refused;
      if (error instanceof WorkflowNotFoundError) {
        throw new AppError('PAYMENT_UNAVAILABLE', 'The sale is no longer pending', {
          details: { reason: 'not_pending' },
        });
      }
      if (error instanceof WorkflowUpdateFailedError) {
        throw new AppError('PROVIDER_UNAVAILABLE', 'The payment provider did not answer; retry', {
          details: { cause: error.cause?.message ?? null },
        });
      }
      throw error;
    }
  }

  app.post(
    '/customer/orders',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Reserve tickets and create a PENDING sale (or a confirmed one when a 100% discount makes it free)',
        body: CreateCustomerOrderBody,
        response: { 201: dataOf(CustomerOrderCreateResultSchema) },
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
      const date = await request.em.findOne(EventDate, { id: body.eventDateId }, { filters: { tenant: false } });
      if (!date) throw new AppError('NOT_FOUND', 'Event date not found');
      const enterprise = await assertCustomerMayBuyIn(request, customer, date.workspace, 'Event date');
      const returnUrlAuthority: ReturnUrlAuthority = enterprise
        ? {
            kind: 'enterprise',
            allowlist: enterprise.returnUrlAllowlist,
            servedWorkspaceIds: enterprise.servedWorkspaceIds,
          }
        : { kind: 'service', allowlist: serviceReturnUrlHosts };
      const returnUrl = returnUrlForOrder(body.returnUrl, returnUrlAuthority, date.workspace);
      if (!returnUrl) request.log.info({ returnUrlHost: hostForLog(body.returnUrl) }, 'returnUrl not allowed; ignored');
      // Purchase session (5.7): required when the workspace says so, validated whenever present, and the owner of
      // the hold token an order with seats must carry.
      const headerSession = presentedPurchaseSession(request.headers);
      if (!headerSession && (await requiresPurchaseSession(request.em, date.workspace))) {
        throw new AppError('PURCHASE_SESSION_REQUIRED', 'This event needs the X-Purchase-Session header', {
          details: { reason: 'purchase_session_required' },
        });
      }
      const seats = item.seats?.length ? item.seats : null;
      let claim: SessionClaim | null = null;
      if (headerSession || seats) {
        claim = await claimPurchaseSession(services, {
          workspaceId: date.workspace,
          buyerId: customer.buyerId,
          sessionId: headerSession,
          eventDateId: date.id,
        });
      }
      if (seats && (!claim || claim.session.holdToken !== body.holdToken)) {
        await claim?.finish({ ordered: false });
        throw new AppError(
          'HOLD_TOKEN_MISMATCH',
          "holdToken is not the hold token of the buyer's live purchase session",
          {
            details: { reason: 'hold_token_mismatch' },
          },
        );
      }
      const queueTurnAdmitted = date.virtualQueue
        ? await requireRedis('The waiting room', () =>
            hasAdmittedTurn(services.redis, date.id, presentedQueueToken(request.headers)),
          )
        : false;
      let outcome: SessionOrderOutcome = { ordered: false };
      let sale: Awaited<ReturnType<typeof reserveThroughCheckout>>;
      try {
        sale = await reserveThroughCheckout(
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
        );
        // Seated or not, the session that created the order stays valid for its payment (contract 4.3); only a
        // seated order takes the session's hold token.
        outcome = { ordered: true, holdTokenUsed: seats !== null, orderExpiresAtMs: sale.expiresAtMs };
      } finally {
        // Before the answer: a buyer reading the session right after the 201 finds it ORDERED, not still ACTIVE.
        await claim?.finish(outcome);
      }
      return reply.status(201).send({ data: toCreateResult(sale) });
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
      const customer = currentCustomer(request);
      if (!isUuid(request.query.eventDateId)) return { data: null };
      const sale = await request.em.findOne(
        Sale,
        {
          buyer: customer.buyerId,
          eventDate: request.query.eventDateId,
          status: 'PENDING',
          expiresAt: { $gt: new Date() },
          ...(customer.pinnedWorkspaceId ? { workspace: customer.pinnedWorkspaceId } : {}),
        },
        { filters: { tenant: false }, orderBy: { createdAt: 'desc' } },
      );
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
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Open payment: returns the gateway A or gateway B configuration (idempotent)',
        params: OrderIdParams,
        response: { 200: dataOf(z.union([GatewayAConfigSchema, GatewayBConfigSchema])) },
      },
    },
    async (request) => {
      const sale = await payableSale(request, request.params.id, 'paymentOpen');
      const cardForm = await openGatewayACardPayment(request.em, sale, services.env.GATEWAY_A_PUBLIC_KEY);
      if (cardForm) return { data: cardForm };
      const result = await updateCheckout(sale.id, (handle) => handle.executeUpdate(openPaymentUpdate));
      if (!result.ok) throw paymentUnavailable(result);
      const { gateway: _gateway, ...configuration } = result.configuration;
      return { data: configuration };
    },
  );

  app.post(
    '/customer/orders/:id/payment/card',
    {
      config: customerAccess(),
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
      const sale = await payableSale(request, request.params.id, 'paymentCard');
      const result = await updateCheckout(sale.id, (handle) =>
        handle.executeUpdate(chargeCardUpdate, {
          args: [
            {
              cardToken: request.body.token,
              paymentMethodId: request.body.paymentMethodId ?? null,
              installments: request.body.installments,
            },
          ],
        }),
      );
      if (!result.ok) throw paymentUnavailable(result);
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
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'PSE bank transfer: returns the gateway A address to redirect the browser to',
        params: OrderIdParams,
        response: { 200: dataOf(z.object({ redirectUrl: z.string() }).meta({ id: 'PsePaymentResult' })) },
      },
    },
    async (request) => {
      const sale = await payableSale(request, request.params.id, 'paymentOpen');
      const result = await updateCheckout(sale.id, (handle) =>
        handle.executeUpdate(openPseUpdate, { args: [{ bankCode: null }] }),
      );
      if (!result.ok) throw paymentUnavailable(result);
      return { data: { redirectUrl: result.redirectUrl } };
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
      if (sale.status !== 'PENDING') {
        throw new AppError('INVALID_STATE', `The sale is ${sale.status}; only a pending reservation can be released`);
      }
      const result = await updateCheckout(sale.id, (handle) =>
        handle.executeUpdate(releaseUpdate, { args: [{ reason: 'buyer_release', acknowledgeOpenPayment: false }] }),
      );
      if (!result.ok) throw new AppError('INVALID_STATE', result.message);
      return { data: { id: sale.id, reference: sale.reference, status: result.saleStatus } };
    },
  );

  // The browser lands here after paying at the gateway; it goes on to the shop's page, which must then ask
  // GET /customer/orders/{id} for the real status (never infer it from this redirect).
  app.get(
    '/customer/orders/:id/payment/return',
    { config: publicAccess(), schema: { hide: true, params: OrderIdParams } },
    async (request, reply) => {
      const sale = isUuid(request.params.id)
        ? await request.em.findOne(Sale, { id: request.params.id }, { filters: { tenant: false } })
        : null;
      if (!sale) throw new AppError('NOT_FOUND', 'Order not found');
      const fallback = `${services.env.PUBLIC_ORIGIN.replace(/\/$/, '')}/api/public/orders/${sale.id}`;
      const target = new URL(sale.returnUrl ?? fallback);
      target.searchParams.set('reference', sale.reference);
      return reply.redirect(target.toString(), 302);
    },
  );
};
