import { Redis } from 'ioredis';

export function createRedis(url: string): Redis {
  // Commands fail fast while Redis is down instead of queueing forever behind a request.
  return new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
}
