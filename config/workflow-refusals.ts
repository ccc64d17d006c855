/**
 * How a workflow says "no" to a caller: its update validators and handlers throw an ApplicationFailure whose `type`
 * is the contract's error code and whose first detail is the error's `details`. A validator's refusal never enters
 * the execution's history. Shared by the API (which answers with the contract's error body) and by activities that
 * drive other executions.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';

export interface WorkflowRefusal {
  code: string;
  message: string;
  details: Record<string, unknown>;
  retryable: boolean;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The refusal carried by a failed update, or null when the update failed for another reason. */
export function workflowRefusal(error: unknown): WorkflowRefusal | null {
  if (!(error instanceof WorkflowUpdateFailedError)) return null;
  const cause = error.cause;
  if (!(cause instanceof ApplicationFailure) || !cause.type) return null;
  const first: unknown = cause.details?.[0];
  return {
    code: cause.type,
    message: cause.message,
    details: isRecord(first) ? first : {},
    retryable: !cause.nonRetryable,
  };
}
