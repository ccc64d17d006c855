/**
 * The virtual queue of a high-demand date, shared by two API processes through Redis: turns are admitted first
 * come, first served, at queueAdmissionsPerMinute; orders without an admitted turn are refused before any hold.
 */
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, orderBody, publishEvent, reserveOrder, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let one: TestApi;
let two: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  one = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  two = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(one.orm.em.fork());
});
afterAll(async () => {
  await two.close();
  await one.close();
});

interface Turn {
  token: string;
  position: number;
  admitted: boolean;
  admittedAt: string;
}

const join = async (api: TestApi, eventDateId: string): Promise<Turn> => {
  const response = await api.request({ method: 'POST', url: `/api/public/queue/${eventDateId}` });
  expect(response.statusCode).toBe(200);
  return response.json().data;
};
const standing = async (api: TestApi, eventDateId: string, token: string): Promise<Turn> =>
  (await api.request({ method: 'GET', url: `/api/public/queue/${eventDateId}?token=${token}` })).json().data;

const publicOrder = (ticketTypeId: string) => ({
  buyerEmail: `queue-${Math.random().toString(36).slice(2, 9)}@buyers.test`,
  buyerName: 'Fila Compradora',
  items: [{ ticketTypeId, quantity: 1 }],
});

describe('virtual queue', () => {
  test('turns are admitted in join order at the configured rate across two API processes', async () => {
    // 30 per minute: one turn every 2 seconds.
    const event = await publishEvent(one, organizer, { date: { virtualQueue: true, queueAdmissionsPerMinute: 30 } });
    const turns: Turn[] = [];
    for (const api of [one, two, one, two]) turns.push(await join(api, event.eventDateId));
    expect(turns[0]).toMatchObject({ admitted: true, position: 0 });
    expect(turns.slice(1).map((turn) => turn.admitted)).toEqual([false, false, false]);
    expect(turns.slice(1).map((turn) => turn.position)).toEqual([1, 2, 3]);
    const admittedAt = turns.map((turn) => Date.parse(turn.admittedAt));
    for (let index = 1; index < admittedAt.length; index += 1) {
      expect(admittedAt[index]! - admittedAt[index - 1]!).toBeGreaterThanOrEqual(2_000);
    }
    // Either process answers the same standing for a turn it did not issue.
    expect((await standing(two, event.eventDateId, turns[2]!.token)).position).toBeLessThanOrEqual(2);

    // Without a turn (or with one not yet admitted): 409 QUEUE_REQUIRED with the absolute waiting-room URL.
    const without = await one.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: publicOrder(event.ticketTypeId),
    });
    expect(without.statusCode).toBe(409);
    const error = without.json().error;
    expect(error.code).toBe('QUEUE_REQUIRED');
    expect(error.details.waitingRoomUrl).toBe(
      `${one.env.PUBLIC_ORIGIN.replace(/\/$/, '')}/api/public/queue/${event.eventDateId}`,
    );
    const early = await two.request({
      method: 'POST',
      url: '/api/public/orders',
      headers: { 'x-queue-token': turns[3]!.token },
      payload: publicOrder(event.ticketTypeId),
    });
    expect(early.json().error?.code).toBe('QUEUE_REQUIRED');

    // The waiting-room URL is real.
    const room = await one.request({
      method: 'GET',
      url: new URL(error.details.waitingRoomUrl).pathname,
      query: { token: turns[1]!.token },
    });
    expect(room.statusCode).toBe(200);

    const admitted = await two.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: { ...publicOrder(event.ticketTypeId), queueToken: turns[0]!.token },
    });
    expect(admitted.statusCode).toBe(200);

    // The second turn is admitted about two seconds after the first, by whichever process is asked.
    const second = await eventually(
      () => standing(one, event.eventDateId, turns[1]!.token),
      (turn) => turn.admitted,
      10_000,
    );
    expect(second.position).toBe(0);
    // The last turn waits behind the third one.
    const last = await standing(two, event.eventDateId, turns[3]!.token);
    if (!last.admitted) expect(last.position).toBeGreaterThanOrEqual(1);
  });

  test('customer orders without a turn are refused with reason queue_turn_required', async () => {
    const event = await publishEvent(one, organizer, { date: { virtualQueue: true, queueAdmissionsPerMinute: 600 } });
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
    expect(admitted.admitted).toBe(true);
    const accepted = await one.request({
      method: 'POST',
      url: '/api/v1/customer/orders',
      headers: { 'x-customer-session': token, 'x-queue-token': turn.token },
      payload: orderBody(event),
    });
    expect(accepted.statusCode).toBe(201);
  });

  test('an unknown date or a date without a waiting room has no queue', async () => {
    const event = await publishEvent(one, organizer);
    const response = await one.request({ method: 'POST', url: `/api/public/queue/${event.eventDateId}` });
    expect(response.statusCode).toBe(404);
  });
});
