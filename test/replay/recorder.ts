/**
 * Exports one execution's history in the standard JSON form (as the Temporal CLI and UI export it), for the replay
 * tests. With RECORD_WORKFLOW_HISTORIES=1 the file goes into the committed fixtures and must be NEW: a committed
 * history is the only proof that executions recorded by older code still replay, so the recorder refuses to
 * overwrite one. Name the new fixture after the change that made it (RECORD_HISTORY_SUFFIX=<patch name> appends
 * `-<patch name>` to every scenario name, so a scenario can be recorded again after each deliberate change).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { temporalBinary } from '../../scripts/support/temporal.js';

export const HISTORIES = fileURLToPath(new URL('./histories', import.meta.url));

export const recording = (): boolean => process.env.RECORD_WORKFLOW_HISTORIES === '1';

/** Where a fixture named `name` would be committed (with the optional suffix applied). */
export function fixturePath(name: string, directory = HISTORIES): string {
  const suffix = process.env.RECORD_HISTORY_SUFFIX?.trim();
  return join(directory, `${suffix ? `${name}-${suffix}` : name}.json`);
}

/**
 * Writes `json` as fixture `name` when recording (refusing to replace an existing file), else into `scratchDir`.
 * Returns the path written.
 */
export function writeHistory(json: string, name: string, scratchDir: string, directory = HISTORIES): string {
  if (!recording()) {
    const file = join(scratchDir, `${name}.json`);
    writeFileSync(file, json);
    return file;
  }
  const file = fixturePath(name, directory);
  if (existsSync(file)) {
    throw new Error(
      `refusing to overwrite the committed history ${file}: older fixtures prove in-flight executions still replay; ` +
        'record under a new name (RECORD_HISTORY_SUFFIX=<patch name>)',
    );
  }
  // 'wx' fails if the file appeared meanwhile, so even a concurrent recorder cannot replace a fixture.
  writeFileSync(file, json, { flag: 'wx' });
  return file;
}

/** The history of `workflowId` (its latest run, or `runId`) from the Temporal server at `address`. */
export function showHistory(address: string, workflowId: string, runId?: string): string {
  return execFileSync(
    temporalBinary(),
    [
      'workflow',
      'show',
      '--workflow-id',
      workflowId,
      ...(runId ? ['--run-id', runId] : []),
      '--address',
      address,
      '--output',
      'json',
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Replays histories in a child process (scripts/replay-histories.ts): the replay worker loads Temporal's native core,
 * which must not share jest's module registry.
 */
export function replayHistories(files: string[]): Array<{ file: string; ok: boolean; error?: string }> {
  let output: string;
  try {
    output = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/replay-histories.ts', ...files], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
  } catch (error) {
    output = String((error as { stdout?: string }).stdout ?? '');
  }
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { file: string; ok: boolean; error?: string });
}

/** Exports and writes in one step; see writeHistory. */
export function exportHistory(options: {
  address: string;
  workflowId: string;
  runId?: string;
  name: string;
  scratchDir: string;
}): string {
  return writeHistory(
    showHistory(options.address, options.workflowId, options.runId),
    options.name,
    options.scratchDir,
  );
}
