/** Bench-only worker: runs the empty workflow of the orchestration baseline on its own task queue. */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadEnv } from '../../config/env.js';
import { temporalDataConverter } from '../../config/payload-codec.js';

Runtime.install({ shutdownSignals: ['SIGINT', 'SIGTERM'] });
const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const connection = await NativeConnection.connect({ address });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: process.env.TEMPORAL_TASK_QUEUE ?? 'bench-empty',
  // The same payload codec as the checkout's worker: the baseline pays the same encryption, and its client encrypts.
  dataConverter: temporalDataConverter(loadEnv()),
  workflowsPath: fileURLToPath(new URL('./empty-workflow.ts', import.meta.url)),
});
try {
  await worker.run();
} finally {
  await connection.close();
}
