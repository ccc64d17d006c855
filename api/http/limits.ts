import type { Redis } from 'ioredis';
import { AppError } from '../../domain/errors.js';
import { consumeRateLimit } from '../plugins/rate-limit.js';

/** Counts one hit and answers 429 RATE_LIMITED with Retry-After once `limit` per `windowSeconds` is exceeded. */
export async function enforceRateLimit(
  redis: Redis,
  options: { key: string; limit: number; windowSeconds: number; message: string },
): Promise<void> {
  const result = await consumeRateLimit(redis, `rl:${options.key}`, options.limit, options.windowSeconds);
  if (!result.allowed) {
    throw new AppError('RATE_LIMITED', options.message, {
      headers: { 'retry-after': String(result.resetSeconds) },
      details: { limit: options.limit, windowSeconds: options.windowSeconds, retryAfterSeconds: result.resetSeconds },
    });
  }
}
