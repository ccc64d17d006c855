/**
 * Every Prometheus metric of the service, defined once (prom-client). Names start with `ticketing_`; labels hold only
 * bounded values (route templates, status codes, codes and reasons from fixed lists, ids of ticket types on sale),
 * never buyer data, emails, keys or raw URLs.
 *
 * - Business counters (sales, refunds, webhooks, reconciler) live in `workerRegistry`: they are counted where the
 *   worker's activities change state, which have no handle on the process, so they are module-level.
 * - HTTP metrics and the stock gauge belong to one API instance (`createApiMetrics`): each app built, in tests too,
 *   counts its own requests.
 * - Process metrics (CPU, memory, event loop, GC) exist once per process (`processRegistry`).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export const METRIC_PREFIX = 'ticketing_';
export const METRICS_PATH = '/metrics';
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

// ------------------------------------------------------------------------------------------------ process

let processRegistryOnce: Registry | null = null;

/** CPU, memory, event-loop lag and GC of this process; created on first use, once per process. */
export function processRegistry(): Registry {
  if (!processRegistryOnce) {
    processRegistryOnce = new Registry();
    collectDefaultMetrics({ register: processRegistryOnce, prefix: METRIC_PREFIX });
  }
  return processRegistryOnce;
}

/** The exposition text of several registries, as one scrape. */
export async function render(registries: readonly Registry[]): Promise<string> {
  const parts = await Promise.all(registries.map((registry) => registry.metrics()));
  return parts.filter((part) => part.trim() !== '').join('\n');
}

// ------------------------------------------------------------------------------------------------ worker: business

/** The worker's business counters; `/metrics` of the worker serves this with the process and Temporal SDK metrics. */
export const workerRegistry = new Registry();

/** Why an unpaid sale was closed, from the checkout's reason (free text there, so mapped to a fixed list here). */
export const CLOSE_REASONS = ['expired', 'released', 'cancelled', 'reservation_failed', 'seats_lost', 'other'] as const;
export type CloseReason = (typeof CLOSE_REASONS)[number];

/** Why a payment was given back (the checkout's GiveBackReason; anything else is `other`). */
export const GIVE_BACK_REASONS = [
  'second_charge',
  'mismatch',
  'seats_lost',
  'late_no_stock',
  'late_cancelled',
  'late_seats_gone',
  'sale_refunded',
  'other',
] as const;
export type GiveBackReasonLabel = (typeof GIVE_BACK_REASONS)[number];

/** How a webhook attempt failed, from the delivery activity's status (which carries free text after a colon). */
export const WEBHOOK_FAILURE_REASONS = [
  'http_4xx',
  'http_5xx',
  'redirect',
  'timeout',
  'connection_error',
  'blocked_address',
  'unresolvable',
  'other',
] as const;
export type WebhookFailureReason = (typeof WEBHOOK_FAILURE_REASONS)[number];

export const saleMetrics = {
  /** One per reservation step: `reserved` (PENDING), `confirmed_at_once` (free, complimentary, offline), else refused. */
  reservations: new Counter({
    name: 'ticketing_reservations_total',
    help: 'Reservations by outcome (reserved, confirmed_at_once, sold_out, rejected) and refusal code (none when accepted)',
    labelNames: ['outcome', 'code'] as const,
    registers: [workerRegistry],
  }),
  /** Every CONFIRMED sale (paid, free, complimentary, offline, late): one per sale.confirmed outbox event. */
  confirmed: new Counter({
    name: 'ticketing_sales_confirmed_total',
    help: 'Sales confirmed (one per sale.confirmed event, late payments included), counted after the commit',
    labelNames: ['currency'] as const,
    registers: [workerRegistry],
  }),
  confirmedAmount: new Counter({
    name: 'ticketing_sales_confirmed_amount_minor_total',
    help: 'Sum of the totals of confirmed sales, in minor units of the currency',
    labelNames: ['currency'] as const,
    registers: [workerRegistry],
  }),
  /** Organizer refunds and event cancellations of confirmed sales: one per sale.refunded outbox event. */
  refunded: new Counter({
    name: 'ticketing_sales_refunded_total',
    help: 'Confirmed sales refunded (one per sale.refunded event), counted after the commit',
    labelNames: ['currency'] as const,
    registers: [workerRegistry],
  }),
  refundedAmount: new Counter({
    name: 'ticketing_sales_refunded_amount_minor_total',
    help: 'Sum of the totals of refunded sales, in minor units of the currency',
    labelNames: ['currency'] as const,
    registers: [workerRegistry],
  }),
  closedUnpaid: new Counter({
    name: 'ticketing_sales_closed_unpaid_total',
    help: 'PENDING sales closed without payment, by new status and reason (reason="expired" are payment-window expiries)',
    labelNames: ['status', 'reason'] as const,
    registers: [workerRegistry],
  }),
  latePayments: new Counter({
    name: 'ticketing_late_payments_total',
    help: 'Payments that arrived after their sale closed unpaid: confirmed (stock still there) or refunded',
    labelNames: ['outcome'] as const,
    registers: [workerRegistry],
  }),
  /** Money given back that bought nothing (late, second or mismatched payments): one per refund request recorded. */
  paymentsReturned: new Counter({
    name: 'ticketing_payments_returned_total',
    help: 'Gateway refunds of payments that paid no sale (late, second or mismatched payments), by reason',
    labelNames: ['reason'] as const,
    registers: [workerRegistry],
  }),
};

/**
 * Refunds a gateway refused for good, after a bounded number of refusals: each is recorded `refund_refused`, parked
 * and listed for operators (scripts/operator.ts `refunds-refused`). One per refund newly recorded refused.
 */
export const refundMetrics = {
  refused: new Counter({
    name: 'ticketing_refunds_refused_total',
    help: 'Refunds the gateway refused for good, recorded refund_refused and parked for an operator, by process and gateway',
    labelNames: ['process', 'gateway'] as const,
    registers: [workerRegistry],
  }),
};

/** The alert line operators' log rules match on (level error); the same words wherever a refund is refused. */
export const REFUND_REFUSED_ALERT = 'refund refused by the gateway';

export const webhookMetrics = {
  attempts: new Counter({
    name: 'ticketing_webhook_deliveries_total',
    help: 'Organizer webhook delivery attempts (one POST each) by event type and outcome (delivered, failed)',
    labelNames: ['event', 'outcome'] as const,
    registers: [workerRegistry],
  }),
  failures: new Counter({
    name: 'ticketing_webhook_delivery_failures_total',
    help: 'Failed organizer webhook delivery attempts by event type and reason',
    labelNames: ['event', 'reason'] as const,
    registers: [workerRegistry],
  }),
};

export const reconcilerMetrics = {
  fixes: new Counter({
    name: 'ticketing_reconciler_fixes_total',
    help: 'What reconciler runs did, by kind (as in the Redis hash reconciler:fixes; kind="errors" are items left for the next run)',
    labelNames: ['kind'] as const,
    registers: [workerRegistry],
  }),
};

/**
 * What the reconciler reports rather than fixes (activities/reconciler-listings.ts), set by every run that sweeps all
 * workspaces, for alert rules: money still owed to buyers, and refunds organizers owe back that no settlement carries.
 */
export const reconcilerAlertMetrics = {
  refundsOverdue: new Gauge({
    name: 'ticketing_refunds_overdue',
    help: 'Refunds asked for more than an hour ago that no gateway has confirmed (requested, refused or in between)',
    registers: [workerRegistry],
  }),
  oldestRefundOverdueSeconds: new Gauge({
    name: 'ticketing_refunds_overdue_oldest_seconds',
    help: 'Age of the oldest refund asked for and still not confirmed by its gateway (0 when none is overdue)',
    registers: [workerRegistry],
  }),
  adjustmentsUnapplied: new Gauge({
    name: 'ticketing_settlement_adjustments_unapplied',
    help: 'Refunds of sales a sent settlement paid out that no later settlement of the workspace carries yet',
    registers: [workerRegistry],
  }),
  adjustmentsUnappliedAmount: new Gauge({
    name: 'ticketing_settlement_adjustments_unapplied_amount',
    help: 'Sum of those adjustments in minor units (negative: owed back by organizers), by currency',
    labelNames: ['currency'] as const,
    registers: [workerRegistry],
  }),
};

/** The outbox's sale events, counted once each (see activities/outbox.ts). */

export function countSaleEvent(type: 'sale.confirmed' | 'sale.refunded', currency: string, totalMinor: number): void {
  const [count, amount] =
    type === 'sale.confirmed'
      ? [saleMetrics.confirmed, saleMetrics.confirmedAmount]
      : [saleMetrics.refunded, saleMetrics.refundedAmount];
  const labels = { currency: /^[A-Z]{3}$/.test(currency) ? currency : 'other' };
  count.inc(labels);
  if (totalMinor > 0) amount.inc(labels, totalMinor);
}

/** One webhook attempt's outcome; `status` is the delivery activity's (`500`, `timeout`, `blocked_address: …`). */
export function countWebhookAttempt(eventType: string, outcome: 'delivered' | 'failed', status: string): void {
  const event = /^[a-z]+\.[a-z_]+$/.test(eventType) ? eventType : 'other';
  webhookMetrics.attempts.inc({ event, outcome });
  if (outcome === 'failed') webhookMetrics.failures.inc({ event, reason: webhookFailureReason(status) });
}

export function webhookFailureReason(status: string): WebhookFailureReason {
  const head = status.split(':')[0]?.trim() ?? '';
  if (/^3\d\d\b/.test(head)) return 'redirect';
  if (/^4\d\d$/.test(head)) return 'http_4xx';
  if (/^5\d\d$/.test(head)) return 'http_5xx';
  return (WEBHOOK_FAILURE_REASONS as readonly string[]).includes(head) ? (head as WebhookFailureReason) : 'other';
}

// ------------------------------------------------------------------------------------------------ API

/**
 * The API's business counters, module-level like the worker's: refusals the API answers itself, before any checkout
 * starts. Same name and labels as the worker's counter, so a sum over instances counts every reservation once.
 */
export const apiBusinessRegistry = new Registry();

export const apiSaleMetrics = {
  reservations: new Counter({
    name: 'ticketing_reservations_total',
    help: 'Reservations the API refused itself, before any checkout (sold_out only); the worker counts the rest',
    labelNames: ['outcome', 'code'] as const,
    registers: [apiBusinessRegistry],
  }),
};

/** HTTP methods worth a label of their own; anything else a client sends is `other`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
export const labelMethod = (method: string): string => (METHODS.has(method) ? method : 'other');

/** What under-pressure last sampled, so operators can tune the shedding thresholds against real values. */
export interface PressureSample {
  eventLoopDelayMs: number;
  eventLoopUtilization: number;
}

export interface ApiMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status_code'>;
  duration: Histogram<'method' | 'route' | 'status_code'>;
  shed: Counter<'reason'>;
  /** Set by the load-shedding plugin when it is registered. */
  pressure: (() => PressureSample) | null;
  /** Set by the waiting-room plugin: the long polls this process holds now, and the most its heap allows. */
  heldPolls: (() => { held: number; capacity: number }) | null;
}

/** Ticket types whose date is on sale now; more than this many is not an on-sale dashboard any more. */
export const STOCK_SERIES_LIMIT = 2000;

interface StockRow {
  workspace_id: string;
  event_date_id: string;
  ticket_type_id: string;
  available: string | number;
}

/**
 * Units left of every ticket type whose date is on sale now (event published and selling here, date neither
 * cancelled nor started, sales window open): one query, bounded to those dates.
 */
export async function stockOnSale(orm: MikroORM): Promise<StockRow[]> {
  return orm.em.fork().execute<StockRow[]>(
    `select t.workspace_id, t.event_date_id, t.id as ticket_type_id, coalesce(sum(st.available), 0) as available
       from ticket_types t
       join event_dates d on d.id = t.event_date_id
       join events e on e.id = t.event_id
       join ticket_stock st on st.ticket_type_id = t.id
      where t.deleted_at is null and d.deleted_at is null and d.cancelled_at is null and d.starts_at > now()
        and (d.sales_start_at is null or d.sales_start_at <= now())
        and (d.sales_end_at is null or d.sales_end_at > now())
        and e.deleted_at is null and e.status = 'PUBLISHED' and e.sales_mode = 'INTERNAL'
      group by t.workspace_id, t.event_date_id, t.id
      order by t.event_date_id, t.id
      limit ?`,
    [STOCK_SERIES_LIMIT],
  );
}

/** The metrics of one API instance; `orm` feeds the stock gauge (omitted: no stock gauge). */
export function createApiMetrics(
  options: { orm?: MikroORM; onStockError?: (error: unknown) => void } = {},
): ApiMetrics {
  const registry = new Registry();
  const labelNames = ['method', 'route', 'status_code'] as const;
  const metrics: ApiMetrics = {
    registry,
    requests: new Counter({
      name: 'ticketing_http_requests_total',
      help: 'HTTP requests answered, by method, route template (unmatched for unknown paths) and status code',
      labelNames,
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'ticketing_http_request_duration_seconds',
      help: 'Time from receiving a request to sending its answer, by method, route template and status code',
      labelNames,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    shed: new Counter({
      name: 'ticketing_http_requests_shed_total',
      help: 'Requests refused with 503 by load shedding, by the threshold exceeded',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    pressure: null,
    heldPolls: null,
  };
  /** A gauge read at each scrape from what another plugin set on `metrics`; absent until that plugin is there. */
  const readAtScrape = (name: string, help: string, read: () => number | undefined) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const value = read();
        if (value !== undefined) this.set(value);
      },
    });
  readAtScrape(
    'ticketing_http_event_loop_delay_seconds',
    'Mean event-loop delay of the last load-shedding sample (compare with LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS)',
    () => {
      const sample = metrics.pressure?.();
      return sample ? sample.eventLoopDelayMs / 1000 : undefined;
    },
  );
  readAtScrape(
    'ticketing_http_event_loop_utilization',
    'Event-loop utilization (0–1) of the last load-shedding sample (compare with LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION)',
    () => metrics.pressure?.().eventLoopUtilization,
  );
  readAtScrape(
    'ticketing_waiting_room_held_polls',
    'Waiting-room long polls this process holds open now (each hears admission and sold out within a tick)',
    () => metrics.heldPolls?.().held,
  );
  readAtScrape(
    'ticketing_waiting_room_held_polls_capacity',
    'Long polls this process holds at most (its heap budget); a waiting buyer past it is asked back later',
    () => metrics.heldPolls?.().capacity,
  );
  const { orm } = options;
  if (orm) {
    const stockErrors = new Counter({
      name: 'ticketing_stock_scrape_errors_total',
      help: 'Scrapes whose stock query failed (the stock gauge is then empty for that scrape)',
      registers: [registry],
    });
    new Gauge({
      name: 'ticketing_stock_available',
      help: 'Units left to sell per ticket type, for the dates on sale now (read from the database on each scrape)',
      labelNames: ['workspace_id', 'event_date_id', 'ticket_type_id'] as const,
      registers: [registry],
      async collect() {
        // Dates that went off sale since the last scrape must disappear, not keep their last value.
        this.reset();
        try {
          for (const row of await stockOnSale(orm)) {
            this.set(
              { workspace_id: row.workspace_id, event_date_id: row.event_date_id, ticket_type_id: row.ticket_type_id },
              Number(row.available),
            );
          }
        } catch (error) {
          stockErrors.inc();
          options.onStockError?.(error);
        }
      },
    });
  }
  return metrics;
}
