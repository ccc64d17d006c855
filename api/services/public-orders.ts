/**
 * Rules of storefront orders (contract 4.18): which ticket types one order may hold, the gateway it pays through,
 * opening its payment (and giving the stock back when none opens), and the order status page
 * (GET /api/public/orders/{id}), the address a gateway sends a buyer back to when there is no shop page to return to.
 * Routes keep the HTTP side (schemas, the buyer session, the waiting room's turn).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { Env } from '../../config/env.js';
import { AppError } from '../../domain/errors.js';
import { type PaymentGateway, saleGateway } from '../../domain/gateways.js';
import { ANY_TENANT } from '../../entities/common.js';
import { isUuid } from '../../entities/ids.js';
import { Event, EventDate, PaymentAttempt, Sale, TicketType, Workspace } from '../../entities/index.js';
import type { ISale } from '../../entities/sale.js';
import type { ITicketType } from '../../entities/ticket-type.js';
import {
  checkoutWorkflowId,
  openPaymentUpdate,
  openPseUpdate,
  type ReservedSale,
  releaseUpdate,
} from '../../workflows/definitions.js';
import type { ApiServices } from '../services.js';

/** The hosted page where a gateway B order is paid (api/routes/public/order-payment-page.ts). */
export const orderPaymentPageUrl = (env: Pick<Env, 'PUBLIC_ORIGIN'>, saleId: string): string =>
  new URL(`/api/public/orders/${saleId}/pay`, env.PUBLIC_ORIGIN).toString();

/** The gateway the order's event charges through (domain/gateways.ts); the checkout checks it again on open. */
export async function orderGateway(
  em: EntityManager,
  type: Pick<ITicketType, 'event' | 'workspace'>,
): Promise<PaymentGateway> {
  const event = await em.findOne(Event, { id: type.event }, { filters: { tenant: false } });
  const workspace = await em.findOne(Workspace, { id: type.workspace });
  return event && workspace ? saleGateway(event, workspace) : 'GATEWAY_A';
}

/** Whether the order's date sells through a waiting room (a turn is needed before reserving). */
export async function dateHasVirtualQueue(em: EntityManager, eventDateId: string): Promise<boolean> {
  const date = await em.findOne(EventDate, { id: eventDateId }, { filters: { tenant: false } });
  return date?.virtualQueue ?? false;
}

/**
 * Opens the order's payment through its checkout, so the checkout knows the attempt (and asks the gateway about it
 * until the sale settles), and answers where the buyer pays: gateway A's checkout page (card or PSE), or for a
 * gateway B event our hosted page with gateway B's button.
 */
export async function openOrderPayment(
  services: Pick<ApiServices, 'temporal' | 'env'>,
  sale: Pick<ReservedSale, 'saleId'>,
  gateway: PaymentGateway,
): Promise<string> {
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
export async function orderedTypes(
  em: EntityManager,
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

export interface StatusPageOrder {
  sale: ISale;
  /**
   * Whether the page lists the order's tickets: only for storefront orders, whose buyer has no session and reads
   * them here. A customer order's tickets go to its buyer's session (GET /customer/orders/{id}) and email; the
   * address of this page travels through the bank's redirect, so it answers such an order's status only.
   */
  showTickets: boolean;
}

/**
 * The order the status page answers for: a storefront order, or a customer order (the return endpoint sends its
 * buyer here after the bank when the order's returnUrl was refused, so that address must not be a 404).
 * Organizer sales are never shown.
 */
export async function orderForStatusPage(em: EntityManager, id: string): Promise<StatusPageOrder | null> {
  if (!isUuid(id)) return null;
  const sale = await em.findOne(Sale, { id }, { filters: { tenant: false } });
  if (!sale || (sale.origin !== 'PUBLIC' && sale.origin !== 'CUSTOMER')) return null;
  return { sale, showTickets: sale.origin === 'PUBLIC' };
}

/**
 * The storefront order a hosted payment page (GET /orders/{id}/pay) is for: 404 for anything but a storefront order,
 * and for one whose checkout never opened a gateway B payment (only such an order has a button to show).
 */
export async function hostedPaymentOrder(em: EntityManager, id: string): Promise<ISale> {
  const sale = isUuid(id) ? await em.findOne(Sale, { id }, ANY_TENANT) : null;
  if (sale?.origin !== 'PUBLIC') throw new AppError('NOT_FOUND', 'Order not found');
  const opened = await em.count(PaymentAttempt, { sale: sale.id, gateway: 'GATEWAY_B', kind: 'OPEN' }, ANY_TENANT);
  if (opened === 0) throw new AppError('NOT_FOUND', 'This order has no hosted payment page; it pays at gateway A');
  return sale;
}

/** The name of the order's event, deleted or not; null when it cannot be read. */
export async function orderEventName(em: EntityManager, sale: Pick<ISale, 'event'>): Promise<string | null> {
  const event = await em.findOne(Event, { id: sale.event }, { filters: { tenant: false, notDeleted: false } });
  return event?.name ?? null;
}
