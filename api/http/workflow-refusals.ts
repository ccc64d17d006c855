import { workflowRefusal } from '../../config/workflow-refusals.js';
import { AppError, ERROR_STATUS, type ErrorCode } from '../../domain/errors.js';

const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ERROR_STATUS, code);

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
  return new AppError(refusal.code, refusal.message, { details: refusal.details });
}
