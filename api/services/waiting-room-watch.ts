/**
 * Long-polling for the waiting room: a waiting buyer's GET may ask to be answered only when its turn changes (it is
 * admitted, the date sells out or stock comes back) or after `waitMs`, so a crowd of 20,000 costs one request per
 * buyer every ~20 s instead of one a second, and still hears sold out within a tick.
 *
 * The process leading a room (waiting-room-ticker.ts) publishes the room's signal on ROOM_SIGNALS_CHANNEL whenever it
 * changes: sold out or not, and the join number of the last turn admitted. Every API process subscribes once and wakes
 * the waiters the signal concerns; each woken request then reads its own standing from Redis.
 */
import { getHeapStatistics } from 'node:v8';
import type { Redis } from 'ioredis';
import { POLL_AFTER_MS } from './waiting-room.js';

export const ROOM_SIGNALS_CHANNEL = 'wr:signals';
/** Longest a GET may wait. */
export const MAX_WAIT_MS = 25_000;
/**
 * Heap one waiting-room request keeps while this process holds it (its request, reply, promise chain and connection,
 * held in a long poll or waiting on Redis). Measured on a test API: 3,000 long polls held over real connections took
 * 49 MB, 16.4 KB each. Without a bound, 20,000 buyers joining within 10 s took one API process to its 256 MB heap limit
 * and it crashed (`crowd-2026-11-29-20000-before-held-cap`). Counted with room to spare.
 */
export const ROOM_REQUEST_BYTES = 20 * 1024;
/**
 * Heap one idle open connection keeps (socket, parser, buffers): about 5 KB by the crowd bench (20,000 joined buyers'
 * connections held some 95 MB). Counted with room to spare.
 */
export const CONNECTION_BYTES = 6 * 1024;
/**
 * Shares of the process's heap limit: the room's requests, and the open connections. With the process's own 110 MB
 * or so, a 256 MB heap then peaks near 240 MB at the worst, and below 210 MB as measured.
 */
const ROOM_REQUESTS_HEAP_SHARE = 0.3;
const CONNECTIONS_HEAP_SHARE = 0.2;
/** Share of the room's requests that may be long polls held open: the rest keeps joins and fresh polls answered. */
const HELD_POLLS_SHARE = 0.75;

/**
 * How many waiting-room requests one process can hold at once without running out of heap (about 3,900 with the
 * API's 256 MB heap, 2,900 of them held long polls). Past it, a request is refused at once with 503 and Retry-After,
 * before it costs anything: a crowd larger than that is spread over time, and more API replicas hold more of it.
 */
export function roomRequestCapacity(heapLimitBytes: number = getHeapStatistics().heap_size_limit): number {
  return Math.max(1, Math.floor((heapLimitBytes * ROOM_REQUESTS_HEAP_SHARE) / ROOM_REQUEST_BYTES));
}

/**
 * How many connections one process keeps open at once (about 8,700 with the API's 256 MB heap): past it the server
 * closes a new connection at once, and the client connects again. Room answers that send the buyer away for seconds
 * close their connection, so idle buyers do not hold these.
 */
export function connectionCapacity(heapLimitBytes: number = getHeapStatistics().heap_size_limit): number {
  return Math.max(1, Math.floor((heapLimitBytes * CONNECTIONS_HEAP_SHARE) / CONNECTION_BYTES));
}

/** The long polls a process holds at most, of its room requests. */
export function heldPollCapacity(roomRequests: number): number {
  return Math.floor(roomRequests * HELD_POLLS_SHARE);
}

/**
 * When a refused room request may come back: 1–5 s, spread at random so the refused part of a crowd does not return
 * at once.
 */
export function roomBusyRetryAfterSeconds(random: () => number = Math.random): number {
  return 1 + Math.floor(random() * 5);
}

/** Soonest an unheld poll is asked back: the room's own polling pace. */
const UNHELD_SOONEST_MS = POLL_AFTER_MS;
/** Latest an unheld poll is asked back, however far back in line: the position and estimate it sees stay fresh. */
export const UNHELD_LATEST_MS = 60_000;

/**
 * When to come back, for a long poll the process could not hold. Unheld buyers are most of a large crowd (a process
 * holds about 2,900), and their polls are what the process spends its time on: 17,000 of them asked back every 10–20 s
 * kept the one API process of the 20,000-buyer crowd 80–100% busy, so admission stayed at its floor
 * (`crowd-2026-11-29-20000-near-front`). A buyer comes back at about half its estimated wait, spread ±25% so the crowd
 * does not return at once, between UNHELD_SOONEST_MS and UNHELD_LATEST_MS: soon near the front, where an admission
 * heard late leaves one of the few active slots idle; rarely far back, where nothing changes for minutes. Without an
 * estimate, about when a held poll would have been answered (half to all of the wait asked for).
 */
export function unheldPollAfterMs(
  waitMs: number,
  estimatedWaitSeconds: number | null = null,
  random: () => number = Math.random,
): number {
  if (estimatedWaitSeconds === null) return Math.round(Math.min(waitMs, MAX_WAIT_MS) * (0.5 + 0.5 * random()));
  const base = Math.min(UNHELD_LATEST_MS, Math.max(UNHELD_SOONEST_MS, estimatedWaitSeconds * 500));
  const spread = Math.round(base * (0.75 + 0.5 * random()));
  return Math.min(UNHELD_LATEST_MS, Math.max(UNHELD_SOONEST_MS, spread));
}

export interface RoomSignal {
  eventDateId: string;
  soldOut: boolean;
  /** Join number of the last turn admitted: every waiting turn up to it has been admitted. */
  lastAdmittedSeq: number;
}

/**
 * Why a long poll ended: not held at all (the process holds as many as its heap allows), the room's signal that the
 * date sold out (for a waiter that had not heard it), another signal that concerns it (admission reached its turn,
 * stock came back), or its wait ran out (or the process is closing).
 */
export type Wake = 'unheld' | 'sold_out' | 'changed' | 'timeout';

interface Waiter {
  seq: number;
  soldOut: boolean;
  wake(reason: Wake): void;
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

  constructor(
    private readonly subscriber: Redis,
    /** Waiters this process holds at most; past it, `wait` answers at once with 'unheld'. */
    readonly capacity: number = heldPollCapacity(roomRequestCapacity()),
  ) {}

  /** Long polls held now. */
  get held(): number {
    return this.count;
  }

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

  /**
   * Resolves with why it ended (`Wake`): when a signal concerns this turn, when `timeoutMs` passes, or when the process
   * closes; at once with 'unheld' when the process holds as many waiters as its heap allows (or no wait was asked for).
   */
  wait(eventDateId: string, turn: { seq: number; soldOut: boolean }, timeoutMs: number): Promise<Wake> {
    if (this.count >= this.capacity || timeoutMs <= 0) return Promise.resolve('unheld');
    return new Promise((resolve) => {
      let set = this.waiters.get(eventDateId);
      if (!set) {
        set = new Set();
        this.waiters.set(eventDateId, set);
      }
      const room = set;
      const waiter: Waiter = {
        ...turn,
        wake: (reason) => {
          clearTimeout(timer);
          if (room.delete(waiter)) this.count -= 1;
          if (room.size === 0 && this.waiters.get(eventDateId) === room) this.waiters.delete(eventDateId);
          resolve(reason);
        },
      };
      const timer = setTimeout(() => waiter.wake('timeout'), Math.min(timeoutMs, MAX_WAIT_MS));
      room.add(waiter);
      this.count += 1;
    });
  }

  deliver(signal: RoomSignal): void {
    const room = this.waiters.get(signal.eventDateId);
    if (!room) return;
    for (const waiter of [...room]) {
      if (signalConcerns(signal, waiter)) waiter.wake(signal.soldOut && !waiter.soldOut ? 'sold_out' : 'changed');
    }
  }

  /** Answers every waiting request now (the process is closing). */
  async stop(): Promise<void> {
    for (const room of [...this.waiters.values()]) for (const waiter of [...room]) waiter.wake('timeout');
    // Disconnected, not quit: a QUIT to a Redis that never answers would hold the process's shutdown.
    if (this.started) this.subscriber.disconnect();
  }
}

/** Publishes a room's signal (the ticker does, when it changes). */
export async function publishRoomSignal(redis: Redis, signal: RoomSignal): Promise<void> {
  await redis.publish(ROOM_SIGNALS_CHANNEL, JSON.stringify(signal));
}
