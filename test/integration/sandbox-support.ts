/**
 * Helpers for the sandbox tests: a sandbox on free ports, its control API, and a tiny HTTP receiver that records
 * the notifications and webhooks the sandbox sends (raw body and headers, so signatures can be verified).
 */
import { EventEmitter } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type SandboxHandle, type StartSandboxOptions, startSandbox } from '../../sandbox/server.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  rawBody: string;
  json: unknown;
}

export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  readonly #server: Server;
  readonly #events = new EventEmitter();
  readonly #base: string;
  /** Status the receiver answers with (change it to simulate a failing endpoint). */
  status = 200;

  private constructor(server: Server, base: string) {
    this.#server = server;
    this.#base = base;
  }

  static async start(): Promise<Receiver> {
    let receiver: Receiver | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const rawBody = Buffer.concat(chunks).toString('utf8');
        const url = new URL(request.url ?? '/', 'http://receiver');
        let json: unknown = null;
        try {
          json = JSON.parse(rawBody);
        } catch {
          json = null;
        }
        const received: ReceivedRequest = {
          method: request.method ?? 'GET',
          path: url.pathname,
          query: url.searchParams,
          headers: request.headers,
          rawBody,
          json,
        };
        if (!receiver) {
          response.writeHead(503).end();
          return;
        }
        receiver.requests.push(received);
        response.writeHead(receiver.status, { 'content-type': 'application/json' });
        response.end('{"received":true}');
        receiver.#events.emit('request', received);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    receiver = new Receiver(server, `http://127.0.0.1:${port}`);
    return receiver;
  }

  url(path: string): string {
    return `${this.#base}${path}`;
  }

  matching(predicate: (request: ReceivedRequest) => boolean): ReceivedRequest[] {
    return this.requests.filter(predicate);
  }

  /** The first request (already received or arriving within the timeout) that matches. */
  waitFor(predicate: (request: ReceivedRequest) => boolean, timeoutMs = 5000): Promise<ReceivedRequest> {
    const found = this.requests.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const onRequest = (request: ReceivedRequest): void => {
        if (!predicate(request)) return;
        clearTimeout(timer);
        this.#events.off('request', onRequest);
        resolve(request);
      };
      const timer = setTimeout(() => {
        this.#events.off('request', onRequest);
        reject(new Error(`no matching request within ${timeoutMs} ms (received ${this.requests.length})`));
      }, timeoutMs);
      this.#events.on('request', onRequest);
    });
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

export function startTestSandbox(options: Partial<StartSandboxOptions> = {}): Promise<SandboxHandle> {
  return startSandbox({ httpPort: 0, smtpPort: 0, notificationRetryDelaysMs: [], ...options });
}

export interface ControlResponse<T = unknown> {
  status: number;
  body: T;
}

/** Calls the sandbox control API. */
export async function control<T = { data?: unknown; error?: { code: string; message: string } }>(
  sandbox: SandboxHandle,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body?: unknown,
): Promise<ControlResponse<T>> {
  const response = await fetch(`${sandbox.httpUrl}/control${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

/** A record reader for JSON of unknown shape. */
export function at(value: unknown, ...path: Array<string | number>): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

/** The error a promise rejects with (fails the test when it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}
