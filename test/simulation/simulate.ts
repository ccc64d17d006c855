/**
 * Runs run-simulation.ts as a child process (Temporal's native worker must not share jest's module registry) with its
 * own local Temporal server, and reads its JSON summary.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface SimulationSummary {
  cases: number;
  firstSeed: number;
  seconds: number;
  failures: Array<{ seed: number; violations: string[]; story: string[] }>;
}

export function simulate(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ summary: SimulationSummary | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/simulation/run-simulation.ts', ...args], {
      cwd: ROOT,
      // A failing case's histories are kept for diagnosis: a failure that depends on timing may not replay by seed.
      env: { SIM_FAILURE_DIR: join(ROOT, '.dev', 'simulation-failures'), ...process.env, ...env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('exit', () => {
      const line = stdout.split('\n').find((candidate) => candidate.startsWith('{'));
      resolve({ summary: line ? (JSON.parse(line) as SimulationSummary) : null, stderr });
    });
  });
}

/** One line per failing case: its seed, what broke and its story. */
export const describeFailures = (summary: SimulationSummary): string[] =>
  summary.failures.map(
    (failure) => `seed ${failure.seed}: ${failure.violations.join('; ')}\n  story: ${failure.story.join(' | ')}`,
  );
