/**
 * The deadline itself frees the stock (issue 14, pretix-style holds): once a reservation's payment window has passed,
 * its units are buyable again even while its checkout has not closed it yet (thousands of timers due in the same
 * second are worked off one by one). Money that still arrives for such a sale is late money, judged by the checkout:
 * confirmed if the stock can be taken again, else refunded, never lost and never sold twice.
 *
 * The lag is injected: the sale's deadline is moved into the past in the database while its checkout's timer still
 * points ten minutes ahead, which is what a checkout backlog looks like from the outside.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { releaseLapsedHolds } from '../../entities/stock.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { replayHistories, showHistory, writeHistory } from '../replay/recorder.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  confirmAtBank,
  eventually,
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
  rmSync(scratch, { recursive: true, force: true });
});

const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;
const control = (path: string, body: unknown) =>
  fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

interface Order {
  saleId: string;
  reference: string;
}

async function reserve(event: PublishedEvent, label: string): Promise<{ token: string; order: Order }> {
  const token = await signInBuyer(api, email(label));
  const created = await reserveOrder(api, token, orderBody(event, 1));
  expect(created.statusCode).toBe(201);
  return { token, order: created.json().data as Order };
}

const orderOf = async (token: string, saleId: string) =>
  (await api.request({ method: 'GET', url: `/api/v1/customer/orders/${saleId}`, headers: session(token) })).json().data;

/** The buyer goes to the bank (PSE) while the window is open; the bank settles later, when the test says so. */
async function startBankTransfer(token: string, saleId: string): Promise<void> {
  const pse = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${saleId}/payment/pse`,
    headers: session(token),
  });
  expect(pse.statusCode).toBe(200);
  expect((await confirmAtBank(pse.json().data.redirectUrl)).status).toBe(302);
}

/** The sale's payment window ended a second ago; its checkout's timer has not fired (it still waits ten minutes). */
async function deadlinePassesBeforeItsTimer(saleId: string): Promise<void> {
  await api.orm.em.fork().execute(`update sales set expires_at = now() - interval '1 second' where id = ?`, [saleId]);
}

async function available(event: PublishedEvent): Promise<number> {
  const response = await api.request({
    method: 'GET',
    url: `/api/v1/ticket-types/${event.ticketTypeId}`,
    headers: bearer(organizer.key),
  });
  return response.json().data.available;
}

async function refundAttempts(saleId: string): Promise<Array<{ status: string; status_detail: string }>> {
  return api.orm.em
    .fork()
    .execute(`select status, status_detail from payment_attempts where sale_id = ? and kind = 'REFUND'`, [saleId]);
}

describe('the deadline frees the stock before the checkout closes the sale', () => {
  test('sold out by a lapsed hold: the next buyer gets it; the lapsed buyer paying after is refunded, nothing oversold', async () => {
    const event = await publishEvent(api, organizer, { capacity: 1 });
    const late = await reserve(event, 'lapsed');
    await startBankTransfer(late.token, late.order.saleId);
    const refused = await reserveOrder(api, await signInBuyer(api, email('early')), orderBody(event, 1));
    expect(refused.statusCode).toBe(409);

    await deadlinePassesBeforeItsTimer(late.order.saleId);
    const next = await reserve(event, 'next');
    expect((await orderOf(late.token, late.order.saleId)).status).toBe('ABANDONED');
    expect(await available(event)).toBe(0);

    // The bank approves the lapsed buyer's transfer now: the unit is the next buyer's, so the money goes back.
    expect(
      (await control('/gateway-a/pse/settle', { reference: late.order.reference, outcome: 'approved' })).status,
    ).toBe(200);
    const refunded = await eventually(
      async () => ({
        order: await orderOf(late.token, late.order.saleId),
        refunds: await refundAttempts(late.order.saleId),
      }),
      (seen) => seen.refunds.some((refund) => refund.status === 'refunded'),
      30_000,
    );
    expect(refunded.order.status).toBe('ABANDONED');
    expect(refunded.order.tickets ?? []).toHaveLength(0);
    expect(refunded.refunds).toEqual([{ status: 'refunded', status_detail: 'late_no_stock' }]);
    expect((await orderOf(next.token, next.order.saleId)).status).toBe('PENDING');
    expect(await available(event)).toBe(0);

    // This path replays deterministically (RECORD_WORKFLOW_HISTORIES=1 commits its history as a fixture).
    const recorded = writeHistory(
      showHistory(api.env.TEMPORAL_ADDRESS, checkoutWorkflowId(late.order.saleId)),
      'checkout-deadline-frees-stock-refunded',
      scratch,
    );
    expect(replayHistories([recorded]).map((result) => result.ok)).toEqual([true]);
  });

  test('swept before its timer, the lapsed buyer paying while the unit is still free is confirmed with tickets', async () => {
    const event = await publishEvent(api, organizer, { capacity: 1 });
    const late = await reserve(event, 'swept');
    await startBankTransfer(late.token, late.order.saleId);

    await deadlinePassesBeforeItsTimer(late.order.saleId);
    const swept = await api.orm.em
      .fork()
      .transactional((tx) => releaseLapsedHolds(tx, 1000, { workspaceId: organizer.workspaceId }));
    expect(swept.sales).toBeGreaterThanOrEqual(1);
    expect((await orderOf(late.token, late.order.saleId)).status).toBe('ABANDONED');
    expect(await available(event)).toBe(1);

    expect(
      (await control('/gateway-a/pse/settle', { reference: late.order.reference, outcome: 'approved' })).status,
    ).toBe(200);
    const confirmed = await eventually(
      () => orderOf(late.token, late.order.saleId),
      (order) => order.status === 'CONFIRMED',
      30_000,
    );
    expect(confirmed.tickets).toHaveLength(1);
    expect(await available(event)).toBe(0);
    expect(await refundAttempts(late.order.saleId)).toEqual([]);
  });
});
