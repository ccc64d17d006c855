import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RESULTS_DIR = fileURLToPath(new URL('../results', import.meta.url));

/** The middle sample (the upper one of an even count), so that one disturbed round moves nothing. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Saves a micro-bench's results as bench/results/<name>.json and says where. */
export function saveResults(name: string, results: object): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results: bench/results/${name}.json`);
}

/** The box a result was measured on, saved with every result so figures from different machines are not compared. */
export function machineFacts(): { cpus: number; cpuModel: string | null; memoryGb: number; kernel: string } {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? null,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
  };
}
