/**
 * New buyers never wait behind background work (issue 32). A checkout's workflow tasks all carry the priority its
 * execution was started with: Temporal cannot lower it later (the 1.29 server has no priority in
 * UpdateWorkflowExecutionOptions), so "buyer-facing first" cannot be a priority key that changes as a checkout moves
 * from reserving to closing. Fairness can do it instead: each checkout is started with a fairness key naming the
 * FAIRNESS_BUCKET_MS in which it began, and the server's fair matcher (`matching.enableFairness`, set on every
 * Temporal server we start) dispatches the keys in turn rather than in arrival order.
 *
 * So when thousands of holds expire at once, their closing tasks share the keys of the few buckets in which they were
 * reserved, and a new buyer's reservation, under the current bucket's key, is dispatched after at most one task per
 * such key instead of after all of them. Executions started without a key (reconciler, settlement, mail) share the
 * empty key: background work of every kind is one share among the others.
 */
import type { Priority } from '@temporalio/common';

/** Short against any payment window (minutes), so a hold expiring now was never reserved in the current bucket. */
export const FAIRNESS_BUCKET_MS = 10_000;

export function checkoutPriority(startedAtMs: number): Priority {
  return { fairnessKey: `checkouts-${Math.floor(startedAtMs / FAIRNESS_BUCKET_MS)}` };
}

/**
 * The Temporal servers' dynamic configuration that turns the fair matcher on (the dev server's
 * --dynamic-config-value, the production server's dynamic config file): without it the keys are ignored and tasks go
 * out in arrival order.
 */
export const FAIR_MATCHING_DYNAMIC_CONFIG = { 'matching.enableFairness': true } as const;
