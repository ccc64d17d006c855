/**
 * CPU of the workflow code itself: replays recorded purchase histories many times in one replay worker and reports
 * CPU per replayed purchase, for the bundle as the worker builds it and for variants of it, alternating rounds so that
 * whatever else the machine does falls on every variant alike. Replay runs the same activations a live worker runs
 * (without the server round trips), so it isolates what the workflow thread spends per purchase.
 *
 *   npm run bench -- workflow-cpu [--rounds 4] [--replays 150]
 *
 * Results: bench/results/workflow-cpu-<date>.json.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { loadEnv } from '../config/env.js';
import { temporalDataConverter } from '../config/payload-codec.js';
import { workerTracingOptions } from '../observability/temporal-tracing.js';
import { buildWorkflowBundleCode, WORKFLOW_STACK_TRACE_LIMIT } from '../worker/workflow-bundle.js';
import { median, saveResults } from './lib/results.js';
import { dropVmCallTimeouts } from './lib/vm-call-timeouts.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HISTORIES = join(ROOT, 'test', 'replay', 'histories');
/** The happy paths the bench's flash sale drives: a card purchase, and a reservation that lapses unpaid. */
const PURCHASES = ['checkout-card-approved.json', 'checkout-expired.json'];

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== 'workflow-cpu'),
  options: {
    rounds: { type: 'string', default: '4' },
    replays: { type: 'string', default: '150' },
    name: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const replaysPerRound = Number(values.replays);

interface Variant {
  name: string;
  /** Frames the SDK's per-promise stack capture records; null keeps V8's default (10). */
  stackTraceLimit: number | null;
  /** Workflow modules evaluated once per workflow thread and shared (worker/workflow-bundle.ts), or per execution. */
  preloadWorkflowModules: boolean;
  /** `sdk`: every call into the sandbox with the SDK's timeout (a watchdog thread per call), as the worker runs. */
  vmCallTimeout: 'sdk' | 'off';
}
const variants: Variant[] = [
  {
    name: 'SDK as shipped (10 frames, modules per execution, vm call timeout)',
    stackTraceLimit: null,
    preloadWorkflowModules: false,
    vmCallTimeout: 'sdk',
  },
  {
    name: `${WORKFLOW_STACK_TRACE_LIMIT} frames, modules per execution, vm call timeout`,
    stackTraceLimit: WORKFLOW_STACK_TRACE_LIMIT,
    preloadWorkflowModules: false,
    vmCallTimeout: 'sdk',
  },
  {
    name: `worker (${WORKFLOW_STACK_TRACE_LIMIT} frames, shared modules, vm call timeout)`,
    stackTraceLimit: WORKFLOW_STACK_TRACE_LIMIT,
    preloadWorkflowModules: true,
    vmCallTimeout: 'sdk',
  },
  {
    name: `${WORKFLOW_STACK_TRACE_LIMIT} frames, shared modules, no vm call timeout`,
    stackTraceLimit: WORKFLOW_STACK_TRACE_LIMIT,
    preloadWorkflowModules: true,
    vmCallTimeout: 'off',
  },
];

Runtime.install({ logger: new DefaultLogger('WARN') });
// As the worker runs them: the payload codec (histories are recorded encrypted) and the tracing sinks.
const dataConverter = temporalDataConverter(loadEnv());
const { sinks } = workerTracingOptions(null);
const histories = PURCHASES.map((file) => JSON.parse(readFileSync(join(HISTORIES, file), 'utf8')) as unknown);

function* replayInputs(count: number) {
  for (let index = 0; index < count; index += 1) {
    yield { workflowId: `checkout-bench-${index}`, history: histories[index % histories.length] };
  }
}

/** Replays run on this thread, so the variant's vm call timeout is switched here (bench/lib/vm-call-timeouts.ts). */
async function replayRound(variant: Variant, count: number): Promise<{ cpuMs: number; wallMs: number }> {
  const code = bundles.get(variant.name) ?? '';
  const restoreVmCalls = variant.vmCallTimeout === 'off' ? dropVmCallTimeouts() : () => undefined;
  try {
    return await replay(code, count);
  } finally {
    restoreVmCalls();
  }
}

async function replay(code: string, count: number): Promise<{ cpuMs: number; wallMs: number }> {
  const cpuBefore = process.cpuUsage();
  const startedAt = performance.now();
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { code }, replayName: 'workflow-cpu', dataConverter, sinks },
    replayInputs(count),
  )) {
    if (result.error) failures.push(String(result.error));
  }
  if (failures.length > 0) throw new Error(`${failures.length} replays failed, first: ${failures[0]}`);
  const cpu = process.cpuUsage(cpuBefore);
  return { cpuMs: (cpu.user + cpu.system) / 1000, wallMs: performance.now() - startedAt };
}

const bundles = new Map<string, string>();
for (const variant of variants) {
  const { stackTraceLimit, preloadWorkflowModules } = variant;
  bundles.set(variant.name, await buildWorkflowBundleCode({ stackTraceLimit, preloadWorkflowModules }));
}

// Warm-up (JIT, bundle load) once per variant; not counted.
for (const variant of variants) await replayRound(variant, 20);

const samples = new Map<string, number[]>(variants.map((variant) => [variant.name, []]));
for (let round = 0; round < rounds; round += 1) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  for (const variant of order) {
    const { cpuMs } = await replayRound(variant, replaysPerRound);
    samples.get(variant.name)?.push(cpuMs / replaysPerRound);
  }
}

const baseline = median(samples.get(variants[0]?.name ?? '') ?? []);
const results = variants.map((variant) => {
  const perReplay = samples.get(variant.name) ?? [];
  return {
    variant: variant.name,
    stackTraceLimit: variant.stackTraceLimit,
    preloadWorkflowModules: variant.preloadWorkflowModules,
    vmCallTimeout: variant.vmCallTimeout,
    cpuMsPerReplayedWorkflow: Number(median(perReplay).toFixed(3)),
    samples: perReplay.map((value) => Number(value.toFixed(3))),
    ratioToDefault: Number((median(perReplay) / baseline).toFixed(3)),
  };
});
console.table(results.map(({ samples: _samples, ...row }) => row));

saveResults(values.name ?? `workflow-cpu-${new Date().toISOString().slice(0, 10)}`, {
  measuredAt: new Date().toISOString(),
  histories: PURCHASES,
  rounds,
  replaysPerRound,
  results,
});
