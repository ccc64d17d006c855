/** Helpers for local activities shared by the workflows (workflow-safe: no I/O, only the workflow sandbox's APIs). */
import {
  type ActivityOptions,
  CancellationScope,
  isCancellation,
  log,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import { providerTaskQueueOf } from './definitions.js';

/** Retried without a cap with a short backoff: a database restart delays a step instead of failing the execution. */
export const UNTIL_IT_WORKS = {
  initialInterval: '500 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
} as const;

/** A short database transaction in the workflow task (local activity): no cap, since money news waits on it. */
export const DATABASE_STEP = {
  startToCloseTimeout: '15 seconds',
  localRetryThreshold: '5 seconds',
  retry: UNTIL_IT_WORKS,
} as const;

/** A gateway call a buyer or the story waits on: a few tries, then "ask again later" instead of a failure. */
export const GATEWAY_CALL = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '20 seconds', maximumAttempts: 4 },
} as const;

/** Money must go back: retried without a cap; the story then waits for the gateway to report it refunded. */
export const MONEY_BACK = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
} as const;

type Steps = Record<string, (...args: never[]) => Promise<unknown>>;

/**
 * A local activity still running when its run is evicted from the worker's cache comes back cancelled (SDK core
 * invalidates it; evictions happen whenever the cache is full, as in a flash sale, and after restarts). Every local
 * step passed here must be idempotent: a cancelled one simply runs again, unless the workflow itself is being
 * cancelled.
 */
export function rerunWhenEvicted<T extends Steps>(steps: T): T {
  return new Proxy(steps, {
    get(target, name: string) {
      const step = target[name];
      if (typeof step !== 'function') return step;
      return async (...args: never[]) => {
        for (;;) {
          try {
            return await step(...args);
          } catch (error) {
            const evicted = isCancellation(error) && !CancellationScope.current().consideredCancelled;
            if (!evicted) throw error;
            log.warn('a local step was cancelled by a cache eviction; running it again', { step: name });
          }
        }
      };
    },
  });
}

/**
 * Activities on the provider queue of the execution's own queue (see providerTaskQueueOf). The queue is resolved at
 * call time: a module-level proxy cannot read the execution's task queue.
 */
export function onProviderQueue<T extends Steps>(options: ActivityOptions): T {
  return new Proxy({} as T, {
    get(_target, name: string) {
      return (...args: never[]) => {
        const steps = proxyActivities<T>({ ...options, taskQueue: providerTaskQueueOf(workflowInfo().taskQueue) });
        const step = steps[name] as (...stepArgs: never[]) => Promise<unknown>;
        return step(...args);
      };
    },
  });
}
