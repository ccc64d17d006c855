/**
 * The gateways' request budget on the stack's Redis (activities/gateway-budget.ts): one bucket per gateway shared by
 * every process, so two workers together keep the rate one alone would; a 429's hold reaches every process; and
 * waits are real (a burst of 2× the rate takes about a second). The in-process fallback is tested without Redis in
 * test/unit/gateway-budget.test.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { GatewayBudget } from '../../activities/gateway-budget.js';
import { createRedis } from '../../config/redis.js';
import { testEnv } from '../support/stack.js';

let redis: Redis;
beforeAll(async () => {
  redis = createRedis(testEnv().REDIS_URL);
  await redis.ping();
});
afterAll(() => redis.disconnect());

/** A budget as one worker process holds it, on a bucket of this test's own; waits recorded, not slept, unless `sleep`. */
function processBudget(keyPrefix: string, requestsPerSecond: number, sleep = false, maxWaitMs?: number) {
  const waits: number[] = [];
  const budget = new GatewayBudget(redis, {
    requestsPerSecond: { GATEWAY_A: requestsPerSecond, GATEWAY_B: requestsPerSecond },
    keyPrefix,
    // The Redis path is what is tested here: a busy box's slow answer must not count as Redis down.
    redisTimeoutMs: 10_000,
    ...(maxWaitMs === undefined ? {} : { maxWaitMs }),
    ...(sleep
      ? {}
      : {
          wait: async (ms: number) => {
            waits.push(ms);
          },
        }),
    onRedisUnavailable: (_gateway, error) => {
      throw new Error(`Redis was judged unavailable: ${String(error)}`);
    },
  });
  return { budget, waits };
}

test('two processes share one bucket: one second’s burst between them, then 1/rate apart', async () => {
  const prefix = `test-gateway-budget:${randomUUID()}`;
  const first = processBudget(prefix, 10);
  const second = processBudget(prefix, 10);
  const taken = [];
  const started = Date.now();
  for (let i = 0; i < 30; i++) taken.push(await (i % 2 === 0 ? first : second).budget.take('GATEWAY_A'));
  // Tokens the clock refilled while the loop ran (one per 100 ms; the box may be busy).
  const refilled = Math.ceil((Date.now() - started) / 100);
  expect(taken.every((take) => take.source === 'redis')).toBe(true);
  // Each process alone would have let its own 10 through at once (20 in all); shared, 10 go at once (and what the
  // clock refilled meanwhile), and the rest are booked 100 ms apart: the last about 2 s ahead.
  const immediate = taken.filter((take) => take.waitedMs === 0).length;
  expect(immediate).toBeGreaterThanOrEqual(10);
  expect(immediate).toBeLessThanOrEqual(10 + refilled);
  expect(taken[29]?.waitedMs).toBeGreaterThanOrEqual((20 - refilled) * 100 - 1);
  expect(taken[29]?.waitedMs).toBeLessThanOrEqual(2_000);
  // The gateways' buckets are apart.
  expect((await first.budget.take('GATEWAY_B')).waitedMs).toBe(0);
});

test('a 429 told to one process holds the others too', async () => {
  const prefix = `test-gateway-budget:${randomUUID()}`;
  const first = processBudget(prefix, 10);
  const second = processBudget(prefix, 10);
  await first.budget.hold('GATEWAY_A', 2_000);
  expect((await second.budget.take('GATEWAY_A')).waitedMs).toBeGreaterThanOrEqual(1_900);
});

test('requests sent through the budget keep its rate in real time, from two processes at once', async () => {
  const prefix = `test-gateway-budget:${randomUUID()}`;
  const rate = 20;
  const first = processBudget(prefix, rate, true);
  const second = processBudget(prefix, rate, true);
  const sentAt: number[] = [];
  const started = Date.now();
  await Promise.all(
    Array.from({ length: 8 }, async (_, lane) => {
      for (let i = 0; i < 5; i++) {
        await (lane % 2 === 0 ? first : second).budget.send('GATEWAY_A', async () => {
          sentAt.push(Date.now() - started);
        });
      }
    }),
  );
  // 40 requests at 20/s with a burst of 20: the last leaves no sooner than a second after the first.
  expect(sentAt).toHaveLength(40);
  expect(Math.max(...sentAt)).toBeGreaterThanOrEqual(950);
  // No second-long window holds more than the burst and a second's refill.
  for (const start of sentAt) {
    expect(sentAt.filter((at) => at >= start && at < start + 1000).length).toBeLessThanOrEqual(2 * rate + 1);
  }
});

test('takers beyond the longest reservation wait and ask again, and still keep the rate', async () => {
  const prefix = `test-gateway-budget:${randomUUID()}`;
  const first = processBudget(prefix, 10, true, 300);
  const second = processBudget(prefix, 10, true, 300);
  const sentAt: number[] = [];
  const started = Date.now();
  // 20 at once: 10 go, 3 reserve up to 300 ms ahead, the other 7 are told to ask again later.
  await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      (i % 2 === 0 ? first : second).budget.send('GATEWAY_A', async () => {
        sentAt.push(Date.now() - started);
      }),
    ),
  );
  expect(sentAt).toHaveLength(20);
  expect(Math.max(...sentAt)).toBeGreaterThanOrEqual(950);
  for (const start of sentAt) {
    expect(sentAt.filter((at) => at >= start && at < start + 1000).length).toBeLessThanOrEqual(2 * 10 + 1);
  }
});
