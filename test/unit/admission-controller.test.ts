/**
 * The waiting room's admission controller: admission follows measured health, slows before the stack sheds, and
 * stays within the organizer's floor and ceiling.
 */
import {
  type Admission,
  type AdmissionLimits,
  type AdmissionVerdict,
  DEFAULT_ADMISSION_LIMITS,
  estimatedWaitSeconds,
  initialAdmission,
  judgeHealth,
  nextAdmission,
  type StackHealth,
  strainCauses,
} from '../../api/services/admission-controller.js';
import {
  admissionBounds,
  isSoldOut,
  overloadShedTotal,
  ROOM_BUDGET_SHED_REASON,
  SOLD_OUT_HORIZON_MS,
  TICK_MS,
} from '../../api/services/waiting-room-ticker.js';

const healthy: StackHealth = {
  reservationP90Ms: 120,
  shedSinceLastTick: 0,
  eventLoopUtilization: 0.3,
  eventLoopDelayMs: 5,
  taskBacklog: 3,
};
const limits: AdmissionLimits = {
  ...DEFAULT_ADMISSION_LIMITS,
  shedEventLoopUtilization: 0.98,
  shedEventLoopDelayMs: 500,
};
const bounds = { floor: 10, ceiling: 200 };

/** A busy room before its first tick: 100 admitted buyers at 40 a second, never cut. */
function busyRoom(): ReturnType<typeof tickRoom> {
  return { admission: { targetActive: 100, admitPerSecond: 40 }, lastDecreaseAt: null, verdict: 'hold' };
}

/** One tick of a busy room as the ticker runs it: every admitted slot in use, buyers waiting, the last cut remembered. */
function tickRoom(
  room: { admission: Admission; lastDecreaseAt: number | null },
  now: number,
  health: StackHealth,
): { admission: Admission; lastDecreaseAt: number | null; verdict: AdmissionVerdict } {
  const { verdict, ...admission } = nextAdmission(room.admission, {
    health,
    active: room.admission.targetActive,
    waiting: 500,
    stockBound: false,
    sinceDecreaseMs: room.lastDecreaseAt === null ? null : now - room.lastDecreaseAt,
    bounds,
    limits,
  });
  const cut = verdict === 'shed' || verdict === 'strained';
  return { admission, verdict, lastDecreaseAt: cut ? now : room.lastDecreaseAt };
}

describe('admission controller', () => {
  test('grows while healthy and the active slots are what hold waiting buyers back', () => {
    const next = nextAdmission(
      { targetActive: 50, admitPerSecond: 10 },
      { health: healthy, active: 48, waiting: 100, stockBound: false, bounds, limits },
    );
    expect(next).toEqual({ verdict: 'grow', targetActive: 52, admitPerSecond: 10.5 });
  });

  test('raises only the rate while slots are free but the admission rate holds waiting buyers back', () => {
    const next = nextAdmission(
      { targetActive: 50, admitPerSecond: 10 },
      { health: healthy, active: 10, waiting: 100, stockBound: false, bounds, limits },
    );
    expect(next).toEqual({ verdict: 'grow', targetActive: 50, admitPerSecond: 10.5 });
  });

  test('holds while healthy but nobody waits, or stock is what caps admission', () => {
    for (const room of [
      { active: 48, waiting: 0, stockBound: false },
      { active: 48, waiting: 100, stockBound: true },
    ]) {
      const next = nextAdmission(
        { targetActive: 50, admitPerSecond: 10 },
        { health: healthy, ...room, bounds, limits },
      );
      expect(next).toEqual({ verdict: 'hold', targetActive: 50, admitPerSecond: 10 });
    }
  });

  test('halves on any shed request', () => {
    const next = nextAdmission(
      { targetActive: 100, admitPerSecond: 40 },
      { health: { ...healthy, shedSinceLastTick: 1 }, active: 100, waiting: 100, stockBound: false, bounds, limits },
    );
    expect(next).toEqual({ verdict: 'shed', targetActive: 50, admitPerSecond: 20 });
  });

  test('slows before anything sheds: on slow reservations, and on an event loop nearing the shedding threshold', () => {
    const slowReservations = { ...healthy, reservationP90Ms: limits.reservationLatencyGoalMs + 1 };
    // Below the shedding threshold (0.98) but above slowAt of it: under-pressure sheds nothing yet.
    const busyLoop = { ...healthy, eventLoopUtilization: 0.98 * limits.slowAt + 0.01 };
    const lateLoop = { ...healthy, eventLoopDelayMs: 500 * limits.slowAt + 1 };
    for (const health of [slowReservations, busyLoop, lateLoop]) {
      expect(judgeHealth(health, limits)).toBe('strained');
      const next = nextAdmission(
        { targetActive: 100, admitPerSecond: 40 },
        { health, active: 100, waiting: 100, stockBound: false, bounds, limits },
      );
      expect(next).toEqual({ verdict: 'strained', targetActive: 80, admitPerSecond: 32 });
    }
    expect(judgeHealth(healthy, limits)).toBe('healthy');
  });

  test("slows while the worker's task backlog is above its goal: new reservations would wait behind it", () => {
    const backlogged = { ...healthy, taskBacklog: limits.taskBacklogGoal + 1 };
    expect(judgeHealth(backlogged, limits)).toBe('strained');
    expect(
      nextAdmission(
        { targetActive: 100, admitPerSecond: 40 },
        { health: backlogged, active: 100, waiting: 100, stockBound: false, bounds, limits },
      ),
    ).toEqual({ verdict: 'strained', targetActive: 80, admitPerSecond: 32 });
    // At the goal, unknown (no sample, Temporal not answering), or the input turned off: not a reason to slow.
    expect(judgeHealth({ ...healthy, taskBacklog: limits.taskBacklogGoal }, limits)).toBe('healthy');
    expect(judgeHealth({ ...healthy, taskBacklog: null }, limits)).toBe('healthy');
    expect(judgeHealth(backlogged, { ...limits, taskBacklogGoal: 0 })).toBe('healthy');
  });

  test('names every measurement past its limit, so a bench or an operator can tell what bounded admission', () => {
    expect(strainCauses(healthy, limits)).toEqual([]);
    expect(
      strainCauses(
        {
          reservationP90Ms: limits.reservationLatencyGoalMs + 1,
          shedSinceLastTick: 2,
          eventLoopUtilization: 0.98 * limits.slowAt + 0.01,
          eventLoopDelayMs: 500 * limits.slowAt + 1,
          taskBacklog: limits.taskBacklogGoal + 1,
        },
        limits,
      ),
    ).toEqual(['shed', 'reservation_latency', 'event_loop_busy', 'event_loop_late', 'task_backlog']);
    expect(strainCauses({ ...healthy, eventLoopUtilization: 0.98 * limits.slowAt + 0.01 }, limits)).toEqual([
      'event_loop_busy',
    ]);
    // A signal turned off (threshold 0) is never a cause.
    expect(strainCauses({ ...healthy, eventLoopUtilization: 1 }, { ...limits, shedEventLoopUtilization: 0 })).toEqual(
      [],
    );
  });

  test('a backlog that builds up brings admission down to the floor; once drained, admission grows again', () => {
    let room = busyRoom();
    const trace: number[] = [];
    // Expiring holds flood the queue for 25 s (a tick every 250 ms, as the ticker runs), then the worker catches up.
    for (let tick = 0; tick < 160; tick += 1) {
      const taskBacklog = tick < 100 ? 150 + tick * 50 : 20;
      room = tickRoom(room, tick * TICK_MS, { ...healthy, taskBacklog });
      trace.push(room.admission.targetActive);
    }
    expect(trace.slice(0, 100)).toEqual([...trace.slice(0, 100)].sort((a, b) => b - a));
    expect(trace[99]).toBe(bounds.floor);
    expect(trace[159]).toBeGreaterThan(bounds.floor);
    expect(trace.slice(100)).toEqual([...trace.slice(100)].sort((a, b) => a - b));
  });

  test('cuts once per decrease spacing: a slow moment that lasts a second is one cut, not one per tick', () => {
    const strained = { ...healthy, reservationP90Ms: limits.reservationLatencyGoalMs + 1 };
    let room = busyRoom();
    const verdicts: string[] = [];
    for (let tick = 0; tick < 4; tick += 1) {
      room = tickRoom(room, tick * TICK_MS, strained);
      verdicts.push(room.verdict);
    }
    expect(verdicts).toEqual(['strained', 'settle', 'settle', 'settle']);
    expect(room.admission).toEqual({ targetActive: 80, admitPerSecond: 32 });
    // Still strained once the spacing has passed: the first cut was not enough, so it cuts again.
    room = tickRoom(room, limits.decreaseSpacingMs, strained);
    expect(room.verdict).toBe('strained');
    expect(room.admission).toEqual({ targetActive: 64, admitPerSecond: 25.6 });
    // A shed within the spacing settles too; healthy again, it grows at once.
    expect(tickRoom(room, limits.decreaseSpacingMs + TICK_MS, { ...healthy, shedSinceLastTick: 3 }).verdict).toBe(
      'settle',
    );
    expect(tickRoom(room, limits.decreaseSpacingMs + TICK_MS, healthy).verdict).toBe('grow');
  });

  test("the room's own heap-budget refusals are not overload: they do not slow admission", () => {
    expect(
      overloadShedTotal([
        { value: 700, labels: { reason: ROOM_BUDGET_SHED_REASON } },
        { value: 3, labels: { reason: 'eventLoopUtilization' } },
        { value: 2, labels: { reason: 'eventLoopDelay' } },
      ]),
    ).toBe(5);
    expect(overloadShedTotal([])).toBe(0);
  });

  test("stays within the organizer's floor and ceiling", () => {
    const shed = { ...healthy, shedSinceLastTick: 5 };
    let admission = { targetActive: 40, admitPerSecond: 10 };
    for (let tick = 0; tick < 20; tick += 1) {
      admission = nextAdmission(admission, {
        health: shed,
        active: 100,
        waiting: 100,
        stockBound: false,
        bounds,
        limits,
      });
    }
    expect(admission.targetActive).toBe(bounds.floor);
    expect(admission.admitPerSecond).toBe(limits.minAdmitPerSecond);
    for (let tick = 0; tick < 200; tick += 1) {
      admission = nextAdmission(admission, {
        health: healthy,
        active: admission.targetActive,
        waiting: 100,
        stockBound: false,
        bounds,
        limits,
      });
    }
    expect(admission.targetActive).toBe(bounds.ceiling);
    expect(admission.admitPerSecond).toBe(limits.maxAdmitPerSecond);
    expect(initialAdmission({ floor: 1, ceiling: 5 }).targetActive).toBe(5);
  });

  test('an unset floor or ceiling takes the defaults; a floor above the ceiling wins', () => {
    expect(admissionBounds(null, null)).toEqual({ floor: 10, ceiling: 2_000 });
    expect(admissionBounds(null, 4)).toEqual({ floor: 4, ceiling: 4 });
    expect(admissionBounds(50, 20)).toEqual({ floor: 50, ceiling: 50 });
  });

  test('estimated wait: position over the measured admission rate, never faster than slots turn over', () => {
    expect(estimatedWaitSeconds(0, { admissionsPerSecond: 5, targetActive: 10, turnSeconds: 120 })).toBe(0);
    expect(estimatedWaitSeconds(100, { admissionsPerSecond: 5, targetActive: 10, turnSeconds: 120 })).toBe(20);
    // Nothing admitted lately: each of the 10 slots frees within a 120 s turn at worst.
    expect(estimatedWaitSeconds(30, { admissionsPerSecond: 0, targetActive: 10, turnSeconds: 120 })).toBe(360);
  });

  test('sold out only when no unit is on sale, none lapsed, and no hold can come back soon', () => {
    const now = 1_000_000;
    expect(isSoldOut({ available: 0, lapsed: 0, nextHoldExpiryMs: null, now })).toBe(true);
    expect(isSoldOut({ available: 1, lapsed: 0, nextHoldExpiryMs: null, now })).toBe(false);
    expect(isSoldOut({ available: 0, lapsed: 2, nextHoldExpiryMs: null, now })).toBe(false);
    expect(isSoldOut({ available: 0, lapsed: 0, nextHoldExpiryMs: now + SOLD_OUT_HORIZON_MS - 1, now })).toBe(false);
    expect(isSoldOut({ available: 0, lapsed: 0, nextHoldExpiryMs: now + 10 * 60_000, now })).toBe(true);
  });
});
