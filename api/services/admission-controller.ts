/**
 * How many buyers a waiting room lets in, decided from what the stack measures rather than from a guess.
 *
 * Two knobs, as Cloudflare Waiting Room has them: `targetActive` (admitted buyers active at once: admitted and not yet
 * done reserving or paying) and `admitPerSecond` (new admissions per second, so a free batch of slots is not handed
 * to hundreds of buyers in the same instant). Each tick looks at the stack's health and moves both:
 *
 * - shed: some request was answered 503 overloaded since the last tick. Halve both (multiplicative decrease).
 * - strained: reservation latency above its goal, the event loop busier/later than `slowAt` of the shedding
 *   thresholds, or the worker's task backlog above its goal. Take a fifth off, so admission slows before the load
 *   shedder has anything to shed, and before a new buyer's reservation waits behind tasks the worker has not started.
 * - grow: healthy, buyers waiting, and the controller is what holds them back: most slots in use (add 4% to both, at
 *   least one slot and half an admission a second), or slots free but the admission rate binding (raise the rate
 *   only).
 * - hold: healthy but the controller is not the bottleneck (nobody waits, or stock caps admission).
 * - settle: shed or strained again, but within `decreaseSpacingMs` of the last decrease. Hold until the measurements
 *   can show what that decrease did: the latency window and the backlog sample outlast several ticks, so reacting to
 *   every tick compounds one slow moment into many cuts (0.8 four times a second took a 20,000-buyer crowd to the
 *   floor again and again, `crowd-2026-11-29-20000-final-budget`). TCP cuts its window once per round trip alike.
 *
 * The organizer's floor and ceiling bound `targetActive` whatever the health says; the floor keeps a sale moving on a
 * box that sheds for reasons the crowd does not cause.
 */

export interface AdmissionBounds {
  /** Fewest admitted buyers active at once, even when the stack is strained. */
  floor: number;
  /** Most admitted buyers active at once, even when the stack is healthy. */
  ceiling: number;
}

export interface StackHealth {
  /** 90th percentile of waiting-room reservations over the recent window; null when none was made. */
  reservationP90Ms: number | null;
  /** Requests shed (503 overloaded) by any API process since the previous tick. */
  shedSinceLastTick: number;
  /** Highest event-loop utilization (0–1) of the API processes over their last sample. */
  eventLoopUtilization: number;
  /** Highest mean event-loop delay (ms) of the API processes over their last sample. */
  eventLoopDelayMs: number;
  /**
   * Tasks waiting on the worker's task queue for a poller (workflow and activity tasks, Temporal's approximate
   * backlog count), sampled every few seconds; null when not known (no sample yet, Temporal not answering).
   */
  taskBacklog: number | null;
}

export interface AdmissionLimits {
  /** Reservation latency above which admission slows (below the 1 s the issue allows buyers). */
  reservationLatencyGoalMs: number;
  /** Shedding thresholds of the API (LOAD_SHED_*), 0 meaning off. */
  shedEventLoopUtilization: number;
  shedEventLoopDelayMs: number;
  /** Fraction of a shedding threshold at which admission already slows. */
  slowAt: number;
  /**
   * Worker tasks waiting for a poller above which admission slows: each is work a new buyer's reservation queues
   * behind on the task queue. 0 turns it off.
   */
  taskBacklogGoal: number;
  /** Least time between two decreases: about how long a decrease takes to show in the measurements. */
  decreaseSpacingMs: number;
  /** Bounds of admitPerSecond. */
  minAdmitPerSecond: number;
  maxAdmitPerSecond: number;
}

export const DEFAULT_ADMISSION_LIMITS: AdmissionLimits = {
  reservationLatencyGoalMs: 800,
  shedEventLoopUtilization: 0.98,
  shedEventLoopDelayMs: 500,
  slowAt: 0.75,
  // A few seconds of the worker's tasks on the 2-core box (20–45 workflow tasks a second in the 2026-11-29 bench,
  // whose expiry storms queued 900–1,100).
  taskBacklogGoal: 100,
  // The reservation latency window is 3 s and the backlog is sampled every 2 s.
  decreaseSpacingMs: 2_000,
  minAdmitPerSecond: 1,
  maxAdmitPerSecond: 500,
};

export interface Admission {
  targetActive: number;
  admitPerSecond: number;
}

/** Share by which a healthy tick grows admission (targetActive and admitPerSecond). */
const GROWTH_PER_TICK = 0.04;

export type AdmissionVerdict = 'shed' | 'strained' | 'settle' | 'grow' | 'hold';

/** Where a waiting room starts before it has measured anything. */
export function initialAdmission(bounds: AdmissionBounds): Admission {
  return { targetActive: clamp(20, bounds.floor, bounds.ceiling), admitPerSecond: 10 };
}

/** A measurement that says the stack is past what it serves well; each is one reason admission slows. */
export type StrainCause = 'shed' | 'reservation_latency' | 'event_loop_busy' | 'event_loop_late' | 'task_backlog';

/** Every measurement of `health` past its limit: shed requests first, then the signals of strain below shedding. */
export function strainCauses(health: StackHealth, limits: AdmissionLimits): StrainCause[] {
  const causes: StrainCause[] = [];
  if (health.shedSinceLastTick > 0) causes.push('shed');
  if (health.reservationP90Ms !== null && health.reservationP90Ms > limits.reservationLatencyGoalMs) {
    causes.push('reservation_latency');
  }
  if (
    limits.shedEventLoopUtilization > 0 &&
    health.eventLoopUtilization > limits.shedEventLoopUtilization * limits.slowAt
  ) {
    causes.push('event_loop_busy');
  }
  if (limits.shedEventLoopDelayMs > 0 && health.eventLoopDelayMs > limits.shedEventLoopDelayMs * limits.slowAt) {
    causes.push('event_loop_late');
  }
  if (limits.taskBacklogGoal > 0 && health.taskBacklog !== null && health.taskBacklog > limits.taskBacklogGoal) {
    causes.push('task_backlog');
  }
  return causes;
}

export function judgeHealth(health: StackHealth, limits: AdmissionLimits): 'shed' | 'strained' | 'healthy' {
  const causes = strainCauses(health, limits);
  if (causes.includes('shed')) return 'shed';
  return causes.length > 0 ? 'strained' : 'healthy';
}

export function nextAdmission(
  previous: Admission,
  input: {
    health: StackHealth;
    active: number;
    /** Buyers waiting in line. */
    waiting: number;
    /** Whether stock, not the controller, is what stops admission now (every obtainable unit has a turn). */
    stockBound: boolean;
    /** Milliseconds since the last shed or strained decrease; null when there was none. */
    sinceDecreaseMs?: number | null;
    bounds: AdmissionBounds;
    limits?: AdmissionLimits;
  },
): Admission & { verdict: AdmissionVerdict } {
  const limits = input.limits ?? DEFAULT_ADMISSION_LIMITS;
  const { floor, ceiling } = input.bounds;
  const rate = (value: number) => clamp(value, limits.minAdmitPerSecond, limits.maxAdmitPerSecond);
  const judged = judgeHealth(input.health, limits);
  const sinceDecrease = input.sinceDecreaseMs ?? null;
  if (judged !== 'healthy' && sinceDecrease !== null && sinceDecrease < limits.decreaseSpacingMs) {
    return {
      verdict: 'settle',
      targetActive: clamp(previous.targetActive, floor, ceiling),
      admitPerSecond: rate(previous.admitPerSecond),
    };
  }
  if (judged === 'shed') {
    return {
      verdict: 'shed',
      targetActive: clamp(Math.floor(previous.targetActive / 2), floor, ceiling),
      admitPerSecond: rate(previous.admitPerSecond / 2),
    };
  }
  if (judged === 'strained') {
    return {
      verdict: 'strained',
      targetActive: clamp(Math.floor(previous.targetActive * 0.8), floor, ceiling),
      admitPerSecond: rate(previous.admitPerSecond * 0.8),
    };
  }
  // Growth is gentle, a few percent a tick (about 10–20% a second at four ticks a second), because what it causes shows
  // in the measurements only seconds later: at a tenth a tick, a crowd whose polls no longer held the stack back was
  // admitted 750 buyers in 20 s, and reservations waited up to 22 s (`crowd-2026-11-29-20000-estimate-backoff`).
  const faster = rate(previous.admitPerSecond + Math.max(0.5, previous.admitPerSecond * GROWTH_PER_TICK));
  if (input.waiting > 0 && !input.stockBound && input.active >= previous.targetActive * 0.8) {
    return {
      verdict: 'grow',
      targetActive: clamp(
        previous.targetActive + Math.max(1, Math.round(previous.targetActive * GROWTH_PER_TICK)),
        floor,
        ceiling,
      ),
      admitPerSecond: faster,
    };
  }
  if (input.waiting > 0 && !input.stockBound) {
    return { verdict: 'grow', targetActive: clamp(previous.targetActive, floor, ceiling), admitPerSecond: faster };
  }
  return {
    verdict: 'hold',
    targetActive: clamp(previous.targetActive, floor, ceiling),
    admitPerSecond: rate(previous.admitPerSecond),
  };
}

/**
 * Seconds a buyer `position` turns from the front should expect to wait: the measured admission rate when there is
 * one; otherwise (nothing admitted lately because every slot is busy) the slowest the slots can turn over, each one
 * freed at the latest when its turn expires unused.
 */
export function estimatedWaitSeconds(
  position: number,
  measured: { admissionsPerSecond: number; targetActive: number; turnSeconds: number },
): number {
  if (position <= 0) return 0;
  const floorRate = Math.max(1, measured.targetActive) / Math.max(1, measured.turnSeconds);
  const perSecond = Math.max(measured.admissionsPerSecond, floorRate);
  return Math.ceil(position / perSecond);
}

function clamp(value: number, low: number, high: number): number {
  return Math.min(Math.max(value, low), Math.max(low, high));
}
