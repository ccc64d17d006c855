import { createHash } from 'node:crypto';
import { isIPv6 } from 'node:net';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import { AppError } from '../../domain/errors.js';

/**
 * Fixed-window counter, atomic in Redis: the first hit of a window creates the counter with the window's TTL, later
 * hits only increment it. INCR and PEXPIRE run in one script, so a crash between them can never leave a counter
 * without expiry (which would block a client forever). The window is anchored at the key's first hit, and its
 * remaining time comes from Redis itself, so every API process agrees on it whatever their clocks say.
 * Returns { count after this hit, milliseconds until the window resets }.
 */
const FIXED_WINDOW_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { count, ttl }
`;
const FIXED_WINDOW_SHA = createHash('sha1').update(FIXED_WINDOW_SCRIPT).digest('hex');

export interface RateLimitResult {
  /** False once this hit is over the limit. */
  allowed: boolean;
  limit: number;
  /** Hits left in the current window (0 when over). */
  remaining: number;
  /** Whole seconds until the window resets (≥ 1): the value of Retry-After and RateLimit-Reset. */
  resetSeconds: number;
}

/**
 * Counts one hit against `key` and says whether it is within `limit` hits per `windowSeconds`. Shared by every
 * process that uses the same Redis, so a limit holds across API instances. Reusable for any limit of the service
 * (public API per IP, payment opens per buyer, ticket resends); the caller decides what to do when Redis fails,
 * since this throws the Redis error.
 */
export async function consumeRateLimit(
  redis: Redis,
  key: string,
  limit: number,
  windowSeconds: number,
): Promise<RateLimitResult> {
  const windowMs = String(windowSeconds * 1000);
  let reply: unknown;
  try {
    reply = await redis.evalsha(FIXED_WINDOW_SHA, 1, key, windowMs);
  } catch (error) {
    // First use on this Redis (or after SCRIPT FLUSH): send the script body once; Redis caches it by its SHA.
    if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
    reply = await redis.eval(FIXED_WINDOW_SCRIPT, 1, key, windowMs);
  }
  const [count, ttlMs] = (reply as [number, number]).map(Number) as [number, number];
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetSeconds: Math.max(1, Math.ceil(ttlMs / 1000)),
  };
}

/**
 * The client a per-IP limit counts: the IPv4 address, or the /64 network of an IPv6 address (one subscriber
 * usually owns a whole /64, so counting single IPv6 addresses would let one client rotate through billions).
 * IPv4-mapped IPv6 addresses count as their IPv4 address.
 */
export function rateLimitClientKey(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped?.[1]) return mapped[1];
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.toLowerCase().split('%')[0]!.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  const groups = ip.includes('::')
    ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups]
    : headGroups;
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

export interface PublicRateLimitOptions {
  redis: Redis;
  /** Requests allowed per client per window (env PUBLIC_RATE_LIMIT_PER_MINUTE). */
  limit: number;
  windowSeconds?: number;
  /** Redis key prefix; the client key and nothing else follows it. */
  keyPrefix?: string;
  /** Longest wait for Redis before the request proceeds unlimited (see fail-open below). */
  redisTimeoutMs?: number;
}

const setRateLimitHeaders = (reply: FastifyReply, result: RateLimitResult): void => {
  reply.header('RateLimit-Limit', String(result.limit));
  reply.header('RateLimit-Remaining', String(result.remaining));
  reply.header('RateLimit-Reset', String(result.resetSeconds));
};

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Strict per-IP limit for every route of the scope it is registered in (the public storefront): over the limit the
 * request gets 429 RATE_LIMITED with Retry-After, and every response carries RateLimit-Limit/Remaining/Reset.
 *
 * Decision: when Redis is down or slow the limit fails open. The storefront (catalog, availability) must stay
 * readable through a Redis outage, and inventory is protected by the database, not by this limit; each failure is
 * logged as a warning (at most once per window per process, so an outage does not flood the logs).
 */
export const publicRateLimitPlugin = fp(
  async (app: FastifyInstance, options: PublicRateLimitOptions) => {
    const windowSeconds = options.windowSeconds ?? 60;
    const keyPrefix = options.keyPrefix ?? 'ratelimit:public';
    const redisTimeoutMs = options.redisTimeoutMs ?? 250;
    let lastWarningAt = 0;

    app.addHook('onRequest', async (request, reply) => {
      const client = rateLimitClientKey(request.ip);
      let result: RateLimitResult;
      try {
        result = await withTimeout(
          consumeRateLimit(options.redis, `${keyPrefix}:${client}`, options.limit, windowSeconds),
          redisTimeoutMs,
        );
      } catch (error) {
        if (Date.now() - lastWarningAt >= windowSeconds * 1000) {
          lastWarningAt = Date.now();
          request.log.warn({ err: error }, 'public rate limit unavailable (redis); serving without a limit');
        }
        return;
      }
      setRateLimitHeaders(reply, result);
      if (!result.allowed) {
        throw new AppError(
          'RATE_LIMITED',
          `Too many requests: the public API allows ${result.limit} requests per ${windowSeconds} seconds per client; retry in ${result.resetSeconds} s`,
          {
            details: { limit: result.limit, windowSeconds, retryAfterSeconds: result.resetSeconds },
            headers: { 'Retry-After': String(result.resetSeconds) },
          },
        );
      }
    });
  },
  { name: 'public-rate-limit' },
);
