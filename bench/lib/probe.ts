/**
 * Preloaded into the benchmarked API and worker (`node --import tsx --import bench/lib/probe.ts …`); no application
 * code changes. Once a second it appends one JSON line to BENCH_PROBE_FILE: event-loop delay percentiles over that
 * second, event-loop utilization and RSS (per thread), so the benchmark can say whether a process was CPU/event-loop bound.
 */
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { isMainThread, threadId } from 'node:worker_threads';

const file = process.env.BENCH_PROBE_FILE;
if (file) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const elu = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    const line = {
      at: Date.now(),
      // --import also runs in worker threads (the Temporal worker runs workflow code in one): tell them apart.
      thread: isMainThread ? 'main' : `thread-${threadId}`,
      lagP50: ms(delay.percentile(50)),
      lagP99: ms(delay.percentile(99)),
      lagMax: ms(delay.max),
      elu: Math.round(elu * 1000) / 1000,
      rssMb: Math.round(process.memoryUsage.rss() / 1048576),
      // This thread's V8 heap: tells which isolate (main or the workflow thread) the resident memory belongs to.
      heapUsedMb: Math.round(process.memoryUsage().heapUsed / 1048576),
      heapTotalMb: Math.round(process.memoryUsage().heapTotal / 1048576),
    };
    delay.reset();
    try {
      appendFileSync(file, `${JSON.stringify(line)}\n`);
    } catch {
      // The probe must never take the process down.
    }
  }, 1000);
  timer.unref();
}
