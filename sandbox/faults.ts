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

/** The gateways whose refunds the sandbox can be told to refuse. */
export const REFUND_GATEWAYS = ['gateway-a', 'gateway-b'] as const;
export type RefundGateway = (typeof REFUND_GATEWAYS)[number];

/**
 * One refusal rule: the gateway refuses refunds of that payment, or of every payment of that sale reference; with
 * neither, every refund it is asked for. Scoped by reference so tests sharing a sandbox do not refuse each other's.
 */
export interface RefundRefusalRule {
  gateway: RefundGateway;
  reference?: string;
  providerPaymentId?: string;
  /** Told to the caller in the provider's error message; defaults to the merchant's insufficient balance. */
  reason?: string;
  /**
   * How the refusal is answered: `error` (default) a final 4xx, kept under no idempotency key (the same key works once
   * the rule is lifted); `rejected` an answer the gateway takes the request for and declines: gateway A a refund
   * (201) whose status is already `rejected`, gateway B a void (200) whose status is `REJECTED`. Neither moves money;
   * a `rejected` answer is kept under the idempotency key and replayed for it, even after the rule is lifted, as the
   * real gateways replay any answer they gave for a key.
   */
  answer?: 'error' | 'rejected';
}

export const DEFAULT_REFUND_REFUSAL_REASON = 'The collector does not have enough available balance to refund';

/**
 * Refund refusals, the fault a merchant meets when the gateway will not give the money back (balance too low to
 * cover the refund, payment under dispute): unlike `down`, the gateway answers, and its answer is a final 4xx.
 */
export class RefundRefusals {
  #rules: RefundRefusalRule[] = [];

  add(rule: RefundRefusalRule): RefundRefusalRule {
    this.#rules.push(rule);
    return rule;
  }

  /** Removes the rules matching every given field (gateway, reference, payment); none given removes them all. */
  clear(scope: Partial<Omit<RefundRefusalRule, 'reason'>> = {}): number {
    const before = this.#rules.length;
    this.#rules = this.#rules.filter(
      (rule) =>
        !(
          (scope.gateway === undefined || rule.gateway === scope.gateway) &&
          (scope.reference === undefined || rule.reference === scope.reference) &&
          (scope.providerPaymentId === undefined || rule.providerPaymentId === scope.providerPaymentId)
        ),
    );
    return before - this.#rules.length;
  }

  all(): RefundRefusalRule[] {
    return [...this.#rules];
  }

  /** The reason a refund of this payment is refused now, or null when the gateway would carry it out. */
  refusal(gateway: RefundGateway, payment: { reference: string | null; providerPaymentId: string }): string | null {
    const rule = this.ruleFor(gateway, payment);
    if (!rule) return null;
    return rule.reason ?? DEFAULT_REFUND_REFUSAL_REASON;
  }

  /** The rule refusing a refund of this payment now, or null when the gateway would carry it out. */
  ruleFor(
    gateway: RefundGateway,
    payment: { reference: string | null; providerPaymentId: string },
  ): RefundRefusalRule | null {
    return (
      this.#rules.find(
        (candidate) =>
          candidate.gateway === gateway &&
          (candidate.reference === undefined || candidate.reference === payment.reference) &&
          (candidate.providerPaymentId === undefined || candidate.providerPaymentId === payment.providerPaymentId),
      ) ?? null
    );
  }
}

/** The gateways whose request rate the sandbox can be told to limit. */
export const RATE_LIMITED_GATEWAYS = ['gateway-a', 'gateway-b'] as const;
export type RateLimitedGateway = (typeof RATE_LIMITED_GATEWAYS)[number];

export interface RateLimitState {
  /** Requests per second the gateway accepts (a token bucket refilled at this rate). */
  requestsPerSecond: number;
  /** The bucket's size: requests accepted at once after a quiet moment. */
  burst: number;
  /** Requests served since the limit was set. */
  allowed: number;
  /** Requests answered 429 since the limit was set. */
  limited: number;
}

/**
 * A gateway's request rate limit, as gateway A's per-access-token envelope (commonly cited: 25 requests/s, burst 50):
 * requests above it are answered 429 with Retry-After and carried out no further. Unlike `down`, the gateway is up;
 * it only tells a caller going too fast to slow down. The counts tell a test how many requests were turned away.
 */
export class RateLimits {
  readonly #limits = new Map<RateLimitedGateway, RateLimitState & { tokens: number; at: number }>();

  set(gateway: RateLimitedGateway, requestsPerSecond: number, burst?: number): RateLimitState {
    const size = burst ?? Math.max(1, 2 * requestsPerSecond);
    const state = { requestsPerSecond, burst: size, allowed: 0, limited: 0, tokens: size, at: Date.now() };
    this.#limits.set(gateway, state);
    return this.#public(state);
  }

  clear(gateway?: RateLimitedGateway): void {
    if (gateway) this.#limits.delete(gateway);
    else this.#limits.clear();
  }

  all(): Partial<Record<RateLimitedGateway, RateLimitState>> {
    return Object.fromEntries([...this.#limits].map(([gateway, state]) => [gateway, this.#public(state)]));
  }

  /** Counts one request to `gateway`: null when it may go on, else the seconds the caller should wait (≥ 1). */
  admit(gateway: RateLimitedGateway, now = Date.now()): number | null {
    const state = this.#limits.get(gateway);
    if (!state) return null;
    state.tokens = Math.min(state.burst, state.tokens + ((now - state.at) / 1000) * state.requestsPerSecond);
    state.at = now;
    if (state.tokens >= 1) {
      state.tokens -= 1;
      state.allowed += 1;
      return null;
    }
    state.limited += 1;
    return Math.max(1, Math.ceil((1 - state.tokens) / state.requestsPerSecond));
  }

  #public(state: RateLimitState): RateLimitState {
    return {
      requestsPerSecond: state.requestsPerSecond,
      burst: state.burst,
      allowed: state.allowed,
      limited: state.limited,
    };
  }
}
