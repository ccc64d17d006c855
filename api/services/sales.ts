/**
 * Rules of the organizer's sales: the sale list (GET /sales, and the CLI's `sales list` and `sales export` that page
 * through it) and what its filters may match per role, one sale of the workspace, its payment attempts, and a sale
 * confirmed without a gateway (complimentary or box office). Routes keep the HTTP side.
 */
import { type EntityManager, type FilterQuery, raw } from '@mikro-orm/postgresql';
import { AppError } from '../../domain/errors.js';
import type { Role } from '../../domain/roles.js';
import type { SaleStatus } from '../../domain/sale-state.js';
import { isUuid } from '../../entities/ids.js';
import { PaymentAttempt, Sale } from '../../entities/index.js';
import type { IPaymentAttempt } from '../../entities/payment-attempt.js';
import type { ISale, SALE_CHANNELS } from '../../entities/sale.js';
import type { ReservedSale } from '../../workflows/definitions.js';
import { reserveThroughCheckout } from '../http/checkout.js';
import { canSeeBuyerContact } from '../http/sale-views.js';
import { likeContains } from '../http/text.js';
import type { ApiServices } from '../services.js';

/** Stands in for an event or date filter that is not an id: it matches nothing, as an unknown id would. */
const NO_ID = '00000000-0000-0000-0000-000000000000';

export interface SaleFilters {
  status?: SaleStatus | undefined;
  channel?: (typeof SALE_CHANNELS)[number] | undefined;
  event?: string | undefined;
  eventDate?: string | undefined;
  /** Part of a reference, any case. */
  reference?: string | undefined;
  /** Part of the buyer's name, or of their email for roles that may see it. */
  buyer?: string | undefined;
  /** ISO date-times bounding createdAt, both inclusive. */
  from?: string | undefined;
  to?: string | undefined;
}

/** The sale list's filters as a query; matching on email below STAFF would let a VIEWER probe the addresses it hides. */
export function saleFilter(filters: SaleFilters, role: Role): FilterQuery<ISale> {
  const q = filters;
  const where: Record<string, unknown> = {};
  if (q.status) where.status = q.status;
  if (q.channel) where.channel = q.channel;
  if (q.event) where.event = isUuid(q.event) ? q.event : NO_ID;
  if (q.eventDate) where.eventDate = isUuid(q.eventDate) ? q.eventDate : NO_ID;
  if (q.reference) where.reference = { $ilike: likeContains(q.reference) };
  if (q.buyer) {
    const pattern = likeContains(q.buyer);
    where.$or = canSeeBuyerContact(role)
      ? [{ buyerName: { $ilike: pattern } }, { buyerEmail: { $ilike: pattern } }]
      : [{ buyerName: { $ilike: pattern } }];
  }
  if (q.from || q.to) {
    where.createdAt = { ...(q.from ? { $gte: new Date(q.from) } : {}), ...(q.to ? { $lte: new Date(q.to) } : {}) };
  }
  return where as FilterQuery<ISale>;
}

/** The sales of the workspace the filters match, newest first (see listSalesNewestFirst). */
export const listSales = (
  em: EntityManager,
  filters: SaleFilters,
  role: Role,
  after: string | undefined,
  limit: number,
): Promise<ISale[]> => listSalesNewestFirst(em, saleFilter(filters, role), after, limit);

/** A sale of the workspace; 404 for anything else. */
export async function findSale(em: EntityManager, id: string): Promise<ISale> {
  const sale = isUuid(id) ? await em.findOne(Sale, { id }) : null;
  if (!sale) throw new AppError('NOT_FOUND', 'Sale not found');
  return sale;
}

/** The sale as committed now, outside the request's identity map (after a workflow changed it). */
export const reloadSale = (em: EntityManager, id: string): Promise<ISale> =>
  em.fork().findOneOrFail(Sale, { id }, { filters: { tenant: false } });

/** Opens, charges, gateway notifications and refunds of a sale, oldest first. */
export const paymentAttemptsOf = (em: EntityManager, saleId: string): Promise<IPaymentAttempt[]> =>
  em.find(PaymentAttempt, { sale: saleId }, { orderBy: { createdAt: 'asc', id: 'asc' } });

export interface ConfirmedSaleOrder {
  eventDateId: string;
  ticketTypeId: string;
  quantity: number;
  channel: 'ADMIN' | 'POS';
  /** True: free tickets (100 % discount); false: paid offline at the box office. */
  complimentary: boolean;
  buyer: { name: string; email: string; phone?: string | undefined };
}

/** A sale of the workspace confirmed at once through its checkout, without a gateway. */
export async function createConfirmedSale(
  services: ApiServices,
  workspaceId: string,
  order: ConfirmedSaleOrder,
): Promise<ReservedSale> {
  if (!isUuid(order.eventDateId) || !isUuid(order.ticketTypeId))
    throw new AppError('NOT_FOUND', 'Event date or ticket type not found');
  return reserveThroughCheckout(services, {
    origin: 'ORGANIZER',
    channel: order.channel,
    pinnedWorkspaceId: workspaceId,
    eventDateId: order.eventDateId,
    ticketTypeId: order.ticketTypeId,
    quantity: order.quantity,
    seats: null,
    holdToken: null,
    discountCode: null,
    buyerId: null,
    buyerEmail: order.buyer.email.toLowerCase(),
    buyer: { name: order.buyer.name, phone: order.buyer.phone ?? null, idType: null, idNumber: null, nitDigit: null },
    returnUrl: null,
    confirmImmediately: true,
    complimentary: order.complimentary,
  });
}

/**
 * Newest first means by creation time. Ids are not a clock for every sale: a sale made with an Idempotency-Key has
 * an id derived from the key (docs/api-guide.md), so ordering by id alone put such sales above newer ones. The order
 * is (createdAt, id) descending, the id only breaking ties, and the cursor (the last row's id) resumes after that
 * row's place in the same order.
 */
export async function listSalesNewestFirst(
  em: EntityManager,
  where: FilterQuery<ISale>,
  after: string | undefined,
  limit: number,
): Promise<ISale[]> {
  let position: FilterQuery<ISale> = {};
  if (after) {
    const last = await em.findOne(Sale, { id: after }, { fields: ['id'] });
    if (!last) {
      throw new AppError('VALIDATION_FAILED', 'cursor is not a cursor returned by this list', {
        details: { fields: [{ field: 'cursor', message: 'invalid cursor' }] },
      });
    }
    // Compared in the database: created_at has microseconds, a JS Date only milliseconds, so a row made in the same
    // millisecond as the cursor's would be skipped if the cursor's time came back through JavaScript.
    const cursorTime = () => raw('(select c.created_at from sales c where c.id = ?)', [last.id]);
    position = {
      $or: [{ createdAt: { $lt: cursorTime() } }, { createdAt: cursorTime(), id: { $lt: last.id } }],
    };
  }
  return em.find(Sale, { $and: [where, position] } as FilterQuery<ISale>, {
    orderBy: { createdAt: 'desc', id: 'desc' },
    limit,
  });
}
