/**
 * Replay tests: workflow code must stay deterministic for executions already in flight. The committed histories in
 * test/replay/histories/ were recorded from real runs; every one must replay against today's workflow code, so a
 * change that would break running checkouts fails here first. Fresh executions of the same flows are replayed too,
 * and `RECORD_WORKFLOW_HISTORIES=1 npm test -- test/replay -t '<scenario>'` adds their histories as NEW committed
 * files after a deliberate, versioned change (patched with `patched()` so old histories keep replaying); the recorder
 * refuses to overwrite an existing fixture (recorder.ts).
 */

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer } from '../support/fixtures.js';
import {
  cardToken,
  confirmAtBank,
  customerOrder,
  eventually,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { openPurchaseSession, seatedEvent, seatMapOf } from '../support/seats.js';
import { startTestApi, type TestApi } from '../support/stack.js';
import { HISTORIES, replayHistories, showHistory, writeHistory } from './recorder.js';

const replay = replayHistories;

describe('committed histories replay against the current workflow code', () => {
  const files = readdirSync(HISTORIES).filter((file) => file.endsWith('.json'));
  test('there are recorded histories to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(3);
  });
  test('every committed history replays without nondeterminism, and one the code cannot replay fails', () => {
    // The simulation's known failure (its README): recorded before checkouts took turns, and nondeterministic since.
    const nondeterministic = 'seed-15-open-vs-deadline-nondeterminism.json';
    const results = replay([
      ...files.map((file) => join(HISTORIES, file)),
      fileURLToPath(new URL(`../simulation/known-failures/${nondeterministic}`, import.meta.url)),
    ]);
    expect(results).toEqual([
      ...files.map((file) => ({ file, ok: true })),
      { file: nondeterministic, ok: false, error: expect.stringContaining('nondeterminism') },
    ]);
  }, 120_000);
});

describe('fresh executions replay deterministically', () => {
  let api: TestApi;
  let shortApi: TestApi;
  const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
  beforeAll(async () => {
    api = await startTestApi();
    shortApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '2000' });
  });
  afterAll(async () => {
    await api.close();
    await shortApi.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** The execution's history in the standard JSON form (as the Temporal CLI and UI export it). */
  function history(target: TestApi, saleId: string, name: string): string {
    return writeHistory(showHistory(target.env.TEMPORAL_ADDRESS, checkoutWorkflowId(saleId)), name, scratch);
  }

  test('card approved, free order and expired reservation', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, `replay-${Math.random().toString(36).slice(2, 8)}@buyers.test`);

    const paid = (await reserveOrder(api, token, orderBody(event))).json().data;
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${paid.saleId}/payment`,
      headers: session(token),
    });
    const declined = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${paid.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'OTHE') },
    });
    expect(declined.json().data.status).toBe('rejected');
    const charged = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${paid.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(charged.json().data.saleStatus).toBe('CONFIRMED');
    const recorded = [history(api, paid.saleId, 'checkout-card-approved')];

    const other = await publishEvent(shortApi, organizer);
    const expiring = (await reserveOrder(shortApi, token, orderBody(other))).json().data;
    await eventually(
      async () => await customerOrder(shortApi, token, expiring.saleId),
      (o) => o.status === 'ABANDONED',
    );
    recorded.push(history(shortApi, expiring.saleId, 'checkout-expired'));

    const released = (await reserveOrder(api, token, orderBody(event))).json().data;
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${released.saleId}/release`,
      headers: session(token),
    });
    recorded.push(history(api, released.saleId, 'checkout-released'));
    expect(replay(recorded).map((result) => result.ok)).toEqual([true, true, true]);
  }, 120_000);

  test('a second approved payment refunded after confirmation (patch refund-second-charge)', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, `replay-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
    const sale = (await reserveOrder(api, token, orderBody(event))).json().data;
    const pse = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${sale.saleId}/payment/pse`,
      headers: session(token),
    });
    const { redirectUrl } = pse.json().data;
    for (let tab = 0; tab < 2; tab += 1) {
      await confirmAtBank(redirectUrl, 'b@example.test');
    }
    const settle = () =>
      fetch(`${api.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reference: sale.reference, outcome: 'approved' }),
      });
    await settle();
    await eventually(
      async () => await customerOrder(api, token, sale.saleId),
      (o) => o.status === 'CONFIRMED',
    );
    await settle();
    await eventually(
      async () =>
        (await api.orm.em
          .fork()
          .execute(`select count(*)::int as n from payment_attempts where sale_id = ? and kind = 'REFUND'`, [
            sale.saleId,
          ])) as Array<{ n: number }>,
      (rows) => rows[0]?.n === 1,
    );
    const recorded = history(api, sale.saleId, 'checkout-second-charge-refunded');
    expect(replay([recorded]).map((result) => result.ok)).toEqual([true]);
  }, 120_000);

  // ---------------------------------------------------------------- late money (checkout v2)

  const settleAtBank = (target: TestApi, reference: string) =>
    fetch(`${target.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reference, outcome: 'approved' }),
    });

  /**
   * A reserved sale whose buyer went through the bank page, so its transfer can settle whenever the test says. The
   * payment window here is 2 s: on a box busy with the rest of the suite the reservation can expire before the bank
   * page is opened (409 reservation_expired, or the retryable 503), and then a new reservation is made, three at most.
   */
  async function transferOpened(target: TestApi, event: Awaited<ReturnType<typeof publishEvent>>, label: string) {
    for (let reservation = 1; ; reservation += 1) {
      const token = await signInBuyer(target, `replay-${label}-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
      const sale = (await reserveOrder(target, token, orderBody(event))).json().data;
      const pse = await target.request({
        method: 'POST',
        url: `/api/v1/customer/orders/${sale.saleId}/payment/pse`,
        headers: session(token),
      });
      if (pse.statusCode === 200) {
        await confirmAtBank(pse.json().data.redirectUrl, `${label}@example.test`);
        return { token, sale };
      }
      const late = pse.statusCode === 503 || pse.json().error?.details?.reason === 'reservation_expired';
      if (!late || reservation === 3) {
        throw new Error(`the bank page did not open: ${pse.statusCode} ${pse.body}`);
      }
      await eventually(
        () => customerOrder(target, token, sale.saleId),
        (order) => order.status !== 'PENDING',
      );
    }
  }

  test('late money: confirmed when the stock is still there, refunded when it was sold', async () => {
    const organizer = await createOrganizer(shortApi.orm.em.fork());
    const roomy = await publishEvent(shortApi, organizer);
    const late = await transferOpened(shortApi, roomy, 'late-confirmed');
    await eventually(
      () => customerOrder(shortApi, late.token, late.sale.saleId),
      (o) => o.status === 'ABANDONED',
    );
    await settleAtBank(shortApi, late.sale.reference);
    await eventually(
      () => customerOrder(shortApi, late.token, late.sale.saleId),
      (o) => o.status === 'CONFIRMED',
      20_000,
    );

    const scarce = await publishEvent(shortApi, organizer, { capacity: 1 });
    const loser = await transferOpened(shortApi, scarce, 'late-refunded');
    await eventually(
      () => customerOrder(shortApi, loser.token, loser.sale.saleId),
      (o) => o.status === 'ABANDONED',
    );
    const winnerToken = await signInBuyer(
      shortApi,
      `replay-winner-${Math.random().toString(36).slice(2, 8)}@buyers.test`,
    );
    expect((await reserveOrder(shortApi, winnerToken, orderBody(scarce))).statusCode).toBe(201);
    await settleAtBank(shortApi, loser.sale.reference);
    await eventually(
      () => customerOrder(shortApi, loser.token, loser.sale.saleId),
      (o) => o.paymentStatus === 'FT_LATE_PAYMENT_REFUNDED',
      30_000,
    );
    const recorded = [
      history(shortApi, late.sale.saleId, 'checkout-late-payment-confirmed'),
      history(shortApi, loser.sale.saleId, 'checkout-late-payment-refunded'),
    ];
    expect(replay(recorded).map((result) => result.ok)).toEqual([true, true]);
  }, 120_000);

  test('a seated sale: seats held by the purchase session, booked on the card payment', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await seatedEvent(api, organizer);
    const token = await signInBuyer(api, `replay-seated-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
    const opened = await openPurchaseSession(api, token, event.eventDateId);
    await seatMapOf(api).hold({ eventKey: event.eventDateId, labels: ['A-1'], holdToken: opened.holdToken });
    const created = await reserveOrder(
      api,
      token,
      orderBody(event, 1, {
        items: [{ ticketTypeId: event.ticketTypeId, quantity: 1, seats: ['A-1'] }],
        holdToken: opened.holdToken,
      }),
    );
    expect(created.statusCode).toBe(201);
    const sale = created.json().data;
    const paid = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${sale.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(paid.json().data.saleStatus).toBe('CONFIRMED');
    const [seat] = await seatMapOf(api).objectStatuses(event.eventDateId, ['A-1']);
    expect(seat).toMatchObject({ status: 'booked', orderId: sale.saleId });
    const recorded = history(api, sale.saleId, 'checkout-seated-card-approved');
    expect(replay([recorded]).map((result) => result.ok)).toEqual([true]);
  }, 120_000);

  test('money after the execution finished starts a resolution run that confirms the sale', async () => {
    const graceApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '2000', LATE_PAYMENT_GRACE_MS: '500' });
    try {
      const organizer = await createOrganizer(graceApi.orm.em.fork());
      const event = await publishEvent(graceApi, organizer);
      const { token, sale } = await transferOpened(graceApi, event, 'resumed');
      const handle = graceApi.services.temporal.workflow.getHandle(checkoutWorkflowId(sale.saleId));
      const first = await handle.describe();
      await handle.result();
      await settleAtBank(graceApi, sale.reference);
      // The bank's notification reaches the API through the sandbox's webhook queue: slow on a loaded box.
      await eventually(
        () => customerOrder(graceApi, token, sale.saleId),
        (o) => o.status === 'CONFIRMED',
        60_000,
      );
      const resumed = await graceApi.services.temporal.workflow.getHandle(checkoutWorkflowId(sale.saleId)).describe();
      expect(resumed.runId).not.toBe(first.runId);
      const recorded = history(graceApi, sale.saleId, 'checkout-resumed-run-confirmed');
      expect(replay([recorded]).map((result) => result.ok)).toEqual([true]);
    } finally {
      await graceApi.close();
    }
  }, 120_000);
});
