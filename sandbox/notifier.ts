import type { FastifyBaseLogger } from 'fastify';

/**
 * Outbound notifications (gateway A notifications, gateway B webhooks). Each delivery is recorded; the first
 * attempt is awaited by whoever triggers it (so control calls can report whether the receiver accepted it) and
 * failed deliveries are retried in the background, as the real gateways do (on a much shorter schedule).
 * The last notification per gateway and sale reference can be replayed to simulate duplicate delivery.
 */
export type NotifyingGateway = 'gateway-a' | 'gateway-b';

export interface OutboundNotification {
  gateway: NotifyingGateway;
  /** The sale reference the notification is about (gateway A external_reference, gateway B order id). */
  reference: string | null;
  /** `payment.created`, `payment.updated`, `SALE_APPROVED`, … */
  kind: string;
  url: string;
  body: string;
  /** Computed per attempt, so a re-sent gateway A notification gets a fresh, valid signature. */
  headers: () => Record<string, string>;
}

export interface DeliveryAttempt {
  at: string;
  status: number | null;
  error: string | null;
  durationMs: number;
}

export interface DeliveryRecord {
  id: number;
  gateway: NotifyingGateway;
  reference: string | null;
  kind: string;
  url: string;
  createdAt: string;
  delivered: boolean;
  replayOf: number | null;
  attempts: DeliveryAttempt[];
}

export interface NotifierOptions {
  log: FastifyBaseLogger;
  /** True while notifications are to be lost (fault `notifications: down`). */
  losing?: () => boolean;
  timeoutMs: number;
  /** Waits before each background retry of a failed delivery. */
  retryDelaysMs: readonly number[];
}

const MAX_RECORDS = 1000;

export class Notifier {
  readonly #options: NotifierOptions;
  readonly #records: DeliveryRecord[] = [];
  readonly #last = new Map<string, { notification: OutboundNotification; recordId: number }>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #closing = new AbortController();
  #nextId = 1;

  constructor(options: NotifierOptions) {
    this.#options = options;
  }

  /** Sends now; resolves after the first attempt with the delivery record (retries continue in background). */
  async send(notification: OutboundNotification, replayOf: number | null = null): Promise<DeliveryRecord> {
    const record: DeliveryRecord = {
      id: this.#nextId++,
      gateway: notification.gateway,
      reference: notification.reference,
      kind: notification.kind,
      url: notification.url,
      createdAt: new Date().toISOString(),
      delivered: false,
      replayOf,
      attempts: [],
    };
    this.#records.push(record);
    if (this.#records.length > MAX_RECORDS) this.#records.shift();
    if (notification.reference !== null) {
      this.#last.set(key(notification.gateway, notification.reference), { notification, recordId: record.id });
    }
    await this.#attempt(notification, record, 0);
    return structuredClone(record);
  }

  /** Re-sends the last notification for that reference (same body); null when none was sent. */
  async replay(gateway: NotifyingGateway, reference: string): Promise<DeliveryRecord | null> {
    const last = this.#last.get(key(gateway, reference));
    if (!last) return null;
    return this.send(last.notification, last.recordId);
  }

  records(filter: { gateway?: NotifyingGateway; reference?: string } = {}): DeliveryRecord[] {
    return this.#records
      .filter(
        (r) =>
          (!filter.gateway || r.gateway === filter.gateway) && (!filter.reference || r.reference === filter.reference),
      )
      .map((r) => structuredClone(r))
      .reverse();
  }

  reset(gateway?: NotifyingGateway): void {
    for (let i = this.#records.length - 1; i >= 0; i--) {
      if (!gateway || this.#records[i]?.gateway === gateway) this.#records.splice(i, 1);
    }
    for (const k of [...this.#last.keys()]) if (!gateway || k.startsWith(`${gateway}:`)) this.#last.delete(k);
  }

  close(): void {
    this.#closing.abort();
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  async #attempt(notification: OutboundNotification, record: DeliveryRecord, retry: number): Promise<void> {
    if (this.#closing.signal.aborted) return;
    const started = Date.now();
    const attempt: DeliveryAttempt = { at: new Date(started).toISOString(), status: null, error: null, durationMs: 0 };
    if (this.#options.losing?.()) {
      attempt.error = 'lost (fault injected: notifications down)';
      record.attempts.push(attempt);
      return;
    }
    try {
      const response = await fetch(notification.url, {
        method: 'POST',
        headers: notification.headers(),
        body: notification.body,
        signal: AbortSignal.any([AbortSignal.timeout(this.#options.timeoutMs), this.#closing.signal]),
      });
      await response.arrayBuffer().catch(() => undefined);
      attempt.status = response.status;
      record.delivered = response.ok;
    } catch (error) {
      attempt.error = error instanceof Error ? error.message : String(error);
    }
    attempt.durationMs = Date.now() - started;
    record.attempts.push(attempt);
    this.#options.log.info(
      {
        gateway: notification.gateway,
        kind: notification.kind,
        reference: notification.reference,
        status: attempt.status,
        error: attempt.error,
      },
      'notification delivery',
    );
    const wait = this.#options.retryDelaysMs[retry];
    if (!record.delivered && wait !== undefined && !this.#closing.signal.aborted) {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        void this.#attempt(notification, record, retry + 1);
      }, wait);
      timer.unref();
      this.#timers.add(timer);
    }
  }
}

const key = (gateway: NotifyingGateway, reference: string): string => `${gateway}:${reference}`;
