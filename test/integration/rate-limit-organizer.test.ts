/**
 * Contract 8, "B2B rate limit: 429 exists": the organizer API is limited per API key (config/rate-limits.ts,
 * ORGANIZER_RATE_LIMIT_PER_MINUTE), with the same 429 body and headers as every limit (7.2). Health, readiness and
 * the gateways' notifications are never limited.
 */
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const LIMIT = 3;
let first: TestApi;
let second: TestApi;
beforeAll(async () => {
  // Two API instances on one Redis, like two API processes: the count per key is shared.
  [first, second] = await Promise.all([
    startTestApi({ ORGANIZER_RATE_LIMIT_PER_MINUTE: String(LIMIT) }),
    startTestApi({ ORGANIZER_RATE_LIMIT_PER_MINUTE: String(LIMIT) }),
  ]);
});
afterAll(async () => {
  await Promise.all([first?.close(), second?.close()]);
});

const me = (api: TestApi, key: string) => api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(key) });

/** Spends a key's whole budget, alternating API instances, and returns the refused request's response. */
async function exhaust(key: string) {
  for (let i = 0; i < LIMIT; i++) {
    const response = await me(i % 2 === 0 ? first : second, key);
    expect(response.statusCode).toBe(200);
    expect(response.headers['ratelimit-limit']).toBe(String(LIMIT));
    expect(response.headers['ratelimit-remaining']).toBe(String(LIMIT - i - 1));
  }
  return me(second, key);
}

describe('organizer API rate limit, per API key (contract 8)', () => {
  let a: Organizer;
  let b: Organizer;
  beforeAll(async () => {
    [a, b] = await Promise.all([createOrganizer(first.orm.em.fork()), createOrganizer(first.orm.em.fork())]);
  });

  test('an organizer key gets 429 RATE_LIMITED after its limit while another key is unaffected', async () => {
    const limited = await exhaust(a.key);
    expect(limited.statusCode).toBe(429);
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers['ratelimit-limit']).toBe(String(LIMIT));
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect(limited.headers['ratelimit-reset']).toBe(String(retryAfter));
    expect(limited.json()).toEqual({
      error: {
        code: 'RATE_LIMITED',
        message: expect.any(String),
        retryable: true,
        details: { limit: LIMIT, windowSeconds: 60, retryAfterSeconds: retryAfter },
      },
    });

    const otherOrganizer = await me(first, b.key);
    expect(otherOrganizer.statusCode).toBe(200);
    expect(otherOrganizer.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
    // Per key, not per user: the same user's other key has its own budget.
    expect((await me(first, a.readKey)).statusCode).toBe(200);
  });

  test('health, readiness and gateway notifications are not limited, even when they carry an exhausted key', async () => {
    const spent = await createOrganizer(first.orm.em.fork());
    expect((await exhaust(spent.key)).statusCode).toBe(429);
    for (let i = 0; i <= LIMIT; i++) {
      for (const [method, url] of [
        ['GET', '/health/live'],
        ['GET', '/health/ready'],
        ['POST', '/api/v1/webhooks/gateway-a'],
        ['POST', '/api/v1/webhooks/gateway-b'],
      ] as const) {
        const response = await first.request({
          method,
          url,
          headers: bearer(spent.key),
          ...(method === 'POST' ? { payload: {} } : {}),
        });
        expect(response.statusCode).not.toBe(429);
        expect(response.headers['ratelimit-limit']).toBeUndefined();
      }
    }
  });
});
