/**
 * Long-polling waiters of the waiting room wake on the room signals that concern them: admission reaching their
 * turn, the date selling out, stock coming back; and only those.
 */
import type { Redis } from 'ioredis';
import {
  CONNECTION_BYTES,
  connectionCapacity,
  heldPollCapacity,
  ROOM_REQUEST_BYTES,
  type RoomSignal,
  RoomWatch,
  roomBusyRetryAfterSeconds,
  roomRequestCapacity,
  signalConcerns,
  UNHELD_LATEST_MS,
  unheldPollAfterMs,
} from '../../api/services/waiting-room-watch.js';

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

  test('a waiter learns why it woke: sold out (so the route answers without Redis), another change, or its time', async () => {
    const watch = new RoomWatch({} as Redis);
    const waiting = watch.wait('date-1', { seq: 5, soldOut: false }, 25_000);
    const admittedThenSoldOut = watch.wait('date-1', { seq: 2, soldOut: false }, 25_000);
    const toldSoldOut = watch.wait('date-1', { seq: 7, soldOut: true }, 25_000);
    const elsewhere = watch.wait('date-2', { seq: 1, soldOut: false }, 20);
    // One signal both admits #2 and sells the date out: what the buyer will read is sold out either way.
    watch.deliver(signal({ soldOut: true, lastAdmittedSeq: 2 }));
    await expect(Promise.all([waiting, admittedThenSoldOut])).resolves.toEqual(['sold_out', 'sold_out']);
    // Stock back for a buyer told sold out: a change it must read from the room.
    watch.deliver(signal({ soldOut: false, lastAdmittedSeq: 2 }));
    await expect(toldSoldOut).resolves.toBe('changed');
    await expect(elsewhere).resolves.toBe('timeout');
    expect(watch.held).toBe(0);
  });

  test('a process holds no more long polls than its heap allows; past that the answer is at once', async () => {
    const watch = new RoomWatch({} as Redis, 2);
    const held = [
      watch.wait('date-1', { seq: 1, soldOut: false }, 25_000),
      watch.wait('date-1', { seq: 2, soldOut: false }, 25_000),
    ];
    expect(watch.held).toBe(2);
    await expect(watch.wait('date-1', { seq: 3, soldOut: false }, 25_000)).resolves.toBe('unheld');
    expect(watch.held).toBe(2);
    watch.deliver(signal({ lastAdmittedSeq: 1 }));
    await expect(held[0]).resolves.toBe('changed');
    // The slot it left is free again.
    const next = watch.wait('date-1', { seq: 4, soldOut: false }, 25_000);
    expect(watch.held).toBe(2);
    await watch.stop();
    await expect(Promise.all([held[1], next])).resolves.toEqual(['timeout', 'timeout']);
  });

  test("the room's budgets are shares of the heap limit: with the rest of the process, a 256 MB heap stays under 240 MB", () => {
    const heap = 256 * 1024 * 1024;
    const requests = roomRequestCapacity(heap);
    const connections = connectionCapacity(heap);
    expect(requests).toBeGreaterThan(3_500);
    expect(connections).toBeGreaterThan(8_000);
    // The process's own 110 MB, every connection and every room request at their budgeted size.
    const PROCESS_BYTES = 110 * 1024 * 1024;
    expect(PROCESS_BYTES + requests * ROOM_REQUEST_BYTES + connections * CONNECTION_BYTES).toBeLessThan(
      240 * 1024 * 1024,
    );
    expect(roomRequestCapacity(2 * heap)).toBeGreaterThanOrEqual(2 * requests);
    expect(heldPollCapacity(requests)).toBe(Math.floor(requests * 0.75));
    expect(heldPollCapacity(4)).toBe(3);
  });

  test('a refused room request comes back after 1 to 5 s, spread', () => {
    expect(roomBusyRetryAfterSeconds(() => 0)).toBe(1);
    expect(roomBusyRetryAfterSeconds(() => 0.999_999)).toBe(5);
  });

  test('an unheld poll without an estimate comes back between half and all of the wait asked for, never past the longest wait', () => {
    expect(unheldPollAfterMs(20_000, null, () => 0)).toBe(10_000);
    expect(unheldPollAfterMs(20_000, null, () => 0.999_999)).toBe(20_000);
    expect(unheldPollAfterMs(60_000, null, () => 0.999_999)).toBe(25_000);
  });

  test('an unheld buyer comes back at about half its estimated wait: soon near the front, at most a minute far back', () => {
    // Near the front: within a second or a few.
    expect(unheldPollAfterMs(20_000, 1, () => 0.5)).toBe(800);
    expect(unheldPollAfterMs(20_000, 0, () => 0)).toBe(800);
    expect(unheldPollAfterMs(20_000, 8, () => 0.5)).toBe(4_000);
    // Spread ±25% so buyers with one estimate do not return together.
    expect(unheldPollAfterMs(20_000, 8, () => 0)).toBe(3_000);
    expect(unheldPollAfterMs(20_000, 8, () => 0.999_999)).toBe(5_000);
    // Far back: a minute at most, whatever the wait.
    expect(unheldPollAfterMs(20_000, 90, () => 0.5)).toBe(45_000);
    expect(unheldPollAfterMs(20_000, 3_600, () => 0.999_999)).toBe(UNHELD_LATEST_MS);
  });
});
