/**
 * The gateways' request budget, shared by every worker process: a token bucket per gateway in Redis that each refund
 * request (the payment read and the refund itself) takes a token from before it is sent.
 *
 * Why not the provider queue's limit alone (PROVIDER_ACTIVITIES_PER_SECOND): the server spaces activity starts, and a
 * mass-refund page (activities/event-cancellation.ts undoNextSales) is one activity that refunds a hundred sales,
 * several at once. Measured without this budget: ~140 gateway requests/s from one page, against gateway A's cited
 * envelope of 25 requests/s per access token, above which it answers 429.
 *
 * The bucket holds one second's worth of tokens (a burst of `rate`, under gateway A's cited burst of 50) and is
 * refilled at `rate` per second by Redis's clock. A take reserves its token even when the bucket is empty (the count
 * goes below zero) and waits until that token would have been there: one round trip per request, and takers are
 * served in the order they asked. A 429 from the gateway empties the bucket for the Retry-After it gave (`hold`), so
 * every process backs off, not only the one that was told.
 *
 * While Redis cannot answer (down, not ready, slower than `redisTimeoutMs`), each process keeps the same rate in a
 * bucket of its own: the requests go on (a mass refund never fails for want of Redis), at most N× the rate across N
 * processes for that time. The switch is logged once per outage.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { log } from '@temporalio/activity';
import type { Redis } from 'ioredis';
import type { Env } from '../config/env.js';
import { isProviderError } from '../integrations/errors.js';
import type { Gateway } from '../workflows/definitions.js';

/**
 * KEYS[1]: the bucket (a hash: tokens, at ms). ARGV: tokens per ms, burst, hold ms (0: take one token), the longest
 * reservation ms. Returns the whole ms the taker waits before sending (0: at once), or, negative, the ms after which
 * to ask again when the token would be further ahead than the longest reservation (nothing taken).
 */
const BUCKET_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local hold = tonumber(ARGV[3])
local max_wait = tonumber(ARGV[4])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate)
  at = now
end
local wait = 0
if hold > 0 then
  tokens = math.min(tokens, -hold * rate)
elseif (tokens - 1) < -max_wait * rate then
  -- Reserved too far ahead already: nothing taken; the caller asks again once this much has passed.
  return -math.max(1, math.ceil((-(tokens - 1) / rate) - max_wait))
else
  tokens = tokens - 1
  if tokens < 0 then wait = math.ceil(-tokens / rate) end
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate) + 1000)
return wait
`;

/** One bucket kept in this process: the fallback while Redis cannot answer. Same arithmetic as BUCKET_SCRIPT. */
class LocalBucket {
  #tokens: number;
  #at: number;

  constructor(
    private readonly perMs: number,
    private readonly burst: number,
    now: number,
  ) {
    this.#tokens = burst;
    this.#at = now;
  }

  /** Reserves one token (or, with `holdMs`, empties the bucket for that long); returns what BUCKET_SCRIPT returns. */
  apply(now: number, holdMs: number, maxWaitMs: number): number {
    if (now > this.#at) {
      this.#tokens = Math.min(this.burst, this.#tokens + (now - this.#at) * this.perMs);
      this.#at = now;
    }
    if (holdMs > 0) {
      this.#tokens = Math.min(this.#tokens, -holdMs * this.perMs);
      return 0;
    }
    if (this.#tokens - 1 < -maxWaitMs * this.perMs) {
      return -Math.max(1, Math.ceil(-(this.#tokens - 1) / this.perMs - maxWaitMs));
    }
    this.#tokens -= 1;
    return this.#tokens < 0 ? Math.ceil(-this.#tokens / this.perMs) : 0;
  }
}

export interface GatewayBudgetOptions {
  /** Requests per second per gateway, across every process sharing the Redis. */
  requestsPerSecond: Record<Gateway, number>;
  /** Redis key prefix (tests use their own so runs do not share buckets). */
  keyPrefix?: string;
  /**
   * The furthest ahead a take reserves its token (5 s by default): beyond it, the taker waits and asks again instead,
   * so a crowd of takers (many pages at once) cannot hand one a wait longer than its activity's timeout.
   */
  maxWaitMs?: number;
  /**
   * How long a take waits for Redis before this process's own bucket decides (1 s by default: a refund can wait that
   * long, and a busy Redis answering late is no reason to leave the shared budget).
   */
  redisTimeoutMs?: number;
  /** Told once when Redis stops answering (and again after it answered in between). */
  onRedisUnavailable?: (gateway: Gateway, error: unknown) => void;
  /** Milliseconds now, for the fallback buckets (tests move it). */
  now?: () => number;
  /** Waits out a reservation (tests record it instead). */
  wait?: (ms: number) => Promise<void>;
}

/** Where a take was decided: by the shared bucket in Redis, or by this process's own. */
export type BudgetSource = 'redis' | 'local';

export class GatewayBudget {
  readonly #redis: Redis;
  readonly #options: GatewayBudgetOptions;
  readonly #local = new Map<Gateway, LocalBucket>();
  readonly #timeoutMs: number;
  readonly #maxWaitMs: number;
  #redisFailing = false;

  constructor(redis: Redis, options: GatewayBudgetOptions) {
    this.#redis = redis;
    this.#options = options;
    this.#timeoutMs = options.redisTimeoutMs ?? 1_000;
    this.#maxWaitMs = options.maxWaitMs ?? 5_000;
  }

  /** Waits until one request to `gateway` may be sent, and takes the token for it. */
  async take(gateway: Gateway): Promise<{ waitedMs: number; source: BudgetSource }> {
    const wait = this.#options.wait ?? sleep;
    let waitedMs = 0;
    for (;;) {
      const decided = await this.#apply(gateway, 0);
      // Negative: nothing reserved, too far ahead; ask again once that much has passed.
      const ms = Math.abs(decided.waitMs);
      if (ms > 0) await wait(ms);
      waitedMs += ms;
      if (decided.waitMs >= 0) return { waitedMs, source: decided.source };
    }
  }

  /** The gateway answered 429: no request to it leaves any process for `ms` (its Retry-After). */
  async hold(gateway: Gateway, ms: number): Promise<void> {
    await this.#apply(gateway, Math.max(1, Math.ceil(ms)));
  }

  /**
   * Sends one request to `gateway` within the budget. A 429 answer holds the budget for the Retry-After it carried
   * (a second when it carried none) and is rethrown as it was: retryable, so the caller's "unavailable, later" path
   * takes it, never its refusal path.
   */
  async send<T>(gateway: Gateway, request: () => Promise<T>): Promise<T> {
    await this.take(gateway);
    try {
      return await request();
    } catch (error) {
      if (isProviderError(error) && error.status === 429) await this.hold(gateway, error.retryAfterMs ?? 1000);
      throw error;
    }
  }

  async #apply(gateway: Gateway, holdMs: number): Promise<{ waitMs: number; source: BudgetSource }> {
    const perSecond = this.#options.requestsPerSecond[gateway];
    const perMs = perSecond / 1000;
    const burst = Math.max(1, perSecond);
    try {
      // A client that is not connected would queue the command behind its reconnection: decide locally at once.
      if (this.#redis.status !== 'ready') throw new Error(`redis is ${this.#redis.status}`);
      const key = `${this.#options.keyPrefix ?? 'gateway-budget'}:${gateway}`;
      let timer: NodeJS.Timeout | undefined;
      const waitMs = await Promise.race([
        this.#redis.eval(BUCKET_SCRIPT, 1, key, String(perMs), String(burst), String(holdMs), String(this.#maxWaitMs)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`redis did not answer within ${this.#timeoutMs} ms`)),
            this.#timeoutMs,
          );
        }),
      ]).finally(() => clearTimeout(timer));
      this.#redisFailing = false;
      return { waitMs: Number(waitMs), source: 'redis' };
    } catch (error) {
      if (!this.#redisFailing) {
        this.#redisFailing = true;
        this.#options.onRedisUnavailable?.(gateway, error);
      }
      const now = (this.#options.now ?? Date.now)();
      let bucket = this.#local.get(gateway);
      if (!bucket) {
        bucket = new LocalBucket(perMs, burst, now);
        this.#local.set(gateway, bucket);
      }
      return { waitMs: bucket.apply(now, holdMs, this.#maxWaitMs), source: 'local' };
    }
  }
}

/** One budget per Redis client (one per worker process), so every activity of the process shares its fallback. */
const budgets = new WeakMap<Redis, GatewayBudget>();

export function gatewayBudgetOf(deps: {
  redis: Redis;
  env: Pick<Env, 'GATEWAY_A_REQUESTS_PER_SECOND' | 'GATEWAY_B_REQUESTS_PER_SECOND'>;
}): GatewayBudget {
  let budget = budgets.get(deps.redis);
  if (!budget) {
    budget = new GatewayBudget(deps.redis, {
      requestsPerSecond: {
        GATEWAY_A: deps.env.GATEWAY_A_REQUESTS_PER_SECOND,
        GATEWAY_B: deps.env.GATEWAY_B_REQUESTS_PER_SECOND,
      },
      onRedisUnavailable: (gateway, error) => {
        const fields = { gateway, error: error instanceof Error ? error.message : String(error) };
        const message = 'gateway budget: Redis unavailable, this process keeps the request rate on its own';
        try {
          log.warn(message, fields);
        } catch {
          // Outside an activity (a script): no activity logger to write to.
          console.warn(message, fields);
        }
      },
    });
    budgets.set(deps.redis, budget);
  }
  return budget;
}
