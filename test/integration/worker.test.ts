import { randomUUID } from 'node:crypto';
import { connectTemporalClient } from '../../config/temporal.js';
import { healthProbeWorkflowId } from '../../workflows/definitions.js';
import { testEnv } from '../support/stack.js';

describe('the worker runs workflows against the real Temporal server', () => {
  test('a health probe completes with the database time, reported by the worker process Temporal says ran it', async () => {
    const env = testEnv();
    const { client, connection } = await connectTemporalClient(env);
    try {
      const handle = await client.workflow.start('healthProbe', {
        taskQueue: env.TEMPORAL_TASK_QUEUE,
        workflowId: healthProbeWorkflowId(randomUUID()),
        workflowExecutionTimeout: '30 seconds',
      });
      const result = await handle.result();
      expect(Math.abs(Date.parse(result.databaseTime) - Date.now())).toBeLessThan(60_000);

      // Who ran the activity, as Temporal recorded it when a worker took the task.
      const history = await handle.fetchHistory();
      const ranBy = (history.events ?? []).flatMap((event) =>
        event.activityTaskStartedEventAttributes?.identity ? [event.activityTaskStartedEventAttributes.identity] : [],
      );
      expect(ranBy).toHaveLength(1);
      expect(result.workerIdentity).toBe(ranBy[0]);
      // A worker process of the stack, not this test process (whose client has an identity of the same form).
      expect(result.workerIdentity).toMatch(/^\d+@.+$/);
      expect(result.workerIdentity).not.toBe(client.options.identity);
    } finally {
      await connection.close();
    }
  });
});
