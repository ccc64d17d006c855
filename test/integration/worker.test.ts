import { randomUUID } from 'node:crypto';
import { connectTemporalClient } from '../../config/temporal.js';
import { healthProbeWorkflowId } from '../../workflows/definitions.js';
import { testEnv } from '../support/stack.js';

describe('the worker runs workflows against the real Temporal server', () => {
  test('a health probe workflow completes with the database time read by its activity', async () => {
    const env = testEnv();
    const { client, connection } = await connectTemporalClient(env);
    try {
      const result = await client.workflow.execute('healthProbe', {
        taskQueue: env.TEMPORAL_TASK_QUEUE,
        workflowId: healthProbeWorkflowId(randomUUID()),
        workflowExecutionTimeout: '30 seconds',
      });
      expect(result.workerIdentity).toBe(env.TEMPORAL_TASK_QUEUE);
      expect(Math.abs(Date.parse(result.databaseTime) - Date.now())).toBeLessThan(60_000);
    } finally {
      await connection.close();
    }
  });
});
