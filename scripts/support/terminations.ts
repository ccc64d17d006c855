/**
 * A test may terminate an execution on purpose: a fault test plays the server terminating a run at its history limit,
 * and a test that fills a private task queue with tasks nobody will run removes them when it is done. Such a test
 * terminates with a reason under this prefix, and the suite's last check ("no execution was terminated") tells those
 * apart from an execution something else killed by reading the reason back from the history.
 */
import type { Client } from '@temporalio/client';

export const ON_PURPOSE_PREFIX = 'on purpose, by a test: ';

export function onPurpose(why: string): string {
  return `${ON_PURPOSE_PREFIX}${why}`;
}

/**
 * The executions of a Temporal server that failed, timed out or were terminated other than on purpose by a test, each
 * as one line; and how many tests terminated on purpose.
 */
export async function brokenExecutions(client: Client): Promise<{ broken: string[]; terminatedOnPurpose: number }> {
  const query = "ExecutionStatus = 'Failed' OR ExecutionStatus = 'Terminated' OR ExecutionStatus = 'TimedOut'";
  const broken: string[] = [];
  let terminatedOnPurpose = 0;
  for await (const execution of client.workflow.list({ query })) {
    if (execution.status.name === 'TERMINATED') {
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      const reason = history.events?.at(-1)?.workflowExecutionTerminatedEventAttributes?.reason;
      if (reason?.startsWith(ON_PURPOSE_PREFIX)) {
        terminatedOnPurpose += 1;
        continue;
      }
    }
    broken.push(`${execution.status.name} ${execution.type} ${execution.workflowId} (run ${execution.runId})`);
  }
  return { broken, terminatedOnPurpose };
}
