import type { FastifyRequest } from 'fastify';
import type { RateLimitName } from '../../config/rate-limits.js';
import { AppError } from '../../domain/errors.js';
import { enforceNamedLimit, type RateLimitResult } from '../plugins/rate-limit.js';
import { withDeadline } from './deadline.js';

/**
 * Counts one hit of `key` against the configured limit `name` (config/rate-limits.ts) and answers 429 RATE_LIMITED
 * with Retry-After once it is over. Keeps working while Redis is down (the process then limits on its own).
 */
export async function enforceRateLimit(request: FastifyRequest, name: RateLimitName, key: string): Promise<void> {
  await enforceNamedLimit(request.server, name, key);
}

/** Counts one hit without refusing the request: for limits whose excess is ignored silently rather than answered. */
export function consumeRateLimit(request: FastifyRequest, name: RateLimitName, key: string): Promise<RateLimitResult> {
  return request.server.rateLimits.consume(name, key);
}

/**
 * Runs work that cannot be done without Redis (waiting-room turns, purchase-session lookups): when Redis fails or
 * does not answer within `timeoutMs`, the request gets 503 SERVICE_UNAVAILABLE (retryable), never a 500. Redis'
 * own refusals of a command (ReplyError: a bug, not an outage) still surface as they are.
 */
export async function requireRedis<T>(what: string, work: () => Promise<T>, timeoutMs = 2000): Promise<T> {
  try {
    return await withDeadline(work(), timeoutMs, `redis did not answer within ${timeoutMs} ms`);
  } catch (error) {
    if (error instanceof AppError || (error instanceof Error && error.name === 'ReplyError')) throw error;
    const unavailable = new AppError('SERVICE_UNAVAILABLE', `${what} is unavailable for a moment; retry shortly`, {
      details: { reason: 'redis_unavailable' },
      headers: { 'Retry-After': '1' },
    });
    unavailable.cause = error; // for the log line of the 503; the body never carries it
    throw unavailable;
  }
}
