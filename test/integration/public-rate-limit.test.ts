import { randomBytes, randomUUID } from 'node:crypto';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { createRateLimiters } from '../../api/plugins/rate-limit.js';
import { rateLimitsFrom } from '../../config/rate-limits.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const LIMIT = 5;
let first: TestApi;
let second: TestApi;
beforeAll(async () => {
  // Two API instances in one process, each with its own Redis connection to the same Redis: like two API processes.
  [first, second] = await Promise.all([
    startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: String(LIMIT) }),
    startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: String(LIMIT) }),
  ]);
  // The limiter does not wait for a Redis connection that is not ready yet: it counts in the process instead (the
  // fallback of rate-limit-redis-down and rate-limit-slow-redis). On a busy box the second instance's first request
  // once came before its connection did and was counted apart; this file tests two connected instances first.
  await Promise.all([first.services.redis.ping(), second.services.redis.ping()]);
});
afterAll(async () => {
  await Promise.all([first?.close(), second?.close()]);
});

/**
 * Client addresses unique to this run (IPv6 /64 networks from the documentation range with random bits), so the
 * counters this file fills collide with no other test or earlier run sharing the Redis.
 */
const randomNetwork = () => `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}`;
const randomIpv4 = () => `198.51.${randomBytes(1)[0]}.${(randomBytes(1)[0] ?? 0) | 1}`;

const catalog = (api: TestApi, remoteAddress: string) =>
  api.request({ method: 'GET', url: '/api/public/events?limit=1', remoteAddress });

describe('public API rate limit (contract 1, 8: strict per-IP limit)', () => {
  test('the per-IP limit is shared by every API instance: alternating instances, request limit+1 gets 429', async () => {
    const ip = `${randomNetwork()}::1`;
    for (let i = 0; i < LIMIT; i++) {
      const response = await catalog(i % 2 === 0 ? first : second, ip);
      expect(response.statusCode).toBe(200);
      expect(response.headers['ratelimit-limit']).toBe(String(LIMIT));
      expect(response.headers['ratelimit-remaining']).toBe(String(LIMIT - i - 1));
      expect(Number(response.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
    }
    for (const api of [first, second]) {
      const limited = await catalog(api, ip);
      expect(limited.statusCode).toBe(429);
      const retryAfter = Number(limited.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(limited.headers['ratelimit-remaining']).toBe('0');
      expect(limited.headers['ratelimit-reset']).toBe(String(retryAfter));
      expect(limited.json()).toEqual({
        error: {
          code: 'RATE_LIMITED',
          message: expect.any(String),
          retryable: true,
          details: { limit: LIMIT, windowSeconds: 60, retryAfterSeconds: retryAfter },
        },
      });
    }
  });

  test('another IP is unaffected by a client over the limit', async () => {
    const noisy = randomIpv4();
    for (let i = 0; i <= LIMIT; i++) await catalog(first, noisy);
    expect((await catalog(second, noisy)).statusCode).toBe(429);
    const other = await catalog(second, randomIpv4());
    expect(other.statusCode).toBe(200);
    expect(other.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
  });

  test('IPv6 clients are counted per /64 network, IPv4-mapped addresses as their IPv4 address', async () => {
    const network = randomNetwork();
    for (let i = 1; i <= LIMIT; i++)
      expect((await catalog(first, `${network}::${i.toString(16)}`)).statusCode).toBe(200);
    expect((await catalog(second, `${network}:ffff:ffff:ffff:ffff`)).statusCode).toBe(429);
  });

  test('every public response carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset', async () => {
    const ip = randomIpv4();
    for (const url of [
      '/api/public/events',
      `/api/public/events/missing-${randomUUID()}`,
      '/api/public/openapi.json',
    ]) {
      const response = await first.request({ method: 'GET', url, remoteAddress: ip });
      expect(response.headers['ratelimit-limit']).toBe(String(LIMIT));
      expect(response.headers['ratelimit-remaining']).toBeDefined();
      expect(response.headers['ratelimit-reset']).toBeDefined();
    }
  });

  test('the organizer API is not under the public limit', async () => {
    const ip = randomIpv4();
    for (let i = 0; i <= LIMIT; i++) {
      const response = await first.request({ method: 'GET', url: '/api/v1/me', remoteAddress: ip });
      expect(response.statusCode).toBe(401);
      expect(response.headers['ratelimit-limit']).toBeUndefined();
    }
  });
});

describe('the limiters count in Redis while it is up (shared by every API process)', () => {
  const limits = rateLimitsFrom(
    { PUBLIC_RATE_LIMIT_PER_MINUTE: 10, ORGANIZER_RATE_LIMIT_PER_MINUTE: 10, WAITING_ROOM_POLLS_PER_10_SECONDS: 25 },
    { paymentOpen: { points: 10, windowSeconds: 60 } },
  );

  test('is atomic across processes: of 25 concurrent hits on a limit of 10, exactly 10 pass, and the counter expires', async () => {
    const buyer = randomUUID();
    const fallbacks: string[] = [];
    const onRedisUnavailable = (name: string) => fallbacks.push(name);
    // Generous timeouts: this proves the Redis path, so no hit may fall back to memory on a busy machine.
    const one = createRateLimiters(first.services.redis, limits, { redisTimeoutMs: 5000, onRedisUnavailable });
    const two = createRateLimiters(second.services.redis, limits, { redisTimeoutMs: 5000, onRedisUnavailable });
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) => (i % 2 ? one : two).consume('paymentOpen', buyer)),
    );
    expect(fallbacks).toEqual([]);
    expect(results.filter((result) => result.allowed)).toHaveLength(10);
    expect(results.map((result) => result.remaining).sort((a, b) => a - b)).toEqual([
      ...Array<number>(16).fill(0),
      ...Array.from({ length: 9 }, (_, i) => i + 1),
    ]);
    const ttl = await first.services.redis.pttl(`rl:paymentOpen:${buyer}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });
});

describe('when Redis is unavailable the public API keeps limiting in each process (never fails open)', () => {
  const expectLimitedLocally = async (api: TestApi) => {
    const ip = randomIpv4();
    for (let i = 0; i < 2; i++) {
      const started = Date.now();
      const response = await catalog(api, ip);
      expect(response.statusCode).toBe(200);
      expect(response.headers['ratelimit-limit']).toBe('2');
      expect(response.headers['ratelimit-remaining']).toBe(String(1 - i));
      expect(Date.now() - started).toBeLessThan(2000);
    }
    const limited = await catalog(api, ip);
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error).toMatchObject({ code: 'RATE_LIMITED', retryable: true });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await catalog(api, randomIpv4())).statusCode).toBe(200);
  };

  test('Redis unreachable: requests are served and limited in memory', async () => {
    const api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '2' });
    try {
      api.services.redis.disconnect(); // every command now fails at once, as with Redis down
      await expectLimitedLocally(api);
      await api.services.redis.connect(); // back up, so closing the test API shuts a live connection down
    } finally {
      await api.close();
    }
  });

  test('Redis not answering: each request waits at most the short Redis timeout, then is served and limited', async () => {
    // A server that accepts connections and never replies: the hung-Redis case.
    const sockets = new Set<Socket>();
    const blackHole = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('end', () => socket.end()); // closes when the client does, and never answers anything
    });
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    const { port } = blackHole.address() as AddressInfo;
    const api = await startTestApi({ REDIS_URL: `redis://127.0.0.1:${port}/0`, PUBLIC_RATE_LIMIT_PER_MINUTE: '2' });
    api.services.redis.on('error', () => undefined);
    try {
      await expectLimitedLocally(api);
    } finally {
      await api.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => blackHole.close(resolve));
      // ioredis leaves a 2 s "destroy the stream" timer behind when it is closed while never having become ready;
      // wait it out so the test leaves nothing running.
      await new Promise((resolve) => setTimeout(resolve, 2100));
    }
  });
});
