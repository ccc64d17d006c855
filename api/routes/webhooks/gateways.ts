import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { isMembershipReference, parseSaleReference } from '../../../domain/codes.js';
import { AppError } from '../../../domain/errors.js';
import { saleGateway } from '../../../domain/gateways.js';
import { gatewayAVerdict } from '../../../domain/payment-verdict.js';
import {
  Event,
  MembershipPayment,
  MembershipSubscription,
  PaymentAttempt,
  Sale,
  Workspace,
} from '../../../entities/index.js';
import type { ISale } from '../../../entities/sale.js';
import { isProviderError } from '../../../integrations/errors.js';
import { verifyGatewayANotification } from '../../../integrations/gateway-a/signature.js';
import { parseGatewayBWebhook } from '../../../integrations/gateway-b/client.js';
import { verifyGatewayBWebhook } from '../../../integrations/gateway-b/signature.js';
import type { checkout } from '../../../workflows/checkout.js';
import {
  CHECKOUTS_STARTED_NOW,
  checkoutWorkflowId,
  type PaymentNotification,
  paymentNotificationSignal,
} from '../../../workflows/definitions.js';
import { publicAccess } from '../../http/route-access.js';
import type { ApiServices } from '../../services.js';
import { notifyMembership } from '../customer/memberships.js';

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: string;
  }
}

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
async function paymentRailOf(em: FastifyRequest['em'], sale: ISale): Promise<'GATEWAY_A' | 'GATEWAY_B'> {
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
async function checkoutHoldsApproval(em: FastifyRequest['em'], sale: ISale, paymentId: string): Promise<boolean> {
  if (sale.status === 'CONFIRMED' && sale.paymentRef === paymentId) return true;
  const rows = await em.execute<{ one: number }[]>(
    `select 1 as one from payment_attempts
      where sale_id = ? and kind = 'CARD' and provider_payment_id = ? and status = 'approved' limit 1`,
    [sale.id, paymentId],
  );
  return rows.length > 0;
}

const Ack = z.object({ received: z.boolean(), ignored: z.string().optional() });

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
        ...CHECKOUTS_STARTED_NOW,
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
  request: FastifyRequest,
  paymentId: string,
  reference: string,
  status: string,
): Promise<z.infer<typeof Ack>> {
  const row = await request.em.findOne(MembershipPayment, { reference }, { filters: { tenant: false } });
  const subscription = row
    ? await request.em.findOne(MembershipSubscription, { id: row.subscription }, { filters: { tenant: false } })
    : null;
  if (!subscription) {
    request.log.warn({ paymentId }, 'gateway A payment names no membership payment of ours; ignored');
    return { received: true, ignored: 'unknown reference' };
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
  return { received: true };
}

function providerDown(error: unknown, log: FastifyBaseLogger): never {
  if (isProviderError(error)) {
    log.warn(
      { provider: error.provider, status: error.status },
      'could not re-read the payment; the gateway will retry the notification',
    );
    throw new AppError('PROVIDER_UNAVAILABLE', 'The payment could not be verified with the gateway yet; retry later');
  }
  throw error;
}

/** Gateway notifications. Their address and format are internal to the service (contract part 6). */
export const gatewayWebhookRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  // Signatures cover the exact bytes received, so this scope keeps the raw body beside the parsed one.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const raw = typeof body === 'string' ? body : body.toString('utf8');
    request.rawBody = raw;
    try {
      done(null, raw === '' ? {} : JSON.parse(raw));
    } catch {
      done(new AppError('MALFORMED_JSON', 'The notification body is not valid JSON'), undefined);
    }
  });

  app.post(
    '/webhooks/gateway-a',
    {
      config: { ...publicAccess(), neverShed: true },
      schema: {
        hide: true,
        querystring: z
          .object({
            'data.id': z.string().max(64).optional(),
            type: z.string().max(40).optional(),
            topic: z.string().max(40).optional(),
          })
          .passthrough(),
        response: { 200: Ack },
      },
    },
    async (request) => {
      const body = (request.body ?? {}) as { type?: unknown; data?: { id?: unknown } };
      const dataId =
        request.query['data.id'] ??
        (typeof body.data?.id === 'string' || typeof body.data?.id === 'number' ? String(body.data.id) : undefined);
      const authentic = verifyGatewayANotification({
        xSignature: headerValue(request.headers['x-signature']),
        xRequestId: headerValue(request.headers['x-request-id']),
        dataId,
        secret: services.env.GATEWAY_A_WEBHOOK_SECRET,
        maxAgeSeconds: 15 * 60,
      });
      if (!authentic || !dataId) throw new AppError('UNAUTHENTICATED', 'Invalid notification signature');
      const type = request.query.type ?? request.query.topic ?? (typeof body.type === 'string' ? body.type : 'payment');
      if (type !== 'payment') return { received: true, ignored: `type ${type}` };

      // The body is not trusted: the payment is read back from the gateway to learn which sale it pays.
      let payment: Awaited<ReturnType<typeof services.gatewayA.getPayment>>;
      try {
        payment = await services.gatewayA.getPayment(dataId);
      } catch (error) {
        providerDown(error, request.log);
      }
      if (payment.externalReference && isMembershipReference(payment.externalReference)) {
        return notifyMembershipOfPayment(services, request, payment.id, payment.externalReference, payment.status);
      }
      const reference = payment.externalReference ? parseSaleReference(payment.externalReference) : null;
      const sale = reference ? await request.em.findOne(Sale, { reference }, { filters: { tenant: false } }) : null;
      if (!sale) {
        request.log.warn({ paymentId: payment.id }, 'gateway A payment names no sale of ours; ignored');
        return { received: true, ignored: 'unknown reference' };
      }
      if (payment.status === 'approved' && (await checkoutHoldsApproval(request.em, sale, payment.id))) {
        // Its checkout would judge this and change nothing, so it is not woken (nor a finished one started again).
        return { received: true, ignored: 'already applied' };
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
      return { received: true };
    },
  );

  app.post(
    '/webhooks/gateway-b',
    { config: { ...publicAccess(), neverShed: true }, schema: { hide: true, response: { 200: Ack } } },
    async (request) => {
      const raw = request.rawBody ?? '';
      if (
        !verifyGatewayBWebhook(raw, headerValue(request.headers['x-bold-signature']), services.env.GATEWAY_B_SECRET_KEY)
      ) {
        throw new AppError('UNAUTHENTICATED', 'Invalid notification signature');
      }
      let event: ReturnType<typeof parseGatewayBWebhook>;
      try {
        event = parseGatewayBWebhook(raw);
      } catch {
        throw new AppError('VALIDATION_FAILED', 'The notification body has an unexpected shape');
      }
      if (!gatewayBEventIsFresh(event.time)) {
        request.log.warn({ eventId: event.id, time: event.time }, 'gateway B event outside the replay window; refused');
        throw new AppError('UNAUTHENTICATED', 'The notification is too old or dated in the future');
      }
      const reference = event.reference ? parseSaleReference(event.reference) : null;
      const sale = reference ? await request.em.findOne(Sale, { reference }, { filters: { tenant: false } }) : null;
      if (!sale) {
        request.log.warn({ eventId: event.id }, 'gateway B event names no sale of ours; ignored');
        return { received: true, ignored: 'unknown reference' };
      }
      const rail = await paymentRailOf(request.em, sale);
      if (rail !== 'GATEWAY_B') {
        request.log.warn(
          { eventId: event.id, saleId: sale.id, rail },
          'gateway B event for a sale that pays through another gateway; ignored',
        );
        return { received: true, ignored: 'gateway mismatch' };
      }
      await notifyCheckout(services, sale.id, {
        gateway: 'GATEWAY_B',
        providerPaymentId: event.paymentId,
        eventType: event.type,
        receivedAtMs: Date.now(),
        dedupeKey: `b:${event.id}`,
      });
      return { received: true };
    },
  );
};

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
