/**
 * What the Temporal SDK's isolate execution timeout costs. The SDK passes it (5 s) to every call into a workflow
 * sandbox, several per activation, and Node enforces a vm timeout by starting a watchdog thread for the call and
 * joining it after: about 120 µs per call against 1–2 µs without one. The workflow-cpu bench replays purchases with and
 * without it (replays run on the bench's own thread, where this switch applies).
 *
 * The worker keeps the SDK's timeout: it is what cuts an activation that never returns (an endless loop in workflow
 * code) instead of letting it hold the workflow thread, and in the flash-sale bench dropping it saved about 4 ms of
 * the ~140 ms a purchase costs across the processes (README, "Benchmarks").
 */
import vm from 'node:vm';

type RunOptions = vm.RunningCodeOptions | string | undefined;

function withoutTimeout(options: RunOptions): RunOptions {
  if (options === undefined || typeof options === 'string' || options.timeout === undefined) return options;
  const { timeout: _timeout, ...rest } = options;
  return rest;
}

/** Drops the `timeout` option of every `node:vm` call of this thread; returns the function that puts it back. */
export function dropVmCallTimeouts(): () => void {
  const runInContext = vm.Script.prototype.runInContext;
  const runCodeInContext = vm.runInContext;
  vm.Script.prototype.runInContext = function runInContextWithoutTimeout(
    this: vm.Script,
    context: vm.Context,
    options?: vm.RunningCodeOptions,
  ) {
    return runInContext.call(this, context, withoutTimeout(options) as vm.RunningCodeOptions | undefined);
  };
  vm.runInContext = ((code: string, context: vm.Context, options?: RunOptions) =>
    runCodeInContext(code, context, withoutTimeout(options))) as typeof vm.runInContext;
  return () => {
    vm.Script.prototype.runInContext = runInContext;
    vm.runInContext = runCodeInContext;
  };
}
