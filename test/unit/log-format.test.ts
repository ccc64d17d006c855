/**
 * One log format everywhere (issue 31): ISO time once, the service's name, and request lines that say which query
 * parameters were sent but never their values (a buyer's search term, a token in a link).
 */
import { Writable } from 'node:stream';
import { createLogger, withoutQueryValues } from '../../config/logger.js';

function capture(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, stream };
}

test('a query string keeps its parameter names and loses every value', () => {
  expect(withoutQueryValues('/api/public/events?q=ana%20gomez&limit=5&q=x')).toBe(
    '/api/public/events?q=[redacted]&limit=[redacted]',
  );
  expect(withoutQueryValues('/health/live')).toBe('/health/live');
});

test('a request line carries the service, one ISO time and no query value or secret header', async () => {
  const { lines, stream } = capture();
  const logger = createLogger({ name: 'api', destination: stream });
  const request = {
    method: 'GET',
    url: '/api/v1/customer/orders?email=ana@example.com',
    ip: '203.0.113.9',
    host: 'tickets.example',
    socket: { remotePort: 51234 },
    headers: { authorization: 'Bearer tk_live_secret' },
  };
  logger.info({ req: request }, 'incoming request');
  logger.flush();
  await new Promise((resolve) => setImmediate(resolve));

  const [line] = lines;
  expect(line).toBeDefined();
  expect(line?.match(/"time":/g)).toHaveLength(1);
  const entry = JSON.parse(line ?? '{}');
  expect(entry).toMatchObject({ service: 'api', msg: 'incoming request' });
  expect(new Date(entry.time).toISOString()).toBe(entry.time);
  expect(entry.req).toEqual({
    method: 'GET',
    url: '/api/v1/customer/orders?email=[redacted]',
    host: 'tickets.example',
    remoteAddress: '203.0.113.9',
    remotePort: 51234,
  });
  expect(line).not.toContain('ana@example.com');
  expect(line).not.toContain('tk_live_secret');
});
