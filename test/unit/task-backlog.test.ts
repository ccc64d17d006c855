/**
 * The worker's task backlog as an input of the waiting room's admission: sampled at most every few seconds, never
 * awaited by a tick, unknown once its sample is stale, and what the room's leader passes to the controller.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Redis } from 'ioredis';
import { BACKLOG_SAMPLE_MS, TaskBacklogSampler } from '../../api/services/task-backlog.js';
import { ReservationLatencies, WaitingRoomTicker } from '../../api/services/waiting-room-ticker.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('task backlog sampler', () => {
  test('asks Temporal at most every BACKLOG_SAMPLE_MS however often the ticks read it', async () => {
    let asked = 0;
    const sampler = new TaskBacklogSampler(async () => {
      asked += 1;
      return 40 * asked;
    });
    const start = 1_000_000;
    expect(sampler.current(start)).toBeNull();
    await settle();
    for (let at = start; at < start + BACKLOG_SAMPLE_MS; at += 250) sampler.current(at);
    await settle();
    expect(asked).toBe(1);
    expect(sampler.current(start + BACKLOG_SAMPLE_MS - 1)).toBe(40);
    sampler.current(start + BACKLOG_SAMPLE_MS);
    await settle();
    expect(asked).toBe(2);
  });

  test('one ask at a time: a slow Temporal is not asked again while it has not answered', async () => {
    let asked = 0;
    let answer: (tasks: number) => void = () => undefined;
    const sampler = new TaskBacklogSampler(() => {
      asked += 1;
      return new Promise<number>((resolve) => {
        answer = resolve;
      });
    });
    for (let tick = 0; tick < 10; tick += 1) sampler.current(1_000_000 + tick * BACKLOG_SAMPLE_MS);
    expect(asked).toBe(1);
    answer(7);
    await settle();
    expect(sampler.current()).toBe(7);
  });

  test('stopping waits for the ask in flight and asks no more: the API closes its Temporal connection right after', async () => {
    let asked = 0;
    let answer: (tasks: number) => void = () => undefined;
    const sampler = new TaskBacklogSampler(() => {
      asked += 1;
      return new Promise<number>((resolve) => {
        answer = resolve;
      });
    });
    sampler.current(1_000_000);
    let stopped = false;
    const stopping = sampler.stop().then(() => {
      stopped = true;
    });
    await settle();
    expect(stopped).toBe(false);
    answer(5);
    await stopping;
    sampler.current(1_000_000 + 10 * BACKLOG_SAMPLE_MS);
    await settle();
    expect(asked).toBe(1);
  });

  test('a failing Temporal leaves the backlog unknown once the last sample is stale, and is reported', async () => {
    const errors: unknown[] = [];
    let fail = false;
    const sampler = new TaskBacklogSampler(
      async () => {
        if (fail) throw new Error('frontend unavailable');
        return 300;
      },
      (error) => errors.push(error),
    );
    await sampler.refresh();
    expect(sampler.current()).toBe(300);
    fail = true;
    await sampler.refresh();
    expect(errors).toHaveLength(1);
    expect(sampler.current()).toBe(300);
    expect(sampler.current(Date.now() + 60_000)).toBeNull();
  });
});

describe('the room leader reads the backlog into the stack health', () => {
  test('stackHealth carries the sampled backlog (null without a sampler)', async () => {
    const redis = { hgetall: async () => ({}) } as unknown as Redis;
    const common = {
      redis,
      turnWindowMs: 60_000,
      orm: {} as MikroORM,
      latencies: new ReservationLatencies(),
      health: { shedTotal: async () => 0, pressure: () => null },
    };
    const withBacklog = new WaitingRoomTicker({
      ...common,
      taskBacklog: { current: () => 250, stop: async () => undefined },
    });
    expect((await withBacklog.stackHealth()).taskBacklog).toBe(250);
    expect((await new WaitingRoomTicker(common).stackHealth()).taskBacklog).toBeNull();
  });
});
