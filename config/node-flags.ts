/**
 * V8 heap settings of the long-running processes, the same wherever they start in production's shape: `npm run dev`,
 * the test stack (scripts/test.ts), the flash-sale bench, the fault harness's stacks, and docker-compose.yml, the
 * Dockerfile and package.json's scripts (literal there; test/unit/node-flags.test.ts checks they agree).
 *
 * Without them V8 sizes each heap from the machine's memory (about 4 GB on a 24 GB box) and lets garbage pile up
 * before it collects: in the flash-sale bench the API reached 636 MB of RSS and the worker 1,222 MB, with live sets a
 * fraction of that. A smaller young generation is collected more often but each time faster, and a bounded old
 * generation is collected before it grows; the bench measured what that costs in CPU (docs/benchmarks.md).
 * The limit applies to every V8 isolate of the process, the worker's workflow threads included.
 */
export type LongRunningProcess = 'api' | 'worker';

export const PROCESS_NODE_FLAGS: Readonly<Record<LongRunningProcess, readonly string[]>> = {
  api: ['--max-old-space-size=256', '--max-semi-space-size=8'],
  worker: ['--max-old-space-size=256', '--max-semi-space-size=8'],
};

const ENTRIES: Readonly<Record<string, LongRunningProcess>> = { 'api/main.ts': 'api', 'worker/main.ts': 'worker' };

/** The flags for the process started from `entry` (relative to the repository), none for others (the sandbox). */
export function nodeFlagsFor(entry: string): readonly string[] {
  const process = ENTRIES[entry];
  return process ? PROCESS_NODE_FLAGS[process] : [];
}

/**
 * The C allocator's settings for the same processes, as environment: glibc reads them once, as the process starts.
 *
 * The worker runs V8 on three threads (main and two workflow threads) beside the Temporal core's Rust threads, and
 * glibc gives threads that allocate at once arenas of their own, up to 8 per core, whose freed memory is seldom
 * handed back. In the crowd bench the worker's RSS climbed to 499–522 MB while its three V8 heaps together held
 * 220 MB; with two arenas it peaked at 467 MB, the API at 350 MB against 362–394 MB
 * (`crowd-2026-11-30-20000-malloc-arenas-2` against the seven runs before it). It costs CPU: about a tenth more per
 * purchase in the flash-sale bench's alternating runs of 2026-11-27 (docs/benchmarks.md), which kept the arenas
 * uncapped then; memory is chosen now because the 512 MB line was crossed in every crowd run and the CPU target is
 * missed about twice over either way. Docker images and docker-compose.yml set the same (checked by
 * test/unit/node-flags.test.ts).
 */
export const PROCESS_NATIVE_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/** The environment to add for the process started from `entry`: the allocator's settings for the API and the worker. */
export function nativeEnvFor(entry: string): Readonly<Record<string, string>> {
  return ENTRIES[entry] ? PROCESS_NATIVE_ENV : {};
}
