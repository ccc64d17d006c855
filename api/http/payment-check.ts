import { WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyBaseLogger } from 'fastify';
import type { ISale } from '../../entities/sale.js';
import { checkoutWorkflowId, checkPaymentSignal } from '../../workflows/definitions.js';
import type { ApiServices } from '../services.js';

/** At most one "ask the gateway now" per sale in this window, however often the buyer's page polls. */
export const PAYMENT_CHECK_INTERVAL_MS = 10_000;

const hasOpenAttempt = async (services: ApiServices, saleId: string): Promise<boolean> => {
  const rows = await services.orm.em
    .getConnection()
    .execute<{ one: number }[]>(
      "select 1 as one from payment_attempts where sale_id = ? and kind in ('OPEN', 'PSE', 'CARD') limit 1",
      [saleId],
    );
  return rows.length > 0;
};

/**
 * A buyer looking at a PENDING sale after opening a payment is the moment a lost or late gateway notification hurts
 * (they paid and the page still says pending), so the read asks the sale's checkout to pull the gateway now
 * (`checkPayment`), rate limited per sale across API processes with Redis. It runs beside the read and never fails
 * it: the answer comes from the database as always, and the checkout's own pull schedule covers a skipped nudge.
 */
export function askCheckoutToCheckPayment(services: ApiServices, log: FastifyBaseLogger, sale: ISale): void {
  if (sale.status !== 'PENDING') return;
  const nudge = async (): Promise<void> => {
    if (!(await hasOpenAttempt(services, sale.id))) return;
    const first = await services.redis.set(`payment-check:${sale.id}`, '1', 'PX', PAYMENT_CHECK_INTERVAL_MS, 'NX');
    if (first !== 'OK') return;
    await services.temporal.workflow
      .getHandle(checkoutWorkflowId(sale.id))
      .signal(checkPaymentSignal, { source: 'buyer' });
  };
  nudge().catch((error: unknown) => {
    if (error instanceof WorkflowNotFoundError) {
      // No running checkout for a PENDING sale is the reconciler's case, not the reader's.
      log.info({ saleId: sale.id }, 'no running checkout to ask about the payment');
      return;
    }
    log.warn({ err: error, saleId: sale.id }, 'could not ask the checkout to check the payment');
  });
}
