/**
 * The gateways' request budget (activities/gateway-budget.ts) without Redis: the in-process bucket that keeps the
 * rate while Redis is down (logged once, never failing the request), the hold a 429 puts on the budget, and the
 * Retry-After read into the provider error. The shared bucket in Redis is tested with the stack's Redis in
 * test/integration/gateway-budget.test.ts.
 */
import { type AddressInfo, createServer } from 'node:net';
import { Redis } from 'ioredis';
import { GatewayBudget } from '../../activities/gateway-budget.js';
import { ProviderError, retryAfterMs } from '../../integrations/errors.js';

async function downRedis(): Promise<Redis> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  return redis;
}

/** A budget on a down Redis with a clock the test moves and waits it records instead of sleeping. */
async function localBudget(requestsPerSecond: number) {
  const clock = { now: 1_000_000 };
  const waits: number[] = [];
  const unavailable: string[] = [];
  const budget = new GatewayBudget(await downRedis(), {
    requestsPerSecond: { GATEWAY_A: requestsPerSecond, GATEWAY_B: 10 },
    now: () => clock.now,
    wait: async (ms) => {
      waits.push(ms);
    },
    onRedisUnavailable: (gateway) => unavailable.push(gateway),
  });
  return { budget, clock, waits, unavailable };
}

describe('gateway budget without Redis (the in-process fallback)', () => {
  test('keeps the configured rate on its own: a second’s burst, then one request per 1/rate, reserved in order', async () => {
    const { budget, waits, unavailable } = await localBudget(25);
    const taken = [];
    for (let i = 0; i < 30; i++) taken.push(await budget.take('GATEWAY_A'));
    expect(taken.every((take) => take.source === 'local')).toBe(true);
    // 25 at once (the burst), then the 26th waits 40 ms, the 27th 80 ms, ...: 25 a second.
    expect(taken.slice(0, 25).every((take) => take.waitedMs === 0)).toBe(true);
    expect(taken.slice(25).map((take) => take.waitedMs)).toEqual([40, 80, 120, 160, 200]);
    expect(waits).toEqual([40, 80, 120, 160, 200]);
    // Logged once for the outage, not once a request.
    expect(unavailable).toEqual(['GATEWAY_A']);
  });

  test('refills with time, and the gateways have buckets of their own', async () => {
    const { budget, clock } = await localBudget(25);
    for (let i = 0; i < 25; i++) await budget.take('GATEWAY_A');
    expect((await budget.take('GATEWAY_A')).waitedMs).toBe(40);
    // Gateway B's bucket is untouched by gateway A's requests.
    expect((await budget.take('GATEWAY_B')).waitedMs).toBe(0);
    clock.now += 2_000;
    expect((await budget.take('GATEWAY_A')).waitedMs).toBe(0);
  });

  test('reserves at most maxWaitMs ahead: a taker beyond it waits and asks again rather than book a longer wait', async () => {
    const clock = { now: 1_000_000 };
    const budget = new GatewayBudget(await downRedis(), {
      requestsPerSecond: { GATEWAY_A: 10, GATEWAY_B: 10 },
      maxWaitMs: 1_000,
      now: () => clock.now,
      // The waits pass on the clock the bucket refills by.
      wait: async (ms) => {
        clock.now += ms;
      },
    });
    // 10 at once, then 10 reserved 100 ms apart up to the 1 s cap, all at the same instant (no wait between them).
    const frozen = clock.now;
    const booked = [];
    for (let i = 0; i < 20; i++) {
      booked.push((await budget.take('GATEWAY_A')).waitedMs);
      clock.now = frozen;
    }
    expect(booked.slice(10)).toEqual([100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
    // The 21st would be 1.1 s ahead: it waits 100 ms unreserved, then books the 1 s that is then the cap.
    expect((await budget.take('GATEWAY_A')).waitedMs).toBe(1_100);
  });

  test('a 429 holds the budget for its Retry-After and is rethrown retryable, so the page leaves the sale for later', async () => {
    const { budget } = await localBudget(25);
    const tooMany = new ProviderError({
      provider: 'gateway-a',
      status: 429,
      retryable: true,
      message: 'gateway-a: POST /v1/payments/1/refunds answered 429',
      retryAfterMs: 3_000,
    });
    await expect(
      budget.send('GATEWAY_A', async () => {
        throw tooMany;
      }),
    ).rejects.toBe(tooMany);
    expect(tooMany.retryable).toBe(true);
    // The next request waits out the Retry-After (and its own token).
    expect((await budget.take('GATEWAY_A')).waitedMs).toBeGreaterThanOrEqual(3_000);
  });

  test('another failure does not hold the budget', async () => {
    const { budget } = await localBudget(25);
    const down = new ProviderError({ provider: 'gateway-a', status: 503, retryable: true, message: 'down' });
    await expect(
      budget.send('GATEWAY_A', async () => {
        throw down;
      }),
    ).rejects.toBe(down);
    expect((await budget.take('GATEWAY_A')).waitedMs).toBe(0);
  });
});

describe('Retry-After', () => {
  test('delay seconds and HTTP dates become ms; nothing readable is null', () => {
    expect(retryAfterMs('5')).toBe(5_000);
    expect(retryAfterMs('Sun, 29 Nov 2026 07:00:10 GMT', Date.parse('2026-11-29T07:00:00Z'))).toBe(10_000);
    expect(retryAfterMs(null)).toBeNull();
    expect(retryAfterMs('soon')).toBeNull();
  });
});
