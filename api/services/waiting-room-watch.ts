/**
 * Long-polling for the waiting room: a waiting buyer's GET may ask to be answered only when its turn changes (it is
 * admitted, the date sells out or stock comes back) or after `waitMs`, so a crowd of 20,000 costs one request per
 * buyer every ~20 s instead of one a second, and still hears sold out within a tick.
 *
 * The process leading a room (waiting-room-ticker.ts) publishes the room's signal on ROOM_SIGNALS_CHANNEL whenever it
 * changes: sold out or not, and the join number of the last turn admitted. Every API process subscribes once and wakes
 * the waiters the signal concerns; each woken request then reads its own standing from Redis.
 */
import type { Redis } from 'ioredis';

export const ROOM_SIGNALS_CHANNEL = 'wr:signals';
/** Longest a GET may wait. */
export const MAX_WAIT_MS = 25_000;
/** Waiters one process holds at most; past it, requests are answered at once (the browser polls). */
const MAX_WAITERS = 50_000;

export interface RoomSignal {
  eventDateId: string;
  soldOut: boolean;
  /** Join number of the last turn admitted: every waiting turn up to it has been admitted. */
  lastAdmittedSeq: number;
}

interface Waiter {
  seq: number;
  soldOut: boolean;
  wake(): void;
}

/** Whether a signal changes what a waiter, as it last read its turn, would see. */
export function signalConcerns(signal: RoomSignal, waiter: { seq: number; soldOut: boolean }): boolean {
  if (signal.soldOut !== waiter.soldOut) return true;
  return !signal.soldOut && signal.lastAdmittedSeq >= waiter.seq;
}

export class RoomWatch {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private count = 0;
  private started = false;

  constructor(private readonly subscriber: Redis) {}

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel !== ROOM_SIGNALS_CHANNEL) return;
      try {
        this.deliver(JSON.parse(message) as RoomSignal);
      } catch {
        // A malformed message wakes nobody; waiters still answer at their timeout.
      }
    });
    // Resubscribed by ioredis after a reconnect; waiters meanwhile answer at their timeout.
    await this.subscriber.subscribe(ROOM_SIGNALS_CHANNEL).catch(() => undefined);
  }

  /** Resolves when a signal concerns this turn, when `timeoutMs` passes, or when the process closes. */
  wait(eventDateId: string, turn: { seq: number; soldOut: boolean }, timeoutMs: number): Promise<void> {
    if (this.count >= MAX_WAITERS || timeoutMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      let set = this.waiters.get(eventDateId);
      if (!set) {
        set = new Set();
        this.waiters.set(eventDateId, set);
      }
      const room = set;
      const waiter: Waiter = {
        ...turn,
        wake: () => {
          clearTimeout(timer);
          if (room.delete(waiter)) this.count -= 1;
          if (room.size === 0 && this.waiters.get(eventDateId) === room) this.waiters.delete(eventDateId);
          resolve();
        },
      };
      const timer = setTimeout(waiter.wake, Math.min(timeoutMs, MAX_WAIT_MS));
      room.add(waiter);
      this.count += 1;
    });
  }

  deliver(signal: RoomSignal): void {
    const room = this.waiters.get(signal.eventDateId);
    if (!room) return;
    for (const waiter of [...room]) if (signalConcerns(signal, waiter)) waiter.wake();
  }

  /** Answers every waiting request now (the process is closing). */
  async stop(): Promise<void> {
    for (const room of [...this.waiters.values()]) for (const waiter of [...room]) waiter.wake();
    // Disconnected, not quit: a QUIT to a Redis that never answers would hold the process's shutdown.
    if (this.started) this.subscriber.disconnect();
  }
}

/** Publishes a room's signal (the ticker does, when it changes). */
export async function publishRoomSignal(redis: Redis, signal: RoomSignal): Promise<void> {
  await redis.publish(ROOM_SIGNALS_CHANNEL, JSON.stringify(signal));
}
