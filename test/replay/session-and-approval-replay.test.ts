/**
 * Replay of two versioned paths: gateway B's first SALE_APPROVED judged after asking the gateway confirmed the sale
 * (unconditional since the launch baseline), and a purchase session made ORDERED by a general-admission
 * order (patch `purchase-session-ga-ordered`). Fresh executions must replay deterministically;
 * `RECORD_WORKFLOW_HISTORIES=1 npm test -- test/replay/session-and-approval-replay.test.ts -t '<scenario>'` commits
 * their histories as fixtures (new files only; see recorder.ts), replayed with the others by checkout-replay.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkoutWorkflowId, purchaseSessionWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, orderBody, publishEvent, reserveOrder, session, signInBuyer } from '../support/purchase.js';
import { buyerIdOf, openPurchaseSession } from '../support/seats.js';
import { startTestApi, type TestApi } from '../support/stack.js';
import { exportHistory, replayHistories } from './recorder.js';

let api: TestApi;
let legend: Organizer;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  legend = await createOrganizer(api.orm.em.fork());
  await api.orm.em
    .fork()
    .execute(`update workspaces set plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [legend.workspaceId]);
});
afterAll(async () => {
  await api.close();
  rmSync(scratch, { recursive: true, force: true });
});

const record = (workflowId: string, name: string) =>
  exportHistory({ address: api.env.TEMPORAL_ADDRESS, workflowId, name, scratchDir: scratch });

const control = (path: string, body: unknown) =>
  fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const email = (label: string) => `replay-${label}-${Math.random().toString(36).slice(2, 8)}@buyers.test`;

test('gateway B: the first SALE_APPROVED after a check-on-read confirmed the sale', async () => {
  const event = await publishEvent(api, legend, { price: 80_000 });
  const token = await signInBuyer(api, email('b-first-approval'));
  const sale = (await reserveOrder(api, token, orderBody(event))).json().data as { saleId: string; reference: string };
  const opened = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${sale.saleId}/payment`,
    headers: session(token),
  });
  expect((await control('/gateway-b/pay', { ...opened.json().data, deliverWebhook: false })).status).toBe(201);
  await eventually(
    async () =>
      (
        await api.request({ method: 'GET', url: `/api/v1/customer/orders/${sale.saleId}`, headers: session(token) })
      ).json().data.status as string,
    (status) => status === 'CONFIRMED',
  );
  const handle = api.services.temporal.workflow.getHandle(checkoutWorkflowId(sale.saleId));
  await handle.result();
  expect((await control('/gateway-b/renotify', { orderId: sale.reference })).status).toBe(200);
  await eventually(
    async () =>
      (await api.orm.em
        .fork()
        .execute(`select count(*)::int as n from payment_attempts where sale_id = ? and kind = 'NOTIFICATION'`, [
          sale.saleId,
        ])) as Array<{ n: number }>,
    (rows) => rows[0]?.n === 1,
  );
  // The run the late webhook started (the first run ended with the sale confirmed).
  await handle.result();
  const files = [record(checkoutWorkflowId(sale.saleId), 'checkout-gateway-b-first-approval-after-check')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);

test('purchase session: a general-admission order makes its session ORDERED', async () => {
  const event = await publishEvent(api, legend, { capacity: 5 });
  const token = await signInBuyer(api, email('ga-ordered'));
  const opened = await openPurchaseSession(api, token, event.eventDateId);
  const placed = await api.request({
    method: 'POST',
    url: '/api/v1/customer/orders',
    headers: { ...session(token), 'x-purchase-session': opened.id },
    payload: orderBody(event),
  });
  expect(placed.statusCode).toBe(201);
  const paid = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${placed.json().data.saleId}/payment`,
    headers: { ...session(token), 'x-purchase-session': opened.id },
  });
  expect(paid.statusCode).toBe(200);
  await openPurchaseSession(api, token, event.eventDateId);
  const files = [record(purchaseSessionWorkflowId(await buyerIdOf(api, token)), 'purchase-session-ga-ordered')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);
