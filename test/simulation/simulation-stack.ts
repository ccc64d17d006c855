/**
 * What every simulation script runs on: a local Temporal server of its own (TestWorkflowEnvironment with the cached
 * CLI binary and the project's search attributes), workers that run the production workflow bundle with the script's
 * activities, and the loop that explores seeded cases a few at a time. Imported only by the scripts, which run as
 * child processes: Temporal's native worker must not share jest's module registry.
 */
import type { WorkflowExecutionDescription } from '@temporalio/client';
import type proto from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { workerTracingOptions } from '../../observability/temporal-tracing.js';
import { temporalBinary } from '../../scripts/support/temporal.js';
import { createProviderWorker } from '../../worker/provider-worker.js';
import { buildWorkflowBundleCode } from '../../worker/workflow-bundle.js';
import { SA } from '../../workflows/definitions.js';

/** One explored case: its seed, the invariants it broke (none when it passed) and what happened, for the report. */
export interface CaseResult {
  seed: number;
  violations: string[];
  story: string[];
}

/**
 * Starts the script's Temporal server. Injected faults make activities fail by the hundred: their warnings would drown
 * the verdict, so the SDK logs errors only (SIM_LOG_LEVEL=debug for everything).
 */
export async function startSimulationServer(
  logger: DefaultLogger = new DefaultLogger(process.env.SIM_LOG_LEVEL === 'debug' ? 'DEBUG' : 'ERROR'),
): Promise<TestWorkflowEnvironment> {
  Runtime.install({ logger });
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: temporalBinary() },
      searchAttributes: Object.values(SA),
      ui: false,
    },
  });
}

export interface SimulationQueue {
  taskQueue: string;
  /**
   * Executions a worker keeps in its cache; a small cache among dozens of executions evicts runs all the time, so they
   * replay their whole history on the next task, as after a worker restart. The SDK's default when unset.
   */
  maxCachedWorkflows?: number;
}

/**
 * Runs, for each queue, a worker of the production workflow bundle (shared modules, stack depth, interceptors: the
 * simulation checks what production runs) and its provider-queue worker (workflows/local-steps.ts onProviderQueue),
 * all with the given activities. Resolves with the function that stops them and the server.
 */
export async function runSimulationWorkers(
  env: TestWorkflowEnvironment,
  queues: readonly SimulationQueue[],
  activities: object,
): Promise<() => Promise<void>> {
  const workflowBundle = { code: await buildWorkflowBundleCode() };
  const { sinks } = workerTracingOptions(null);
  const workers = await Promise.all(
    queues.flatMap(({ taskQueue, maxCachedWorkflows }) => [
      Worker.create({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle,
        activities,
        sinks,
        ...(maxCachedWorkflows === undefined ? {} : { maxCachedWorkflows }),
      }),
      createProviderWorker({ connection: env.nativeConnection, taskQueue, activities }),
    ]),
  );
  const running = workers.map((worker) => worker.run());
  return async () => {
    for (const worker of workers) worker.shutdown();
    await Promise.all(running);
    await env.teardown();
  };
}

/**
 * Explores `cases` seeds from `firstSeed`, `concurrency` at a time, printing each failed case and the progress every
 * `progressEvery` cases on stderr. A case whose driver throws counts as failed with the error as its violation (and
 * `storyOf(seed)` as its story). With `stopStartingAt`, no case starts after that instant: the seeds explored are
 * `firstSeed` to `firstSeed + explored - 1`.
 */
export async function exploreCases(
  options: {
    cases: number;
    firstSeed: number;
    concurrency: number;
    progressEvery: number;
    stopStartingAt?: number;
    storyOf?: (seed: number) => string[];
  },
  runCase: (seed: number) => Promise<CaseResult>,
): Promise<{ failures: CaseResult[]; seconds: number; explored: number }> {
  const startedAt = Date.now();
  const stopStartingAt = options.stopStartingAt ?? Number.POSITIVE_INFINITY;
  const failures: CaseResult[] = [];
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(options.concurrency, options.cases) }, async () => {
      while (next < options.cases && Date.now() < stopStartingAt) {
        const seed = options.firstSeed + next++;
        let result: CaseResult;
        try {
          result = await runCase(seed);
        } catch (error) {
          result = {
            seed,
            violations: [`driver error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`],
            story: options.storyOf?.(seed) ?? [],
          };
        }
        if (result.violations.length > 0) {
          failures.push(result);
          process.stderr.write(
            `seed ${seed} FAILED: ${result.violations.join('; ')}\n  story: ${result.story.join(' | ')}\n`,
          );
        }
        done += 1;
        if (done % options.progressEvery === 0) {
          const elapsed = Math.round((Date.now() - startedAt) / 1000);
          process.stderr.write(`${done}/${options.cases} cases explored (${elapsed}s)\n`);
        }
      }
    }),
  );
  const seconds = Math.round((Date.now() - startedAt) / 1000);
  process.stderr.write(
    `explored ${done} cases from seed ${options.firstSeed} in ${seconds}s; ${failures.length} failed\n`,
  );
  return { failures, seconds, explored: done };
}

/** A failure and its causes, as ` (message: cause: cause)`, so a stuck step says what its last attempt met. */
function failureChain(failure: proto.temporal.api.failure.v1.IFailure | null | undefined): string {
  const messages: string[] = [];
  for (let each = failure; each && messages.length < 5; each = each.cause) messages.push(each.message ?? '?');
  return messages.length > 0 ? ` (${messages.join(': ')})` : '';
}

/** The activities a run waits on, each as `name attempt N (its last failure and causes)`: a stuck case's report. */
export function pendingActivities(described: WorkflowExecutionDescription): string[] {
  return (described.raw.pendingActivities ?? []).map(
    (activity) => `${activity.activityType?.name} attempt ${activity.attempt}${failureChain(activity.lastFailure)}`,
  );
}
