/**
 * What a verified gateway notification does (contract part 6): which sale or membership payment it names, whether it
 * pays through the gateway that sent it, whether the checkout already holds it, and handing it to the execution that
 * settles it. The route keeps the HTTP side (raw body, signatures, re-reading the payment, the acknowledgement).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyBaseLogger } from 'fastify';
import { checkoutStartOptions } from '../../config/worker-versioning.js';
import { isMembershipReference, parseSaleReference } from '../../domain/codes.js';
import { saleGateway } from '../../domain/gateways.js';
import { type GatewayAPaymentRecord, gatewayAVerdict } from '../../domain/payment-verdict.js';
import {
  Event,
  MembershipPayment,
  MembershipSubscription,
  PaymentAttempt,
  Sale,
  Workspace,
} from '../../entities/index.js';
import type { ISale } from '../../entities/sale.js';
import type { GatewayBWebhookEvent } from '../../integrations/gateway-b/client.js';
import type { checkout } from '../../workflows/checkout.js';
import {
  checkoutWorkflowId,
  type PaymentNotification,
  paymentNotificationSignal,
} from '../../workflows/definitions.js';
import type { ApiServices } from '../services.js';
import { notifyMembership } from './memberships.js';

/** Why a notification was acknowledged without being handed on; null when it was handed on. */
export type IgnoredBecause = 'unknown reference' | 'already applied' | 'gateway mismatch' | null;

type Log = Pick<FastifyBaseLogger, 'warn'>;

/** Replay window shared by both gateways: a captured notification stops working after this long. */
const NOTIFICATION_MAX_AGE_MS = 15 * 60 * 1000;
/** Clock skew tolerated for a timestamp ahead of ours; beyond it a signed event is pre-dated for later replay. */
const NOTIFICATION_MAX_SKEW_MS = 5 * 60 * 1000;

/**
 * Gateway B signs the body but not the delivery, so a captured event would be valid forever: its `time` (POSIX
 * nanoseconds, covered by the signature) bounds how long it can be replayed. Nanoseconds exceed double precision;
 * the error that leaves is far below a millisecond, so it does not matter for a minutes-wide window.
 */
export function gatewayBEventIsFresh(timeNs: number, nowMs: number = Date.now()): boolean {
  const emittedMs = timeNs / 1_000_000;
  if (!Number.isFinite(emittedMs)) return false;
  return emittedMs >= nowMs - NOTIFICATION_MAX_AGE_MS && emittedMs <= nowMs + NOTIFICATION_MAX_SKEW_MS;
}

/**
 * The gateway this sale pays through: the one recorded on it when paid, else the one its first payment attempt used,
 * else the one it would be offered now (domain/gateways.ts, the rule payment open applies). The last case keeps a B
 * payment for a B sale whose open was never recorded from being dropped, while a sale that can only ever be offered
 * gateway A still never takes a gateway B event.
 */
async function paymentRailOf(em: EntityManager, sale: ISale): Promise<'GATEWAY_A' | 'GATEWAY_B'> {
  if (sale.paymentProvider) return sale.paymentProvider;
  const [first] = await em.find(
    PaymentAttempt,
    { sale: sale.id },
    { orderBy: { createdAt: 'asc' }, limit: 1, filters: { tenant: false } },
  );
  if (first) return first.gateway;
  const event = await em.findOne(Event, { id: sale.event }, { filters: { tenant: false, notDeleted: false } });
  const workspace = await em.findOne(Workspace, { id: sale.workspace });
  if (!event || !workspace) return 'GATEWAY_A';
  return saleGateway(event, workspace);
}

/**
 * Whether the sale's checkout already has this approved gateway A payment as the gateway's own record: the payment
 * that confirmed the sale, or a card charge whose approved answer the checkout recorded (it judges that answer in the
 * same workflow task, and a retried task judges it again from its history).
 */
async function checkoutHoldsApproval(em: EntityManager, sale: ISale, paymentId: string): Promise<boolean> {
  if (sale.status === 'CONFIRMED' && sale.paymentRef === paymentId) return true;
  const rows = await em.execute<{ one: number }[]>(
    `select 1 as one from payment_attempts
      where sale_id = ? and kind = 'CARD' and provider_payment_id = ? and status = 'approved' limit 1`,
    [sale.id, paymentId],
  );
  return rows.length > 0;
}

/** The sale a gateway's reference names, in any workspace; null for a reference we never issued. */
async function saleOfReference(em: EntityManager, externalReference: string | null | undefined): Promise<ISale | null> {
  const reference = externalReference ? parseSaleReference(externalReference) : null;
  return reference ? await em.findOne(Sale, { reference }, { filters: { tenant: false } }) : null;
}

/**
 * Hands a verified notification to the sale's checkout. If that execution has already finished (a payment far
 * later than the grace period), signal-with-start opens a new one that reads the sale and settles the payment:
 * money that arrives is never dropped.
 */
export async function notifyCheckout(
  services: ApiServices,
  saleId: string,
  notification: PaymentNotification,
): Promise<void> {
  await services.temporal.workflow.signalWithStart<typeof checkout, [PaymentNotification]>('checkout', {
    workflowId: checkoutWorkflowId(saleId),
    taskQueue: services.env.TEMPORAL_TASK_QUEUE,
    args: [
      {
        saleId,
        latePaymentGraceMs: services.env.LATE_PAYMENT_GRACE_MS,
        resumeAfterClose: true,
        ...(await checkoutStartOptions(services.temporal, services.env)),
      },
    ],
    signal: paymentNotificationSignal,
    signalArgs: [notification],
  });
}

/**
 * A membership payment (MB- reference) goes to its buyer's membership execution instead of a checkout; a
 * reference we never issued is acknowledged and ignored, as for sales.
 */
async function notifyMembershipOfPayment(
  services: ApiServices,
  em: EntityManager,
  log: Log,
  paymentId: string,
  reference: string,
  status: string,
): Promise<IgnoredBecause> {
  const row = await em.findOne(MembershipPayment, { reference }, { filters: { tenant: false } });
  const subscription = row
    ? await em.findOne(MembershipSubscription, { id: row.subscription }, { filters: { tenant: false } })
    : null;
  if (!subscription) {
    log.warn({ paymentId }, 'gateway A payment names no membership payment of ours; ignored');
    return 'unknown reference';
  }
  await notifyMembership(
    services,
    { workspaceId: subscription.workspace, buyerId: subscription.buyer },
    {
      providerPaymentId: paymentId,
      reference,
      eventType: `payment.${status}`,
      receivedAtMs: Date.now(),
      dedupeKey: `a:${paymentId}:${status}`,
    },
  );
  return null;
}

/** A gateway A payment, just read back from the gateway, handed to the membership or checkout its reference names. */
export async function deliverGatewayAPayment(
  services: ApiServices,
  em: EntityManager,
  log: Log,
  payment: GatewayAPaymentRecord,
): Promise<IgnoredBecause> {
  if (payment.externalReference && isMembershipReference(payment.externalReference)) {
    return notifyMembershipOfPayment(services, em, log, payment.id, payment.externalReference, payment.status);
  }
  const sale = await saleOfReference(em, payment.externalReference);
  if (!sale) {
    log.warn({ paymentId: payment.id }, 'gateway A payment names no sale of ours; ignored');
    return 'unknown reference';
  }
  if (payment.status === 'approved' && (await checkoutHoldsApproval(em, sale, payment.id))) {
    // Its checkout would judge this and change nothing, so it is not woken (nor a finished one started again).
    return 'already applied';
  }
  await notifyCheckout(services, sale.id, {
    gateway: 'GATEWAY_A',
    providerPaymentId: payment.id,
    eventType: `payment.${payment.status}`,
    receivedAtMs: Date.now(),
    dedupeKey: `a:${payment.id}:${payment.status}`,
    // Just read from the gateway: the checkout judges this instead of reading the payment a second time.
    verdict: gatewayAVerdict(payment, sale),
  });
  return null;
}

/** A fresh, verified gateway B event handed to the checkout of the sale it names, if that sale pays through B. */
export async function deliverGatewayBEvent(
  services: ApiServices,
  em: EntityManager,
  log: Log,
  event: GatewayBWebhookEvent,
): Promise<IgnoredBecause> {
  const sale = await saleOfReference(em, event.reference);
  if (!sale) {
    log.warn({ eventId: event.id }, 'gateway B event names no sale of ours; ignored');
    return 'unknown reference';
  }
  const rail = await paymentRailOf(em, sale);
  if (rail !== 'GATEWAY_B') {
    log.warn(
      { eventId: event.id, saleId: sale.id, rail },
      'gateway B event for a sale that pays through another gateway; ignored',
    );
    return 'gateway mismatch';
  }
  await notifyCheckout(services, sale.id, {
    gateway: 'GATEWAY_B',
    providerPaymentId: event.paymentId,
    eventType: event.type,
    receivedAtMs: Date.now(),
    dedupeKey: `b:${event.id}`,
  });
  return null;
}
