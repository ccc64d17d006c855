/** Bench-only worker: runs the empty workflow of the orchestration baseline on its own task queue. */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';

Runtime.install({ shutdownSignals: ['SIGINT', 'SIGTERM'] });
const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const connection = await NativeConnection.connect({ address });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: process.env.TEMPORAL_TASK_QUEUE ?? 'bench-empty',
  workflowsPath: fileURLToPath(new URL('./empty-workflow.ts', import.meta.url)),
});
try {
  await worker.run();
} finally {
  await connection.close();
}
