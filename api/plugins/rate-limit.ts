import { isIPv6 } from 'node:net';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts } from 'rate-limiter-flexible';
import {
  RATE_LIMIT_REDIS_TIMEOUT_MS,
  type RateLimitName,
  type RateLimitSpec,
  type RateLimits,
} from '../../config/rate-limits.js';
import { AppError } from '../../domain/errors.js';

export interface RateLimitResult {
  /** False once this hit is over the limit. */
  allowed: boolean;
  limit: number;
  /** Hits left in the current window (0 when over). */
  remaining: number;
  /** Whole seconds until the window resets (≥ 1): the value of Retry-After and RateLimit-Reset. */
  resetSeconds: number;
}

/** The limits of one API process, by name (config/rate-limits.ts). */
export interface RateLimiterSet {
  readonly limits: RateLimits;
  /** Counts one hit of `key` against the limit `name`. Never throws for Redis: see createRateLimiters. */
  consume(name: RateLimitName, key: string): Promise<RateLimitResult>;
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimits: RateLimiterSet;
  }
}

/**
 * The in-memory stand-in for Redis. rate-limiter-flexible calls it only when the Redis limiter failed, so each call
 * is also the signal that the process is limiting on its own.
 */
class MemoryInsurance extends RateLimiterMemory {
  readonly #onUse: () => void;

  constructor(options: { keyPrefix: string; points: number; duration: number }, onUse: () => void) {
    super(options);
    this.#onUse = onUse;
  }

  override consume(key: string | number, points?: number, options?: Record<string, unknown>): Promise<RateLimiterRes> {
    this.#onUse();
    return super.consume(key, points, options);
  }
}

const toResult = (spec: RateLimitSpec, res: RateLimiterRes, allowed: boolean): RateLimitResult => ({
  allowed,
  limit: spec.points,
  remaining: Math.max(0, Math.min(spec.points, res.remainingPoints)),
  resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
});

/**
 * Every limit as a fixed window in Redis (rate-limiter-flexible's atomic INCR + EXPIRE script), so all API processes
 * share one count. When Redis is down (the client is not ready) or slower than `redisTimeoutMs`, the hit is counted
 * in this process's memory with the same points and window instead: limits keep holding (per process, so at most
 * N× the limit across N processes) rather than failing open, and the routes behind them keep answering.
 *
 * The memory limiter is the insurance of the timeout wrapper, not of the Redis limiter itself: a call that times out
 * and later fails would otherwise be counted in memory twice.
 */
export function createRateLimiters(
  redis: Redis,
  limits: RateLimits,
  options: { redisTimeoutMs?: number; keyPrefix?: string; onRedisUnavailable?: (name: RateLimitName) => void } = {},
): RateLimiterSet {
  const timeoutMs = options.redisTimeoutMs ?? RATE_LIMIT_REDIS_TIMEOUT_MS;
  const limiters = new Map<RateLimitName, RLWrapperTimeouts>();
  // Built on first use: an app built only to emit its OpenAPI documents has no Redis client to hand them.
  const limiterFor = (name: RateLimitName): RLWrapperTimeouts => {
    const built = limiters.get(name);
    if (built) return built;
    const spec = limits[name];
    const shape = {
      keyPrefix: `${options.keyPrefix ?? 'rl'}:${name}`,
      points: spec.points,
      duration: spec.windowSeconds,
    };
    const store = new RateLimiterRedis({ ...shape, storeClient: redis, rejectIfRedisNotReady: true });
    const insurance = new MemoryInsurance(shape, () => options.onRedisUnavailable?.(name));
    const limiter = new RLWrapperTimeouts({ limiter: store, timeoutMs, insuranceLimiter: insurance });
    limiters.set(name, limiter);
    return limiter;
  };
  return {
    limits,
    async consume(name, key) {
      const spec = limits[name];
      try {
        return toResult(spec, await limiterFor(name).consume(key), true);
      } catch (refusal) {
        if (refusal instanceof RateLimiterRes) return toResult(spec, refusal, false);
        throw refusal;
      }
    },
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

const rateLimitHeaders = (result: RateLimitResult): Record<string, string> => ({
  'RateLimit-Limit': String(result.limit),
  'RateLimit-Remaining': String(result.remaining),
  'RateLimit-Reset': String(result.resetSeconds),
});

const windowText = (seconds: number): string => {
  if (seconds === 60) return 'minute';
  if (seconds === 3600) return 'hour';
  if (seconds % 3600 === 0) return `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return `${seconds / 60} minutes`;
  return `${seconds} seconds`;
};

/**
 * The contract's 429 (7.2): RATE_LIMITED (retryable), Retry-After and RateLimit-* naming the limit that refused, and
 * details { limit, windowSeconds, retryAfterSeconds }.
 */
export function rateLimitedError(spec: RateLimitSpec, result: RateLimitResult): AppError {
  return new AppError(
    'RATE_LIMITED',
    `At most ${spec.points} ${spec.counts} per ${windowText(spec.windowSeconds)}; retry in ${result.resetSeconds} s`,
    {
      details: { limit: spec.points, windowSeconds: spec.windowSeconds, retryAfterSeconds: result.resetSeconds },
      headers: { 'Retry-After': String(result.resetSeconds), ...rateLimitHeaders(result) },
    },
  );
}

/**
 * Counts one hit of `key` against the limit `name` and throws the 429 once it is over; with `headers`, the reply
 * also carries RateLimit-Limit/Remaining/Reset when the hit is allowed.
 */
export async function enforceNamedLimit(
  app: FastifyInstance,
  name: RateLimitName,
  key: string,
  reply?: FastifyReply,
): Promise<RateLimitResult> {
  const result = await app.rateLimits.consume(name, key);
  if (!result.allowed) throw rateLimitedError(app.rateLimits.limits[name], result);
  if (reply) reply.headers(rateLimitHeaders(result));
  return result;
}

/**
 * Builds the process's limiters once and exposes them as `app.rateLimits`. Each fallback to memory is logged as a
 * warning, at most once a minute per process, so a Redis outage does not flood the logs.
 */
export const rateLimitersPlugin = fp(
  async (app: FastifyInstance, options: { redis: Redis; limits: RateLimits; redisTimeoutMs?: number }) => {
    let lastWarningAt = 0;
    const limiters = createRateLimiters(options.redis, options.limits, {
      ...(options.redisTimeoutMs === undefined ? {} : { redisTimeoutMs: options.redisTimeoutMs }),
      onRedisUnavailable: (name) => {
        if (Date.now() - lastWarningAt < 60_000) return;
        lastWarningAt = Date.now();
        app.log.warn({ limit: name }, 'redis unavailable or slow; rate limits are counted in this process only');
      },
    });
    app.decorate('rateLimits', limiters);
  },
  { name: 'rate-limiters' },
);

/**
 * Strict per-IP limit for every route of the scope it is registered in (the public storefront, contract 4.18 and 8):
 * over the limit the request gets 429 RATE_LIMITED with Retry-After, and every response carries
 * RateLimit-Limit/Remaining/Reset. While Redis is down each process keeps limiting on its own (see above).
 */
export const publicRateLimitPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', async (request, reply) => {
      await enforceNamedLimit(app, 'publicApi', rateLimitClientKey(request.ip), reply);
    });
  },
  { name: 'public-rate-limit', dependencies: ['rate-limiters'] },
);

/**
 * Per API key on every request that presented a valid key (organizer routes, and customer routes that carry one):
 * contract 8's B2B limit. Runs after the authentication hooks, which set `request.organizer`; requests without a key
 * (health, gateway webhooks, buyers without a key) are not counted here.
 */
export const organizerRateLimitPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', async (request, reply) => {
      if (!request.organizer) return;
      await enforceNamedLimit(app, 'organizerApiKey', request.organizer.apiKeyId, reply);
    });
  },
  { name: 'organizer-rate-limit', dependencies: ['rate-limiters', 'auth', 'customer-auth'] },
);
