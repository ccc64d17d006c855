/**
 * The id of the request being handled, wherever the code that needs it runs: in the API it is Fastify's request id
 * (the `reqId` of the API's log lines); in the worker it is the id an activity received in its Temporal header. The
 * Temporal client interceptor reads it, so every start, signal and update a request causes carries it into the
 * workflow (observability/temporal-tracing.ts), and one grep of the id finds the API's, the workflow's and the
 * activities' log lines.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const requestIds = new AsyncLocalStorage<string>();

export const currentRequestId = (): string | undefined => requestIds.getStore();

/** Runs `work` as part of the request `requestId` (or of no request, when it is undefined). */
export function withRequestId<T>(requestId: string | undefined, work: () => T): T {
  return requestId === undefined ? requestIds.exit(work) : requestIds.run(requestId, work);
}
