/**
 * A worker killed (kill -9) while the card charge runs as a local activity inside the pay update (LOCAL_CARD_CHARGE):
 * the gateway still carries the charge out, nobody is left to hear its answer, and the workflow task that ran it is
 * lost with the worker. The restarted worker runs the update again and charges with the same idempotency key: the
 * gateway answers the payment it already made. One payment at the gateway, one CONFIRMED sale.
 */
import { createBuyers, orderBody } from '../../bench/lib/fixtures.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { sleep } from '../../scripts/support/processes.js';
import {
  checkoutHistory,
  type FaultStack,
  faultLog,
  publishFaultEvent,
  startFaultStack,
  until,
  WINDOW_OUTLASTING_A_RESTART_MS,
} from './harness.js';

const log = faultLog('local-charge-kill');
/**
 * How long the gateway holds each request: the charge is still waiting there when the worker dies. Longer than the
 * local charge's 5 s bound, so the restarted worker's rerun may also fall back to the task queue: one payment either way.
 */
const GATEWAY_LAG_MS = 6000;
/** From the buyer's charge request to the kill: enough for the update to reach the worker and its charge to leave. */
const KILL_AFTER_MS = 2500;
let stack: FaultStack | undefined;

beforeAll(async () => {
  stack = await startFaultStack('local-charge-kill', {
    paymentWindowMs: WINDOW_OUTLASTING_A_RESTART_MS,
    env: { CARD_CHARGE_LOCAL: 'true' },
  });
}, 150_000);
afterAll(async () => {
  await gatewayLag('ok').catch(() => undefined);
  await stack?.stop();
}, 60_000);

function gatewayLag(mode: 'slow' | 'ok') {
  return fetch(`${stack!.env.SANDBOX_URL}/control/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ target: 'gateway-a', mode, ...(mode === 'slow' ? { delayMs: GATEWAY_LAG_MS } : {}) }),
  });
}

test('kill -9 of the worker during the local card charge: one payment at the gateway, one confirmed sale', async () => {
  const current = stack!;
  const event = await publishFaultEvent(current, 2);
  const [buyer] = await createBuyers(current.pool, 'local-charge-kill', 1);
  const headers = { 'x-customer-session': buyer!.token };
  const reserved = await current.http.request('POST', '/api/v1/customer/orders', { headers, body: orderBody(event) });
  expect(reserved.status).toBe(201);
  const { saleId, reference } = (reserved.body as { data: { saleId: string; reference: string } }).data;
  expect((await current.http.request('POST', `/api/v1/customer/orders/${saleId}/payment`, { headers })).status).toBe(
    200,
  );
  const gateway = new GatewayAClient({
    baseUrl: `${current.env.SANDBOX_URL}/gateway-a`,
    accessToken: current.env.GATEWAY_A_ACCESS_TOKEN ?? 'TEST-4010000000000000-000000-sandbox-access-token-dev',
    publicKey: current.env.GATEWAY_A_PUBLIC_KEY ?? 'TEST-sandbox-public-key-dev',
  });
  const { id: token } = await gateway.createCardToken({
    cardNumber: '5031755734530604',
    securityCode: '123',
    expirationMonth: 11,
    expirationYear: 2030,
    cardholderName: 'APRO',
    identification: { type: 'CC', number: '1020304050' },
  });

  expect((await gatewayLag('slow')).status).toBe(200);
  // The buyer's charge: it waits for the checkout through the kill (the API's update call outlives the worker).
  const charge = current.http.request('POST', `/api/v1/customer/orders/${saleId}/payment/card`, {
    headers,
    body: { token },
    timeoutMs: 150_000,
  });
  await sleep(KILL_AFTER_MS);
  const killedAt = Date.now();
  await current.restartWorker('SIGKILL');
  log(`worker killed at +${KILL_AFTER_MS} ms of the charge, back after ${Date.now() - killedAt} ms`);
  // Once the killed worker's request has surely been carried out, the gateway answers at once again.
  await sleep(Math.max(0, killedAt + GATEWAY_LAG_MS + 500 - Date.now()));
  await gatewayLag('ok');

  const answered = await charge;
  log(`the buyer's charge answered ${answered.status}: ${JSON.stringify(answered.body)}`);
  await until(
    'the sale CONFIRMED',
    async () =>
      (await current.pool.query<{ status: string }>('select status from sales where id = $1', [saleId])).rows[0]
        ?.status === 'CONFIRMED',
    120_000,
  );

  const payments = await gateway.searchPaymentsByReference(reference);
  log(`gateway payments of ${reference}: ${JSON.stringify(payments.map((p) => [p.id, p.status, p.dateCreated]))}`);
  expect(payments.map((payment) => payment.status)).toEqual(['approved']);
  const [payment] = payments;
  // Made by the request the killed worker sent: one sent after the kill could not be answered before killedAt + lag.
  expect(new Date(payment!.dateCreated ?? 0).getTime()).toBeLessThan(killedAt + GATEWAY_LAG_MS);
  const sale = await current.pool.query<{ status: string; payment_ref: string | null }>(
    'select status, payment_ref from sales where id = $1',
    [saleId],
  );
  expect(sale.rows).toEqual([{ status: 'CONFIRMED', payment_ref: String(payment!.id) }]);
  // Whether the restarted worker's rerun was answered locally or fell back to the task queue, it was this payment.
  log(`checkout history:\n${await checkoutHistory(current, saleId)}`);
  if (answered.status === 200) {
    expect((answered.body as { data: { paymentId: string; saleStatus: string } }).data).toMatchObject({
      paymentId: String(payment!.id),
      saleStatus: 'CONFIRMED',
    });
  }
}, 300_000);
