/**
 * The processes' Redis client batches the commands issued within one tick into one write (config/redis.ts): what the
 * waiting room's polls rely on for their CPU, and what must not change an answer. Each command of a batch keeps its
 * own answer and its own error, so one buyer's refused command never fails another's. Measured by
 * `npm run bench -- redis-pipelining`; a Redis restart under a batching client is the redis-restart fault test's.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createRedis } from '../../config/redis.js';
import { testEnv } from '../support/stack.js';

const clients: Redis[] = [];
const client = async (autoPipelining?: boolean): Promise<Redis> => {
  const redis = createRedis(testEnv().REDIS_URL, autoPipelining === undefined ? {} : { autoPipelining });
  clients.push(redis);
  await redis.ping();
  return redis;
};
afterAll(() => {
  for (const redis of clients) redis.disconnect();
});

test('commands issued in one tick leave as one batch by default, and each gets its own answer', async () => {
  const redis = await client();
  const key = `test:pipelining:${randomUUID()}`;
  const answers = Promise.all([redis.incr(key), redis.incr(key), redis.get(key), redis.del(key)]);
  expect(redis.autoPipelineQueueSize).toBe(4);
  expect(await answers).toEqual([1, 2, '2', 1]);
});

test('with auto-pipelining off (REDIS_AUTO_PIPELINING=false) each command is sent on its own', async () => {
  const redis = await client(false);
  const key = `test:pipelining:${randomUUID()}`;
  const answers = Promise.all([redis.incr(key), redis.get(key), redis.del(key)]);
  expect(redis.autoPipelineQueueSize).toBe(0);
  expect(await answers).toEqual([1, '1', 1]);
});

test("a command Redis refuses fails alone: the batch's other commands still answer", async () => {
  const redis = await client();
  const text = `test:pipelining:${randomUUID()}`;
  const counter = `test:pipelining:${randomUUID()}`;
  await redis.set(text, 'not a hash');
  const [refused, counted, read] = await Promise.allSettled([
    redis.hget(text, 'field'),
    redis.incr(counter),
    redis.get(text),
  ]);
  expect(refused).toMatchObject({ status: 'rejected', reason: { name: 'ReplyError' } });
  expect(String((refused as PromiseRejectedResult).reason)).toMatch(/WRONGTYPE/);
  expect(counted).toEqual({ status: 'fulfilled', value: 1 });
  expect(read).toEqual({ status: 'fulfilled', value: 'not a hash' });
  await redis.del(text, counter);
});
