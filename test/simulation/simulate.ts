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
  /** Card charges: local ones answered, failed or timed out (then charged on the task queue), and task-queue ones. */
  cardCharges?: {
    attempts: number;
    localAnswered: number;
    localFailed: number;
    localTimedOut: number;
    taskQueue: number;
  };
  failures: Array<{ seed: number; violations: string[]; story: string[] }>;
}

/**
 * Runs a simulation script in a child process (Temporal's native worker must not share jest's module registry) and
 * reads the one JSON line it prints as its report; null when it printed none (its stderr says why).
 */
export function runReportingScript<Report>(
  script: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<{ report: Report | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env, NODE_OPTIONS: '' },
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
      resolve({ report: line ? (JSON.parse(line) as Report) : null, stderr });
    });
  });
}

export async function simulate(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ summary: SimulationSummary | null; stderr: string }> {
  // A failing case's histories are kept for diagnosis: a failure that depends on timing may not replay by seed.
  const { report, stderr } = await runReportingScript<SimulationSummary>('test/simulation/run-simulation.ts', args, {
    SIM_FAILURE_DIR: process.env.SIM_FAILURE_DIR ?? join(ROOT, '.dev', 'simulation-failures'),
    ...env,
  });
  return { summary: report, stderr };
}

/** One line per failing case: its seed, what broke and its story. */
export const describeFailures = (summary: SimulationSummary): string[] =>
  summary.failures.map(
    (failure) => `seed ${failure.seed}: ${failure.violations.join('; ')}\n  story: ${failure.story.join(' | ')}`,
  );
