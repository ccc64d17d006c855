/**
 * A buyer the waiting room admitted is served even while the API sheds load (api/plugins/load-shedding.ts): the room
 * already admits only what the stack can serve, so shedding the admitted reservation, or the payment of a held
 * reservation, would only waste the turn or let the held ticket lapse. Everyone else is still shed: a request without
 * a turn at the door, a forged or unadmitted turn once it is read (before anything is held), and an order of a date
 * without a room whatever token it carries.
 *
 * Two API processes share the stack: `calm` sets the scene and reads, `strained` is held under pressure by an event
 * loop utilization threshold no process can stay below, so every sample it takes says overloaded.
 */

import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { parseMetrics, total } from '../support/prometheus.js';
import { customerOrder, eventually, orderBody, publishEvent, session, signInBuyer } from '../support/purchase.js';
import { payByCard } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const roomEnv = { PUBLIC_RATE_LIMIT_PER_MINUTE: '10000', WAITING_ROOM_POLLS_PER_10_SECONDS: '1000' };

let calm: TestApi;
let strained: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  calm = await startTestApi(roomEnv);
  strained = await startTestApi({
    ...roomEnv,
    LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: '0',
    LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION: '0.000001',
    LOAD_SHED_SAMPLE_INTERVAL_MS: '50',
    LOAD_SHED_RETRY_AFTER_SECONDS: '3',
  });
  organizer = await createOrganizer(calm.orm.em.fork());
});
afterAll(async () => {
  await strained?.close();
  await calm?.close();
});

const overloaded = {
  error: {
    code: 'SERVICE_UNAVAILABLE',
    message: expect.any(String),
    retryable: true,
    details: { reason: 'overloaded' },
  },
};

async function joinAndWaitForAdmission(eventDateId: string, buyerSession: string): Promise<string> {
  const joined = await strained.request({
    method: 'POST',
    url: `/api/public/queue/${eventDateId}`,
    headers: session(buyerSession),
  });
  expect(joined.statusCode).toBe(200);
  const token: string = joined.json().data.token;
  await eventually(
    async () =>
      (await strained.request({ method: 'GET', url: `/api/public/queue/${eventDateId}?token=${token}` })).json().data,
    (turn) => turn.status === 'admitted',
    15_000,
  );
  return token;
}

const shedTotal = async (api: TestApi): Promise<number> =>
  total(
    parseMetrics((await api.request({ method: 'GET', url: '/metrics' })).body),
    'ticketing_http_requests_shed_total',
  );

describe('under overload, the waiting room decides who is served', () => {
  test('an admitted buyer reserves and pays; no turn, a forged turn or an unqueued date is shed', async () => {
    const queued = await publishEvent(calm, organizer, {
      capacity: 5,
      maxPerOrder: 1,
      date: { virtualQueue: true, queueMinActive: 5, queueMaxActive: 50 },
    });
    const unqueued = await publishEvent(calm, organizer, { capacity: 5, maxPerOrder: 1 });
    const admittedBuyer = await signInBuyer(calm, `room-overload-${Date.now()}@buyers.test`);
    const otherBuyer = await signInBuyer(calm, `room-overload-other-${Date.now()}@buyers.test`);
    await eventually(
      async () => strained.app.isUnderPressure(),
      (under) => under,
      10_000,
    );

    // The strained process sheds an ordinary request at the door.
    const catalog = await strained.request({ method: 'GET', url: '/api/public/events' });
    expect(catalog.statusCode).toBe(503);
    expect(catalog.headers['retry-after']).toBe('3');

    // Without a turn, and with a turn nobody issued: 503 overloaded, nothing held.
    const reserve = (buyer: string, event: typeof queued, queueToken?: string) =>
      strained.request({
        method: 'POST',
        url: '/api/v1/customer/orders',
        headers: { ...session(buyer), ...(queueToken ? { 'x-queue-token': queueToken } : {}) },
        payload: orderBody(event),
      });
    const shedBefore = await shedTotal(strained);
    const withoutTurn = await reserve(otherBuyer, queued);
    expect(withoutTurn.statusCode).toBe(503);
    expect(withoutTurn.json()).toEqual(overloaded);
    const forged = await reserve(otherBuyer, queued, 'forged-turn-token');
    expect(forged.statusCode).toBe(503);
    expect(forged.headers['retry-after']).toBe('3');
    expect(forged.json()).toEqual(overloaded);
    // A token on a date without a room earns nothing either.
    const unqueuedOrder = await reserve(otherBuyer, unqueued, 'forged-turn-token');
    expect(unqueuedOrder.statusCode).toBe(503);
    expect(unqueuedOrder.json()).toEqual(overloaded);
    // Each refusal is counted as shed, the measure the room's admission slows on.
    expect((await shedTotal(strained)) - shedBefore).toBeGreaterThanOrEqual(3);
    for (const event of [queued, unqueued]) {
      const unfinished = await calm.request({
        method: 'GET',
        url: `/api/v1/customer/orders?eventDateId=${event.eventDateId}`,
        headers: session(otherBuyer),
      });
      expect(unfinished.json()).toEqual({ data: null });
    }

    // The admitted buyer reserves, opens the payment and pays by card, all on the strained process.
    const token = await joinAndWaitForAdmission(queued.eventDateId, admittedBuyer);
    expect(strained.app.isUnderPressure()).toBe(true);
    const reserved = await reserve(admittedBuyer, queued, token);
    expect(reserved.statusCode).toBe(201);
    const saleId: string = reserved.json().data.saleId;
    const opened = await strained.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${saleId}/payment`,
      headers: session(admittedBuyer),
    });
    expect(opened.statusCode).toBe(200);
    // Throws unless the charge answers 200.
    const charged = await payByCard(strained, admittedBuyer, saleId);
    expect(charged.status).toBe('approved');
    const order = await eventually(
      () => customerOrder(calm, admittedBuyer, saleId),
      (sale) => sale.status === 'CONFIRMED',
      20_000,
    );
    expect(order.status).toBe('CONFIRMED');
    expect(strained.app.isUnderPressure()).toBe(true);
  });
});
