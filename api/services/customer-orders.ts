/**
 * A buyer's own purchases (contract 4.2–4.3, /customer/orders): where the bank sends the buyer back, which purchase
 * session and hold token an order must carry, the unfinished purchase of a date, when a sale can still take a
 * payment, and the updates the sale's checkout runs for payments and release. Routes keep the HTTP side (schemas,
 * rate limits, warnings, the waiting room's turn).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { WorkflowHandle } from '@temporalio/client';
import type { FastifyBaseLogger } from 'fastify';
import { cardChargeKey } from '../../domain/card-charge-key.js';
import { AppError } from '../../domain/errors.js';
import { type HostPattern, type ReturnUrlAuthority, returnUrlForOrder } from '../../domain/return-url.js';
import type { EnterpriseScope } from '../../entities/enterprise.js';
import type { IEventDate } from '../../entities/event-date.js';
import { isUuid } from '../../entities/ids.js';
import { EventDate, PaymentAttempt, Sale } from '../../entities/index.js';
import type { ISale } from '../../entities/sale.js';
import {
  type CardChargeRequest,
  chargeCardUpdate,
  openPaymentUpdate,
  openPseUpdate,
  type PaymentUnavailable,
  releaseUpdate,
} from '../../workflows/definitions.js';
import { assertGatewayAChargesSale, openGatewayACardPayment } from '../http/card-payment-open.js';
import { askCheckoutToCheckPayment } from '../http/payment-check.js';
import type { ApiServices } from '../services.js';
import { runCheckoutUpdate } from './checkout-updates.js';
import {
  checkPaymentSession,
  claimPurchaseSession,
  requiresPurchaseSession,
  type SessionClaim,
} from './purchase-sessions.js';

/** The buyer an order acts for, as the customer session names them. */
export interface OrderingBuyer {
  buyerId: string;
  /** Set when an organizer key pinned the session to its workspace: nothing outside it is visible. */
  pinnedWorkspaceId: string | null;
}

export async function orderableDate(em: EntityManager, eventDateId: string): Promise<IEventDate> {
  const date = await em.findOne(EventDate, { id: eventDateId }, { filters: { tenant: false } });
  if (!date) throw new AppError('NOT_FOUND', 'Event date not found');
  return date;
}

/**
 * Where the bank sends the buyer back: the order's returnUrl when its authority allows it for the event's workspace
 * (an enterprise's allowlist and served workspaces, else the service's hosts), else null: the order proceeds and the
 * buyer returns to the service's own order page (contract 4.2).
 */
export function orderReturnUrl(
  requested: string,
  enterprise: EnterpriseScope | null,
  serviceHosts: readonly HostPattern[],
  eventWorkspaceId: string,
): string | null {
  const authority: ReturnUrlAuthority = enterprise
    ? {
        kind: 'enterprise',
        allowlist: enterprise.returnUrlAllowlist,
        servedWorkspaceIds: enterprise.servedWorkspaceIds,
      }
    : { kind: 'service', allowlist: serviceHosts };
  return returnUrlForOrder(requested, authority, eventWorkspaceId);
}

/**
 * The purchase session an order runs under (contract 5.7): required when the workspace says so, validated whenever
 * one is presented, and the owner of the hold token an order with seats must carry. The claim is the caller's to
 * finish once the order is made or refused; null when the order needs none.
 */
export async function claimSessionForOrder(
  services: ApiServices,
  em: EntityManager,
  order: {
    workspaceId: string;
    buyerId: string;
    eventDateId: string;
    presentedSessionId: string | null;
    seated: boolean;
    holdToken: string | null;
  },
): Promise<SessionClaim | null> {
  if (!order.presentedSessionId && (await requiresPurchaseSession(em, order.workspaceId))) {
    throw new AppError('PURCHASE_SESSION_REQUIRED', 'This event needs the X-Purchase-Session header', {
      details: { reason: 'purchase_session_required' },
    });
  }
  if (!order.presentedSessionId && !order.seated) return null;
  const claim = await claimPurchaseSession(services, {
    workspaceId: order.workspaceId,
    buyerId: order.buyerId,
    sessionId: order.presentedSessionId,
    eventDateId: order.eventDateId,
  });
  if (order.seated && (!claim || claim.session.holdToken !== order.holdToken)) {
    await claim?.finish({ ordered: false });
    throw new AppError('HOLD_TOKEN_MISMATCH', "holdToken is not the hold token of the buyer's live purchase session", {
      details: { reason: 'hold_token_mismatch' },
    });
  }
  return claim;
}

/** The buyer's unfinished purchase for a date: their newest PENDING sale whose reservation has not expired. */
export async function unfinishedOrder(
  em: EntityManager,
  buyer: OrderingBuyer,
  eventDateId: string,
  now: Date,
): Promise<ISale | null> {
  if (!isUuid(eventDateId)) return null;
  return em.findOne(
    Sale,
    {
      buyer: buyer.buyerId,
      eventDate: eventDateId,
      status: 'PENDING',
      expiresAt: { $gt: now },
      ...(buyer.pinnedWorkspaceId ? { workspace: buyer.pinnedWorkspaceId } : {}),
    },
    { filters: { tenant: false }, orderBy: { createdAt: 'desc' } },
  );
}

/**
 * A payment may be opened or charged only on a sale that is still PENDING and unexpired, under the buyer's purchase
 * session when the workspace asks for one, and on a rail that charges the sale's currency (409 PAYMENT_UNAVAILABLE
 * otherwise); everything else is the checkout's call.
 */
export async function assertPayable(
  services: ApiServices,
  em: EntityManager,
  sale: ISale,
  buyer: { buyerId: string; presentedSessionId: string | null },
  now: number,
): Promise<void> {
  await checkPaymentSession(services, em, {
    sessionId: buyer.presentedSessionId,
    workspaceId: sale.workspace,
    buyerId: buyer.buyerId,
    eventDateId: sale.eventDate,
  });
  if (sale.status !== 'PENDING') {
    throw new AppError('PAYMENT_UNAVAILABLE', `The sale is ${sale.status}, not pending`, {
      details: { reason: 'not_pending' },
    });
  }
  if (!sale.expiresAt || sale.expiresAt.getTime() <= now) {
    throw new AppError('PAYMENT_UNAVAILABLE', 'The reservation has expired; start the purchase again', {
      details: { reason: 'reservation_expired' },
    });
  }
  await assertGatewayAChargesSale(em, sale, services.env.GATEWAY_A_CURRENCIES);
}

const paymentUnavailable = (result: PaymentUnavailable) =>
  new AppError('PAYMENT_UNAVAILABLE', result.message, { details: { reason: result.reason } });

/**
 * Runs an update on the sale's checkout (api/services/checkout-updates.ts). When it gets no outcome, the checkout is
 * asked to check the gateway now: a card charge may have been made by a workflow task that was lost.
 */
function updateCheckout<T>(
  services: ApiServices,
  log: FastifyBaseLogger,
  sale: ISale,
  run: (handle: WorkflowHandle) => Promise<T>,
): Promise<T> {
  return runCheckoutUpdate(services, sale.id, run, () => askCheckoutToCheckPayment(services, log, sale));
}

/** Gateway A's card form when the sale is paid by card there, else the configuration the checkout opens. */
export async function openPayment(services: ApiServices, log: FastifyBaseLogger, em: EntityManager, sale: ISale) {
  const cardForm = await openGatewayACardPayment(em, sale, services.env.GATEWAY_A_PUBLIC_KEY);
  if (cardForm) return cardForm;
  const result = await updateCheckout(services, log, sale, (handle) => handle.executeUpdate(openPaymentUpdate));
  if (!result.ok) throw paymentUnavailable(result);
  const { gateway: _gateway, ...configuration } = result.configuration;
  return configuration;
}

/** What a card charge request answers: the gateway's payment and the sale's status after it. */
export interface CardChargeAnswer {
  paymentId: string;
  paymentStatus: string;
  statusDetail: string | null;
  declineCode: string | null;
  saleStatus: string;
}

/**
 * The charge this card token already made on a sale that is no longer pending, or null. A front end that got the
 * retryable 503 (the pay update's outcome did not reach the API in time) sends the same token again, as the 503 tells
 * it to; by then the charge may have confirmed the sale, and the answer is that charge, not a refusal. A token that
 * charged nothing here is refused as before: no second charge is ever made on a sale that is not pending.
 */
export async function repeatedCardCharge(
  em: EntityManager,
  sale: ISale,
  cardToken: string,
): Promise<CardChargeAnswer | null> {
  if (sale.status === 'PENDING') return null;
  const charge = await em.findOne(
    PaymentAttempt,
    { sale: sale.id, kind: 'CARD', requestKey: cardChargeKey(sale.id, cardToken), providerPaymentId: { $ne: null } },
    { filters: { tenant: false }, orderBy: { createdAt: 'desc' } },
  );
  if (!charge?.providerPaymentId || !charge.status) return null;
  return {
    paymentId: charge.providerPaymentId,
    paymentStatus: charge.status,
    statusDetail: charge.statusDetail ?? null,
    declineCode: charge.status === 'rejected' ? (charge.statusDetail ?? null) : null,
    saleStatus: sale.status,
  };
}

export async function chargeCard(
  services: ApiServices,
  log: FastifyBaseLogger,
  sale: ISale,
  card: CardChargeRequest,
): Promise<CardChargeAnswer> {
  const result = await updateCheckout(services, log, sale, (handle) =>
    handle.executeUpdate(chargeCardUpdate, { args: [card] }),
  );
  if (!result.ok) throw paymentUnavailable(result);
  return result;
}

/** The gateway A address the browser goes to for a PSE bank transfer. */
export async function openPse(services: ApiServices, log: FastifyBaseLogger, sale: ISale): Promise<string> {
  const result = await updateCheckout(services, log, sale, (handle) =>
    handle.executeUpdate(openPseUpdate, { args: [{ bankCode: null }] }),
  );
  if (!result.ok) throw paymentUnavailable(result);
  return result.redirectUrl;
}

/** Releases a PENDING reservation the buyer will not pay for (409 INVALID_STATE otherwise); answers the new status. */
export async function releaseOrder(
  services: ApiServices,
  log: FastifyBaseLogger,
  sale: ISale,
): Promise<ISale['status']> {
  if (sale.status !== 'PENDING') {
    throw new AppError('INVALID_STATE', `The sale is ${sale.status}; only a pending reservation can be released`);
  }
  const result = await updateCheckout(services, log, sale, (handle) =>
    handle.executeUpdate(releaseUpdate, { args: [{ reason: 'buyer_release', acknowledgeOpenPayment: false }] }),
  );
  if (!result.ok) throw new AppError('INVALID_STATE', result.message);
  return result.saleStatus;
}

/**
 * Where the browser goes after paying at the gateway: the order's returnUrl, else the service's own order page, with
 * the order's reference. The page must then ask for the real status; this redirect never says it.
 */
export async function paymentReturnTarget(em: EntityManager, id: string, publicOrigin: string): Promise<string> {
  const sale = isUuid(id) ? await em.findOne(Sale, { id }, { filters: { tenant: false } }) : null;
  if (!sale) throw new AppError('NOT_FOUND', 'Order not found');
  const fallback = `${publicOrigin.replace(/\/$/, '')}/api/public/orders/${sale.id}`;
  const target = new URL(sale.returnUrl ?? fallback);
  target.searchParams.set('reference', sale.reference);
  return target.toString();
}
