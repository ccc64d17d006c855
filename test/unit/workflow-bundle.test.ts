/**
 * The worker's workflow bundle: the workflow realm's stack-trace depth is set, the inline source map the Temporal
 * SDK reads from the end of the bundle (to source-map workflow stack traces) is still whole and still ours, and our
 * workflow modules are evaluated once per workflow thread and shared by its executions, which is safe only while none
 * of them keeps state at module scope.
 * Built in a child process as the worker builds it: bundling loads @temporalio/worker, which must not share jest's
 * module registry.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PRELOADED_WORKFLOW_MODULES, WORKFLOW_STACK_TRACE_LIMIT } from '../../worker/workflow-bundle.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SOURCE_MAP_COMMENT = '//# sourceMappingURL=data:';
let code = '';

beforeAll(() => {
  const scratch = mkdtempSync(join(tmpdir(), 'workflow-bundle-'));
  try {
    const target = join(scratch, 'bundle.js');
    execFileSync(process.execPath, ['--import', 'tsx', 'worker/build-workflow-bundle.ts', target], {
      cwd: ROOT,
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: 'ignore',
    });
    code = readFileSync(target, 'utf8');
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}, 60_000);

test("the bundle sets the workflow realm's stack-trace depth after its code and before its source map", () => {
  const sourceMapAt = code.lastIndexOf(SOURCE_MAP_COMMENT);
  const limitAt = code.lastIndexOf(`;Error.stackTraceLimit = ${WORKFLOW_STACK_TRACE_LIMIT};`);
  expect(WORKFLOW_STACK_TRACE_LIMIT).toBeGreaterThanOrEqual(3);
  expect(limitAt).toBeGreaterThan(0);
  // After all of the bundle's code (so it maps no line differently) and before the source map comment.
  expect(limitAt).toBeLessThan(sourceMapAt);
  expect(code.slice(limitAt, sourceMapAt).trim()).toBe(`;Error.stackTraceLimit = ${WORKFLOW_STACK_TRACE_LIMIT};`);
});

test('the inline source map is intact and maps the bundle to our workflow sources', () => {
  const sourceMapAt = code.lastIndexOf(SOURCE_MAP_COMMENT);
  const base64 = code.slice(code.indexOf('base64,', sourceMapAt) + 'base64,'.length).trimEnd();
  const sourceMap = JSON.parse(Buffer.from(base64, 'base64').toString()) as { sources: string[]; mappings: string };
  expect(sourceMap.mappings.length).toBeGreaterThan(1000);
  expect(sourceMap.sources.some((source) => source.endsWith('workflows/checkout.ts'))).toBe(true);
  // Every mapped line exists in the code before the comment: nothing was inserted in front of mapped lines.
  const mappedLines = sourceMap.mappings.split(';').length;
  const codeLines = code.slice(0, sourceMapAt).split('\n').length;
  expect(mappedLines).toBeLessThanOrEqual(codeLines - 1);
});

const bundledSources = (): string[] => {
  const sourceMapAt = code.lastIndexOf(SOURCE_MAP_COMMENT);
  const base64 = code.slice(code.indexOf('base64,', sourceMapAt) + 'base64,'.length).trimEnd();
  return (JSON.parse(Buffer.from(base64, 'base64').toString()) as { sources: string[] }).sources;
};

test('the workflow thread evaluates our workflow modules once, before any execution, and shares them', () => {
  expect(PRELOADED_WORKFLOW_MODULES.map((path) => relative(ROOT, path))).toEqual(['workflows/index.ts']);
  const hook = code.slice(code.indexOf('exports.preloadModules = function preloadModules() {'));
  const body = hook.slice(0, hook.indexOf('\n}\n'));
  expect(body).toContain('"./workflows/index.ts"');
});

/**
 * A module shared by every execution of the thread must not keep state of its own: a module-scope `let`, or a
 * collection built at module scope, would carry one execution's values into the next and break replay. (Exported
 * objects are frozen by the SDK, so writing to one fails at once; these would not fail, they would leak.) The
 * interceptor modules are evaluated per execution and may keep state (span counters, AsyncLocalStorage).
 */
test('no bundled module of ours keeps mutable state at module scope', () => {
  const perExecution = new Set(['observability/workflow-tracing.ts', 'observability/workflow-request-id.ts']);
  const ours = bundledSources()
    .map((source) => (isAbsolute(source) ? relative(ROOT, source) : source))
    .filter((source) => /^(workflows|domain|observability|activities|config|entities)\//.test(source))
    .filter((source) => source.endsWith('.ts') && !perExecution.has(source));
  expect(ours).toContain('workflows/checkout.ts');
  const moduleState = /^(export )?(let|var) |^(export )?const \w+(: [^=]+)? = new (Map|Set|WeakMap|WeakSet|Array)\b/;
  const offenders = ours.flatMap((source) =>
    readFileSync(join(ROOT, source), 'utf8')
      .split('\n')
      .map((line, index) => ({ line, at: `${source}:${index + 1}` }))
      .filter(({ line }) => moduleState.test(line))
      .map(({ line, at }) => `${at}: ${line.trim()}`),
  );
  expect(offenders).toEqual([]);
});
