/**
 * A buyer session (contract 5.6) answers only while it lives: a session ended by POST /customer/logout, or past its
 * expiry, is refused like an unknown token, with CUSTOMER_SESSION_REQUIRED; a live one names its buyer.
 */
import { randomUUID } from 'node:crypto';
import { session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

const me = (token: string) => api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) });

async function expectRefused(token: string) {
  const response = await me(token);
  expect(response.statusCode).toBe(401);
  expect(response.json().error).toMatchObject({ code: 'CUSTOMER_SESSION_REQUIRED', retryable: false });
}

test('a live session names its buyer', async () => {
  const email = `session-${randomUUID().slice(0, 8)}@buyers.test`;
  const token = await signInBuyer(api, email);
  const response = await me(token);
  expect(response.statusCode).toBe(200);
  expect(response.json().data).toMatchObject({ email });
});

test('a session ended by logout is refused afterwards', async () => {
  const token = await signInBuyer(api, `logout-${randomUUID().slice(0, 8)}@buyers.test`);
  const logout = await api.request({ method: 'POST', url: '/api/v1/customer/logout', headers: session(token) });
  expect(logout.statusCode).toBe(200);
  await expectRefused(token);
});

test('a session past its expiry is refused', async () => {
  const email = `expired-${randomUUID().slice(0, 8)}@buyers.test`;
  const token = await signInBuyer(api, email);
  await api.orm.em.fork().execute(
    `update buyer_sessions set expires_at = now() - interval '1 second'
        where buyer_id = (select id from buyers where email = ? and enterprise_id is null)`,
    [email],
  );
  await expectRefused(token);
});

test('an unknown token is refused', async () => {
  await expectRefused(`bs_${randomUUID()}`);
});
