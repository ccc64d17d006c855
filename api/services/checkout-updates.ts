/**
 * Running a buyer's payment request (an update) on a sale's checkout, and what the API answers when the update does not
 * come back with an outcome of its own.
 */
import { type WorkflowHandle, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { AppError } from '../../domain/errors.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { lostUpdateError, refusalError } from '../http/workflow-refusals.js';
import type { ApiServices } from '../services.js';

/**
 * Runs an update on the sale's checkout and turns every way it can fail into the contract's error: the workflow's
 * refusal as it said it, a closed execution as "not pending", an update that failed without a refusal as the
 * provider's failure, and one that got no outcome as a retryable 503 (`onLost` runs first, e.g. to ask the checkout
 * to check the gateway).
 */
export async function runCheckoutUpdate<T>(
  services: Pick<ApiServices, 'temporal'>,
  saleId: string,
  run: (handle: WorkflowHandle) => Promise<T>,
  onLost: () => void = () => undefined,
): Promise<T> {
  try {
    return await run(services.temporal.workflow.getHandle(checkoutWorkflowId(saleId)));
  } catch (error) {
    const refused = refusalError(error);
    if (refused) throw refused;
    if (error instanceof WorkflowNotFoundError) {
      throw new AppError('PAYMENT_UNAVAILABLE', 'The sale is no longer pending', {
        details: { reason: 'not_pending' },
      });
    }
    if (error instanceof WorkflowUpdateFailedError) {
      throw new AppError('PROVIDER_UNAVAILABLE', 'The payment provider did not answer; retry', {
        details: { cause: error.cause?.message ?? null },
      });
    }
    // A card charge may still have been made: the buyer's page asks the order's status (which asks the checkout to
    // check the gateway) or sends the same card token again, which the gateway answers with the same payment.
    const lost = lostUpdateError(
      error,
      "The payment request got no answer in time; check the order's status before paying again, or retry",
    );
    if (lost) {
      onLost();
      throw lost;
    }
    throw error;
  }
}
