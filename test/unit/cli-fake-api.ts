/**
 * A stand-in for the service in the command-line client's tests: a real HTTP server on a free port that answers
 * with whatever the test scripts and records every request, so the client's own fetch, form encoding and headers
 * are what is tested.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The body as a form (device flow requests), parsed whatever the content type said. */
  form: URLSearchParams;
}

export interface FakeAnswer {
  status: number;
  body: unknown;
}

export interface FakeApi {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startFakeApi(answer: (request: RecordedRequest) => FakeAnswer): Promise<FakeApi> {
  const requests: RecordedRequest[] = [];
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const url = new URL(incoming.url ?? '/', 'http://fake');
      const request: RecordedRequest = {
        method: incoming.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: incoming.headers,
        form: new URLSearchParams(Buffer.concat(chunks).toString('utf8')),
      };
      requests.push(request);
      const { status, body } = answer(request);
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Time that passes only when the code under test sleeps, so a 15-minute device flow runs in milliseconds. */
export function fakeClock(start = Date.UTC(2026, 10, 1)) {
  let now = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
  };
}

export const deviceAuthorization = (overrides: Record<string, unknown> = {}) => ({
  device_code: 'device-code-secret',
  user_code: 'WDJB-MJHT',
  verification_uri: 'http://127.0.0.1:1/device',
  verification_uri_complete: 'http://127.0.0.1:1/device?user_code=WDJB-MJHT',
  expires_in: 900,
  interval: 5,
  ...overrides,
});

export const oauthError = (error: string): FakeAnswer => ({
  status: 400,
  body: { error, error_description: `fake ${error}` },
});
