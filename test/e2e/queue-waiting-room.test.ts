/**
 * The waiting room of a high-demand date (docs/waiting-room.md), against the real stack and two API processes
 * sharing one Redis: a crowd of 30 buyers for 5 tickets is admitted in join order as far as stock and capacity
 * allow, an unused turn expires and hands its slot to the next buyer, a turn is used once, waiting buyers learn the
 * date sold out and are admitted again when a hold comes back, and orders without a turn get QUEUE_REQUIRED.
 */
import { createOrganizer, type Organizer, uniqueClientAddress } from '../support/fixtures.js';
import { parseMetrics, total } from '../support/prometheus.js';
import { eventually, orderBody, publishEvent, reserveOrder, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

/** Short turns, so expiry is seen within the test; both processes must share the window. */
const TURN_MS = 8_000;
/** `eventually` polls a turn every 250 ms, faster than a browser following pollAfterMs: its limit is lifted here. */
const apiEnv = {
  PUBLIC_RATE_LIMIT_PER_MINUTE: '10000',
  WAITING_ROOM_POLLS_PER_10_SECONDS: '1000',
  WAITING_ROOM_TURN_MS: String(TURN_MS),
};

let one: TestApi;
let two: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  one = await startTestApi(apiEnv);
  two = await startTestApi(apiEnv);
  organizer = await createOrganizer(one.orm.em.fork());
});
afterAll(async () => {
  await two.close();
  await one.close();
});

interface Turn {
  token: string;
  status: 'waiting' | 'admitted' | 'reserving' | 'used' | 'expired' | 'sold_out';
  position: number;
  admitted: boolean;
  admittedAt: string | null;
  turnExpiresAt: string | null;
  estimatedWaitSeconds: number | null;
  pollAfterMs: number;
}

const join = async (
  api: TestApi,
  eventDateId: string,
  options: { headers?: Record<string, string>; remoteAddress?: string } = {},
): Promise<Turn> => {
  const response = await api.request({
    method: 'POST',
    url: `/api/public/queue/${eventDateId}`,
    headers: options.headers ?? {},
    remoteAddress: options.remoteAddress ?? uniqueClientAddress(),
  });
  expect(response.statusCode).toBe(200);
  return response.json().data;
};
const standing = async (api: TestApi, eventDateId: string, token: string): Promise<Turn> => {
  const response = await api.request({ method: 'GET', url: `/api/public/queue/${eventDateId}?token=${token}` });
  // The body says which refusal it was (an unknown turn, or the date's room), should this ever answer otherwise.
  expect({ status: response.statusCode, body: response.statusCode === 200 ? null : response.body }).toEqual({
    status: 200,
    body: null,
  });
  return response.json().data;
};
const standings = (api: TestApi, eventDateId: string, turns: readonly Turn[]): Promise<Turn[]> =>
  Promise.all(turns.map((turn) => standing(api, eventDateId, turn.token)));

const publicOrder = (ticketTypeId: string, queueToken?: string) => ({
  buyerEmail: `queue-${Math.random().toString(36).slice(2, 9)}@buyers.test`,
  buyerName: 'Fila Compradora',
  items: [{ ticketTypeId, quantity: 1 }],
  ...(queueToken ? { queueToken } : {}),
});

describe('waiting room', () => {
  test('a crowd of 30 for 5 tickets: FIFO admission, expiry hands the slot on, used once, sold out, resumes', async () => {
    const event = await publishEvent(one, organizer, {
      capacity: 5,
      maxPerOrder: 1,
      date: { virtualQueue: true, queueMaxActive: 50 },
    });
    const dateId = event.eventDateId;

    // Buyer 0 is signed in: one live turn per buyer session, whichever process is asked.
    const buyerEmail = `queue-${Math.random().toString(36).slice(2, 9)}@buyers.test`;
    const buyerSession = await signInBuyer(one, buyerEmail);
    const turns: Turn[] = [await join(one, dateId, { headers: session(buyerSession) })];
    expect((await join(two, dateId, { headers: session(buyerSession) })).token).toBe(turns[0]!.token);
    // The other 29 buyers join anonymously, alternating processes, each from its own address.
    for (let buyer = 1; buyer < 30; buyer += 1) turns.push(await join(buyer % 2 ? two : one, dateId));
    expect(new Set(turns.map((turn) => turn.token)).size).toBe(30);
    // A browser that joins again with its live token keeps its place.
    expect((await join(one, dateId, { headers: { 'x-queue-token': turns[17]!.token } })).token).toBe(turns[17]!.token);

    // As many are admitted as there are tickets, the first five to join; the rest see honest positions.
    let now = await eventually(
      () => standings(one, dateId, turns),
      (all) => all.filter((turn) => turn.admitted).length === 5,
      10_000,
    );
    expect(now.map((turn) => turn.status)).toEqual([...Array(5).fill('admitted'), ...Array(25).fill('waiting')]);
    expect(now.slice(5).map((turn) => turn.position)).toEqual(Array.from({ length: 25 }, (_, index) => index + 1));
    for (const turn of now.slice(5)) expect(turn.estimatedWaitSeconds).toBeGreaterThan(0);
    for (const turn of now.slice(0, 5)) {
      expect(turn.estimatedWaitSeconds).toBe(0);
      expect(Date.parse(turn.turnExpiresAt!) - Date.parse(turn.admittedAt!)).toBe(TURN_MS);
    }

    // Buyers 0–3 reserve with their turns at once (before the short test turns lapse); buyer 4 never uses its turn.
    const queued = (api: TestApi) =>
      api.request({
        method: 'POST',
        url: '/api/v1/customer/orders',
        headers: { ...session(buyerSession), 'x-queue-token': turns[0]!.token },
        payload: orderBody(event),
      });
    const [firstOrder, ...anonymousOrders] = await Promise.all([
      queued(one),
      ...[1, 2, 3].map((buyer) =>
        (buyer % 2 ? two : one).request({
          method: 'POST',
          url: '/api/public/orders',
          payload: publicOrder(event.ticketTypeId, turns[buyer]!.token),
        }),
      ),
    ]);
    expect(firstOrder!.statusCode).toBe(201);
    expect(anonymousOrders.map((order) => order.statusCode)).toEqual([200, 200, 200]);
    // A turn is used once: buyer 0's turn is refused a second order.
    const again = await queued(two);
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('QUEUE_REQUIRED');
    expect((await standing(two, dateId, turns[0]!.token)).status).toBe('used');

    // Skipping the queue: 409 QUEUE_REQUIRED with the absolute waiting-room URL; a waiting turn does not pass either.
    const without = await one.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: publicOrder(event.ticketTypeId),
    });
    expect(without.statusCode).toBe(409);
    expect(without.json().error).toMatchObject({
      code: 'QUEUE_REQUIRED',
      details: {
        reason: 'queue_turn_required',
        waitingRoomUrl: `${one.env.PUBLIC_ORIGIN.replace(/\/$/, '')}/api/public/queue/${dateId}`,
      },
    });
    const waitingTurn = await two.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: publicOrder(event.ticketTypeId, turns[5]!.token),
    });
    expect(waitingTurn.json().error?.code).toBe('QUEUE_REQUIRED');

    // Buyer 4's turn lapses and its slot goes to buyer 5, the next in line; one unit is left, so only one goes in.
    now = await eventually(
      () => standings(two, dateId, turns),
      (all) => all[4]!.status === 'expired' && all[5]!.admitted,
      TURN_MS + 10_000,
    );
    expect(now.slice(6).map((turn) => turn.status)).toEqual(Array(24).fill('waiting'));
    expect(now.slice(6).map((turn) => turn.position)).toEqual(Array.from({ length: 24 }, (_, index) => index + 1));
    const lapsed = await one.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: publicOrder(event.ticketTypeId, turns[4]!.token),
    });
    expect(lapsed.json().error?.code).toBe('QUEUE_REQUIRED');

    // A waiting browser long-polls: its request is answered when the date sells out, not at its 25 s timeout.
    const longPoll = (api: TestApi, token: string, since = '') => {
      const sent = Date.now();
      return api
        .request({ method: 'GET', url: `/api/public/queue/${dateId}?token=${token}&waitMs=25000${since}` })
        .then((response) => ({ turn: response.json().data as Turn, afterMs: Date.now() - sent }));
    };
    const soldOutPoll = longPoll(two, turns[7]!.token);

    // Buyer 5 takes the last unit: every waiting buyer's next poll answers sold_out (holds last 10 minutes).
    const last = await one.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: publicOrder(event.ticketTypeId, turns[5]!.token),
    });
    expect(last.statusCode).toBe(200);
    now = await eventually(
      () => standings(one, dateId, turns.slice(6)),
      (all) => all.every((turn) => turn.status === 'sold_out'),
      10_000,
    );
    for (const turn of now) expect(turn).toMatchObject({ admitted: false, position: 0, estimatedWaitSeconds: null });
    const heard = await soldOutPoll;
    expect(heard.turn.status).toBe('sold_out');
    expect(heard.afterMs).toBeLessThan(20_000);
    // Woken by the room's sold-out signal, the held poll answers without reading the turn again: exactly what the
    // room itself answers for that turn.
    expect(heard.turn).toEqual(now.find((turn) => turn.token === turns[7]!.token));
    // A buyer whose last answer said waiting hears sold out at once, not after the 25 s its long poll may wait (a
    // browser that could not be held comes back after seconds, and must not then wait out a whole long poll).
    const lateHeard = await longPoll(two, turns[8]!.token, '&since=waiting');
    expect(lateHeard.turn.status).toBe('sold_out');
    expect(lateHeard.afterMs).toBeLessThan(10_000);
    expect((await longPoll(one, turns[9]!.token)).turn.status).toBe('sold_out');
    // A buyer already told sold out long-polls for stock to come back.
    const resumePoll = longPoll(one, turns[6]!.token, '&since=sold_out');

    // Buyer 0 lets the reservation go: the unit is back, admission resumes with the first buyer still in line.
    const released = await one.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${firstOrder.json().data.saleId}/release`,
      headers: session(buyerSession),
    });
    expect(released.statusCode).toBe(200);
    now = await eventually(
      () => standings(two, dateId, turns.slice(6)),
      (all) => all[0]!.admitted,
      10_000,
    );
    const resumed = await resumePoll;
    expect(resumed.turn.status).toBe('admitted');
    expect(resumed.afterMs).toBeLessThan(20_000);
    expect(now.slice(1).map((turn) => turn.status)).toEqual(Array(23).fill('waiting'));
    expect(now.slice(1).map((turn) => turn.position)).toEqual(Array.from({ length: 23 }, (_, index) => index + 1));

    // First come, first served: admission instants follow join order.
    const admittedAt = (await standings(one, dateId, turns.slice(0, 7))).map((turn) => Date.parse(turn.admittedAt!));
    for (let index = 1; index < admittedAt.length; index += 1) {
      expect(admittedAt[index]!).toBeGreaterThanOrEqual(admittedAt[index - 1]!);
    }

    // The room lives in Redis: a process started now answers the same standings.
    const three = await startTestApi(apiEnv);
    try {
      // Read at the same moment from the new process and an old one (buyer 6's short turn may lapse meanwhile).
      const shape = (all: Turn[]) => all.map((turn) => [turn.status, turn.position, turn.admittedAt]);
      const [fromNew, fromOld] = await Promise.all([
        standings(three, dateId, turns.slice(6, 9)),
        standings(one, dateId, turns.slice(6, 9)),
      ]);
      expect(shape(fromNew)).toEqual(shape(fromOld));
      expect(fromNew.map((turn) => turn.status)).not.toContain('sold_out');
      expect(fromNew[0]!.admittedAt).toBe(now[0]!.admittedAt);
    } finally {
      await three.close();
    }
  });

  test('a process holds only the room requests its heap allows: unheld polls are asked back later, the rest get 503', async () => {
    // A budget of 4 room requests: 3 long polls held at most.
    const small = await startTestApi({ ...apiEnv, WAITING_ROOM_REQUESTS_PER_PROCESS: '4' });
    try {
      const event = await publishEvent(small, organizer, {
        capacity: 50,
        maxPerOrder: 1,
        date: { virtualQueue: true, queueMaxActive: 1 },
      });
      const dateId = event.eventDateId;
      const turns: Turn[] = [];
      for (let buyer = 0; buyer < 5; buyer += 1) turns.push(await join(small, dateId));
      // Read one at a time: five at once would pass the budget of four.
      const oneByOne = async () => {
        const all: Turn[] = [];
        for (const turn of turns) all.push(await standing(small, dateId, turn.token));
        return all;
      };
      await eventually(
        oneByOne,
        (all) => all[0]!.admitted && all.slice(1).every((turn) => turn.status === 'waiting'),
        10_000,
      );
      const longPoll = (token: string, waitMs: number) => {
        const sent = Date.now();
        return small
          .request({ method: 'GET', url: `/api/public/queue/${dateId}?token=${token}&waitMs=${waitMs}` })
          .then((response) => ({
            status: response.statusCode,
            turn: response.json().data as Turn,
            afterMs: Date.now() - sent,
            connection: response.headers.connection,
          }));
      };
      const held = [1, 2, 3].map((buyer) => longPoll(turns[buyer]!.token, 4_000));
      await eventually(
        async () => small.app.waitingRoomWatch.held,
        (count) => count === 3,
        5_000,
      );
      // Operators see how many buyers the process holds against its budget.
      const series = parseMetrics((await small.request({ method: 'GET', url: '/metrics' })).body);
      expect(total(series, 'ticketing_waiting_room_held_polls')).toBe(3);
      expect(total(series, 'ticketing_waiting_room_held_polls_capacity')).toBe(3);
      // Three polls held: the next long poll is answered now, told to come back at about half its estimated wait
      // (±25%, between 0.8 and 60 s).
      const unheld = await longPoll(turns[4]!.token, 20_000);
      expect(unheld.status).toBe(200);
      expect(unheld.turn).toMatchObject({ status: 'waiting', position: 4 });
      expect(unheld.afterMs).toBeLessThan(3_000);
      const halfWaitMs = Math.min(60_000, Math.max(800, unheld.turn.estimatedWaitSeconds! * 500));
      expect(unheld.turn.pollAfterMs).toBeGreaterThanOrEqual(Math.max(800, Math.floor(halfWaitMs * 0.75)));
      expect(unheld.turn.pollAfterMs).toBeLessThanOrEqual(Math.min(60_000, Math.ceil(halfWaitMs * 1.25)));
      // Sent away for seconds, the buyer does not keep an idle connection on this process meanwhile.
      expect(unheld.connection).toBe('close');
      // Joins sent at once while three are held: the fourth room request is taken, those past it are refused.
      const joins = await Promise.all(
        Array.from({ length: 4 }, () =>
          small.request({
            method: 'POST',
            url: `/api/public/queue/${dateId}`,
            remoteAddress: uniqueClientAddress(),
          }),
        ),
      );
      const refused = joins.filter((response) => response.statusCode === 503);
      expect(joins.filter((response) => response.statusCode === 200).length).toBeGreaterThanOrEqual(1);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      for (const response of refused) {
        expect(response.json().error).toMatchObject({
          code: 'SERVICE_UNAVAILABLE',
          retryable: true,
          details: { reason: 'waiting_room_busy' },
        });
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(Number(response.headers['retry-after'])).toBeLessThanOrEqual(5);
        expect(response.headers.connection).toBe('close');
      }
      // The held ones waited for their wait (nothing changed for them) and were asked back at the usual cadence.
      for (const answered of await Promise.all(held)) {
        expect(answered.turn).toMatchObject({ status: 'waiting', pollAfterMs: 800 });
        expect(answered.connection).not.toBe('close');
        expect(answered.afterMs).toBeGreaterThanOrEqual(3_500);
      }
      // Once they are answered the budget is free again.
      expect((await small.request({ method: 'POST', url: `/api/public/queue/${dateId}` })).statusCode).toBe(200);
    } finally {
      await small.close();
    }
  });

  test('customer orders without a turn are refused with reason queue_turn_required', async () => {
    const event = await publishEvent(one, organizer, { date: { virtualQueue: true } });
    const token = await signInBuyer(one, `queue-${Math.random().toString(36).slice(2, 9)}@buyers.test`);
    const refused = await reserveOrder(one, token, orderBody(event));
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'QUEUE_REQUIRED', details: { reason: 'queue_turn_required' } });
    const turn = await join(two, event.eventDateId);
    const admitted = await eventually(
      () => standing(one, event.eventDateId, turn.token),
      (standingTurn) => standingTurn.admitted,
      5_000,
    );
    expect(admitted.status).toBe('admitted');
    const accepted = await one.request({
      method: 'POST',
      url: '/api/v1/customer/orders',
      headers: { ...session(token), 'x-queue-token': turn.token },
      payload: orderBody(event),
    });
    expect(accepted.statusCode).toBe(201);
  });

  test('a turn is used once even by two orders sent at the same time to two processes', async () => {
    const event = await publishEvent(one, organizer, { capacity: 10, date: { virtualQueue: true } });
    const turn = await join(one, event.eventDateId);
    await eventually(
      () => standing(two, event.eventDateId, turn.token),
      (standingTurn) => standingTurn.admitted,
      10_000,
    );
    const orders = await Promise.all(
      [one, two].map((api) =>
        api.request({
          method: 'POST',
          url: '/api/public/orders',
          payload: publicOrder(event.ticketTypeId, turn.token),
        }),
      ),
    );
    expect(orders.map((order) => order.statusCode).sort()).toEqual([200, 409]);
    expect(orders.find((order) => order.statusCode === 409)?.json().error.code).toBe('QUEUE_REQUIRED');
    expect((await standing(one, event.eventDateId, turn.token)).status).toBe('used');
  });

  test('polls are limited per turn token, not per address: a crowd behind one NAT is not refused', async () => {
    // A strict address limit (5 a minute) and a strict cadence (4 polls a turn per 10 s), so both are seen quickly.
    const strict = await startTestApi({
      PUBLIC_RATE_LIMIT_PER_MINUTE: '5',
      WAITING_ROOM_POLLS_PER_10_SECONDS: '4',
      WAITING_ROOM_TURN_MS: String(TURN_MS),
    });
    try {
      const event = await publishEvent(one, organizer, {
        capacity: 1,
        date: { virtualQueue: true, queueMaxActive: 1 },
      });
      const dateId = event.eventDateId;
      const turns: Turn[] = [];
      for (let index = 0; index < 8; index += 1) turns.push(await join(one, dateId));
      const poll = (token: string, remoteAddress: string) =>
        strict.request({ method: 'GET', url: `/api/public/queue/${dateId}?token=${token}`, remoteAddress });
      const nat = uniqueClientAddress();
      // 8 buyers behind one address, 2 polls each: 16 requests, over the address's 5, within each turn's 4.
      const crowd = [];
      for (let round = 0; round < 2; round += 1) {
        for (const turn of turns) crowd.push((await poll(turn.token, nat)).statusCode);
      }
      expect(crowd).toEqual(Array(16).fill(200));

      // One token polling faster than its cadence is refused with Retry-After; its neighbours behind the NAT are not.
      const [eager, neighbour] = turns as [Turn, Turn];
      let refused: Awaited<ReturnType<typeof poll>> | null = null;
      for (let attempt = 0; attempt < 10 && !refused; attempt += 1) {
        const response = await poll(eager.token, nat);
        if (response.statusCode === 429) refused = response;
        else expect(response.statusCode).toBe(200);
      }
      expect(refused?.json().error).toMatchObject({ code: 'RATE_LIMITED', retryable: true });
      expect(Number(refused?.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect((await poll(neighbour.token, nat)).statusCode).toBe(200);

      // Tokens that are no turn are paced by the address, as any other public request.
      const guesser = uniqueClientAddress();
      const guesses = [];
      for (let attempt = 0; attempt < 7; attempt += 1) {
        guesses.push((await poll(`made-up-${attempt}`, guesser)).statusCode);
      }
      expect(guesses[0]).toBe(404);
      expect(guesses).toContain(429);
      expect(guesses.slice(guesses.indexOf(429))).toEqual(Array(7 - guesses.indexOf(429)).fill(429));
    } finally {
      await strict.close();
    }
  });

  test('an unknown date or a date without a waiting room has no queue', async () => {
    const event = await publishEvent(one, organizer);
    const response = await one.request({ method: 'POST', url: `/api/public/queue/${event.eventDateId}` });
    expect(response.statusCode).toBe(404);
  });
});
