/**
 * Gateway B reports a refund by re-notifying SALE_APPROVED for a charge that already confirmed its sale (contract
 * part 2, paymentStatus FT_SALE_APPROVED_POST_CONFIRM). A buyer back on the page makes the checkout ask the gateway,
 * which can confirm the sale before the charge's FIRST SALE_APPROVED webhook is processed: that webhook is news of
 * the same payment, not a re-notification, and must leave the sale's paymentStatus as it is. A different approved
 * payment for a paid sale is still a second charge and is refunded.
 */
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, orderBody, publishEvent, reserveOrder, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let legend: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  legend = await createOrganizer(api.orm.em.fork());
  // Plan and allowlist are operator settings, not organizer API fields.
  await api.orm.em
    .fork()
    .execute(`update workspaces set plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [legend.workspaceId]);
});
afterAll(async () => {
  await api.close();
});

const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;
const control = (path: string, body: unknown) =>
  fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** GET /customer/orders/{id}: on a PENDING sale with an open payment it also asks the checkout to pull the gateway. */
const readOrder = async (token: string, saleId: string) =>
  (await api.request({ method: 'GET', url: `/api/v1/customer/orders/${saleId}`, headers: session(token) })).json()
    .data as { status: string; paymentStatus: string | null };

interface AttemptRow {
  kind: string;
  status: string | null;
  status_detail: string | null;
  provider_payment_id: string | null;
}
const attemptsOf = (saleId: string) =>
  api.orm.em
    .fork()
    .execute<AttemptRow[]>(
      'select kind, status, status_detail, provider_payment_id from payment_attempts where sale_id = ? order by created_at',
      [saleId],
    );

/** A reserved gateway B sale whose buyer opened the payment button. */
async function openedSale(label: string) {
  const event = await publishEvent(api, legend, { price: 80_000 });
  const token = await signInBuyer(api, email(label));
  const created = await reserveOrder(api, token, orderBody(event));
  expect(created.statusCode).toBe(201);
  const sale = created.json().data as { saleId: string; reference: string };
  const opened = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${sale.saleId}/payment`,
    headers: session(token),
  });
  expect(opened.statusCode).toBe(200);
  return { token, sale, config: opened.json().data as Record<string, unknown> };
}

/** Sends SALE_APPROVED (a new event id) for the order's approved charge, and waits until the checkout has judged it. */
async function sendSaleApproved(saleId: string, reference: string): Promise<void> {
  const notices = async () => (await attemptsOf(saleId)).filter((a) => a.kind === 'NOTIFICATION').length;
  const before = await notices();
  const sent = await control('/gateway-b/renotify', { orderId: reference });
  expect(sent.status).toBe(200);
  await eventually(notices, (count) => count > before);
  // The notification is judged in the execution that recorded it; it ends once its inbox is drained.
  await api.services.temporal.workflow.getHandle(checkoutWorkflowId(saleId)).result();
}

describe('gateway B: the first SALE_APPROVED after asking the gateway confirmed the sale', () => {
  test('is news of the same payment: the sale keeps its approved status and nothing is refunded; a repeat still flags the sale', async () => {
    const { token, sale, config } = await openedSale('b-first-approval');
    // The buyer pays; the gateway's webhook has not gone out yet.
    const paid = await control('/gateway-b/pay', { ...config, outcome: 'approved', deliverWebhook: false });
    expect(paid.status).toBe(201);
    const transactionId = ((await paid.json()) as { data: { transactionId: string } }).data.transactionId;

    // Back on the page, the buyer's read makes the checkout ask the gateway, which confirms the sale first.
    const confirmed = await eventually(
      () => readOrder(token, sale.saleId),
      (o) => o.status === 'CONFIRMED',
    );
    expect(confirmed.paymentStatus).toBe('APPROVED');
    const beforeWebhook = await attemptsOf(sale.saleId);
    expect(beforeWebhook.map((a) => a.kind)).toContain('STATUS_CHECK');
    expect(beforeWebhook.map((a) => a.kind)).not.toContain('NOTIFICATION');

    // Then the charge's first SALE_APPROVED webhook arrives.
    await sendSaleApproved(sale.saleId, sale.reference);
    const afterFirst = await attemptsOf(sale.saleId);
    expect(afterFirst).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'NOTIFICATION', status: 'APPROVED', provider_payment_id: transactionId }),
      ]),
    );
    expect(await readOrder(token, sale.saleId)).toMatchObject({ status: 'CONFIRMED', paymentStatus: 'APPROVED' });
    expect(afterFirst.filter((a) => a.kind === 'REFUND')).toEqual([]);

    // A second SALE_APPROVED of the same charge is gateway B's refund report: flagged for the organizer, as before.
    await sendSaleApproved(sale.saleId, sale.reference);
    expect(await readOrder(token, sale.saleId)).toMatchObject({
      status: 'CONFIRMED',
      paymentStatus: 'FT_SALE_APPROVED_POST_CONFIRM',
    });
    expect((await attemptsOf(sale.saleId)).filter((a) => a.kind === 'REFUND')).toEqual([]);
  });

  test('an approved payment other than the one that paid the sale is a second charge: refunded', async () => {
    const { token, sale, config } = await openedSale('b-second-charge');
    const paid = await control('/gateway-b/pay', { ...config, outcome: 'approved' });
    expect(paid.status).toBe(201);
    const transactionId = ((await paid.json()) as { data: { transactionId: string } }).data.transactionId;
    await eventually(
      () => readOrder(token, sale.saleId),
      (o) => o.status === 'CONFIRMED',
    );
    await api.services.temporal.workflow.getHandle(checkoutWorkflowId(sale.saleId)).result();
    // The sandbox takes one charge per order id, so the double charge is staged: the sale is recorded as paid by an
    // earlier transaction, and the gateway then reports this one approved.
    await api.orm.em.fork().execute(`update sales set payment_ref = 'earlier-transaction' where id = ?`, [sale.saleId]);

    await control('/gateway-b/renotify', { orderId: sale.reference });
    const refunds = await eventually(
      async () => (await attemptsOf(sale.saleId)).filter((a) => a.kind === 'REFUND'),
      (rows) => rows.some((row) => row.status === 'refunded'),
      30_000,
    );
    expect(refunds).toEqual([
      expect.objectContaining({
        provider_payment_id: transactionId,
        status: 'refunded',
        status_detail: 'second_charge',
      }),
    ]);
    expect((await readOrder(token, sale.saleId)).status).toBe('CONFIRMED');
  });
});
