/**
 * The limiter module on its own: configuration, the in-memory insurance that keeps limits holding while Redis is
 * down or hung, the 429 it builds, the client key, and the 503 for work that truly needs Redis. No Redis is needed:
 * the Redis here is either a port nobody listens on or a server that accepts and never answers.
 */
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { requireRedis } from '../../api/http/limits.js';
import { createRateLimiters, rateLimitClientKey, rateLimitedError } from '../../api/plugins/rate-limit.js';
import { RATE_LIMIT_NAMES, type RateLimits, rateLimitsFrom } from '../../config/rate-limits.js';
import { AppError } from '../../domain/errors.js';

const ENV = {
  PUBLIC_RATE_LIMIT_PER_MINUTE: 120,
  ORGANIZER_RATE_LIMIT_PER_MINUTE: 1200,
  WAITING_ROOM_POLLS_PER_10_SECONDS: 25,
};

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A Redis client for a Redis that is down: nothing listens on its port, and commands fail at once. */
async function downRedis(): Promise<Redis> {
  const redis = new Redis({
    host: '127.0.0.1',
    port: await freePort(),
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  return redis;
}

const small = (points: number, windowSeconds = 60): RateLimits =>
  rateLimitsFrom(ENV, { publicApi: { points, windowSeconds }, organizerApiKey: { points, windowSeconds } });

describe('rate limit configuration (config/rate-limits.ts)', () => {
  test('every limit has a name, whole points and a window; the env numbers set the public and organizer limits', () => {
    const limits = rateLimitsFrom({ ...ENV, PUBLIC_RATE_LIMIT_PER_MINUTE: 7, ORGANIZER_RATE_LIMIT_PER_MINUTE: 9 });
    expect(Object.keys(limits).sort()).toEqual([...RATE_LIMIT_NAMES].sort());
    expect(limits.publicApi).toMatchObject({ points: 7, windowSeconds: 60 });
    expect(limits.organizerApiKey).toMatchObject({ points: 9, windowSeconds: 60 });
  });

  test('the payment-open limit is the contract’s: 10 per minute per buyer (part 8)', () => {
    expect(rateLimitsFrom(ENV).paymentOpen).toMatchObject({ points: 10, windowSeconds: 60 });
  });

  test('overrides change only the limits they name, and nonsense numbers are refused at start', () => {
    const limits = rateLimitsFrom(ENV, { paymentOpen: { points: 2 } });
    expect(limits.paymentOpen).toMatchObject({ points: 2, windowSeconds: 60 });
    expect(limits.purchaseSessionOpen).toEqual(rateLimitsFrom(ENV).purchaseSessionOpen);
    expect(() => rateLimitsFrom(ENV, { queueJoin: { points: 0 } })).toThrow(/queueJoin: points/);
    expect(() => rateLimitsFrom(ENV, { queueJoin: { windowSeconds: 0.5 } })).toThrow(/queueJoin: windowSeconds/);
  });
});

describe('limits while Redis is down: each process keeps limiting in memory (never fails open)', () => {
  let redis: Redis;
  beforeEach(async () => {
    redis = await downRedis();
  });
  afterEach(() => {
    redis.disconnect();
  });

  test('points hits pass, the next is refused with the time until the window resets', async () => {
    const fallbacks: string[] = [];
    const limiters = createRateLimiters(redis, small(3), { onRedisUnavailable: (name) => fallbacks.push(name) });
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await limiters.consume('publicApi', '203.0.113.9'));
    expect(results.map((result) => [result.allowed, result.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(results[3]).toMatchObject({ limit: 3 });
    expect(results[3]!.resetSeconds).toBeGreaterThanOrEqual(1);
    expect(results[3]!.resetSeconds).toBeLessThanOrEqual(60);
    expect(fallbacks).toEqual(['publicApi', 'publicApi', 'publicApi', 'publicApi']);
  });

  test('keys and limits count separately', async () => {
    const limiters = createRateLimiters(redis, small(1));
    expect((await limiters.consume('organizerApiKey', 'key-a')).allowed).toBe(true);
    expect((await limiters.consume('organizerApiKey', 'key-a')).allowed).toBe(false);
    expect((await limiters.consume('organizerApiKey', 'key-b')).allowed).toBe(true);
    // Same key string under another limit: its own count.
    expect((await limiters.consume('publicApi', 'key-a')).allowed).toBe(true);
  });

  test('a new window starts once the previous one has passed', async () => {
    const limiters = createRateLimiters(redis, small(1, 1));
    expect((await limiters.consume('publicApi', 'client')).allowed).toBe(true);
    expect((await limiters.consume('publicApi', 'client')).allowed).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await limiters.consume('publicApi', 'client')).allowed).toBe(true);
  });
});

describe('limits while Redis is hung (connected, never answering)', () => {
  let blackHole: Server;
  const sockets = new Set<Socket>();
  let redis: Redis;
  beforeAll(async () => {
    blackHole = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    // No ready check and no client info: the client calls itself ready once connected, so commands are sent and
    // wait for an answer that never comes (a Redis stuck mid-outage).
    redis = new Redis({
      host: '127.0.0.1',
      port: (blackHole.address() as AddressInfo).port,
      enableReadyCheck: false,
      disableClientInfo: true,
      maxRetriesPerRequest: 1,
    });
    redis.on('error', () => undefined);
    await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
  });
  afterAll(async () => {
    redis.disconnect();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => blackHole.close(resolve));
  });

  test('each check waits at most the Redis timeout, then counts in memory', async () => {
    const limiters = createRateLimiters(redis, small(2), { redisTimeoutMs: 100 });
    const started = Date.now();
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await limiters.consume('publicApi', 'hung-client'));
    expect(Date.now() - started).toBeLessThan(1500);
    expect(results.map((result) => result.allowed)).toEqual([true, true, false]);
  });
});

describe('the 429 (contract 7.2)', () => {
  test('RATE_LIMITED, retryable, with Retry-After, RateLimit-* and { limit, windowSeconds, retryAfterSeconds }', () => {
    const spec = rateLimitsFrom(ENV).paymentOpen;
    const error = rateLimitedError(spec, { allowed: false, limit: 10, remaining: 0, resetSeconds: 42 });
    expect(error.status).toBe(429);
    expect(error.toBody()).toEqual({
      error: {
        code: 'RATE_LIMITED',
        message: 'At most 10 payment opens per buyer per minute; retry in 42 s',
        retryable: true,
        details: { limit: 10, windowSeconds: 60, retryAfterSeconds: 42 },
      },
    });
    expect(error.headers).toEqual({
      'Retry-After': '42',
      'RateLimit-Limit': '10',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': '42',
    });
  });
});

describe('rateLimitClientKey', () => {
  test('IPv6 clients are counted per /64 network, IPv4-mapped addresses as their IPv4 address', () => {
    expect(rateLimitClientKey('2001:DB8:a:b:c:d:e:f')).toBe('2001:db8:a:b::/64');
    expect(rateLimitClientKey('2001:db8:a:b::1')).toBe(rateLimitClientKey('2001:db8:a:b:ffff::2'));
    expect(rateLimitClientKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(rateLimitClientKey('::1')).toBe('0:0:0:0::/64');
    expect(rateLimitClientKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(rateLimitClientKey('203.0.113.9')).toBe('203.0.113.9');
  });
});

describe('requireRedis: work that truly needs Redis answers 503, never 500', () => {
  test('a Redis failure becomes 503 SERVICE_UNAVAILABLE, retryable', async () => {
    const redis = await downRedis();
    try {
      const failure = await requireRedis('Purchase sessions', () => redis.get('anything')).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(AppError);
      expect((failure as AppError).status).toBe(503);
      expect((failure as AppError).toBody().error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
    } finally {
      redis.disconnect();
    }
  });

  test('a Redis that does not answer in time becomes 503 too', async () => {
    const failure = await requireRedis('The waiting room', () => new Promise<never>(() => undefined), 50).catch(
      (e: unknown) => e,
    );
    expect((failure as AppError).code).toBe('SERVICE_UNAVAILABLE');
  });

  test("the work's own errors pass through unchanged", async () => {
    const own = new AppError('NOT_FOUND', 'Purchase session not found');
    await expect(requireRedis('x', () => Promise.reject(own))).rejects.toBe(own);
  });
});
