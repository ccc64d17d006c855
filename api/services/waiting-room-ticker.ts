/**
 * The measuring half of the waiting room. Every API process publishes its own health to Redis each tick (its
 * waiting-room reservation latency, requests it shed, its event loop); for each room, the one process holding the
 * room's lease (a Redis key with a short expiry, so another takes over when it dies) reads the stock and the sales
 * of the date, combines every process's health, runs the admission controller and writes the knobs the admission
 * scripts read (waiting-room.ts).
 *
 * Sold out: no unit on sale, none in a hold whose payment window has passed, and no hold that can come back within
 * SOLD_OUT_HORIZON_MS. Waiting buyers then read sold_out at their next poll (a tick every TICK_MS); when a hold
 * lapses and its units come back, the flag clears and admission resumes in the same order.
 */
import { randomBytes } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Redis } from 'ioredis';
import {
  type Admission,
  type AdmissionBounds,
  type AdmissionLimits,
  DEFAULT_ADMISSION_LIMITS,
  initialAdmission,
  nextAdmission,
  type StackHealth,
  strainCauses,
} from './admission-controller.js';
import type { TaskBacklogSampler } from './task-backlog.js';
import {
  finishTurns,
  payingTurns,
  ROOMS_KEY,
  type RoomConfig,
  roomCounters,
  roomKeys,
  setRoomKnobs,
} from './waiting-room.js';
import { ROOM_SIGNALS_CHANNEL, type RoomSignal } from './waiting-room-watch.js';

export const TICK_MS = 250;
/** A hold that lapses sooner than this may still come back to a waiting buyer: the date is not sold out yet. */
export const SOLD_OUT_HORIZON_MS = 60_000;
/** Bounds of admitted buyers active at once when the organizer set none. */
export const DEFAULT_FLOOR = 10;
export const DEFAULT_CEILING = 2_000;
const HEALTH_KEY = 'wr:health';
const HEALTH_FRESH_MS = 3_000;
/** Short, so one slow burst does not hold admission at its minimum long after the stack recovered. */
const LATENCY_WINDOW_MS = 3_000;

/** What one process measures of itself. */
export interface ProcessHealthSource {
  /** Cumulative count of requests this process shed. */
  shedTotal(): Promise<number>;
  /** Last event-loop sample, when load shedding samples it. */
  pressure(): { eventLoopUtilization: number; eventLoopDelayMs: number } | null;
}

interface PublishedHealth {
  at: number;
  p90: number | null;
  shedTotal: number;
  elu: number;
  delay: number;
}

/** Latencies of the reservations this process made with a turn, over the recent window. */
export class ReservationLatencies {
  private samples: Array<{ at: number; ms: number }> = [];

  record(ms: number): void {
    this.samples.push({ at: Date.now(), ms });
    if (this.samples.length > 5_000) this.samples.splice(0, this.samples.length - 5_000);
  }

  p90(now = Date.now()): number | null {
    this.samples = this.samples.filter((sample) => sample.at > now - LATENCY_WINDOW_MS);
    if (this.samples.length === 0) return null;
    const sorted = this.samples.map((sample) => sample.ms).sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))] ?? null;
  }
}

interface RoomMemory {
  lastAdmittedTotal: number;
  lastAt: number;
  admissionRate: number;
  /** The signal last published for long-polling waiters, and when. */
  published: string;
  publishedAt: number;
  /** When admission was last cut (shed or strained); null when never by this leader. */
  lastDecreaseAt: number | null;
}

/** A signal is repeated this often even unchanged: a process that missed one (a reconnect) catches up. */
const SIGNAL_REPEAT_MS = 2_000;

export interface WaitingRoomTickerOptions {
  redis: Redis;
  turnWindowMs: number;
  orm: MikroORM;
  health: ProcessHealthSource;
  latencies: ReservationLatencies;
  /** The worker's task backlog; without it (no Temporal client) admission ignores the backlog. */
  taskBacklog?: Pick<TaskBacklogSampler, 'current' | 'stop'>;
  limits?: AdmissionLimits;
  log?: { warn(object: object, message: string): void };
}

const LEASE = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if not holder then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0
`;

interface DateFigures {
  virtual_queue: boolean;
  queue_min_active: number | null;
  queue_max_active: number | null;
  gone: boolean;
  available: string;
  lapsed: string;
  next_hold_expiry_ms: string | null;
}

export class WaitingRoomTicker {
  private readonly id = randomBytes(6).toString('hex');
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private stopped = false;
  private lastWarnAt = 0;
  private readonly rooms = new Map<string, RoomMemory>();
  private readonly lastShed = new Map<string, number>();
  private readonly limits: AdmissionLimits;
  private readonly room: RoomConfig;

  constructor(private readonly options: WaitingRoomTickerOptions) {
    this.limits = options.limits ?? DEFAULT_ADMISSION_LIMITS;
    this.room = { redis: options.redis, turnWindowMs: options.turnWindowMs };
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.options.taskBacklog?.stop();
    // Bounded: a Redis that never answers must not hold the shutdown (the entry lapses on its own after a minute).
    await Promise.race([
      this.options.redis.hdel(HEALTH_KEY, this.id).catch(() => {}),
      new Promise((resolve) => setTimeout(resolve, 500).unref()),
    ]);
  }

  /** One tick: publish this process's health, then tick every room this process leads. Never overlaps itself. */
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const { redis } = this.options;
      await this.publishHealth();
      const dates = await redis.smembers(ROOMS_KEY);
      for (const eventDateId of dates) {
        const leads = await redis.eval(LEASE, 1, roomKeys(eventDateId).leader, this.id, TICK_MS * 6);
        if (leads === 1) await this.tickRoom(eventDateId);
        else this.rooms.delete(eventDateId);
      }
    } catch (error) {
      // Redis or the database away for a moment: the scripts keep the last knobs; the next tick tries again.
      // One line per 10 s at most: a Redis outage would otherwise log four a second.
      if (!this.stopped && Date.now() - this.lastWarnAt > 10_000) {
        this.lastWarnAt = Date.now();
        this.options.log?.warn({ err: error }, 'waiting-room tick failed');
      }
    } finally {
      this.running = false;
    }
  }

  private async publishHealth(): Promise<void> {
    const pressure = this.options.health.pressure();
    const health: PublishedHealth = {
      at: Date.now(),
      p90: this.options.latencies.p90(),
      shedTotal: await this.options.health.shedTotal(),
      elu: pressure?.eventLoopUtilization ?? 0,
      delay: pressure?.eventLoopDelayMs ?? 0,
    };
    // The hash lapses a minute after the last process stops publishing; the leader drops single stale entries.
    await Promise.all([
      this.options.redis.hset(HEALTH_KEY, this.id, JSON.stringify(health)),
      this.options.redis.pexpire(HEALTH_KEY, 60_000),
    ]);
  }

  /** Every fresh process's health combined; shed counts since this leader's previous look. */
  async stackHealth(): Promise<StackHealth> {
    const entries = await this.options.redis.hgetall(HEALTH_KEY);
    const now = Date.now();
    const combined: StackHealth = {
      reservationP90Ms: null,
      shedSinceLastTick: 0,
      eventLoopUtilization: 0,
      eventLoopDelayMs: 0,
      // One task queue for the whole stack, so it is read here by the leader rather than published by every process.
      taskBacklog: this.options.taskBacklog?.current() ?? null,
    };
    for (const [process, text] of Object.entries(entries)) {
      const health = JSON.parse(text) as PublishedHealth;
      if (health.at < now - HEALTH_FRESH_MS) {
        // A process gone for good (restarted, scaled down) leaves its last entry behind.
        if (health.at < now - 60_000) await this.options.redis.hdel(HEALTH_KEY, process);
        continue;
      }
      if (health.p90 !== null) combined.reservationP90Ms = Math.max(combined.reservationP90Ms ?? 0, health.p90);
      const previous = this.lastShed.get(process);
      if (previous !== undefined) combined.shedSinceLastTick += Math.max(0, health.shedTotal - previous);
      this.lastShed.set(process, health.shedTotal);
      combined.eventLoopUtilization = Math.max(combined.eventLoopUtilization, health.elu);
      combined.eventLoopDelayMs = Math.max(combined.eventLoopDelayMs, health.delay);
    }
    return combined;
  }

  private async tickRoom(eventDateId: string): Promise<void> {
    const { redis, orm } = this.options;
    const em = orm.em.fork();
    // Read before the stock: a turn used after this point may not be in the stock read below.
    const counters = await roomCounters(redis, eventDateId);
    const [figures] = await em.execute<DateFigures[]>(
      `select d.virtual_queue, d.queue_min_active, d.queue_max_active,
              (d.deleted_at is not null or d.cancelled_at is not null) as gone,
              (select coalesce(sum(s.available), 0) from ticket_stock s join ticket_types tt on tt.id = s.ticket_type_id
                where tt.event_date_id = d.id and tt.deleted_at is null) as available,
              (select coalesce(sum(a.quantity), 0) from sale_stock_allocations a join sales s on s.id = a.sale_id
                where s.event_date_id = d.id and s.status = 'PENDING' and s.expires_at <= now()) as lapsed,
              (select extract(epoch from min(s.expires_at)) * 1000 from sales s
                where s.event_date_id = d.id and s.status = 'PENDING' and s.expires_at > now()
                  and exists (select 1 from sale_stock_allocations a where a.sale_id = s.id)) as next_hold_expiry_ms
         from event_dates d where d.id = ?`,
      [eventDateId],
    );
    if (!figures?.virtual_queue || figures.gone) {
      await redis.srem(ROOMS_KEY, eventDateId);
      return;
    }

    // Paying buyers whose sale is finished free their slot now rather than at the end of PAYING_WINDOW_MS.
    const paying = await payingTurns(redis, eventDateId);
    if (paying.size > 0) {
      const finished = await em.execute<{ id: string }[]>(
        `select id from sales where id in (?) and status <> 'PENDING'`,
        [[...new Set(paying.values())]],
      );
      const finishedSales = new Set(finished.map((row) => row.id));
      await finishTurns(
        this.room,
        eventDateId,
        [...paying].filter(([, sale]) => finishedSales.has(sale)).map(([token]) => token),
      );
    }

    const bounds = admissionBounds(figures.queue_min_active, figures.queue_max_active);
    const previous: Admission =
      counters.target > 0 ? { targetActive: counters.target, admitPerSecond: counters.rate } : initialAdmission(bounds);
    const keys = roomKeys(eventDateId);
    const [active, waiting, payingCount] = await Promise.all([
      redis.zcard(keys.active),
      redis.zcard(keys.waiting),
      redis.hlen(keys.paying),
    ]);
    const obtainableNow = Number(figures.available) + Number(figures.lapsed);
    const memory = this.rooms.get(eventDateId);
    const health = await this.stackHealth();
    const now = Date.now();
    const lastDecreaseAt = memory?.lastDecreaseAt ?? null;
    const next = nextAdmission(previous, {
      health,
      active,
      waiting,
      // Every obtainable unit already has an admitted turn that has not reserved yet: only stock can let more in.
      stockBound: obtainableNow - (active - payingCount) <= 0,
      sinceDecreaseMs: lastDecreaseAt === null ? null : now - lastDecreaseAt,
      bounds,
      limits: this.limits,
    });
    if (next.verdict === 'shed' || next.verdict === 'strained')
      await countAdmissionCuts(redis, keys.knobs, health, this.limits);
    let admissionRate = memory?.admissionRate ?? 0;
    if (memory && now > memory.lastAt) {
      const instant = ((counters.admittedTotal - memory.lastAdmittedTotal) * 1000) / (now - memory.lastAt);
      admissionRate = admissionRate * 0.9 + instant * 0.1;
    }

    const available = Number(figures.available);
    const lapsed = Number(figures.lapsed);
    const nextHoldExpiry = figures.next_hold_expiry_ms === null ? null : Number(figures.next_hold_expiry_ms);
    const soldOut = isSoldOut({ available, lapsed, nextHoldExpiryMs: nextHoldExpiry, now });
    const counts = await setRoomKnobs(this.room, eventDateId, {
      usedTotalSeen: counters.usedTotal,
      targetActive: next.targetActive,
      admitPerSecond: Math.round(next.admitPerSecond * 100) / 100,
      obtainable: available + lapsed,
      soldOut,
      admissionRate: Math.round(admissionRate * 100) / 100,
    });
    const signal = JSON.stringify({
      eventDateId,
      soldOut: counts.soldOut,
      lastAdmittedSeq: counts.lastAdmittedSeq,
    } satisfies RoomSignal);
    const repeat = !memory || memory.published !== signal || now - memory.publishedAt >= SIGNAL_REPEAT_MS;
    if (repeat && counts.waiting > 0) await redis.publish(ROOM_SIGNALS_CHANNEL, signal);
    this.rooms.set(eventDateId, {
      lastAdmittedTotal: counters.admittedTotal,
      lastAt: now,
      admissionRate,
      published: repeat ? signal : (memory?.published ?? signal),
      publishedAt: repeat ? now : (memory?.publishedAt ?? now),
      lastDecreaseAt: next.verdict === 'shed' || next.verdict === 'strained' ? now : lastDecreaseAt,
    });
    if (counts.waiting === 0 && counts.active === 0 && counts.paying === 0) {
      // Nobody left: a later join names the room again.
      await redis.srem(ROOMS_KEY, eventDateId);
      this.rooms.delete(eventDateId);
    }
  }
}

/**
 * Counts what made the controller slow admission down, one field per cause in the room's knobs (`cuts:<cause>`): the
 * crowd bench reads them to say which measurement bounded admission, and an operator can read them in Redis.
 */
export async function countAdmissionCuts(redis: Redis, knobsKey: string, health: StackHealth, limits: AdmissionLimits) {
  const causes = strainCauses(health, limits);
  if (causes.length === 0) return;
  const counting = redis.multi();
  for (const cause of causes) counting.hincrby(knobsKey, `cuts:${cause}`, 1);
  await counting.exec();
}

/** Why a request refused with 503 is counted under the shed metric's `reason` when the room's own budget refused it. */
export const ROOM_BUDGET_SHED_REASON = 'waiting_room_requests';

/**
 * Requests shed because the process was overloaded, from the shed metric's values: not the waiting room's refusals for
 * its heap budget. Those measure the crowd's size, not the load admitted buyers put on the stack, and slowing
 * admission would only keep the crowd waiting (and polling) longer.
 */
export function overloadShedTotal(values: ReadonlyArray<{ value: number; labels: Record<string, unknown> }>): number {
  return values
    .filter((value) => value.labels.reason !== ROOM_BUDGET_SHED_REASON)
    .reduce((sum, value) => sum + value.value, 0);
}

export function admissionBounds(floor: number | null, ceiling: number | null): AdmissionBounds {
  const low = floor ?? Math.min(DEFAULT_FLOOR, ceiling ?? DEFAULT_FLOOR);
  return { floor: low, ceiling: Math.max(low, ceiling ?? DEFAULT_CEILING) };
}

/** Sold out: nothing on sale, nothing lapsed to take back, and no hold that may come back soon. */
export function isSoldOut(stock: {
  available: number;
  lapsed: number;
  nextHoldExpiryMs: number | null;
  now: number;
}): boolean {
  if (stock.available > 0 || stock.lapsed > 0) return false;
  return stock.nextHoldExpiryMs === null || stock.nextHoldExpiryMs > stock.now + SOLD_OUT_HORIZON_MS;
}
