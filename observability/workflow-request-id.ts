/**
 * Workflow interceptors (bundled with the workflows, so deterministic and free of I/O): the id of the HTTP request
 * that started, signalled or updated an execution becomes a log attribute of everything the workflow logs while
 * handling it, and travels on to the activities, child workflows and signals that handling causes. Each received
 * call is logged once with its request id, so an operator who greps a request id from the API's logs finds the
 * workflow it reached.
 *
 * Nothing here emits a command or changes one: headers and log lines are not part of what replay compares.
 */
import type { Headers } from '@temporalio/common';
import {
  type ActivityInput,
  AsyncLocalStorage,
  type GetLogAttributesInput,
  type LocalActivityInput,
  log,
  type Next,
  type SignalInput,
  type SignalWorkflowInput,
  type StartChildWorkflowExecutionInput,
  type UpdateInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { REQUEST_ID_LOG_KEY, requestIdFromHeaders as requestIdIn, withRequestIdHeader } from './temporal-headers.js';

/** The request whose handling the current coroutine belongs to: the main run's starter, or a handler's caller. */
const handling = new AsyncLocalStorage<string>();

const withCurrentRequestId = (headers: Headers): Headers => withRequestIdHeader(headers, handling.getStore());

function within<T>(requestId: string | undefined, work: () => T): T {
  return requestId === undefined ? work() : handling.run(requestId, work);
}

class RequestIdInbound implements WorkflowInboundCallsInterceptor {
  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const requestId = requestIdIn(input.headers);
    return within(requestId, () => {
      if (requestId !== undefined) log.info('execution started by a request');
      return next(input);
    });
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    const requestId = requestIdIn(input.headers);
    return within(requestId, () => {
      if (requestId !== undefined) log.info('signal received from a request', { signal: input.signalName });
      return next(input);
    });
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>): Promise<unknown> {
    const requestId = requestIdIn(input.headers);
    return within(requestId, () => {
      if (requestId !== undefined) log.info('update received from a request', { update: input.name });
      return next(input);
    });
  }
}

class RequestIdOutbound implements WorkflowOutboundCallsInterceptor {
  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return next({ ...input, headers: withCurrentRequestId(input.headers) });
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ) {
    return next({ ...input, headers: withCurrentRequestId(input.headers) });
  }

  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ) {
    return next({ ...input, headers: withCurrentRequestId(input.headers) });
  }

  signalWorkflow(input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) {
    return next({ ...input, headers: withCurrentRequestId(input.headers) });
  }

  getLogAttributes(
    input: GetLogAttributesInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
  ): Record<string, unknown> {
    const requestId = handling.getStore();
    return next(requestId === undefined ? input : { ...input, [REQUEST_ID_LOG_KEY]: requestId });
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new RequestIdInbound()],
  outbound: [new RequestIdOutbound()],
});
