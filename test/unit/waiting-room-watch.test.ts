/**
 * Long-polling waiters of the waiting room wake on the room signals that concern them: admission reaching their
 * turn, the date selling out, stock coming back; and only those.
 */
import type { Redis } from 'ioredis';
import { type RoomSignal, RoomWatch, signalConcerns } from '../../api/services/waiting-room-watch.js';

const signal = (overrides: Partial<RoomSignal> = {}): RoomSignal => ({
  eventDateId: 'date-1',
  soldOut: false,
  lastAdmittedSeq: 0,
  ...overrides,
});

describe('waiting-room long-poll signals', () => {
  test('a waiter wakes when admission reaches its turn, on sold out, and when stock comes back', () => {
    expect(signalConcerns(signal({ lastAdmittedSeq: 4 }), { seq: 5, soldOut: false })).toBe(false);
    expect(signalConcerns(signal({ lastAdmittedSeq: 5 }), { seq: 5, soldOut: false })).toBe(true);
    expect(signalConcerns(signal({ soldOut: true }), { seq: 5, soldOut: false })).toBe(true);
    expect(signalConcerns(signal({ soldOut: true, lastAdmittedSeq: 9 }), { seq: 5, soldOut: true })).toBe(false);
    expect(signalConcerns(signal({ soldOut: false }), { seq: 5, soldOut: true })).toBe(true);
  });

  test('deliver wakes only the waiters of that room the signal concerns; stop answers the rest', async () => {
    const watch = new RoomWatch({} as Redis);
    const woken: string[] = [];
    const waits = [
      watch.wait('date-1', { seq: 2, soldOut: false }, 25_000).then(() => woken.push('date-1 #2')),
      watch.wait('date-1', { seq: 9, soldOut: false }, 25_000).then(() => woken.push('date-1 #9')),
      watch.wait('date-2', { seq: 1, soldOut: false }, 25_000).then(() => woken.push('date-2 #1')),
    ];
    watch.deliver(signal({ lastAdmittedSeq: 3 }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toEqual(['date-1 #2']);
    await watch.stop();
    await Promise.all(waits);
    expect(woken.sort()).toEqual(['date-1 #2', 'date-1 #9', 'date-2 #1']);
  });
});
