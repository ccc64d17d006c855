import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listOf } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { organizer } from '../../http/route-access.js';
import { activeWorkspace } from '../../plugins/auth.js';
import { refundsRefused } from '../../reports/refunds-refused.js';

const RefundRefusedSchema = z
  .object({
    saleId: z.string(),
    reference: z.string(),
    saleStatus: z.string(),
    gateway: z.string(),
    providerPaymentId: z.string().nullable(),
    refundReason: z.string().nullable().meta({ description: 'Why the payment was being given back' }),
    note: z.string().nullable().meta({ description: "The gateway's last refusal, as recorded" }),
    total: minorUnits('Total of the sale', 89520),
    currency: z.string(),
    requestedAt: z.string().meta({ description: 'When the refund was first requested (UTC, ISO 8601)' }),
  })
  .meta({ id: 'RefundRefused', description: 'A refund the gateway refused for good, parked for an operator' });

const RefundsRefusedQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(100) });

/** Refunds the gateway refused for good (PaymentAttempt REFUND `refund_refused`): money still owed to buyers. */
export const refundsRefusedRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/reports/refunds-refused',
    {
      config: organizer('VIEWER', 'reports'),
      schema: {
        tags: ['reports'],
        summary: 'Refunds the gateway refused for good, parked until an operator retries them',
        description:
          'Each row is money still owed to a buyer: the gateway refused its refund several times in a row (for example ' +
          "the merchant's balance could not cover it). Operators retry with `operator refunds-refused retry <saleId>`.",
        querystring: RefundsRefusedQuery,
        response: { 200: listOf(RefundRefusedSchema) },
      },
    },
    async (request) => {
      const { workspaceId } = activeWorkspace(request);
      const data = await refundsRefused(request.em, { workspaceId, limit: request.query.limit });
      return { data, page: { nextCursor: null, hasMore: false } };
    },
  );
};
