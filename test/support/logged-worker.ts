/**
 * A worker process whose log lines the test reads: started from `script` on `taskQueue` with extra environment, its
 * stdout kept as parsed JSON lines (pino). Resolves once the worker logs `ready`.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export type LogLine = Record<string, unknown>;

export interface LoggedWorker {
  /** Every JSON line the worker wrote to stdout so far. */
  lines(): LogLine[];
  /** SIGTERM, then waits for the exit (the worker drains and flushes its spans). */
  close(): Promise<void>;
}

export async function startLoggedWorker(
  script: string,
  taskQueue: string,
  env: Record<string, string>,
): Promise<LoggedWorker> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, ...env, NODE_OPTIONS: '', TEMPORAL_TASK_QUEUE: taskQueue },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  let pending = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start: ${stderr}`)), 90_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const complete = pending.split('\n');
      pending = complete.pop() ?? '';
      for (const text of complete) {
        if (!text.startsWith('{')) continue;
        const line = JSON.parse(text) as LogLine;
        lines.push(line);
        if (line.msg === 'ready') {
          clearTimeout(timer);
          resolve();
        }
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${code}): ${stderr}`));
    });
  });
  await ready;
  return {
    lines: () => [...lines],
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(force);
    },
  };
}
