/**
 * Settlements end to end: the `settlement` workflow over real sales (card, complimentary, released, cancelled,
 * refunded, pending), driven by the operator command and Temporal updates, read through GET /settlements (contract
 * 4.9). Dates are moved into the past once their sales exist, as time would; objection windows are inputs.
 */
import { randomUUID } from 'node:crypto';
import { extractText, getDocumentProxy } from 'unpdf';
import { statementMoney } from '../../activities/settlement-statement.js';
import { workflowRefusal } from '../../config/workflow-refusals.js';
import { GATEWAY_COSTS } from '../../domain/settlement.js';
import { runOperator } from '../../scripts/operator.js';
import { ensureSettlementSweepSchedule } from '../../worker/schedules.js';
import {
  approveSettlementUpdate,
  recordSettlementTransferUpdate,
  rejectSettlementUpdate,
  requestSettlementPaymentUpdate,
  SETTLEMENT_SWEEP_SCHEDULE_ID,
  SETTLEMENT_SWEEP_WORKFLOW_ID,
  type SettlementView,
  settlementStatusQuery,
  settlementWorkflowId,
} from '../../workflows/settlement-definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, type PublishedEvent, publishEvent, session } from '../support/purchase.js';
import { complimentary, payByCard, reserve, saleOf } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let admin: Organizer;
let viewer: Organizer;
let stranger: Organizer;
let accounts: [string, string];

beforeAll(async () => {
  api = await startTestApi();
  admin = await createOrganizer(api.orm.em.fork());
  viewer = await createOrganizer(api.orm.em.fork(), { role: 'VIEWER', workspaceId: admin.workspaceId });
  stranger = await createOrganizer(api.orm.em.fork());
  accounts = [await payoutAccount(admin.workspaceId, 60), await payoutAccount(admin.workspaceId, 40)];
});
afterAll(async () => {
  await api.close();
});

// ── fixtures ────────────────────────────────────────────────────────────────────────────────────────────────

/** Payout accounts are added as an operator adds them (npm run operator -- payout-accounts add). */
async function payoutAccount(workspaceId: string, percentage: number): Promise<string> {
  const lines: string[] = [];
  const code = await runOperator(
    [
      'payout-accounts',
      'add',
      '--workspace',
      workspaceId,
      '--holder',
      'Producciones SAS',
      '--bank',
      'Banco Uno',
      '--last4',
      '1234',
      '--percentage',
      String(percentage),
    ],
    { orm: api.orm, env: api.env, print: (line) => lines.push(line) },
  );
  const id = /^added ([0-9a-f-]{36}) /m.exec(lines.join('\n'))?.[1];
  if (code !== 0 || !id) throw new Error(`payout-accounts add → ${code}: ${lines.join('\n')}`);
  return id;
}

/** The date is over: it started two hours ago and ended a minute ago (too recent for the scheduled sweep). */
const endDate = (eventDateId: string) =>
  api.orm.em
    .fork()
    .execute(
      `update event_dates set starts_at = now() - interval '2 hours', ends_at = now() - interval '1 minute' where id = ?`,
      [eventDateId],
    );

const operatorOutput: string[] = [];
const operator = (...argv: string[]) =>
  runOperator(['settlement', ...argv], {
    orm: api.orm,
    temporal: api.services.temporal,
    env: api.env,
    print: (line) => operatorOutput.push(line),
  });

const handleOf = (eventDateId: string) =>
  api.services.temporal.workflow.getHandle(settlementWorkflowId(admin.workspaceId, eventDateId));

async function startSettlement(eventDateId: string, objectionWindowMs = 600_000): Promise<SettlementView> {
  expect(await operator('start', eventDateId, '--objection-window-ms', String(objectionWindowMs))).toBe(0);
  return eventually(
    () => handleOf(eventDateId).query(settlementStatusQuery),
    (view) => view.status === 'REVIEW',
    30_000,
  );
}

async function refusalOf(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    return workflowRefusal(error);
  }
  throw new Error('the update was accepted');
}

const get = (who: Organizer, url: string) =>
  api.request({ method: 'GET', url: `/api/v1${url}`, headers: bearer(who.key) });

async function settlementRow(settlementId: string) {
  const [row] = await api.orm.em
    .fork()
    .execute<Array<{ status: string; figures: { adjustments: Array<{ saleId: string; amount: number }> } }>>(
      'select status, figures from settlements where id = ?',
      [settlementId],
    );
  return row;
}

async function settledNet(saleId: string): Promise<number> {
  const [row] = await api.orm.em
    .fork()
    .execute<Array<{ net: number }>>('select net from settlement_sales where sale_id = ?', [saleId]);
  return row?.net ?? Number.NaN;
}

async function cardSale(event: PublishedEvent, label: string, quantity = 1) {
  const { token, order } = await reserve(api, event, label, quantity);
  const charge = await payByCard(api, token, order.saleId, 'APRO');
  expect(charge.saleStatus).toBe('CONFIRMED');
  return order.saleId;
}

const refund = (saleId: string) =>
  api.request({
    method: 'POST',
    url: `/api/v1/sales/${saleId}/refund`,
    headers: bearer(admin.key),
    payload: { reason: 'buyer cannot attend', notifyBuyer: false },
  });

/** round½↑(a × bps / 10 000), independent of the module under test. */
const halfUpBps = (amount: number, bps: number) => Math.floor((amount * bps * 2 + 10_000) / 20_000);

/** What a statement must say for these sales, from their stored amounts (API, plus the absorbed fee's column). */
async function expectedFigures(saleIds: string[]) {
  let gross = 0;
  let costs = 0;
  let units = 0;
  for (const id of saleIds) {
    const sale = await saleOf(api, admin, id);
    const [row] = await api.orm.em.fork().execute<Array<{ organizer_service_fee: number; units: number }>>(
      `select s.organizer_service_fee, (select sum(quantity) from sale_items where sale_id = s.id)::int as units
           from sales s where s.id = ?`,
      [id],
    );
    const absorbed = row?.organizer_service_fee ?? 0;
    const provider = sale.paymentProvider as 'GATEWAY_A' | 'GATEWAY_B' | null;
    gross += sale.subtotal - sale.discountAmount;
    costs +=
      absorbed +
      halfUpBps(absorbed, 1900) +
      (provider && sale.total > 0 ? halfUpBps(sale.total, GATEWAY_COSTS[provider]) : 0);
    units += row?.units ?? 0;
  }
  return { gross, costs, net: gross - costs, units };
}

/** The text of a PDF, as a reader would copy it out (unpdf's extractText, pages merged). */
async function pdfText(bytes: Buffer): Promise<string> {
  return (await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true })).text;
}

const TINY_PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');

// ── the statement and its life ──────────────────────────────────────────────────────────────────────────────

describe('a settlement for a date with confirmed, abandoned, cancelled, refunded and pending sales', () => {
  test('every figure reconciles, the organizer sees it only from SENT, and it moves SENT → AWAITING_PAYMENT → PAID', async () => {
    const event = await publishEvent(api, admin, { capacity: 50, name: `Gala ${randomUUID().slice(0, 6)}` });
    const vipCreated = await api.request({
      method: 'POST',
      url: '/api/v1/ticket-types',
      headers: bearer(admin.key),
      payload: {
        eventId: event.eventId,
        eventDateId: event.eventDateId,
        name: 'VIP Palco',
        price: 80_000,
        capacity: 20,
        maxPerOrder: 5,
        feeAbsorbedByOrganizer: true,
      },
    });
    expect(vipCreated.statusCode).toBe(201);
    const vip = { ...event, ticketTypeId: vipCreated.json().data.id as string };

    const confirmed = [
      await cardSale(event, 'settle-general', 2),
      await cardSale(vip, 'settle-vip', 1),
      (await complimentary(api, admin, event, 1)).id,
    ];
    const released = await reserve(api, event, 'settle-released');
    const releasedResponse = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${released.order.saleId}/release`,
      headers: session(released.token),
    });
    expect(releasedResponse.statusCode).toBe(200);
    const cancelled = await reserve(api, event, 'settle-cancelled');
    expect(
      (
        await api.request({
          method: 'POST',
          url: `/api/v1/sales/${cancelled.order.saleId}/cancel`,
          headers: bearer(admin.key),
          payload: { reason: 'duplicate order' },
        })
      ).statusCode,
    ).toBe(200);
    const refunded = await cardSale(event, 'settle-refunded');
    expect((await refund(refunded)).statusCode).toBe(200);
    const pending = await reserve(api, event, 'settle-pending');
    expect((await saleOf(api, admin, released.order.saleId)).status).toBe('ABANDONED');
    expect((await saleOf(api, admin, cancelled.order.saleId)).status).toBe('CANCELLED');
    expect((await saleOf(api, admin, pending.order.saleId)).status).toBe('PENDING');

    await endDate(event.eventDateId);
    const review = await startSettlement(event.eventDateId);
    const id = review.settlementId as string;
    const expected = await expectedFigures(confirmed);
    expect(review.amount).toBe(expected.net);

    // Internal statuses do not exist for the organizer.
    expect((await get(admin, `/settlements/${id}`)).statusCode).toBe(404);
    expect((await get(admin, `/settlements/${id}/document`)).statusCode).toBe(404);
    expect((await get(admin, `/settlements?event=${event.eventId}`)).json().data).toEqual([]);
    expect((await get(admin, '/settlements?status=REVIEW')).statusCode).toBe(422);

    // Reject records the reason and recomputes back to REVIEW; bad allocations are refused before history.
    const handle = handleOf(event.eventDateId);
    const rejected = await handle.executeUpdate(rejectSettlementUpdate, { args: [{ reason: 'check the VIP fee' }] });
    expect(rejected).toMatchObject({ status: 'REVIEW', rejectionReason: 'check the VIP fee', amount: expected.net });
    const badSum = await refusalOf(
      handle.executeUpdate(approveSettlementUpdate, {
        args: [
          {
            allocations: [
              { bankAccountId: accounts[0], percentage: 50 },
              { bankAccountId: accounts[1], percentage: 40 },
            ],
          },
        ],
      }),
    );
    expect(badSum).toMatchObject({ code: 'INVALID_ALLOCATIONS', details: { reason: 'percentages_do_not_sum_to_100' } });
    const foreign = await refusalOf(
      handle.executeUpdate(approveSettlementUpdate, {
        args: [{ allocations: [{ bankAccountId: randomUUID(), percentage: 100 }] }],
      }),
    );
    expect(foreign).toMatchObject({ code: 'INVALID_ALLOCATIONS', details: { reason: 'unknown_payout_account' } });
    expect(await refusalOf(handle.executeUpdate(requestSettlementPaymentUpdate, { args: [] }))).toMatchObject({
      code: 'INVALID_STATE',
    });

    expect(await operator('approve', id, '--allocations', `${accounts[0]}=70,${accounts[1]}=30`)).toBe(0);
    const sent = await get(admin, `/settlements/${id}`);
    expect(sent.statusCode).toBe(200);
    expect(sent.json().data).toMatchObject({
      id,
      status: 'SENT',
      amount: expected.net,
      grossAmount: expected.gross,
      unitsSold: expected.units,
      currency: 'COP',
      rejectionReason: 'check the VIP fee',
      event: { id: event.eventId },
      eventDate: { id: event.eventDateId },
      hasDocument: true,
      paymentProofs: [],
      allocations: [
        { bankAccountId: accounts[0], percentage: 70 },
        { bankAccountId: accounts[1], percentage: 30 },
      ],
      requestedAt: null,
      paidAt: null,
    });
    expect(sent.json().data.reference).toMatch(/^ST-[2-9A-HJ-NP-Z]{8}$/);
    const allocated = sent.json().data.allocations as Array<{ percentage: number }>;
    expect(allocated.reduce((total, each) => total + each.percentage, 0)).toBe(100);

    // The statement is a real PDF whose text carries the figures as they are printed.
    const document = await get(admin, `/settlements/${id}/document`);
    expect(document.statusCode).toBe(200);
    expect(document.headers['content-type']).toBe('application/pdf');
    expect(document.headers['content-disposition']).toMatch(/^attachment; filename="statement-ST-[A-Z0-9]{8}\.pdf"$/);
    expect(document.rawPayload.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const text = await pdfText(document.rawPayload);
    expect(text).toContain(`Gross ${statementMoney(expected.gross, 'COP')}`);
    expect(text).toContain(`Total costs ${statementMoney(expected.costs, 'COP')}`);
    expect(text).toContain(`Gross - costs - collected + adjustments ${statementMoney(expected.net, 'COP')}`);
    expect(text).toContain(`Units sold ${expected.units}`);
    expect(text).toContain(`General x 3 at ${statementMoney(50_000, 'COP')} ${statementMoney(150_000, 'COP')}`);
    expect(text).toContain(`VIP Palco x 1 at ${statementMoney(80_000, 'COP')}`);

    // Lists: filters by event and status; roles and tenants.
    const listed = (await get(admin, `/settlements?event=${event.eventId}&status=SENT`)).json();
    expect(listed.data.map((each: { id: string }) => each.id)).toEqual([id]);
    expect((await get(admin, `/settlements?event=${event.eventId}&status=PAID`)).json().data).toEqual([]);
    expect((await get(viewer, `/settlements/${id}`)).statusCode).toBe(403);
    expect((await get(viewer, '/settlements')).statusCode).toBe(403);
    expect((await get(stranger, `/settlements/${id}`)).statusCode).toBe(404);
    expect((await get(stranger, `/settlements/${id}/document`)).statusCode).toBe(404);
    expect((await get(stranger, '/settlements')).json().data).toEqual([]);

    // SENT → AWAITING_PAYMENT on request; then the transfer with its proof → PAID.
    expect((await handle.executeUpdate(requestSettlementPaymentUpdate, { args: [] })).status).toBe('AWAITING_PAYMENT');
    expect((await get(admin, `/settlements/${id}`)).json().data.requestedAt).not.toBeNull();
    const proof = (fileName: string, contentType: string, bytes: Buffer) =>
      handle.executeUpdate(recordSettlementTransferUpdate, {
        args: [{ fileName, contentType, contentBase64: bytes.toString('base64') }],
      });
    expect(await refusalOf(proof('../transfer.pdf', 'application/pdf', TINY_PDF))).toMatchObject({
      code: 'INVALID_PROOF',
      details: { reason: 'file_name' },
    });
    expect(await refusalOf(proof('transfer.exe', 'application/x-msdownload', TINY_PDF))).toMatchObject({
      code: 'INVALID_PROOF',
      details: { reason: 'content_type' },
    });
    expect(await refusalOf(proof('transfer.png', 'image/png', TINY_PDF))).toMatchObject({
      code: 'INVALID_PROOF',
      details: { reason: 'content_does_not_match_type' },
    });
    expect(await refusalOf(proof('big.pdf', 'application/pdf', Buffer.alloc(1024 * 1024 + 1, 0x25)))).toMatchObject({
      code: 'INVALID_PROOF',
      details: { reason: 'too_large' },
    });
    expect((await proof('transfer-1.pdf', 'application/pdf', TINY_PDF)).status).toBe('PAID');
    expect(await handle.result()).toEqual({ settlementId: id, status: 'PAID' });

    const paid = (await get(admin, `/settlements/${id}`)).json().data;
    expect(paid).toMatchObject({ status: 'PAID', paymentProofs: [{ fileName: 'transfer-1.pdf' }] });
    expect(paid.paidAt).not.toBeNull();
    const download = await get(admin, `/settlements/${id}/proofs/transfer-1.pdf`);
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-type']).toBe('application/pdf');
    expect(download.rawPayload.equals(TINY_PDF)).toBe(true);

    // Only that settlement's own proof, by its exact name; nothing with a path meaning reaches a lookup.
    const documentName = /filename="([^"]+)"/.exec(String(document.headers['content-disposition']))?.[1] ?? '';
    for (const name of [
      'TRANSFER-1.pdf',
      'transfer-1.pdf.bak',
      documentName,
      '..%2F..%2Fetc%2Fpasswd',
      '%2e%2e%2ftransfer-1.pdf',
      '..%5Ctransfer-1.pdf',
      'transfer-1.pdf%2500',
    ]) {
      const response = await get(admin, `/settlements/${id}/proofs/${name}`);
      expect({ name, status: response.statusCode }).toEqual({ name, status: 404 });
    }
    // A bare dot-dot segment is resolved by URL parsing before routing (to the settlement itself), never to a file.
    const dotDot = await get(admin, `/settlements/${id}/proofs/%2e%2e`);
    expect(dotDot.headers['content-type']).not.toBe('application/pdf');
    expect(dotDot.rawPayload.equals(TINY_PDF)).toBe(false);
    const withNul = await get(admin, `/settlements/${id}/proofs/transfer-1.pdf%00`);
    expect([404, 422]).toContain(withNul.statusCode);
    expect((await get(admin, `/settlements/${id}/proofs/..%2F${id}%2Fproofs%2Ftransfer-1.pdf`)).statusCode).toBe(404);
    expect((await get(stranger, `/settlements/${id}/proofs/transfer-1.pdf`)).statusCode).toBe(404);
    expect((await get(viewer, `/settlements/${id}/proofs/transfer-1.pdf`)).statusCode).toBe(403);

    // The operator command reads the same state.
    operatorOutput.length = 0;
    expect(await operator('list', '--status', 'paid', '--workspace', admin.workspaceId)).toBe(0);
    expect(operatorOutput.join('\n')).toContain(paid.reference);
    expect(await operator('approve', id)).toBe(1);
    expect(await operator('bogus')).toBe(2);
  }, 240_000);
});

describe('refunds after a settlement was sent', () => {
  test('are carried into the next settlement of the workspace as an adjustment, exactly once', async () => {
    const first = await publishEvent(api, admin, { capacity: 20 });
    const keep = await cardSale(first, 'adjust-keep');
    const later = await cardSale(first, 'adjust-later', 2);
    await endDate(first.eventDateId);
    const firstView = await startSettlement(first.eventDateId);
    await handleOf(first.eventDateId).executeUpdate(approveSettlementUpdate, { args: [{}] });
    const laterNet = await settledNet(later);
    expect(laterNet).toBe((await expectedFigures([later])).net);

    // Refunded after the first statement went out: the first one stays as sent.
    expect((await refund(later)).statusCode).toBe(200);
    const firstAfter = (await get(admin, `/settlements/${firstView.settlementId}`)).json().data;
    expect(firstAfter).toMatchObject({ status: 'SENT', amount: (await expectedFigures([keep, later])).net });

    // The next settlement (another date) carries −(settled net); a refund while it is in REVIEW is just reflected.
    const second = await publishEvent(api, admin, { capacity: 20 });
    const secondKeep = await cardSale(second, 'adjust-second');
    const secondRefunded = await cardSale(second, 'adjust-second-refunded');
    await endDate(second.eventDateId);
    const secondView = await startSettlement(second.eventDateId);
    const secondId = secondView.settlementId as string;
    expect(secondView.amount).toBe((await expectedFigures([secondKeep, secondRefunded])).net - laterNet);
    expect((await refund(secondRefunded)).statusCode).toBe(200);
    await handleOf(second.eventDateId).executeUpdate(approveSettlementUpdate, {
      args: [{ allocations: [{ bankAccountId: accounts[0], percentage: 100 }] }],
    });
    const secondSent = (await get(admin, `/settlements/${secondId}`)).json().data;
    expect(secondSent.amount).toBe((await expectedFigures([secondKeep])).net - laterNet);
    expect((await settlementRow(secondId))?.figures.adjustments).toEqual([
      expect.objectContaining({ saleId: later, amount: -laterNet }),
    ]);
    const text = await pdfText((await get(admin, `/settlements/${secondId}/document`)).rawPayload);
    expect(text).toContain(`Total adjustments ${statementMoney(-laterNet, 'COP')}`);

    // A third settlement carries nothing more; with a short objection window it requests the transfer by itself.
    const third = await publishEvent(api, admin, { capacity: 20 });
    const thirdSale = await cardSale(third, 'adjust-third');
    await endDate(third.eventDateId);
    const thirdView = await startSettlement(third.eventDateId, 1_000);
    expect(thirdView.amount).toBe((await expectedFigures([thirdSale])).net);
    expect((await settlementRow(thirdView.settlementId as string))?.figures.adjustments).toEqual([]);
    await handleOf(third.eventDateId).executeUpdate(approveSettlementUpdate, { args: [{}] });
    await eventually(
      () => handleOf(third.eventDateId).query(settlementStatusQuery),
      (view) => view.status === 'AWAITING_PAYMENT',
      30_000,
    );
    const [count] = await api.orm.em
      .fork()
      .execute<Array<{ n: number }>>('select count(*)::int as n from settlement_adjustments where sale_id = ?', [
        later,
      ]);
    expect(count?.n).toBe(1);

    // Cursor paging walks the same list a single page shows, newest first, without repeats.
    const whole = (await get(admin, '/settlements?limit=100')).json().data.map((each: { id: string }) => each.id);
    expect(whole).toEqual(expect.arrayContaining([firstView.settlementId, secondId, thirdView.settlementId]));
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: Array<{ id: string }>; page: { nextCursor: string | null } } = (
        await get(admin, `/settlements?limit=1${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      paged.push(...page.data.map((each) => each.id));
      cursor = page.page.nextCursor;
    } while (cursor);
    expect(paged).toEqual(whole);
    expect([...whole].sort().reverse()).toEqual(whole);

    // Contract 4.9: the cursor is the id of the last row of the previous page, as a client reads it off the list.
    const afterFirst = await get(admin, `/settlements?limit=100&cursor=${whole[0]}`);
    expect(afterFirst.statusCode).toBe(200);
    expect(afterFirst.json().data.map((each: { id: string }) => each.id)).toEqual(whole.slice(1));
    const firstPage = (await get(admin, '/settlements?limit=1')).json();
    expect(firstPage.page.nextCursor).toBe(whole[0]);
    expect((await get(admin, '/settlements?cursor=not-a-row')).statusCode).toBe(422);
  }, 240_000);
});

describe('the settlement sweep', () => {
  test('starts one settlement per ended date with a confirmed sale and none for the others', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const ended = await publishEvent(api, owner, { capacity: 5 });
    await complimentary(api, owner, ended, 1);
    const endedEmpty = await publishEvent(api, owner, { capacity: 5 });
    const upcoming = await publishEvent(api, owner, { capacity: 5 });
    await complimentary(api, owner, upcoming, 1);
    await endDate(ended.eventDateId);
    await endDate(endedEmpty.eventDateId);

    const sweep = (runId: string) =>
      api.services.temporal.workflow.execute('settlementSweep', {
        workflowId: `${SETTLEMENT_SWEEP_WORKFLOW_ID}-test-${runId}`,
        taskQueue: api.env.TEMPORAL_TASK_QUEUE,
        args: [{ endedAgoMs: 0, workspaceId: owner.workspaceId, objectionWindowMs: 60_000 }],
      });
    expect(await sweep(randomUUID())).toEqual({ started: 1, alreadyRunning: 0, errors: 0 });
    const handle = api.services.temporal.workflow.getHandle(settlementWorkflowId(owner.workspaceId, ended.eventDateId));
    const view = await eventually(
      () => handle.query(settlementStatusQuery),
      (current) => current.status === 'REVIEW',
      30_000,
    );
    expect(view.amount).toBe(0);
    const rows = await api.orm.em
      .fork()
      .execute<Array<{ event_date_id: string }>>('select event_date_id from settlements where workspace_id = ?', [
        owner.workspaceId,
      ]);
    expect(rows.map((row) => row.event_date_id)).toEqual([ended.eventDateId]);
    // Its settlement row exists now, so a second run starts nothing.
    expect(await sweep(randomUUID())).toEqual({ started: 0, alreadyRunning: 0, errors: 0 });
    // The workspace has no payout account: approval is refused, never a half-sent settlement.
    expect(await refusalOf(handle.executeUpdate(approveSettlementUpdate, { args: [{}] }))).toMatchObject({
      code: 'INVALID_ALLOCATIONS',
      details: { reason: 'no_payout_accounts' },
    });
  }, 120_000);
});

describe('the settlement-sweep Schedule', () => {
  test('every worker start keeps it running the sweep; SETTLEMENTS_SCHEDULE_ENABLED=false pauses it, saying why', async () => {
    const handle = api.services.temporal.schedule.getHandle(SETTLEMENT_SWEEP_SCHEDULE_ID);
    expect(await ensureSettlementSweepSchedule(api.services.temporal, api.env)).toBe('updated');
    const described = await handle.describe();
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'settlementSweep' });
    expect(described.action.type === 'startWorkflow' ? described.action.args : []).toEqual([
      expect.objectContaining({ endedAgoMs: api.env.SETTLEMENT_AFTER_END_MS, workspaceId: null }),
    ]);
    expect(described.state.paused).toBe(false);
    try {
      expect(
        await ensureSettlementSweepSchedule(api.services.temporal, { ...api.env, SETTLEMENTS_SCHEDULE_ENABLED: false }),
      ).toBe('paused');
      expect((await handle.describe()).state).toMatchObject({
        paused: true,
        note: expect.stringContaining('SETTLEMENTS_SCHEDULE_ENABLED=false'),
      });
    } finally {
      expect(await ensureSettlementSweepSchedule(api.services.temporal, api.env)).toBe('updated');
    }
    expect((await handle.describe()).state.paused).toBe(false);
  });
});
