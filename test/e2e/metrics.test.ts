import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../../scripts/support/processes.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { type PrivateProcess, privateTaskQueue, startWorkerScript } from '../support/private-stack.js';
import { names, parseMetrics, type Series, scrape, total } from '../support/prometheus.js';
import {
  cardToken,
  eventually,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The Temporal SDK's metrics an operator needs on an on-sale: slots, task latency, sticky cache, polls. */
const SDK_METRICS = [
  'temporal_worker_task_slots_available',
  'temporal_sticky_cache_size',
  'temporal_workflow_task_execution_latency_seconds_bucket',
  'temporal_activity_execution_latency_seconds_bucket',
];

/** The business counters; each must appear (HELP/TYPE at least) on every worker scrape. */
const BUSINESS_COUNTERS = [
  'ticketing_reservations_total',
  'ticketing_sales_confirmed_total',
  'ticketing_sales_confirmed_amount_minor_total',
  'ticketing_sales_closed_unpaid_total',
  'ticketing_late_payments_total',
  'ticketing_payments_returned_total',
  'ticketing_sales_refunded_total',
  'ticketing_webhook_deliveries_total',
  'ticketing_reconciler_fixes_total',
];

let worker: PrivateProcess | undefined;
let workerMetricsUrl: string;
let api: TestApi;
let shortApi: TestApi;
let organizer: Organizer;

beforeAll(async () => {
  const [metricsPort, sdkPort] = await freePorts(2);
  const taskQueue = privateTaskQueue('metrics');
  worker = await startWorkerScript('test/support/metrics-worker.ts', taskQueue, {
    WORKER_METRICS_PORT: String(metricsPort),
    TEMPORAL_METRICS_BIND_ADDRESS: `127.0.0.1:${sdkPort}`,
  });
  workerMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  api = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue });
  shortApi = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue, PAYMENT_WINDOW_OVERRIDE_MS: '3000' });
  organizer = await createOrganizer(api.orm.em.fork());
}, 120_000);
afterAll(async () => {
  await shortApi?.close();
  await api?.close();
  await worker?.close();
});

const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;
const scrapeApi = async (target: TestApi): Promise<{ text: string; series: Series[] }> => {
  const response = await target.app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode).toBe(200);
  return { text: response.body, series: parseMetrics(response.body) };
};

/** The business counters of the private worker, summed over their labels or by the labels given. */
async function counters(): Promise<(name: string, labels?: Record<string, string>) => number> {
  const series = await scrape(workerMetricsUrl);
  return (name, labels = {}) => total(series, name, labels);
}

describe("one purchase moves the worker's counters by exactly its events", () => {
  test('reserve → card approved: one reservation, one confirmation of its total; nothing closed, late or refunded', async () => {
    const event = await publishEvent(api, organizer, { price: 50_000, capacity: 10 });
    const was = await counters();
    const stockBefore = total((await scrapeApi(api)).series, 'ticketing_stock_available', {
      ticket_type_id: event.ticketTypeId,
    });
    expect(stockBefore).toBe(10);

    const buyer = email('metrics');
    const token = await signInBuyer(api, buyer);
    const created = await reserveOrder(api, token, orderBody(event, 2));
    expect(created.statusCode).toBe(201);
    const order = created.json().data as { saleId: string; reference: string; total: number; currency: string };
    const opened = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(opened.statusCode).toBe(200);
    const charged = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(charged.statusCode).toBe(200);
    expect(charged.json().data).toMatchObject({ saleStatus: 'CONFIRMED' });
    // The gateway's notification of the same payment arrives too; it must add nothing.
    await new Promise((resolve) => setTimeout(resolve, 2_000));

    const now = await counters();
    const moved = (name: string, labels: Record<string, string> = {}) => now(name, labels) - was(name, labels);
    expect(moved('ticketing_reservations_total')).toBe(1);
    expect(moved('ticketing_reservations_total', { outcome: 'reserved', code: 'none' })).toBe(1);
    expect(moved('ticketing_sales_confirmed_total')).toBe(1);
    expect(moved('ticketing_sales_confirmed_total', { currency: order.currency })).toBe(1);
    expect(moved('ticketing_sales_confirmed_amount_minor_total', { currency: order.currency })).toBe(order.total);
    expect(moved('ticketing_sales_closed_unpaid_total')).toBe(0);
    expect(moved('ticketing_late_payments_total')).toBe(0);
    expect(moved('ticketing_payments_returned_total')).toBe(0);
    expect(moved('ticketing_sales_refunded_total')).toBe(0);

    const { text, series } = await scrapeApi(api);
    expect(total(series, 'ticketing_stock_available', { ticket_type_id: event.ticketTypeId })).toBe(8);
    expect(
      total(series, 'ticketing_http_requests_total', {
        method: 'POST',
        route: '/api/v1/customer/orders',
        status_code: '201',
      }),
    ).toBe(1);
    expect(
      total(series, 'ticketing_http_requests_total', {
        method: 'POST',
        route: '/api/v1/customer/orders/:id/payment/card',
        status_code: '200',
      }),
    ).toBe(1);
    // No buyer data, ids of sales or raw URLs in any label.
    const workerText = await (await fetch(workerMetricsUrl)).text();
    for (const exposed of [text, workerText]) {
      expect(exposed).not.toContain(order.saleId);
      expect(exposed).not.toContain(order.reference);
      expect(exposed).not.toContain(buyer);
    }
  }, 120_000);

  test('an unpaid reservation left to expire: one reservation, one expiry, no confirmation', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const was = await counters();
    const token = await signInBuyer(shortApi, email('metrics-expiry'));
    const created = await reserveOrder(shortApi, token, orderBody(event, 1));
    expect(created.statusCode).toBe(201);
    const { saleId } = created.json().data as { saleId: string };
    await eventually(
      async () =>
        (
          await shortApi.request({ method: 'GET', url: `/api/v1/customer/orders/${saleId}`, headers: session(token) })
        ).json().data.status,
      (status) => status === 'ABANDONED',
      60_000,
    );

    const now = await counters();
    const moved = (name: string, labels: Record<string, string> = {}) => now(name, labels) - was(name, labels);
    expect(moved('ticketing_reservations_total', { outcome: 'reserved' })).toBe(1);
    expect(moved('ticketing_sales_closed_unpaid_total')).toBe(1);
    expect(moved('ticketing_sales_closed_unpaid_total', { status: 'ABANDONED', reason: 'expired' })).toBe(1);
    expect(moved('ticketing_sales_confirmed_total')).toBe(0);
    expect(moved('ticketing_late_payments_total')).toBe(0);
  }, 120_000);
});

describe('what a worker serves on /metrics', () => {
  test("the stack's worker serves its business counters, process metrics and the Temporal SDK's worker metrics", async () => {
    const port = process.env.WORKER_METRICS_PORT;
    expect(port).toBeDefined();
    for (const url of [`http://127.0.0.1:${port}/metrics`, workerMetricsUrl]) {
      // A scrape serves the worker's own metrics without the SDK's when the SDK exporter is slow to answer (a loaded
      // CI box): the SDK's must be there within a few scrapes, as Prometheus would see them.
      const served = await eventually(
        async () => {
          const response = await fetch(url);
          expect(response.status).toBe(200);
          expect(response.headers.get('content-type')).toContain('text/plain');
          const text = await response.text();
          for (const name of BUSINESS_COUNTERS) expect(text).toContain(`# TYPE ${name} counter`);
          return names(parseMetrics(text));
        },
        (scraped) => SDK_METRICS.every((name) => scraped.has(name)),
        30_000,
      );
      expect(served).toContain('ticketing_process_resident_memory_bytes');
      for (const name of SDK_METRICS) expect([name, served.has(name)]).toEqual([name, true]);
    }
    expect((await fetch(workerMetricsUrl.replace('/metrics', '/other'))).status).toBe(404);
  });

  test("every Temporal SDK metric the Grafana dashboard queries is one the worker serves (after this file's sales)", async () => {
    const dashboard = readFileSync(join(ROOT, 'ops', 'grafana', 'ticketing-dashboard.json'), 'utf8');
    const queried = new Set([...dashboard.matchAll(/\btemporal_[a-z0-9_]+/g)].map((match) => match[0]));
    expect(queried.size).toBeGreaterThan(5);
    const served = names(await scrape(workerMetricsUrl));
    for (const name of queried) expect([name, served.has(name)]).toEqual([name, true]);
  });
});
