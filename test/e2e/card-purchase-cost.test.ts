/**
 * What one card purchase costs the orchestration (issue 14), counted from its checkout's history: the gateway's own
 * records are judged as they are read (the card charge's answer, a notification the API has just re-read), so the
 * only task-queue activity is the charge; the ticket email is owed in the confirming transaction and sent by the
 * ticket mailer (checkout input `ticketsByMailer`); news of the payment that already confirmed the sale does not
 * even wake the checkout. Each step has a committed replay fixture.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { temporal } from '@temporalio/proto';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { replayHistories, showHistory, writeHistory } from '../replay/recorder.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  cardToken,
  confirmAtBank,
  eventually,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
  waitForMail,
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
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = {
  completedTask: 7,
  activityScheduled: 10,
  markerRecorded: 25,
  searchAttributesUpserted: 40,
} as const;

async function historyOf(saleId: string): Promise<HistoryEvent[]> {
  const history = await api.services.temporal.workflow.getHandle(checkoutWorkflowId(saleId)).fetchHistory();
  return history.events ?? [];
}

const activitiesOf = (events: HistoryEvent[]) =>
  events
    .filter((event) => Number(event.eventType) === EventType.activityScheduled)
    .map((event) => event.activityTaskScheduledEventAttributes?.activityType?.name);

/** The local activities an execution ran, from the markers the SDK records for them. */
const localActivitiesOf = (events: HistoryEvent[]) =>
  events
    .filter((event) => Number(event.eventType) === EventType.markerRecorded)
    .filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity')
    .map((event) => {
      const data = event.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
      return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type: string }).activity_type : null;
    });

/** The search attributes of each upsert, the SDK's TemporalChangeVersion (one per patch asked) included. */
const upsertsOf = (events: HistoryEvent[]) =>
  events
    .filter((event) => Number(event.eventType) === EventType.searchAttributesUpserted)
    .map((event) =>
      Object.keys(event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}).sort(),
    );

/** The markers of every `patched` the execution asked. */
const patchMarkersOf = (events: HistoryEvent[]) =>
  events.filter(
    (event) =>
      Number(event.eventType) === EventType.markerRecorded &&
      event.markerRecordedEventAttributes?.markerName === 'core_patch',
  );

const workflowTasksOf = (events: HistoryEvent[]) =>
  events.filter((event) => Number(event.eventType) === EventType.completedTask).length;

async function buyByCard(label: string) {
  const buyer = email(label);
  const event = await publishEvent(api, organizer, { capacity: 5 });
  const token = await signInBuyer(api, buyer);
  const created = await reserveOrder(api, token, orderBody(event, 1));
  expect(created.statusCode).toBe(201);
  const order = created.json().data as { saleId: string; reference: string };
  const headers = session(token);
  expect(
    (await api.request({ method: 'POST', url: `/api/v1/customer/orders/${order.saleId}/payment`, headers })).statusCode,
  ).toBe(200);
  const charged = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${order.saleId}/payment/card`,
    headers,
    payload: { token: await cardToken(api, 'APRO') },
  });
  expect(charged.json().data).toMatchObject({ status: 'approved', saleStatus: 'CONFIRMED' });
  await waitForMail(api.env.SANDBOX_URL, buyer, (mail) => mail.subject.includes(order.reference));
  const describeRun = () => api.services.temporal.workflow.getHandle(checkoutWorkflowId(order.saleId)).describe();
  await eventually(describeRun, (run) => run.status.name === 'COMPLETED');
  return { order, token };
}

describe('a card purchase, counted from its checkout history', () => {
  test('one task-queue activity (the charge), no second read of any payment, the email sent by the mailer', async () => {
    const { order } = await buyByCard('card-cost');
    const events = await historyOf(order.saleId);
    expect(activitiesOf(events)).toEqual(['chargeCard']);
    // Reserve, charge accepted, charge answered (confirmed, and the execution ends); the card form is opened by the
    // API alone. A fourth only when the gateway's notification overtakes the charge's answer.
    expect(workflowTasksOf(events)).toBeLessThanOrEqual(4);
    // Checkout input `leanCardPurchase`: the charge's activity records its answer (no local step for it), and the
    // reservation sets the sale's search attributes in one upsert. A local `recordAttempt` is left only for the
    // gateway's notification, when it overtakes the charge's answer and is judged (one per NOTIFICATION attempt).
    const attempts = await api.orm.em
      .fork()
      .execute<{ kind: string; status: string; dedupe_key: string }[]>(
        `select kind, status, dedupe_key from payment_attempts where sale_id = ? and kind in ('CARD', 'NOTIFICATION')`,
        [order.saleId],
      );
    const steps = localActivitiesOf(events);
    expect(steps.filter((step) => step !== 'recordAttempt')).toEqual([
      'reserveSale',
      'choosePaymentRail',
      'confirmSale',
    ]);
    expect(steps.filter((step) => step === 'recordAttempt')).toHaveLength(
      attempts.filter((attempt) => attempt.kind === 'NOTIFICATION').length,
    );
    expect(attempts.filter((attempt) => attempt.kind === 'CARD')).toEqual([
      { kind: 'CARD', status: 'approved', dedupe_key: expect.stringMatching(/^card:/) },
    ]);
    // Checkout input `patchesInForce`: the execution has today's patches from its start, so it records no patch
    // marker and no TemporalChangeVersion update (four events and two visibility writes less per purchase).
    expect(patchMarkersOf(events)).toEqual([]);
    expect(upsertsOf(events)).toEqual([
      ['EventDateId', 'SaleReference', 'SaleStatus', 'WorkspaceId'],
      ['Gateway'],
      ['SaleStatus'],
    ]);

    const recorded = writeHistory(
      showHistory(api.env.TEMPORAL_ADDRESS, checkoutWorkflowId(order.saleId)),
      'checkout-card-approved-patches-in-force',
      scratch,
    );
    expect(replayHistories([recorded]).map((result) => result.ok)).toEqual([true]);
  });

  test('a repeated notification of the payment that confirmed the sale is acknowledged without waking the checkout', async () => {
    const { order } = await buyByCard('card-repeat');
    const before = (await historyOf(order.saleId)).length;
    const replayed = await fetch(`${api.env.SANDBOX_URL}/control/notifications/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ gateway: 'gateway-a', reference: order.reference }),
    });
    expect(replayed.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const run = await api.services.temporal.workflow.getHandle(checkoutWorkflowId(order.saleId)).describe();
    expect(run.status.name).toBe('COMPLETED');
    expect((await historyOf(order.saleId)).length).toBe(before);
  });

  test('a PSE payment is judged from the notification the API re-read: no readPayment activity', async () => {
    const buyer = email('pse-cost');
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, buyer);
    const order = (await reserveOrder(api, token, orderBody(event, 1))).json().data as {
      saleId: string;
      reference: string;
    };
    const pse = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment/pse`,
      headers: session(token),
    });
    expect((await confirmAtBank(pse.json().data.redirectUrl)).status).toBe(302);
    const settled = await fetch(`${api.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reference: order.reference, outcome: 'approved' }),
    });
    expect(settled.status).toBe(200);
    await eventually(
      () => api.services.temporal.workflow.getHandle(checkoutWorkflowId(order.saleId)).describe(),
      (run) => run.status.name === 'COMPLETED',
      20_000,
    );
    expect(activitiesOf(await historyOf(order.saleId))).toEqual(['openPsePayment']);
  });

  test('opening a card payment is answered by the API: no update reaches the checkout, the opened attempt is recorded', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, email('open-cost'));
    const order = (await reserveOrder(api, token, orderBody(event, 1))).json().data as { saleId: string };
    const before = await historyOf(order.saleId);
    const opened = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${order.saleId}/payment`,
      headers: session(token),
    });
    expect(opened.statusCode).toBe(200);
    expect(opened.json().data).toMatchObject({ publicKey: api.env.GATEWAY_A_PUBLIC_KEY, currency: 'COP' });
    expect((await historyOf(order.saleId)).length).toBe(before.length);
    const attempts = await api.orm.em
      .fork()
      .execute<{ kind: string; gateway: string }[]>('select kind, gateway from payment_attempts where sale_id = ?', [
        order.saleId,
      ]);
    expect(attempts).toEqual([{ kind: 'OPEN', gateway: 'GATEWAY_A' }]);
  });
});
