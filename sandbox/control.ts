import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import {
  FAULT_TARGETS,
  type Faults,
  RATE_LIMITED_GATEWAYS,
  type RateLimits,
  REFUND_GATEWAYS,
  type RefundRefusalRule,
} from './faults.js';
import type { GatewayASandbox } from './gateway-a.js';
import type { GatewayBSandbox } from './gateway-b.js';
import type { Notifier } from './notifier.js';
import { ChartInput, type SeatMapSandbox } from './seatmap.js';
import type { MailInbox } from './smtp.js';
import { issuesText } from './support.js';

/**
 * The control API tests, demos and scripts drive (`/control/...`): it plays the buyer, the bank and the operator
 * the providers would otherwise need. Responses use `{ data }`, failures `{ error: { code, message } }`.
 * Never affected by faults.
 */

export interface ControlDeps {
  gatewayA: GatewayASandbox;
  gatewayB: GatewayBSandbox;
  seatmap: SeatMapSandbox;
  inbox: MailInbox;
  faults: Faults;
  rateLimits: RateLimits;
  notifier: Notifier;
  info: () => { httpUrl: string; smtpPort: number; startedAt: Date };
}

const RESET_TARGETS = ['gateway-a', 'gateway-b', 'seatmap', 'smtp', 'faults'] as const;

const SettlePseBody = z.object({ reference: z.string().min(1), outcome: z.enum(['approved', 'rejected']) });
const AutoSettleBody = z.object({
  outcome: z.enum(['approved', 'rejected', 'off']),
  delayMs: z.number().int().min(0).max(3_600_000).default(0),
});
const SettlePaymentBody = z.object({ outcome: z.enum(['approved', 'rejected', 'cancelled']) });
const OrderBody = z.object({ orderId: z.string().min(1) });
const SettleOrderBody = OrderBody.extend({ outcome: z.enum(['approved', 'rejected']) });
const WebhookBody = z.object({ url: z.url().nullable() });
const ReplayBody = z.object({ gateway: z.enum(['gateway-a', 'gateway-b']), reference: z.string().min(1) });
const FaultBody = z.object({
  target: z.enum(FAULT_TARGETS),
  mode: z.enum(['down', 'slow', 'ok']),
  delayMs: z.number().int().min(0).max(120_000).optional(),
});
const RateLimitBody = z.union([
  z.object({
    gateway: z.enum(RATE_LIMITED_GATEWAYS),
    requestsPerSecond: z.number().positive().max(100_000),
    burst: z.number().min(1).max(100_000).optional(),
  }),
  z.object({ gateway: z.enum(RATE_LIMITED_GATEWAYS), off: z.literal(true) }),
]);
const RefundRefusalBody = z.object({
  gateway: z.enum(REFUND_GATEWAYS),
  reference: z.string().min(1).max(256).optional(),
  providerPaymentId: z.string().min(1).max(64).optional(),
  reason: z.string().min(1).max(200).optional(),
  answer: z.enum(['error', 'rejected']).optional(),
});
/** Clears the rules matching every field given; an empty body clears them all. */
const RefundRefusalScope = RefundRefusalBody.omit({ reason: true, answer: true }).partial().default({});
const ResetBody = z.object({ targets: z.array(z.enum(RESET_TARGETS)).min(1).optional() }).default({});
const ExpireHoldBody = z.object({ holdToken: z.string().min(1) });

function fail(reply: FastifyReply, status: number, code: string, message: string) {
  return reply.code(status).send({ error: { code, message } });
}

function parse<S extends z.ZodType>(schema: S, body: unknown, reply: FastifyReply): z.output<S> | null {
  const parsed = schema.safeParse(body ?? {});
  if (parsed.success) return parsed.data;
  void fail(reply, 400, 'VALIDATION_FAILED', issuesText(parsed.error));
  return null;
}

export function registerControl(app: FastifyInstance, deps: ControlDeps): void {
  app.register(
    async (control) => {
      control.get('/health', async () => {
        const info = deps.info();
        return {
          status: 'ok',
          httpUrl: info.httpUrl,
          smtpPort: info.smtpPort,
          uptimeSeconds: Math.round((Date.now() - info.startedAt.getTime()) / 1000),
          faults: deps.faults.all(),
        };
      });

      control.post('/reset', async (request, reply) => {
        const body = parse(ResetBody, request.body, reply);
        if (!body) return reply;
        const targets = new Set(body.targets ?? RESET_TARGETS);
        if (targets.has('gateway-a')) {
          deps.gatewayA.reset();
          deps.notifier.reset('gateway-a');
        }
        if (targets.has('gateway-b')) {
          deps.gatewayB.reset();
          deps.notifier.reset('gateway-b');
        }
        if (targets.has('seatmap')) deps.seatmap.reset();
        if (targets.has('smtp')) deps.inbox.reset();
        if (targets.has('faults')) {
          deps.faults.reset();
          deps.rateLimits.clear();
          deps.gatewayA.refundRefusals.clear();
          deps.gatewayB.refundRefusals.clear();
        }
        return { data: { reset: [...targets] } };
      });

      // ---- mail -----------------------------------------------------------------------------------------------
      control.get<{ Querystring: { to?: string } }>('/mail', async (request) => ({
        data: deps.inbox.list(request.query.to).map((m) => ({
          id: m.id,
          from: m.from,
          to: m.to,
          subject: m.subject,
          text: m.text,
          html: m.html,
          messageId: m.messageId,
          headers: m.headers,
          attachments: m.attachments,
          receivedAt: m.receivedAt,
        })),
      }));

      // ---- gateway A ------------------------------------------------------------------------------------------
      control.post('/gateway-a/pse/settle', async (request, reply) => {
        const body = parse(SettlePseBody, request.body, reply);
        if (!body) return reply;
        const settled = await deps.gatewayA.settlePse(body.reference, body.outcome);
        if (!settled) {
          return fail(reply, 404, 'NO_PENDING_PSE_PAYMENT', `No pending PSE transfer for reference ${body.reference}`);
        }
        return { data: settled };
      });

      control.post('/gateway-a/pse/auto-settle', async (request, reply) => {
        const body = parse(AutoSettleBody, request.body, reply);
        if (!body) return reply;
        deps.gatewayA.setAutoSettle(body.outcome === 'off' ? null : { outcome: body.outcome, delayMs: body.delayMs });
        return { data: { autoSettle: deps.gatewayA.autoSettle } };
      });

      control.post<{ Params: { id: string } }>('/gateway-a/payments/:id/settle', async (request, reply) => {
        const body = parse(SettlePaymentBody, request.body, reply);
        if (!body) return reply;
        const result = await deps.gatewayA.settlePayment(request.params.id, body.outcome);
        if (!result.ok) {
          return result.reason === 'not_found'
            ? fail(reply, 404, 'PAYMENT_NOT_FOUND', `Unknown payment ${request.params.id}`)
            : fail(reply, 409, 'PAYMENT_NOT_PENDING', `Payment ${request.params.id} is not pending`);
        }
        return { data: { payment: result.payment, notification: result.notification } };
      });

      // ---- gateway B ------------------------------------------------------------------------------------------
      control.post('/gateway-b/pay', async (request, reply) => {
        const result = await deps.gatewayB.pay(request.body ?? {});
        if (!result.ok) return fail(reply, result.status, result.code, result.message);
        const { ok: _ok, ...data } = result;
        return reply.code(201).send({ data });
      });

      control.post('/gateway-b/settle', async (request, reply) => {
        const body = parse(SettleOrderBody, request.body, reply);
        if (!body) return reply;
        const result = await deps.gatewayB.settle(body.orderId, body.outcome);
        if (!result.ok) return fail(reply, 404, 'NO_PROCESSING_PAYMENT', `No payment in process for ${body.orderId}`);
        const { ok: _ok, ...data } = result;
        return { data };
      });

      control.post('/gateway-b/renotify', async (request, reply) => {
        const body = parse(OrderBody, request.body, reply);
        if (!body) return reply;
        const result = await deps.gatewayB.renotify(body.orderId);
        if (!result.ok) return fail(reply, 409, 'NOT_APPROVED', `Order ${body.orderId} has no approved charge`);
        const { ok: _ok, ...data } = result;
        return { data };
      });

      control.get('/gateway-b/webhook', async () => ({ data: { url: deps.gatewayB.webhookUrl } }));
      control.put('/gateway-b/webhook', async (request, reply) => {
        const body = parse(WebhookBody, request.body, reply);
        if (!body) return reply;
        deps.gatewayB.setWebhookUrl(body.url);
        return { data: { url: deps.gatewayB.webhookUrl } };
      });

      // ---- notifications --------------------------------------------------------------------------------------
      control.post('/notifications/replay', async (request, reply) => {
        const body = parse(ReplayBody, request.body, reply);
        if (!body) return reply;
        const record = await deps.notifier.replay(body.gateway, body.reference);
        if (!record) {
          return fail(reply, 404, 'NO_NOTIFICATION', `No ${body.gateway} notification was sent for ${body.reference}`);
        }
        return { data: record };
      });

      control.get<{ Querystring: { gateway?: string; reference?: string } }>(
        '/notifications',
        async (request, reply) => {
          const gateway = request.query.gateway;
          if (gateway !== undefined && gateway !== 'gateway-a' && gateway !== 'gateway-b') {
            return fail(reply, 400, 'VALIDATION_FAILED', 'gateway must be gateway-a or gateway-b');
          }
          return { data: deps.notifier.records({ gateway, reference: request.query.reference }) };
        },
      );

      // ---- faults ---------------------------------------------------------------------------------------------
      control.get('/faults', async () => ({ data: deps.faults.all() }));
      control.post('/faults', async (request, reply) => {
        const body = parse(FaultBody, request.body, reply);
        if (!body) return reply;
        return { data: { target: body.target, ...deps.faults.set(body.target, body.mode, body.delayMs) } };
      });

      // ---- rate limits ----------------------------------------------------------------------------------------
      control.get('/rate-limits', async () => ({ data: deps.rateLimits.all() }));
      control.post('/rate-limits', async (request, reply) => {
        const body = parse(RateLimitBody, request.body, reply);
        if (!body) return reply;
        if ('off' in body) {
          deps.rateLimits.clear(body.gateway);
          return { data: deps.rateLimits.all() };
        }
        return { data: { [body.gateway]: deps.rateLimits.set(body.gateway, body.requestsPerSecond, body.burst) } };
      });

      // ---- refund refusals -------------------------------------------------------------------------------------
      const refusalsOf = (gateway: RefundRefusalRule['gateway']) =>
        gateway === 'gateway-a' ? deps.gatewayA.refundRefusals : deps.gatewayB.refundRefusals;
      const allRefusals = () => [...deps.gatewayA.refundRefusals.all(), ...deps.gatewayB.refundRefusals.all()];

      control.get('/refund-refusals', async () => ({ data: allRefusals() }));
      control.post('/refund-refusals', async (request, reply) => {
        const body = parse(RefundRefusalBody, request.body, reply);
        if (!body) return reply;
        return reply.code(201).send({ data: refusalsOf(body.gateway).add(body) });
      });
      control.delete('/refund-refusals', async (request, reply) => {
        const scope = parse(RefundRefusalScope, request.body, reply);
        if (!scope) return reply;
        const gateways: readonly RefundRefusalRule['gateway'][] = scope.gateway ? [scope.gateway] : REFUND_GATEWAYS;
        const cleared = gateways.reduce((sum, gateway) => sum + refusalsOf(gateway).clear(scope), 0);
        return { data: { cleared, remaining: allRefusals() } };
      });

      // ---- seat map -------------------------------------------------------------------------------------------
      control.post('/seatmap/charts', async (request, reply) => {
        const body = parse(ChartInput, request.body, reply);
        if (!body) return reply;
        return reply.code(201).send({ data: deps.seatmap.createChart(body) });
      });

      control.post('/seatmap/expire-hold', async (request, reply) => {
        const body = parse(ExpireHoldBody, request.body, reply);
        if (!body) return reply;
        if (!deps.seatmap.expire(body.holdToken)) {
          return fail(reply, 404, 'HOLD_TOKEN_NOT_FOUND', 'Unknown or already expired hold token');
        }
        return { data: { holdToken: body.holdToken, expired: true } };
      });
    },
    { prefix: '/control' },
  );
}
