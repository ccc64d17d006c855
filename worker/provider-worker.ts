/**
 * The worker of the provider queue (workflows/definitions.ts providerTaskQueueOf): refunds, mass-refund pages and
 * membership polls, with no workflows of its own. Built here once for the worker process, the test workers and the
 * simulations, so none of them leaves those activities without a poller.
 */
import type { ActivityInterceptorsFactory, NativeConnection, WorkerOptions } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import { providerTaskQueueOf } from '../workflows/definitions.js';

export interface ProviderWorkerOptions {
  connection: NativeConnection;
  /** The main queue whose provider calls this worker serves. */
  taskQueue: string;
  activities: object;
  namespace?: string;
  dataConverter?: WorkerOptions['dataConverter'];
  activityInterceptors?: ActivityInterceptorsFactory[];
  /** Activity starts per second across every worker of the queue (enforced by the server); none when omitted. */
  activitiesPerSecond?: number;
  maxConcurrentActivities?: number;
  /** The process's deployment version (WORKER_VERSIONING), so pinned executions' provider calls stay on it. */
  workerDeploymentOptions?: WorkerOptions['workerDeploymentOptions'];
}

export function createProviderWorker(options: ProviderWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: providerTaskQueueOf(options.taskQueue),
    dataConverter: options.dataConverter,
    activities: options.activities,
    interceptors: { activity: options.activityInterceptors ?? [] },
    shutdownGraceTime: '10 seconds',
    maxTaskQueueActivitiesPerSecond: options.activitiesPerSecond,
    maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities,
    workerDeploymentOptions: options.workerDeploymentOptions,
  });
}
