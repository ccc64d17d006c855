import { Writable } from 'node:stream';
import { pino } from 'pino';
import { REDACTED_PATHS } from '../../config/logger.js';
import { temporalRuntimeLogger } from '../../observability/temporal-logger.js';

/** A pino logger like createLogger's, writing its lines into an array. */
function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const logger = pino(
    {
      level: 'trace',
      base: { service: 'worker' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    sink,
  );
  return { logger, lines };
}

describe('the Temporal SDK logs through pino: one JSON format for the worker', () => {
  test('each level maps to its pino level, with service, ISO time and the SDK metadata on one JSON line', () => {
    const { logger, lines } = capture();
    const sdk = temporalRuntimeLogger(logger);
    sdk.trace('t');
    sdk.debug('d');
    sdk.info('Worker state changed', { state: 'RUNNING', taskQueue: 'ticketing' });
    sdk.warn('w');
    sdk.log('ERROR', 'e');
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed.map((line) => line.level)).toEqual([10, 20, 30, 40, 50]);
    expect(parsed[2]).toMatchObject({
      service: 'worker',
      component: 'temporal-sdk',
      msg: 'Worker state changed',
      state: 'RUNNING',
      taskQueue: 'ticketing',
    });
    expect(parsed[2]!.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('an error is serialized under err on a single line, stack included, and secrets in metadata are redacted', () => {
    const { logger, lines } = capture();
    temporalRuntimeLogger(logger).error('Activity failed', {
      error: new Error('gateway refused\nsecond line'),
      activity: { token: 'tok_live_123' },
    });
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as { err: { message: string; stack: string }; activity: { token: string } };
    expect(line.err.message).toBe('gateway refused\nsecond line');
    expect(line.err.stack).toContain('Error: gateway refused');
    expect(line.activity.token).toBe('[redacted]');
    expect(lines[0]).not.toContain('tok_live_123');
  });
});
