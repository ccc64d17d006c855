/**
 * Gateway notifications arrive in any order, and the API re-reads each one's payment before waking the checkout. The
 * bank page's "payment created" notification can be re-read (pending) before the bank settles and still reach the
 * checkout after the settlement's notification (rejected), on a busy API. A rejection is final: the sale must go on
 * showing it, not the pending status of the older read. CI met this as a rejected transfer shown pending for good. A
 * run resumed after the sale closed learns the rejections from the sale's payment history.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { notifyCheckout } from '../../api/services/payment-notifications.js';
import {
  checkoutWorkflowId,
  type PaymentNotification,
  paymentNotificationSignal,
} from '../../workflows/definitions.js';
import { replayHistories, showHistory, writeHistory } from '../replay/recorder.js';
import { createOrganizer } from '../support/fixtures.js';
import {
  confirmAtBank,
  customerOrder,
  eventually,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
beforeAll(async () => {
  // A released sale's checkout ends two seconds later, so news after that starts a resumed run.
  api = await startTestApi({ LATE_PAYMENT_GRACE_MS: '2000' });
});
afterAll(async () => {
  await api.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Waits until the execution has completed a workflow task after the last signal it received. */
async function signalsProcessed(handle: WorkflowHandle): Promise<void> {
  await eventually(
    async () => (await handle.fetchHistory()).events ?? [],
    (events) => {
      const { EventType } = temporal.api.enums.v1;
      const lastSignal = events.findLastIndex(
        (event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
      );
      const lastTaskDone = events.findLastIndex(
        (event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      );
      return lastSignal >= 0 && lastTaskDone > lastSignal;
    },
  );
}

/** A buyer's PSE transfer the bank rejected, shown on the order; the sale is still PENDING. */
async function rejectedTransfer(label: string) {
  const organizer = await createOrganizer(api.orm.em.fork());
  const event = await publishEvent(api, organizer);
  const token = await signInBuyer(api, `${label}-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
  const sale = (await reserveOrder(api, token, orderBody(event))).json().data as { saleId: string; reference: string };
  const pse = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${sale.saleId}/payment/pse`,
    headers: session(token),
  });
  expect(pse.statusCode).toBe(200);
  expect((await confirmAtBank(pse.json().data.redirectUrl, `${label}@example.test`)).status).toBe(302);

  const settled = await fetch(`${api.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reference: sale.reference, outcome: 'rejected' }),
  });
  expect(settled.status).toBe(200);
  const payment = ((await settled.json()) as { data: { payment: { id: number } } }).data.payment;
  await eventually(
    () => customerOrder(api, token, sale.saleId),
    (order) => order.paymentStatus === 'rejected',
  );
  return { sale, token, paymentId: String(payment.id) };
}

/** What the API signals for the bank page's notification when its re-read (pending) came before the settlement. */
const staleReadOf = (paymentId: string): PaymentNotification => ({
  gateway: 'GATEWAY_A',
  providerPaymentId: paymentId,
  eventType: 'payment.pending',
  receivedAtMs: Date.now(),
  dedupeKey: `a:${paymentId}:pending`,
  verdict: {
    gateway: 'GATEWAY_A',
    outcome: 'pending',
    providerPaymentId: paymentId,
    rawStatus: 'pending',
    statusDetail: 'pending_waiting_transfer',
    mismatch: false,
    foreign: false,
  },
});

/** The order shows the bank's rejection, and the checkout's history (committed as `fixture`) replays. */
async function expectRejectionShown(saleId: string, token: string, status: 'PENDING' | 'ABANDONED', fixture: string) {
  const order = await customerOrder(api, token, saleId);
  expect(order.status).toBe(status);
  expect(order.paymentStatus).toBe('rejected');
  expect(order.declineCode).toBe('rejected_by_bank');
  const recorded = writeHistory(showHistory(api.env.TEMPORAL_ADDRESS, checkoutWorkflowId(saleId)), fixture, scratch);
  expect(replayHistories([recorded]).map((result) => result.ok)).toEqual([true]);
}

test('news that a rejected transfer is still pending, arriving after the rejection, leaves the sale showing it rejected', async () => {
  const { sale, token, paymentId } = await rejectedTransfer('stale');
  const handle = api.services.temporal.workflow.getHandle(checkoutWorkflowId(sale.saleId));
  await handle.signal(paymentNotificationSignal, staleReadOf(paymentId));
  await signalsProcessed(handle);
  // This path replays deterministically (RECORD_WORKFLOW_HISTORIES=1 commits its history as a fixture).
  await expectRejectionShown(sale.saleId, token, 'PENDING', 'checkout-stale-pending-news-ignored');
});

test('a checkout resumed after the sale closed knows the rejection too: the stale news leaves it showing rejected', async () => {
  const { sale, token, paymentId } = await rejectedTransfer('resumed');
  const released = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${sale.saleId}/release`,
    headers: session(token),
  });
  expect(released.statusCode).toBe(200);
  const handle = api.services.temporal.workflow.getHandle(checkoutWorkflowId(sale.saleId));
  await eventually(
    () => handle.describe(),
    (run) => run.status.name === 'COMPLETED',
  );

  // The stale read reaches a finished checkout: the gateway webhook's own path starts a run that resumes the sale.
  await notifyCheckout(api.services, sale.saleId, staleReadOf(paymentId));
  await signalsProcessed(handle);
  await expectRejectionShown(sale.saleId, token, 'ABANDONED', 'checkout-resumed-stale-pending-news-ignored');
});
