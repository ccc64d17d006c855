import type { FastifyBaseLogger } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { parseSaleReference } from '../../../domain/codes.js';
import { AppError } from '../../../domain/errors.js';
import { Sale } from '../../../entities/index.js';
import { isProviderError } from '../../../integrations/errors.js';
import { verifyGatewayANotification } from '../../../integrations/gateway-a/signature.js';
import { parseGatewayBWebhook } from '../../../integrations/gateway-b/client.js';
import { verifyGatewayBWebhook } from '../../../integrations/gateway-b/signature.js';
import type { checkout } from '../../../workflows/checkout.js';
import {
  checkoutWorkflowId,
  type PaymentNotification,
  paymentNotificationSignal,
} from '../../../workflows/definitions.js';
import { publicAccess } from '../../http/route-access.js';
import type { ApiServices } from '../../services.js';

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: string;
  }
}

const Ack = z.object({ received: z.boolean(), ignored: z.string().optional() });

/**
 * Hands a verified notification to the sale's checkout. If that execution has already finished (a payment far
 * later than the grace period), signal-with-start opens a new one that reads the sale and settles the payment:
 * money that arrives is never dropped.
 */
async function notifyCheckout(services: ApiServices, saleId: string, notification: PaymentNotification): Promise<void> {
  await services.temporal.workflow.signalWithStart<typeof checkout, [PaymentNotification]>('checkout', {
    workflowId: checkoutWorkflowId(saleId),
    taskQueue: services.env.TEMPORAL_TASK_QUEUE,
    args: [{ saleId, latePaymentGraceMs: services.env.LATE_PAYMENT_GRACE_MS, resumeAfterClose: true }],
    signal: paymentNotificationSignal,
    signalArgs: [notification],
  });
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
      config: publicAccess(),
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
      const reference = payment.externalReference ? parseSaleReference(payment.externalReference) : null;
      const sale = reference ? await request.em.findOne(Sale, { reference }, { filters: { tenant: false } }) : null;
      if (!sale) {
        request.log.warn({ paymentId: payment.id }, 'gateway A payment names no sale of ours; ignored');
        return { received: true, ignored: 'unknown reference' };
      }
      await notifyCheckout(services, sale.id, {
        gateway: 'GATEWAY_A',
        providerPaymentId: payment.id,
        eventType: `payment.${payment.status}`,
        receivedAtMs: Date.now(),
        dedupeKey: `a:${payment.id}:${payment.status}`,
      });
      return { received: true };
    },
  );

  app.post(
    '/webhooks/gateway-b',
    { config: publicAccess(), schema: { hide: true, response: { 200: Ack } } },
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
      const reference = event.reference ? parseSaleReference(event.reference) : null;
      const sale = reference ? await request.em.findOne(Sale, { reference }, { filters: { tenant: false } }) : null;
      if (!sale) {
        request.log.warn({ eventId: event.id }, 'gateway B event names no sale of ours; ignored');
        return { received: true, ignored: 'unknown reference' };
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
