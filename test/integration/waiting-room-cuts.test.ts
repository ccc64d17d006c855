/**
 * What made the waiting room slow admission down, kept in the room's knobs on the stack's Redis
 * (api/services/waiting-room-ticker.ts, countAdmissionCuts): one counter per cause, read by the crowd bench to say
 * which measurement bounded admission. The causes themselves are judged in test/unit/admission-controller.test.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { DEFAULT_ADMISSION_LIMITS, type StackHealth } from '../../api/services/admission-controller.js';
import { roomKeys } from '../../api/services/waiting-room.js';
import { countAdmissionCuts } from '../../api/services/waiting-room-ticker.js';
import { createRedis } from '../../config/redis.js';
import { testEnv } from '../support/stack.js';

let redis: Redis;
beforeAll(async () => {
  redis = createRedis(testEnv().REDIS_URL);
  await redis.ping();
});
afterAll(() => redis.disconnect());

const limits = { ...DEFAULT_ADMISSION_LIMITS, shedEventLoopUtilization: 0.98, shedEventLoopDelayMs: 500 };
const healthy: StackHealth = {
  reservationP90Ms: 100,
  shedSinceLastTick: 0,
  eventLoopUtilization: 0.2,
  eventLoopDelayMs: 5,
  taskBacklog: 0,
};

test('each cut counts every cause it had, in the knobs beside the admission figures; a healthy tick counts nothing', async () => {
  const knobs = roomKeys(randomUUID()).knobs;
  await redis.hset(knobs, 'target', '40');
  try {
    const busyLoop = { ...healthy, eventLoopUtilization: 0.99 };
    await countAdmissionCuts(redis, knobs, busyLoop, limits);
    await countAdmissionCuts(redis, knobs, { ...busyLoop, reservationP90Ms: 5_000 }, limits);
    await countAdmissionCuts(redis, knobs, { ...healthy, shedSinceLastTick: 3 }, limits);
    await countAdmissionCuts(redis, knobs, healthy, limits);
    expect(await redis.hgetall(knobs)).toEqual({
      target: '40',
      'cuts:event_loop_busy': '2',
      'cuts:reservation_latency': '1',
      'cuts:shed': '1',
    });
  } finally {
    await redis.del(knobs);
  }
});
