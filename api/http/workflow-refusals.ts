import { isGrpcServiceError, ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { workflowRefusal } from '../../config/workflow-refusals.js';
import { AppError, ERROR_STATUS, type ErrorCode } from '../../domain/errors.js';

const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ERROR_STATUS, code);

/** Gateway A's refusals of the card token itself (unknown, already used or expired): the buyer's input to redo. */
const CARD_TOKEN_REFUSALS: ReadonlySet<string> = new Set(['gateway-a:2006', 'gateway-a:3003', 'gateway-a:E301']);

/**
 * The checkout reports a gateway's final refusal of a charge as VALIDATION_FAILED with the provider's code
 * (`<provider>:<code>`) as `details.reason`. The request body was valid, so the contract's answer is a payment
 * error: a refused card token is the token field to redo (422, `details.field: token`); anything else the gateway
 * refuses makes the rail unavailable for this sale (409 PAYMENT_UNAVAILABLE), with the provider's code beside.
 */
export function providerRefusalError(reason: unknown, message: string): AppError | null {
  if (typeof reason !== 'string' || !/^gateway-[ab]:/.test(reason)) return null;
  if (CARD_TOKEN_REFUSALS.has(reason)) {
    return new AppError('VALIDATION_FAILED', 'The gateway refused the card token; tokenize the card again', {
      details: { field: 'token', reason: 'card_token_refused', providerCode: reason },
    });
  }
  if (reason === 'gateway-a:currency_not_supported') {
    return new AppError('PAYMENT_UNAVAILABLE', message, { details: { reason: 'currency_not_supported' } });
  }
  return new AppError('PAYMENT_UNAVAILABLE', 'The payment gateway refused this charge', {
    details: { reason: 'provider_refused', providerCode: reason },
  });
}

/**
 * The contract error for a workflow's refusal (see config/workflow-refusals.ts), or null when the error is not one.
 * Codes the contract does not know become a generic 503, never a leak of internal text.
 */
export function refusalError(error: unknown): AppError | null {
  const refusal = workflowRefusal(error);
  if (!refusal) return null;
  if (!isErrorCode(refusal.code)) {
    return new AppError('SERVICE_UNAVAILABLE', 'The request could not be completed; retry', {
      details: { reason: refusal.code },
    });
  }
  if (refusal.code === 'VALIDATION_FAILED') {
    const provider = providerRefusalError(refusal.details.reason, refusal.message);
    if (provider) return provider;
  }
  return new AppError(refusal.code, refusal.message, { details: refusal.details });
}

/** How soon a caller may try again after an update whose outcome is unknown. */
const LOST_UPDATE_RETRY_AFTER_S = '2';

/**
 * The contract's answer to an update that reached no outcome the API can read: the call outlived its deadline, or
 * Temporal dropped or refused it (its workflow task was lost on a starved worker, the server's update registry was
 * cleared, the workflow task is failing, too many updates in flight). Retryable 503, never a 500; null for any other
 * error. `message` tells the caller what is safe to do next.
 *
 * An update-with-start that the server refuses as a whole (a MultiOperationExecutionFailure: "Workflow Task in failed
 * state" while a killed worker's task waits to be retried) reaches us as the bare gRPC error of the refused operation,
 * not wrapped in a ServiceError: the client rethrows it as it is. It answered 500 before, in the worker-kill fault run.
 */
export function lostUpdateError(error: unknown, message: string): AppError | null {
  const unanswered =
    error instanceof WorkflowUpdateRPCTimeoutOrCancelledError ||
    error instanceof ServiceError ||
    isGrpcServiceError(error);
  if (!unanswered) return null;
  return new AppError('SERVICE_UNAVAILABLE', message, {
    details: { reason: 'request_unanswered' },
    retryable: true,
    headers: { 'Retry-After': LOST_UPDATE_RETRY_AFTER_S },
  });
}
