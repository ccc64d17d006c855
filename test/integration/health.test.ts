/** Readiness reports each dependency and whether a worker polls the API's task queue (contract-independent ops). */
import { eventually } from '../support/purchase.js';
import { startTestApi } from '../support/stack.js';

describe('GET /health/ready', () => {
  test('ok when PostgreSQL, Redis and Temporal answer and a worker polls the task queue', async () => {
    const api = await startTestApi();
    try {
      // Temporal lists a poller once one of its polls reached the server, so a worker that just started shows up
      // within a poll round trip.
      const response = await eventually(
        () => api.request({ method: 'GET', url: '/health/ready' }),
        (answer) => answer.statusCode === 200,
        30_000,
      );
      expect(response.json()).toEqual({
        status: 'ok',
        checks: { postgres: 'ok', redis: 'ok', temporal: 'ok', worker: 'ok' },
      });
    } finally {
      await api.close();
    }
  });

  test('503 degraded, naming the worker, when no worker polls the task queue the API starts work on', async () => {
    const api = await startTestApi({ TEMPORAL_TASK_QUEUE: `nobody-polls-${Date.now()}` });
    try {
      const response = await api.request({ method: 'GET', url: '/health/ready' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toEqual({
        status: 'degraded',
        checks: { postgres: 'ok', redis: 'ok', temporal: 'ok', worker: 'down' },
      });
    } finally {
      await api.close();
    }
  });
});
