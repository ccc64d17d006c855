import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Fault injection for the control API: a provider can be made to answer 503 (`down`) or to lag (`slow`) on its
 * provider-facing endpoints. The control API itself is never affected. `notifications` down loses every outbound
 * gateway notification (no delivery, no retry), as when a gateway's queue drops them during an outage.
 */
export const FAULT_TARGETS = ['gateway-a', 'gateway-b', 'seatmap', 'smtp', 'notifications'] as const;
export type FaultTarget = (typeof FAULT_TARGETS)[number];
export type FaultMode = 'ok' | 'down' | 'slow';

export interface FaultState {
  mode: FaultMode;
  /** Delay added to each request while `slow`. */
  delayMs: number;
}

export class Faults {
  readonly #state = new Map<FaultTarget, FaultState>();
  readonly #defaultDelayMs: number;
  readonly #closing = new AbortController();

  constructor(defaultDelayMs: number) {
    this.#defaultDelayMs = defaultDelayMs;
  }

  get(target: FaultTarget): FaultState {
    return this.#state.get(target) ?? { mode: 'ok', delayMs: 0 };
  }

  set(target: FaultTarget, mode: FaultMode, delayMs?: number): FaultState {
    const state: FaultState = { mode, delayMs: mode === 'slow' ? (delayMs ?? this.#defaultDelayMs) : 0 };
    if (mode === 'ok') this.#state.delete(target);
    else this.#state.set(target, state);
    return state;
  }

  all(): Record<FaultTarget, FaultState> {
    return Object.fromEntries(FAULT_TARGETS.map((target) => [target, this.get(target)])) as Record<
      FaultTarget,
      FaultState
    >;
  }

  reset(target?: FaultTarget): void {
    if (target) this.#state.delete(target);
    else this.#state.clear();
  }

  /** Waits out a `slow` fault (cut short when the sandbox closes). */
  async delay(target: FaultTarget): Promise<void> {
    const { mode, delayMs } = this.get(target);
    if (mode !== 'slow' || delayMs <= 0) return;
    await sleep(delayMs, undefined, { signal: this.#closing.signal }).catch(() => undefined);
  }

  close(): void {
    this.#closing.abort();
  }
}
