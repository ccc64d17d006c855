/**
 * Load shedding (api/plugins/load-shedding.ts): with the event loop held busy past LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS,
 * the API answers new requests at once with 503 SERVICE_UNAVAILABLE, Retry-After and the contract's error body,
 * before authentication; /health, /metrics and the gateways' payment notifications still answer; once the loop is free
 * again, requests are served.
 * Requests go through `app.inject` directly: a shed 503 can hit any route, documented or not.
 */
import { loadEnv } from '../../config/env.js';
import { parseMetrics, total } from '../support/prometheus.js';
import { eventually } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({
    LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: '20',
    LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION: '0',
    LOAD_SHED_SAMPLE_INTERVAL_MS: '100',
    LOAD_SHED_RETRY_AFTER_SECONDS: '7',
  });
});
afterAll(async () => {
  await api?.close();
});

/** Keeps the event loop blocked 50 ms out of every 60, as a flood of CPU-bound requests would. */
function hogEventLoop(): () => void {
  const timer = setInterval(() => {
    const until = performance.now() + 50;
    while (performance.now() < until) {
      // busy: nothing else runs meanwhile
    }
  }, 10);
  return () => clearInterval(timer);
}

describe('under overload the API sheds requests instead of queueing them', () => {
  test('503 SERVICE_UNAVAILABLE with Retry-After and the contract body; health and metrics still answer', async () => {
    const release = hogEventLoop();
    try {
      await eventually(
        async () => api.app.isUnderPressure(),
        (under) => under,
        10_000,
      );
      // An organizer route without a key: shed before authentication could answer 401.
      const shed = await api.app.inject({ method: 'GET', url: '/api/v1/events' });
      expect(shed.statusCode).toBe(503);
      expect(shed.headers['retry-after']).toBe('7');
      expect(shed.json()).toEqual({
        error: {
          code: 'SERVICE_UNAVAILABLE',
          message: expect.any(String),
          retryable: true,
          details: { reason: 'overloaded' },
        },
      });
      const publicRoute = await api.app.inject({ method: 'GET', url: '/api/public/events' });
      expect(publicRoute.statusCode).toBe(503);

      // Payment news is never shed: each notification is judged (here refused for its signature: 401, not 503).
      for (const gateway of ['gateway-a', 'gateway-b']) {
        const notification = await api.app.inject({
          method: 'POST',
          url: `/api/v1/webhooks/${gateway}?data.id=1&type=payment`,
          headers: {
            'content-type': 'application/json',
            'x-signature': 'ts=1,v1=forged',
            'x-bold-signature': 'forged',
          },
          payload: { type: 'payment', data: { id: '1' } },
        });
        expect({ gateway, status: notification.statusCode }).toEqual({ gateway, status: 401 });
      }

      const live = await api.app.inject({ method: 'GET', url: '/health/live' });
      expect(live.statusCode).toBe(200);
      const metrics = await api.app.inject({ method: 'GET', url: '/metrics' });
      expect(api.app.isUnderPressure()).toBe(true);
      expect(metrics.statusCode).toBe(200);
      const series = parseMetrics(metrics.body);
      expect(total(series, 'ticketing_http_requests_shed_total', { reason: 'eventLoopDelay' })).toBeGreaterThanOrEqual(
        2,
      );
      expect(
        total(series, 'ticketing_http_requests_total', { route: '/api/v1/events', status_code: '503' }),
      ).toBeGreaterThanOrEqual(1);
      expect(total(series, 'ticketing_http_event_loop_delay_seconds')).toBeGreaterThan(0.02);
    } finally {
      release();
    }

    // The loop free again, the next sample lifts the shedding.
    await eventually(
      async () => api.app.isUnderPressure(),
      (under) => !under,
      10_000,
    );
    const served = await api.app.inject({ method: 'GET', url: '/api/v1/events' });
    expect(served.statusCode).toBe(401);
  });

  test('shedding is on by default (both thresholds set), and 0 turns a threshold off', () => {
    const defaults = loadEnv({ NODE_ENV: 'test' });
    expect(defaults.LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS).toBeGreaterThan(0);
    expect(defaults.LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION).toBeGreaterThan(0);
    expect(defaults.LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION).toBeLessThan(1);
    expect(defaults.LOAD_SHED_RETRY_AFTER_SECONDS).toBeGreaterThan(0);
  });
});
