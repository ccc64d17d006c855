import { Redis } from 'ioredis';

/**
 * The process's Redis client. Commands fail fast while Redis is down instead of queueing forever behind a request.
 *
 * Auto-pipelining sends the commands issued within one tick as one write. Each waiting-room poll sends two to five
 * commands, and in the 20,000-buyer crowd bench the API spent 23 % of its CPU writing them one syscall at a time
 * (`writeUtf8String` under ioredis' `sendCommand`, V8 CPU profile of 2026-11-30); `npm run bench -- redis-pipelining`
 * measures both ways. Nothing here blocks a connection (no BLPOP, no XREAD BLOCK) that a batch could queue behind, and
 * ioredis never pipelines subscribe commands.
 */
export function createRedis(url: string, options: { autoPipelining?: boolean } = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    lazyConnect: false,
    enableAutoPipelining: options.autoPipelining ?? true,
  });
}
