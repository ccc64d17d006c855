/**
 * A slow Redis must not split a limit's budget (issue 15: the 6th sign-in code request of a 5-per-window budget got
 * 202 when the whole suite ran). The limiters talk to the run's Redis through a proxy that holds Redis's answers back
 * for as long as a test says, longer than the limiters' timeout: the hit is then judged by the process's own counts,
 * which must refuse whatever Redis refuses. Redis itself still counts every hit; its answers just arrive too late.
 */
import { randomUUID } from 'node:crypto';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { createRateLimiters, type RateLimitResult } from '../../api/plugins/rate-limit.js';
import { type RateLimitName, rateLimitsFrom } from '../../config/rate-limits.js';
import { testEnv } from '../support/stack.js';

/** Generous against a loaded machine: an undelayed answer through the proxy takes a few ms. */
const TIMEOUT_MS = 100;
const SLOW_MS = 400;

/** A TCP proxy to Redis whose answers wait `delayMs` (as set when they arrive), in their order. */
async function delayingProxy(redisUrl: URL): Promise<{ port: number; delayMs: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const proxy = {
    port: 0,
    delayMs: 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server: Server = createServer((client) => {
    const upstream = connect(Number(redisUrl.port || 6379), redisUrl.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    let delivered = Promise.resolve();
    let releaseAt = 0;
    upstream.on('data', (chunk: Buffer) => {
      releaseAt = Math.max(releaseAt, Date.now() + proxy.delayMs);
      const at = releaseAt;
      delivered = delivered
        .then(() => new Promise((resolve) => setTimeout(resolve, at - Date.now())))
        .then(() => {
          if (!client.destroyed) client.write(chunk);
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.port = (server.address() as AddressInfo).port;
  return proxy;
}

const env = testEnv();
let proxy: Awaited<ReturnType<typeof delayingProxy>>;
let throughProxy: Redis;
let direct: Redis;
beforeAll(async () => {
  const redisUrl = new URL(env.REDIS_URL);
  proxy = await delayingProxy(redisUrl);
  const proxiedUrl = new URL(env.REDIS_URL);
  proxiedUrl.hostname = '127.0.0.1';
  proxiedUrl.port = String(proxy.port);
  throughProxy = new Redis(proxiedUrl.toString(), { maxRetriesPerRequest: 2 });
  direct = new Redis(env.REDIS_URL, { maxRetriesPerRequest: 2 });
  await Promise.all([throughProxy.ping(), direct.ping()]);
});
afterAll(async () => {
  throughProxy?.disconnect();
  direct?.disconnect();
  await proxy?.close();
});
afterEach(() => {
  proxy.delayMs = 0;
});

const LIMIT: RateLimitName = 'signInRequestPerEmailAndClient';

/** Limiters of one "API process", with a key prefix of their own so no other run or test shares the counts. */
function limitersOf(redis: Redis, keyPrefix: string, points: number) {
  const fallbacks: RateLimitName[] = [];
  const limiters = createRateLimiters(redis, rateLimitsFrom(env, { [LIMIT]: { points, windowSeconds: 600 } }), {
    redisTimeoutMs: TIMEOUT_MS,
    keyPrefix,
    onRedisUnavailable: (name) => fallbacks.push(name),
  });
  return { limiters, fallbacks };
}

/** What Redis itself has counted for `key`, once every delayed answer has been delivered. */
async function redisCount(keyPrefix: string, key: string): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, SLOW_MS + 100));
  return Number(await direct.get(`${keyPrefix}:${LIMIT}:${key}`));
}

describe('a slow Redis does not split the budget of a limit (never more than Redis would grant)', () => {
  test('5 hits counted in Redis, then a 6th whose Redis answer is too slow: refused, as Redis refuses it', async () => {
    const prefix = `rl-slow-${randomUUID()}`;
    const { limiters, fallbacks } = limitersOf(throughProxy, prefix, 5);
    for (let i = 0; i < 5; i++) expect((await limiters.consume(LIMIT, 'victim@x.test')).allowed).toBe(true);

    proxy.delayMs = SLOW_MS;
    const fallbacksBefore = fallbacks.length;
    const started = Date.now();
    const sixth = await limiters.consume(LIMIT, 'victim@x.test');
    expect(Date.now() - started).toBeLessThan(SLOW_MS);
    expect(fallbacks.length).toBe(fallbacksBefore + 1);
    expect(sixth).toMatchObject({ allowed: false, limit: 5, remaining: 0 });
    expect(sixth.resetSeconds).toBeGreaterThan(500);
    expect(await redisCount(prefix, 'victim@x.test')).toBe(6);
  });

  test('Redis slow on every other hit: exactly `points` hits pass out of 16, and Redis counted all 16', async () => {
    const prefix = `rl-slow-${randomUUID()}`;
    const { limiters, fallbacks } = limitersOf(throughProxy, prefix, 6);
    const results: RateLimitResult[] = [];
    for (let i = 0; i < 16; i++) {
      const slow = i % 2 === 1;
      proxy.delayMs = slow ? SLOW_MS : 0;
      results.push(await limiters.consume(LIMIT, 'client'));
      // Let the late answer arrive, so the next fast hit is not queued behind it.
      if (slow) await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
    }
    expect(fallbacks.length).toBeGreaterThanOrEqual(8);
    // Neither more (the budget split) nor fewer (a fallback that counts a hit twice) than the limit.
    expect(results.map((result) => result.allowed)).toEqual([...Array(6).fill(true), ...Array(10).fill(false)]);
    expect(results.map((result) => result.remaining).slice(0, 7)).toEqual([5, 4, 3, 2, 1, 0, 0]);
    expect(await redisCount(prefix, 'client')).toBe(16);
  });

  test("another process's hits that Redis reported are part of the budget a slow answer is judged by", async () => {
    const prefix = `rl-slow-${randomUUID()}`;
    const other = limitersOf(direct, prefix, 5);
    const slowOne = limitersOf(throughProxy, prefix, 5);
    for (let i = 0; i < 3; i++) expect((await other.limiters.consume(LIMIT, 'shared')).allowed).toBe(true);
    // Answered in time: Redis says 4 of 5 are spent, and this process learns it.
    expect(await slowOne.limiters.consume(LIMIT, 'shared')).toMatchObject({ allowed: true, remaining: 1 });

    proxy.delayMs = SLOW_MS;
    expect((await slowOne.limiters.consume(LIMIT, 'shared')).allowed).toBe(true); // 5 of 5
    expect((await slowOne.limiters.consume(LIMIT, 'shared')).allowed).toBe(false); // 6: only 2 of them its own
    expect(slowOne.fallbacks).toEqual([LIMIT, LIMIT]);
    expect(await redisCount(prefix, 'shared')).toBe(6);
  });

  test('a late answer still teaches the process: after Redis spent the budget, fallbacks refuse', async () => {
    const prefix = `rl-slow-${randomUUID()}`;
    const other = limitersOf(direct, prefix, 3);
    const slowOne = limitersOf(throughProxy, prefix, 3);
    proxy.delayMs = SLOW_MS;
    // Judged alone (Redis too slow): allowed; Redis's answer (count 1) arrives later.
    expect((await slowOne.limiters.consume(LIMIT, 'late')).allowed).toBe(true);
    for (let i = 0; i < 2; i++) expect((await other.limiters.consume(LIMIT, 'late')).allowed).toBe(true);
    // Still judged alone, before any answer arrived: the other process's two hits are not known here yet (the one
    // thing a fallback cannot see). Redis counts this hit as its 4th, and that answer arrives late.
    expect((await slowOne.limiters.consume(LIMIT, 'late')).allowed).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, SLOW_MS + 100));
    // The late answers were learned even though nobody waited for them: 5 > 3 without asking Redis in time.
    expect((await slowOne.limiters.consume(LIMIT, 'late')).allowed).toBe(false);
    expect(await redisCount(prefix, 'late')).toBe(5);
  });
});
