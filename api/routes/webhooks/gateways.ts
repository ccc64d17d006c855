import type { FastifyBaseLogger } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import { isProviderError } from '../../../integrations/errors.js';
import { verifyGatewayANotification } from '../../../integrations/gateway-a/signature.js';
import { parseGatewayBWebhook } from '../../../integrations/gateway-b/client.js';
import { verifyGatewayBWebhook } from '../../../integrations/gateway-b/signature.js';
import { publicAccess } from '../../http/route-access.js';
import {
  deliverGatewayAPayment,
  deliverGatewayBEvent,
  gatewayBEventIsFresh,
  type IgnoredBecause,
} from '../../services/payment-notifications.js';
import type { ApiServices } from '../../services.js';

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: string;
  }
}

const Ack = z.object({ received: z.boolean(), ignored: z.string().optional() });

const ack = (ignored: IgnoredBecause): z.infer<typeof Ack> =>
  ignored ? { received: true, ignored } : { received: true };

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
      return ack(await deliverGatewayAPayment(services, request.em, request.log, payment));
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
      return ack(await deliverGatewayBEvent(services, request.em, request.log, event));
    },
  );
};

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
