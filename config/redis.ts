import { Redis } from 'ioredis';

/**
 * Options of every Redis client here. Commands fail fast while Redis is down instead of queueing forever behind a
 * request.
 *
 * Auto-pipelining stays off although it saves Redis about a quarter of its CPU per waiting-room poll
 * (`npm run bench -- redis-pipelining`): with it, ioredis 5.11.1 threw an uncaught TypeError from a batch's callback
 * ("results[i] is not iterable", redis/ioredis#1931) in three test files of a full run, which in a server process ends
 * the process. docs/waiting-room.md has the runs.
 */
export const REDIS_CLIENT_OPTIONS = { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false } as const;

export function createRedis(url: string): Redis {
  return new Redis(url, REDIS_CLIENT_OPTIONS);
}
