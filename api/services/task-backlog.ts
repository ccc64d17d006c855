/**
 * The worker's task backlog as the waiting room sees it: how many workflow and activity tasks wait on the main task
 * queue for a poller (Temporal's DescribeTaskQueue with reportStats, approximateBacklogCount). A new buyer's
 * reservation is a workflow task on that queue, so a growing backlog is time every admitted buyer will wait; the
 * admission controller slows admission on it (admission-controller.ts, taskBacklogGoal).
 *
 * Sampled at most every BACKLOG_SAMPLE_MS and never awaited by the tick: the controller reads the last sample, and a
 * sample too old to describe the queue (Temporal slow or away) counts as unknown rather than as healthy or backlogged.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

export const BACKLOG_SAMPLE_MS = 2_000;
/** A sample older than this no longer says anything about the queue. */
const BACKLOG_STALE_MS = 10_000;
const DESCRIBE_TIMEOUT_MS = 2_000;

/** Reads the backlog once: tasks waiting for a poller. */
export type DescribeBacklog = () => Promise<number>;

export class TaskBacklogSampler {
  private sample: { at: number; tasks: number } | null = null;
  private askedAt = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly describe: DescribeBacklog,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** The last sample while it is fresh, else null; starts a new sample when the last ask is BACKLOG_SAMPLE_MS old. */
  current(now = Date.now()): number | null {
    if (!this.inFlight && !this.stopped && now - this.askedAt >= BACKLOG_SAMPLE_MS) void this.refresh(now);
    if (!this.sample || now - this.sample.at > BACKLOG_STALE_MS) return null;
    return this.sample.tasks;
  }

  /** One sample (awaitable for tests); failures leave the last sample to go stale. */
  async refresh(now = Date.now()): Promise<void> {
    this.askedAt = now;
    const asked = (async () => {
      try {
        this.sample = { at: Date.now(), tasks: await this.describe() };
      } catch (error) {
        this.onError(error);
      } finally {
        this.inFlight = null;
      }
    })();
    this.inFlight = asked;
    await asked;
  }

  /**
   * No more samples, and the one in flight has ended: the API closes its Temporal connection after this, and a call
   * still retrying on a closed connection throws from the client's retry timer, outside any request.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.inFlight;
  }
}

const { TaskQueueType, TaskQueueKind } = proto.temporal.api.enums.v1;

/** Workflow plus activity tasks waiting on `taskQueue` (every partition), as the Temporal server counts them. */
export function temporalTaskBacklog(client: Client, taskQueue: string): DescribeBacklog {
  const backlogOf = async (taskQueueType: proto.temporal.api.enums.v1.TaskQueueType): Promise<number> => {
    // A hung frontend must not leave a sample in flight for ever: the sampler would never ask again.
    const described = await client.withDeadline(Date.now() + DESCRIBE_TIMEOUT_MS, () =>
      client.workflowService.describeTaskQueue({
        namespace: client.options.namespace,
        taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType,
        reportStats: true,
      }),
    );
    return Number(described.stats?.approximateBacklogCount ?? 0);
  };
  return async () => {
    const [workflowTasks, activityTasks] = await Promise.all([
      backlogOf(TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW),
      backlogOf(TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY),
    ]);
    return workflowTasks + activityTasks;
  };
}
