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
function processBudget(keyPrefix: string, requestsPerSecond: number, sleep = false) {
  const waits: number[] = [];
  const budget = new GatewayBudget(redis, {
    requestsPerSecond: { GATEWAY_A: requestsPerSecond, GATEWAY_B: requestsPerSecond },
    keyPrefix,
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
  for (let i = 0; i < 30; i++) taken.push(await (i % 2 === 0 ? first : second).budget.take('GATEWAY_A'));
  expect(taken.every((take) => take.source === 'redis')).toBe(true);
  // Each process alone would have let its own 10 through at once (20 in all); shared, 10 go at once (11 if the
  // clock refilled one token while the loop ran), and each one after reserves 100 ms more than the one before.
  const immediate = taken.filter((take) => take.waitedMs === 0).length;
  expect(immediate).toBeGreaterThanOrEqual(10);
  expect(immediate).toBeLessThanOrEqual(11);
  const reserved = taken.slice(immediate).map((take) => take.waitedMs);
  for (let i = 1; i < reserved.length; i++) {
    expect((reserved[i] as number) - (reserved[i - 1] as number)).toBeGreaterThanOrEqual(90);
    expect((reserved[i] as number) - (reserved[i - 1] as number)).toBeLessThanOrEqual(110);
  }
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
