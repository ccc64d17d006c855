/**
 * The workflow bundle every worker runs and every replay checks: our workflows, the workflow interceptors (tracing,
 * request ids), and the stack-trace depth of the workflow realm.
 */
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../observability/temporal-tracing.js';

/**
 * Frames V8 records for a stack trace made in workflow code. The Temporal SDK records a stack trace, source-mapped
 * frame by frame, for every promise workflow code creates (for the `__stack_trace` query that the Temporal UI shows),
 * and has no switch to turn that off. With V8's default of 10 frames it was a third of the workflow thread's busy
 * time in a CPU profile of the flash-sale bench; at 5, replaying a purchase cost 12–20% less CPU in two runs
 * (`npm run bench -- workflow-cpu`) and the UI's stack trace still shows where in our code each promise waits
 * (test/e2e/temporal-ui.test.ts). Errors thrown in workflow code keep 5 frames too.
 */
export const WORKFLOW_STACK_TRACE_LIMIT = 5;

const SOURCE_MAP_COMMENT = '//# sourceMappingURL=data:';
/** `.ts` from source (tsx, jest), `.js` from the compiled output (dist/, the production image). */
const MODULE_EXTENSION = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
const WORKFLOWS_PATH = fileURLToPath(new URL(`../workflows/index${MODULE_EXTENSION}`, import.meta.url));

/**
 * Modules the workflow thread evaluates once, when it starts, and shares between executions, instead of evaluating
 * them again for every execution it creates (a new checkout, or one replayed after leaving the cache). Without this,
 * each cached execution keeps its own copy of every module its workflow imports: our workflow modules and the parts of
 * @temporalio/workflow that the SDK's bootstrap does not load (its public API: proxyActivities, condition, log, …).
 * Safe for these because none keeps state of its own at module scope: the SDK's functions find the current execution
 * through the activator the sandbox swaps in per call, and ours hold only constants (the SDK freezes what shared
 * modules export, and test/unit/workflow-bundle.test.ts refuses a module-scope `let` or collection in any of ours).
 * The interceptor modules are not shared: the tracing one counts span ids and keeps its AsyncLocalStorage per
 * execution.
 */
export const PRELOADED_WORKFLOW_MODULES: readonly string[] = [WORKFLOWS_PATH];

export interface WorkflowBundleOptions {
  /** Frames V8 records per stack trace in the workflow realm; `null` keeps V8's default (the bench's baseline). */
  stackTraceLimit?: number | null;
  /** Share PRELOADED_WORKFLOW_MODULES between executions (off: every execution evaluates them, the SDK's default). */
  preloadWorkflowModules?: boolean;
  /**
   * Another copy of the workflows' entry module (workflows/index.ts) to bundle instead of ours: the upgrade test builds
   * its version 2 from a changed copy.
   */
  workflowsPath?: string;
}

/**
 * The bundle's code. The depth is set after the bundle's own code, on a line of its own, so that the inline source
 * map (line-based) still maps every line, and before that source map's comment, which the SDK reads to the end of the
 * file.
 */
export async function buildWorkflowBundleCode({
  stackTraceLimit = WORKFLOW_STACK_TRACE_LIMIT,
  preloadWorkflowModules = true,
  workflowsPath = WORKFLOWS_PATH,
}: WorkflowBundleOptions = {}): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    preloadModules: preloadWorkflowModules ? [workflowsPath] : [],
    // Traced or not, every worker runs the same workflow code: replay never depends on configuration.
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    logger: { log: ignore, trace: ignore, debug: ignore, info: ignore, warn: console.warn, error: console.error },
  });
  if (stackTraceLimit === null) return code;
  const sourceMapAt = code.lastIndexOf(SOURCE_MAP_COMMENT);
  if (sourceMapAt < 0) throw new Error('the workflow bundle has no inline source map');
  const depth = `;Error.stackTraceLimit = ${Math.max(0, Math.trunc(stackTraceLimit))};\n`;
  return `${code.slice(0, sourceMapAt)}\n${depth}${code.slice(sourceMapAt)}`;
}

function ignore(): void {}
