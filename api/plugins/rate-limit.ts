import { isIPv6 } from 'node:net';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
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
  interface FastifyContextConfig {
    /**
     * Counted per waiting-room turn token by the route itself, not per address (config/rate-limits.ts queueStanding):
     * the route must still count what it cannot tie to a turn against publicApi (see enforcePublicLimit).
     */
    limitedPerTurn?: boolean;
  }
}

/** One key's fixed window as this process knows it. */
interface LocalWindow {
  consumed: number;
  /** Epoch ms at which the window ends. */
  endsAt: number;
}

/**
 * One limit's counts as this process knows them, for the moments Redis cannot answer in time. Every hit is counted
 * here as well as in Redis, and every answer Redis gives (in time or late) raises the key's count to Redis's, which
 * includes the other processes' hits, and aligns the window with Redis's. So a hit that falls back here is judged
 * against at least what Redis had counted at its last answer plus every hit of this process since: the fallback
 * never grants what Redis would have refused, except for hits other processes made since that answer. The cost is one
 * map entry per key hit in the current window, swept once windows end.
 *
 * Not rate-limiter-flexible's RateLimiterMemory as the timeout wrapper's insurance limiter: that one counts only the
 * hits that fell back to it, so after five hits counted in Redis a sixth whose Redis call was slow found an almost
 * empty budget in memory and passed (two counters splitting one budget).
 */
class LocalWindows {
  readonly #windows = new Map<string, LocalWindow>();
  readonly #windowMs: number;
  #nextSweepAt = 0;

  constructor(windowSeconds: number) {
    this.#windowMs = windowSeconds * 1000;
  }

  /** Counts one hit of `key`, in a new window when the last one has ended; returns the window after the hit. */
  hit(key: string, now: number): LocalWindow {
    this.#sweep(now);
    const window = this.#live(key, now) ?? { consumed: 0, endsAt: now + this.#windowMs };
    window.consumed += 1;
    this.#windows.set(key, window);
    return { ...window };
  }

  /** Takes in Redis's count of `key` and the time left in Redis's window, as of `now`. */
  learn(key: string, redis: { consumed: number; msLeft: number }, now: number): void {
    // A key without expiry would be a Redis written by something else; there is no window to align with.
    if (!(redis.msLeft > 0)) return;
    const endsAt = now + redis.msLeft;
    const live = this.#live(key, now);
    // Redis opens a window only once the previous one has ended, so a newer window ends at least a whole window
    // later; within half a window it is the same window, seen with some latency. Same window: keep the higher count
    // (this process's hits still on their way to Redis are in ours only). Newer window: Redis's count is the truth.
    const sameWindow = live !== undefined && endsAt < live.endsAt + this.#windowMs / 2;
    this.#windows.set(key, { consumed: sameWindow ? Math.max(live.consumed, redis.consumed) : redis.consumed, endsAt });
  }

  /** The key's window as of `now`: this process's hits and Redis's answers so far, or none once it has ended. */
  peek(key: string, now: number): LocalWindow | undefined {
    const window = this.#live(key, now);
    return window && { ...window };
  }

  #live(key: string, now: number): LocalWindow | undefined {
    const window = this.#windows.get(key);
    return window && window.endsAt > now ? window : undefined;
  }

  /** Forgets ended windows, at most once a window (or a minute), so a process keeps only recent keys. */
  #sweep(now: number): void {
    if (now < this.#nextSweepAt) return;
    this.#nextSweepAt = now + Math.min(this.#windowMs, 60_000);
    for (const [key, window] of this.#windows) if (window.endsAt <= now) this.#windows.delete(key);
  }
}

const toResult = (spec: RateLimitSpec, window: { consumed: number; msLeft: number }): RateLimitResult => ({
  allowed: window.consumed <= spec.points,
  limit: spec.points,
  remaining: Math.max(0, Math.min(spec.points, spec.points - window.consumed)),
  resetSeconds: Math.max(1, Math.ceil(window.msLeft / 1000)),
});

/** Redis's count after this hit, or why there is none. */
type RedisAnswer = { consumed: number; msLeft: number } | 'unavailable' | 'too slow';

/** Redis's answer as `local` learns it. */
function learned(local: LocalWindows, key: string, res: RateLimiterRes): RedisAnswer {
  const answer = { consumed: res.consumedPoints, msLeft: res.msBeforeNext };
  local.learn(key, answer, Date.now());
  return answer;
}

/**
 * Every limit as a fixed window in Redis (rate-limiter-flexible's atomic INCR + EXPIRE script), so all API processes
 * share one count. When Redis is down (the client is not ready) or slower than `redisTimeoutMs`, the hit is judged by
 * this process's own counts instead (LocalWindows above): limits keep holding rather than failing open, the routes
 * behind them keep answering, and a slow answer cannot hand out a budget Redis had already spent. While Redis stays
 * down, each process counts alone: at most N× the limit across N processes.
 */
export function createRateLimiters(
  redis: Redis,
  limits: RateLimits,
  options: { redisTimeoutMs?: number; keyPrefix?: string; onRedisUnavailable?: (name: RateLimitName) => void } = {},
): RateLimiterSet {
  const timeoutMs = options.redisTimeoutMs ?? RATE_LIMIT_REDIS_TIMEOUT_MS;
  const limiters = new Map<RateLimitName, { store: RateLimiterRedis; local: LocalWindows }>();
  // Built on first use: an app built only to emit its OpenAPI documents has no Redis client to hand them.
  const limiterFor = (name: RateLimitName) => {
    const built = limiters.get(name);
    if (built) return built;
    const spec = limits[name];
    const store = new RateLimiterRedis({
      keyPrefix: `${options.keyPrefix ?? 'rl'}:${name}`,
      points: spec.points,
      duration: spec.windowSeconds,
      storeClient: redis,
      rejectIfRedisNotReady: true,
    });
    const limiter = { store, local: new LocalWindows(spec.windowSeconds) };
    limiters.set(name, limiter);
    return limiter;
  };

  /** Redis's answer, also taught to `local` whenever it arrives, including after the caller stopped waiting. */
  const askRedis = (store: RateLimiterRedis, local: LocalWindows, key: string): Promise<RedisAnswer> =>
    store.consume(key).then(
      (res) => learned(local, key, res),
      // Over the limit, rate-limiter-flexible rejects with the same result object; anything else is Redis failing.
      (refusal: unknown) => (refusal instanceof RateLimiterRes ? learned(local, key, refusal) : 'unavailable'),
    );

  return {
    limits,
    async consume(name, key) {
      const spec = limits[name];
      const { store, local } = limiterFor(name);
      const counted = local.hit(key, Date.now());
      let timer: NodeJS.Timeout | undefined;
      const answer = await Promise.race([
        askRedis(store, local, key),
        new Promise<RedisAnswer>((resolve) => {
          timer = setTimeout(() => resolve('too slow'), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (typeof answer === 'object') return toResult(spec, answer);
      options.onRedisUnavailable?.(name);
      // Read again rather than reuse `counted`: an earlier hit's late answer may have raised the count meanwhile.
      const now = Date.now();
      const window = local.peek(key, now) ?? counted;
      return toResult(spec, { consumed: window.consumed, msLeft: window.endsAt - now });
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
 * Builds the process's limiters once and exposes them as `app.rateLimits`. Each fallback to the process's own counts
 * is logged as a warning, at most once a minute per process, so a Redis outage does not flood the logs.
 */
export const rateLimitersPlugin = fp(
  async (app: FastifyInstance, options: { redis: Redis; limits: RateLimits; redisTimeoutMs?: number }) => {
    let lastWarningAt = 0;
    const limiters = createRateLimiters(options.redis, options.limits, {
      ...(options.redisTimeoutMs === undefined ? {} : { redisTimeoutMs: options.redisTimeoutMs }),
      onRedisUnavailable: (name) => {
        if (Date.now() - lastWarningAt < 60_000) return;
        lastWarningAt = Date.now();
        app.log.warn({ limit: name }, 'redis unavailable or slow; rate limits are judged by this process alone');
      },
    });
    app.decorate('rateLimits', limiters);
  },
  { name: 'rate-limiters' },
);

/** The per-address public limit, for a `limitedPerTurn` route's requests that present no known turn. */
export function enforcePublicLimit(app: FastifyInstance, ip: string, reply: FastifyReply): Promise<RateLimitResult> {
  return enforceNamedLimit(app, 'publicApi', rateLimitClientKey(ip), reply);
}

/**
 * Strict per-IP limit for every route of the scope it is registered in (the public storefront, contract 4.18 and 8):
 * over the limit the request gets 429 RATE_LIMITED with Retry-After, and every response carries
 * RateLimit-Limit/Remaining/Reset. While Redis is down each process keeps limiting on its own (see above).
 */
export const publicRateLimitPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', async (request, reply) => {
      if (request.routeOptions.config?.limitedPerTurn) return;
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
