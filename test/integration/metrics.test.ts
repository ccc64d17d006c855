/**
 * Metrics against the real stack, counted in this test process: the API's GET /metrics (HTTP metrics by route
 * template, the stock gauge, the optional token), and the counters the worker's activities keep at their choke
 * points (the outbox, the webhook delivery attempt, the reconciler), run here in Temporal's mock activity environment
 * with the same database and Temporal as the shared worker.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { appendSaleEvent } from '../../activities/outbox.js';
import type { Providers } from '../../activities/ports.js';
import { createReconcilerActivities } from '../../activities/reconciler.js';
import { createWebhookActivities } from '../../activities/webhooks.js';
import { workerRegistry } from '../../observability/metrics.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { bearer, createOrganizer } from '../support/fixtures.js';
import { parseMetrics, type Series, total } from '../support/prometheus.js';
import { eventually, publishEvent } from '../support/purchase.js';
import { complimentary, reserve, sleep } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const quiet: Logger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

const scrapeApi = async (target: TestApi, headers: Record<string, string> = {}): Promise<Series[]> => {
  const response = await target.app.inject({ method: 'GET', url: '/metrics', headers });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toContain('text/plain');
  return parseMetrics(response.body);
};
const business = async (name: string, labels: Record<string, string> = {}) =>
  total(parseMetrics(await workerRegistry.metrics()), name, labels);

describe('GET /metrics of the API', () => {
  test('counts requests and latency by route template and status, never by raw URL, and not its own scrapes', async () => {
    const slug = `no-such-event-${randomUUID()}`;
    await api.request({ method: 'GET', url: `/api/public/events/${slug}` });
    await api.request({ method: 'GET', url: `/api/public/events/${slug}` });
    await api.app.inject({ method: 'GET', url: `/nowhere/${slug}` });
    await api.app.inject({ method: 'GET', url: '/metrics' });

    const response = await api.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.body).not.toContain(slug);
    const series = parseMetrics(response.body);
    const route = { method: 'GET', route: '/api/public/events/:slug', status_code: '404' };
    expect(total(series, 'ticketing_http_requests_total', route)).toBe(2);
    expect(total(series, 'ticketing_http_request_duration_seconds_count', route)).toBe(2);
    expect(total(series, 'ticketing_http_request_duration_seconds_bucket', { ...route, le: '+Inf' })).toBe(2);
    expect(total(series, 'ticketing_http_requests_total', { route: 'unmatched', status_code: '404' })).toBe(1);
    expect(total(series, 'ticketing_http_requests_total', { route: '/metrics' })).toBe(0);
    // Process metrics come with the same prefix.
    expect(series.some((s) => s.name === 'ticketing_process_cpu_user_seconds_total')).toBe(true);
    expect(series.some((s) => s.name === 'ticketing_nodejs_eventloop_lag_p99_seconds')).toBe(true);
  });

  test('the stock gauge shows the units left of each ticket type whose date is on sale, and only those', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const onSale = await publishEvent(api, organizer, { capacity: 7 });
    const later = await publishEvent(api, organizer, {
      capacity: 9,
      date: { salesStartAt: new Date(Date.now() + 24 * 3600_000).toISOString() },
    });
    await complimentary(api, organizer, onSale, 2);

    const series = await scrapeApi(api);
    const stock = (ticketTypeId: string) =>
      series.filter((s) => s.name === 'ticketing_stock_available' && s.labels.ticket_type_id === ticketTypeId);
    expect(stock(onSale.ticketTypeId)).toEqual([
      {
        name: 'ticketing_stock_available',
        labels: {
          workspace_id: organizer.workspaceId,
          event_date_id: onSale.eventDateId,
          ticket_type_id: onSale.ticketTypeId,
        },
        value: 5,
      },
    ]);
    expect(stock(later.ticketTypeId)).toEqual([]);
  });

  test('with METRICS_TOKEN set, a scrape without the token is refused with the contract body', async () => {
    const token = `metrics-${randomUUID()}`;
    const guarded = await startTestApi({ METRICS_TOKEN: token });
    try {
      const refused = await guarded.app.inject({ method: 'GET', url: '/metrics' });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().error).toMatchObject({ code: 'UNAUTHENTICATED', retryable: false });
      const wrong = await guarded.app.inject({ method: 'GET', url: '/metrics', headers: bearer('not-the-token') });
      expect(wrong.statusCode).toBe(401);
      const series = await scrapeApi(guarded, bearer(token));
      expect(series.length).toBeGreaterThan(0);
    } finally {
      await guarded.close();
    }
  });
});

describe('sale events are counted where the outbox writes them, after the commit', () => {
  test('counted once the transaction commits, with its total; never when it rolls back, never for a repeat', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    // The shared worker wrote (and counted, in its own process) this sale's event; write it again here.
    const em = api.orm.em.fork();
    await em.execute(`delete from outbox_events where dedupe_key = ?`, [`sale.confirmed:${sale.id}`]);
    const rows = await em.execute<{ total: number; currency: string }[]>(
      'select total, currency from sales where id = ?',
      [sale.id],
    );
    const { currency } = rows[0]!;
    const count = () => business('ticketing_sales_confirmed_total', { currency });
    const before = await count();
    const amountBefore = await business('ticketing_sales_confirmed_amount_minor_total', { currency });

    await expect(
      em.fork().transactional(async (tx: EntityManager) => {
        await appendSaleEvent(tx, 'sale.confirmed', sale.id);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await count()).toBe(before);

    let insideTransaction = -1;
    await em.fork().transactional(async (tx: EntityManager) => {
      await appendSaleEvent(tx, 'sale.confirmed', sale.id);
      insideTransaction = await count();
    });
    expect(insideTransaction).toBe(before);
    expect(await count()).toBe(before + 1);

    await em.fork().transactional((tx: EntityManager) => appendSaleEvent(tx, 'sale.confirmed', sale.id));
    expect(await count()).toBe(before + 1);
    // A complimentary sale totals 0: counted as a sale, adds nothing to the money.
    expect(await business('ticketing_sales_confirmed_amount_minor_total', { currency })).toBe(
      amountBefore + rows[0]!.total,
    );
  });
});

describe('webhook delivery attempts are counted by outcome', () => {
  let receiver: Server;
  let base: string;
  let onPrem: TestApi;
  beforeAll(async () => {
    onPrem = await startTestApi({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    receiver = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(request.url === '/fail' ? 503 : 200).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await onPrem?.close();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  test('a 2xx counts as delivered, a 503 as failed with reason http_5xx', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const sale = await complimentary(api, organizer, event);
    // Endpoints registered once the shared dispatcher is done with the event, so only this test delivers it.
    const outbox = await eventually(
      () =>
        api.orm.em
          .fork()
          .execute<{ id: string; dispatched_at: string | null }[]>(
            'select id, dispatched_at from outbox_events where dedupe_key = ?',
            [`sale.confirmed:${sale.id}`],
          ),
      (found) => found[0]?.dispatched_at != null,
    );
    const register = async (path: string) => {
      const response = await onPrem.request({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: bearer(organizer.key),
        payload: { url: `${base}${path}`, events: ['sale.confirmed'] },
      });
      expect(response.statusCode).toBe(201);
      return response.json().data.id as string;
    };
    const ok = await register('/ok');
    const failing = await register('/fail');
    const activities = createWebhookActivities({
      env: onPrem.env,
      orm: onPrem.orm,
      redis: onPrem.services.redis,
      providers: {} as Providers,
      temporal: onPrem.services.temporal,
    });
    const labels = { event: 'sale.confirmed' };
    const before = {
      delivered: await business('ticketing_webhook_deliveries_total', { ...labels, outcome: 'delivered' }),
      failed: await business('ticketing_webhook_deliveries_total', { ...labels, outcome: 'failed' }),
      http5xx: await business('ticketing_webhook_delivery_failures_total', { ...labels, reason: 'http_5xx' }),
    };
    const deliver = (webhookId: string) =>
      new MockActivityEnvironment(undefined, { logger: quiet }).run(activities.deliverWebhook, {
        webhookId,
        eventId: outbox[0]!.id,
        attempt: 1,
      });
    expect(await deliver(ok)).toMatchObject({ outcome: 'delivered' });
    expect(await deliver(failing)).toMatchObject({ outcome: 'failed', status: '503' });

    expect(await business('ticketing_webhook_deliveries_total', { ...labels, outcome: 'delivered' })).toBe(
      before.delivered + 1,
    );
    expect(await business('ticketing_webhook_deliveries_total', { ...labels, outcome: 'failed' })).toBe(
      before.failed + 1,
    );
    expect(await business('ticketing_webhook_delivery_failures_total', { ...labels, reason: 'http_5xx' })).toBe(
      before.http5xx + 1,
    );
  });
});

describe('reconciler fixes are counted by kind', () => {
  test('an overdue reservation whose checkout is gone, handed back to it, counts as expired_pending_closed', async () => {
    const shortApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '3000' });
    try {
      const organizer = await createOrganizer(api.orm.em.fork());
      const event = await publishEvent(shortApi, organizer, { capacity: 5 });
      const { order } = await reserve(shortApi, event, 'metrics-overdue');
      // Cancelled, not terminated: the suite asserts no execution is terminated.
      const doomed = api.services.temporal.workflow.getHandle(checkoutWorkflowId(order.saleId));
      await doomed.cancel();
      await doomed.result().catch(() => undefined);
      await sleep(Math.max(0, Date.parse(order.expiresAt) + 250 - Date.now()));

      const reconciler = createReconcilerActivities({
        env: api.env,
        orm: api.orm,
        redis: api.services.redis,
        providers: {} as Providers,
        temporal: api.services.temporal,
      });
      const kind = { kind: 'expired_pending_closed' };
      const before = await business('ticketing_reconciler_fixes_total', kind);
      const swept = await new MockActivityEnvironment(undefined, { logger: quiet }).run(
        reconciler.resumeOverdueCheckouts,
        { marginMs: 0, limit: 10, workspaceId: organizer.workspaceId },
      );
      expect(swept).toEqual({ handedOver: 1, stillRunning: 0, errors: 0 });
      expect(await business('ticketing_reconciler_fixes_total', kind)).toBe(before + 1);
      expect(await business('ticketing_reconciler_fixes_total', { kind: 'errors' })).toBe(0);
      // The checkout started again closes the sale, as on any expiry.
      await eventually(
        () => api.orm.em.fork().execute<{ status: string }[]>('select status from sales where id = ?', [order.saleId]),
        (rows) => rows[0]?.status === 'ABANDONED',
        60_000,
      );
    } finally {
      await shortApi.close();
    }
  }, 120_000);
});
