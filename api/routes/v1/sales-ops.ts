import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import type { ISale } from '../../../entities/sale.js';
import type { cancellation } from '../../../workflows/cancellation.js';
import {
  type CancellationInput,
  type CancellationResult,
  cancellationWorkflowId,
  type RefundResult,
  refundWorkflowId,
  saleSearchAttributes,
} from '../../../workflows/definitions.js';
import type { refund } from '../../../workflows/refund.js';
import { dataOf } from '../../http/envelope.js';
import { organizer } from '../../http/route-access.js';
import { SaleSchema, toSale } from '../../http/sale-views.js';
import { IdParamSchema } from '../../http/schemas.js';
import { findSale, reloadSale } from '../../services/sales.js';
import type { ApiServices } from '../../services.js';

/** Contract 4.8: optional acknowledge_open_payment; `reason` (ours) is kept as the sale's failureReason. */
const CancelBody = z
  .object({
    acknowledge_open_payment: z.boolean().optional().meta({
      description: 'Cancel even though gateway B reports the payment open or cannot be read (contract part 3, rule 3)',
    }),
    reason: z.string().trim().min(1).max(300).optional(),
  })
  .optional();

const RefundBody = z.object({
  reason: z.string().trim().min(3).max(300).meta({ description: 'Why the money goes back; kept on the sale' }),
  notifyBuyer: z.boolean().default(true).meta({ description: 'Email the buyer once the gateway confirms the refund' }),
});

const RefundOutcomeSchema = z
  .object({
    sale: SaleSchema,
    refund: z.object({
      status: z.enum(['completed', 'in_progress']).meta({
        description: 'in_progress (HTTP 202): the gateway has not confirmed yet; the refund keeps retrying on its own',
      }),
      alreadyRefunded: z.boolean(),
      gateway: z.string().nullable(),
      refundId: z.string().nullable(),
      gatewayStatus: z.string().nullable(),
      reason: z.string(),
    }),
  })
  .meta({ id: 'RefundOutcome' });

/** How long POST /refund waits for the gateway before answering 202 (the refund goes on in its workflow). */
const REFUND_WAIT_MS = 8_000;

/** The flags of a cancel request, kept in the execution's memo so a later request can be compared with it. */
const CANCEL_REQUEST_MEMO = 'cancelRequest';
type CancelRequest = Pick<CancellationInput, 'acknowledgeOpenPayment' | 'reason'>;

function cancelRequestOf(memo: Record<string, unknown> | undefined): CancelRequest | null {
  const value = memo?.[CANCEL_REQUEST_MEMO];
  if (typeof value !== 'object' || value === null) return null;
  const { acknowledgeOpenPayment, reason } = value as Record<string, unknown>;
  if (typeof acknowledgeOpenPayment !== 'boolean' || (reason !== null && typeof reason !== 'string')) return null;
  return { acknowledgeOpenPayment, reason };
}

/**
 * Starts the sale's cancellation, or joins the one already running when it was asked with the same flags (a retried
 * request is idempotent). A running cancellation asked with other flags is refused rather than joined: its answer
 * was decided under the other flags (an acknowledged open payment, another reason) and would be passed off as the
 * answer to this request.
 */
async function startOrJoinCancellation(services: ApiServices, sale: ISale, request: CancelRequest) {
  const workflowId = cancellationWorkflowId(sale.id);
  // Twice at most: a running execution that finishes between the start and the describe is followed by a new start.
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await services.temporal.workflow.start<typeof cancellation>('cancellation', {
        workflowId,
        taskQueue: services.env.TEMPORAL_TASK_QUEUE,
        args: [{ saleId: sale.id, ...request }],
        memo: { [CANCEL_REQUEST_MEMO]: request },
        typedSearchAttributes: saleSearchAttributes(sale),
        workflowIdConflictPolicy: 'FAIL',
        // No execution timeout: the steps retry until they succeed (a provider outage must not fail the cancel),
        // so no bound is long enough, and a timed-out cancel could stop between its checks and its effects.
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    const running = await services.temporal.workflow.getHandle(workflowId).describe();
    if (running.status.name !== 'RUNNING' && attempt === 0) continue;
    const runningRequest = cancelRequestOf(running.memo);
    // Executions started before the memo existed cannot be compared; they are joined as before.
    if (
      runningRequest &&
      (runningRequest.acknowledgeOpenPayment !== request.acknowledgeOpenPayment ||
        runningRequest.reason !== request.reason)
    ) {
      throw new AppError('INVALID_STATE', 'A cancellation of this sale with other options is still running', {
        retryable: true,
        details: {
          reason: 'cancellation_in_progress',
          runningRequest: {
            acknowledge_open_payment: runningRequest.acknowledgeOpenPayment,
            reason: runningRequest.reason,
          },
        },
      });
    }
    return services.temporal.workflow.getHandle<typeof cancellation>(workflowId, running.runId);
  }
}

export const salesOpsRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.post(
    '/sales/:id/cancel',
    {
      config: organizer('ADMIN', 'sales'),
      schema: {
        tags: ['sales'],
        summary: 'Cancel a sale (contract part 3, rules 1–4): stock back, tickets INVALID',
        description:
          'Runs the cancellation workflow `cancellation/<saleId>`. A PENDING sale is cancelled through its checkout, so a ' +
          'cancel racing a payment ends in one outcome. A CONFIRMED sale paid through a gateway needs a refund instead ' +
          '(409 REFUND_REQUIRED); complimentary and box-office sales are cancelled directly. Repeating a successful ' +
          'cancel answers 200 again. A repeat while the first is still running joins it when its options are the ' +
          'same; with other options (acknowledge_open_payment, reason) it is 409 INVALID_STATE, details.reason ' +
          'cancellation_in_progress, details.runningRequest the running options.',
        params: IdParamSchema,
        body: CancelBody,
        response: { 200: dataOf(SaleSchema) },
      },
    },
    async (request) => {
      const sale = await findSale(request.em, request.params.id);
      const body = request.body ?? {};
      const handle = await startOrJoinCancellation(services, sale, {
        acknowledgeOpenPayment: body.acknowledge_open_payment === true,
        reason: body.reason ?? null,
      });
      const result: CancellationResult = await handle.result();
      if (!result.ok) throw new AppError(result.code, result.message, { details: result.details });
      return { data: toSale(await reloadSale(request.em, sale.id)) };
    },
  );

  app.post(
    '/sales/:id/refund',
    {
      config: organizer('ADMIN', 'sales'),
      schema: {
        tags: ['sales'],
        summary: 'Refund a CONFIRMED sale in full: sale REFUNDED, tickets INVALID (used ones too), stock back',
        description:
          'Runs the refund workflow `refund/<saleId>`: gateway A refunds (idempotency key refund-<saleId>), gateway B ' +
          'voids; retried with backoff until the gateway confirms. 200 when confirmed within a few seconds, otherwise ' +
          '202 with refund.status in_progress (poll GET /sales/{id}). Never refunds twice: repeats join the same ' +
          'workflow or find the sale REFUNDED. Tickets already used at the door do not stop it (contract part 3, rule 1). A ' +
          'complimentary or box-office sale (no gateway payment) is refunded at once with paymentStatus ' +
          'FT_REFUNDED_OFFLINE: any box-office money goes back by hand. Only CONFIRMED sales can be refunded (409 ' +
          'SALE_NOT_REFUNDABLE otherwise).',
        params: IdParamSchema,
        body: RefundBody,
        response: { 200: dataOf(RefundOutcomeSchema), 202: dataOf(RefundOutcomeSchema) },
      },
    },
    async (request, reply) => {
      const sale = await findSale(request.em, request.params.id);
      const body = request.body;
      const handle = await services.temporal.workflow.start<typeof refund>('refund', {
        workflowId: refundWorkflowId(sale.id),
        taskQueue: services.env.TEMPORAL_TASK_QUEUE,
        args: [{ saleId: sale.id, reason: body.reason, notifyBuyer: body.notifyBuyer }],
        typedSearchAttributes: saleSearchAttributes(sale),
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        // An execution that ended without a result (terminated, failed) left the refund owed: the reconciler starts it
        // again (activities/reconciler.ts redriveStalledRefunds), so it is still in progress, not a server error.
        (handle.result() as Promise<RefundResult>).catch(() => null),
        new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), REFUND_WAIT_MS);
        }),
      ]).finally(() => clearTimeout(timer));
      if (finished && !finished.ok) throw new AppError(finished.code, finished.message, { details: finished.details });
      const current = toSale(await reloadSale(request.em, sale.id));
      if (!finished) {
        return reply.status(202).send({
          data: {
            sale: current,
            refund: {
              status: 'in_progress' as const,
              alreadyRefunded: false,
              gateway: current.paymentProvider,
              refundId: null,
              gatewayStatus: null,
              reason: body.reason,
            },
          },
        });
      }
      return reply.status(200).send({
        data: {
          sale: current,
          refund: {
            status: 'completed' as const,
            alreadyRefunded: !finished.changed,
            gateway: finished.gateway,
            refundId: finished.refundId,
            gatewayStatus: finished.gatewayStatus,
            reason: body.reason,
          },
        },
      });
    },
  );
};
