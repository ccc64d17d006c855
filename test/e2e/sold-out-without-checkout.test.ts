import { reserveThroughCheckout } from '../../api/http/checkout.js';
import type { AppError } from '../../domain/errors.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { privateTaskQueue } from '../support/private-stack.js';
import {
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  signInBuyer,
  storefrontReserveRequest,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

/**
 * A sold-out storm is answered without a checkout per refused buyer (api/http/checkout.ts), and nothing else changes:
 * the refusal 4.2 ranks first is still the one answered, a lapsed hold is still reclaimed, and a keyed request still
 * goes through its checkout.
 */
let api: TestApi;
/** Starts its checkouts on a task queue no worker polls: whatever it answers, it answered without a checkout. */
let noWorker: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  noWorker = await startTestApi({
    PUBLIC_RATE_LIMIT_PER_MINUTE: '10000',
    TEMPORAL_TASK_QUEUE: privateTaskQueue('unpolled'),
  });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await noWorker?.close();
  await api?.close();
});

const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;

/** The API's own count of sold_out refusals (module-level, so either app of this process serves the same number). */
async function soldOutAnsweredByApi(): Promise<number> {
  const response = await api.app.inject({ method: 'GET', url: '/metrics' });
  const line = response.body
    .split('\n')
    .find((each) => each.startsWith('ticketing_reservations_total{outcome="sold_out",code="ORDER_REJECTED"}'));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** An event whose only type has `capacity` units, all reserved (unpaid) by one buyer; returns that buyer's token. */
async function soldOutEvent(capacity: number, options: Parameters<typeof publishEvent>[2] = {}) {
  const event = await publishEvent(api, organizer, { capacity, maxPerOrder: capacity, ...options });
  const holder = await signInBuyer(api, email('holder'));
  const held = await reserveOrder(api, holder, orderBody(event, capacity));
  expect(held.statusCode).toBe(201);
  return { event, holder, held: held.json().data as { saleId: string; reference: string } };
}

async function salesOf(event: PublishedEvent): Promise<number> {
  const rows = await api.orm.em
    .fork()
    .execute<{ n: string }[]>('select count(*) as n from sales where event_date_id = ?', [event.eventDateId]);
  return Number(rows[0]?.n ?? 0);
}

describe('a sold-out type is refused without a checkout (contract 4.2, rule order kept)', () => {
  test('the refusal is sold_out, no checkout runs, and the rolled-back try keeps no sale, stock or code use', async () => {
    const { event } = await soldOutEvent(2);
    const code = `SOLD${Math.random().toString(36).slice(2, 7)}`.toUpperCase();
    const discount = await api.request({
      method: 'POST',
      url: '/api/v1/discounts',
      headers: bearer(organizer.key),
      payload: { code, type: 'PERCENT', value: 10, eventId: event.eventId, maxUses: 3 },
    });
    expect(discount.statusCode).toBe(201);
    const before = await soldOutAnsweredByApi();

    const buyer = await signInBuyer(api, email('late'));
    const refused = await reserveOrder(noWorker, buyer, orderBody(event, 1, { discountCode: code }));
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({
      code: 'ORDER_REJECTED',
      retryable: false,
      details: { reason: 'sold_out', ticketTypeId: event.ticketTypeId },
    });
    expect(await soldOutAnsweredByApi()).toBe(before + 1);

    // The try priced the code and wrote a sale before the stock step refused it: all of it was rolled back.
    expect(await salesOf(event)).toBe(1);
    const codeNow = await api.orm.em
      .fork()
      .execute<{ uses: number }[]>('select uses from discounts where id = ?', [discount.json().data.id]);
    expect(codeNow[0]?.uses).toBe(0);
    const type = await api.request({
      method: 'GET',
      url: `/api/v1/ticket-types/${event.ticketTypeId}`,
      headers: bearer(organizer.key),
    });
    expect(type.json().data).toMatchObject({ available: 0, reserved: 2 });
  });

  test('a refusal 4.2 ranks before sold_out is still the one answered, by the checkout', async () => {
    const { event, holder, held } = await soldOutEvent(2);
    const before = await soldOutAnsweredByApi();

    // Rule 5: the buyer's own unpaid purchase holds the last units.
    const again = await reserveOrder(api, holder, orderBody(event, 1));
    expect(again.statusCode).toBe(409);
    expect(again.json().error.details).toEqual({
      reason: 'pending_sale_in_progress',
      pendingSaleId: held.saleId,
      pendingReference: held.reference,
    });
    const buyer = await signInBuyer(api, email('rules'));
    const tooMany = await reserveOrder(api, buyer, orderBody(event, 3));
    expect(tooMany.json().error).toMatchObject({ code: 'ORDER_REJECTED', details: { reason: 'max_per_order' } });

    await api.orm.em
      .fork()
      .execute("update event_dates set sales_end_at = now() - interval '1 minute' where id = ?", [event.eventDateId]);
    const closed = await reserveOrder(api, buyer, orderBody(event, 1));
    expect(closed.json().error).toMatchObject({ code: 'SALE_CLOSED', details: { reason: 'sales_window_closed' } });

    expect(await soldOutAnsweredByApi()).toBe(before);
  });

  test('data the database refuses is refused as such on a sold-out type, not as sold_out', async () => {
    // Past the HTTP validation (as in control-characters.test.ts): the sale row itself is refused before the stock.
    const { event } = await soldOutEvent(1);
    const before = await soldOutAnsweredByApi();
    const outcome = await reserveThroughCheckout(
      api.services,
      storefrontReserveRequest(event, email('unstorable'), 'Nul\u0000Name'),
    ).then(
      () => null,
      (error: AppError) => error,
    );
    expect(outcome?.toBody().error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { reason: 'unstorable_input' },
    });
    expect(await soldOutAnsweredByApi()).toBe(before);
  });

  test('units of a hold whose deadline has passed are sold again, through the checkout', async () => {
    const { event, held } = await soldOutEvent(1);
    // The deadline passed; the checkout's timer has not fired yet, as in the first second after a deadline.
    await api.orm.em
      .fork()
      .execute("update sales set expires_at = now() - interval '1 second' where id = ?", [held.saleId]);
    const before = await soldOutAnsweredByApi();
    const buyer = await signInBuyer(api, email('after-deadline'));
    const bought = await reserveOrder(api, buyer, orderBody(event, 1));
    expect(bought.statusCode).toBe(201);
    expect(await soldOutAnsweredByApi()).toBe(before);
  });

  test('a request with an Idempotency-Key goes through its checkout, which answers sold_out the same way', async () => {
    const { event } = await soldOutEvent(1);
    const before = await soldOutAnsweredByApi();
    const buyer = await signInBuyer(api, email('keyed'));
    const keyed = await api.request({
      method: 'POST',
      url: '/api/v1/customer/orders',
      headers: { 'x-customer-session': buyer, 'idempotency-key': `sold-out-${Math.random().toString(36).slice(2)}` },
      payload: orderBody(event, 1),
    });
    expect(keyed.statusCode).toBe(409);
    expect(keyed.json().error).toMatchObject({ code: 'ORDER_REJECTED', details: { reason: 'sold_out' } });
    expect(await soldOutAnsweredByApi()).toBe(before);
  });
});
