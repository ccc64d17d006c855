/**
 * Pieces of a stack private to one test, next to the shared one: a worker on a task queue of its own (started when
 * the test says, so work can wait on a queue nobody polls), and a sandbox of its own whose faults reach no other test
 * (the sandbox's fault switch is global to the process it runs in).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePorts, httpOk } from '../../scripts/support/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface PrivateProcess {
  close(): Promise<void>;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

export const privateTaskQueue = (label: string): string =>
  `${label}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * A worker (test/support/flaky-worker.ts with no failures injected) polling `taskQueue`, with extra environment
 * (a private SANDBOX_URL, for instance). Resolves once it polls.
 */
export const startPrivateWorker = (taskQueue: string, env: Record<string, string> = {}): Promise<PrivateProcess> =>
  startWorkerScript('test/support/flaky-worker.ts', taskQueue, env);

/** A worker process started from `script` (it prints "ready" once it polls `taskQueue`). */
export async function startWorkerScript(
  script: string,
  taskQueue: string,
  env: Record<string, string> = {},
): Promise<PrivateProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, ...env, NODE_OPTIONS: '', TEMPORAL_TASK_QUEUE: taskQueue },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start: ${output}`)), 90_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${code}): ${output}`));
    });
  });
  return { close: () => stop(child) };
}

/** A sandbox process of its own (gateways, seat map, SMTP) on free ports. */
export async function startPrivateSandbox(): Promise<PrivateProcess & { url: string; smtpPort: number }> {
  const [httpPort, smtpPort] = await freePorts(2);
  if (httpPort === undefined || smtpPort === undefined) throw new Error('no free ports');
  const child = spawn(process.execPath, ['--import', 'tsx', 'sandbox/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      LOG_LEVEL: 'warn',
      SANDBOX_PORT: String(httpPort),
      SANDBOX_SMTP_PORT: String(smtpPort),
      // Its gateways notify nobody: the tests that use it drive the seat map only.
      GATEWAY_B_WEBHOOK_URL: '',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const url = `http://127.0.0.1:${httpPort}`;
  const deadline = Date.now() + 60_000;
  while (!(await httpOk(`${url}/control/health`).catch(() => false))) {
    if (child.exitCode !== null) throw new Error(`private sandbox exited (${child.exitCode}): ${output}`);
    if (Date.now() > deadline) {
      await stop(child);
      throw new Error(`private sandbox did not start: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { url, smtpPort, close: () => stop(child) };
}
