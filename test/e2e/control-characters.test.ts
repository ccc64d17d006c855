/**
 * Path 14 of "Money is never stranded": input the database would refuse on every retry is refused at the door with
 * 422 at once, not after a minute of retries with a 503; and if some ever slips past validation, the checkout ends
 * the reservation at once with 422 as well.
 */
import { reserveThroughCheckout } from '../../api/http/checkout.js';
import type { AppError } from '../../domain/errors.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  orderBody,
  type PublishedEvent,
  publishEvent,
  reserveOrder,
  signInBuyer,
  storefrontReserveRequest,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const email = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}@buyers.test`;

const salesOf = (event: PublishedEvent) =>
  api.orm.em.fork().execute<{ id: string }[]>('select id from sales where event_date_id = ?', [event.eventDateId]);

/** The contract's error body (part 7.1), naming the field. */
function expectRefusedField(response: { statusCode: number; json: () => unknown }, field: string): void {
  expect(response.statusCode).toBe(422);
  expect(response.json()).toEqual({
    error: {
      code: 'VALIDATION_FAILED',
      message: expect.stringContaining(field),
      retryable: false,
      details: { fields: expect.arrayContaining([expect.objectContaining({ field })]) },
    },
  });
}

describe('control characters in requests are refused with 422 (path 14)', () => {
  test('a NUL byte in buyer.name on POST /customer/orders: 422 within a second, and no sale', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, email('nul'));
    const body = orderBody(event, 1);
    const started = Date.now();
    const response = await reserveOrder(api, token, { ...body, buyer: { ...body.buyer, name: 'Ana\u0000Gómez' } });
    expect(Date.now() - started).toBeLessThan(1_000);
    expectRefusedField(response, 'body.buyer.name');
    expect(await salesOf(event)).toHaveLength(0);
  });

  test('a NUL byte in buyerName on POST /api/public/orders: 422 within a second, and no sale', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const started = Date.now();
    const response = await api.request({
      method: 'POST',
      url: '/api/public/orders',
      payload: {
        buyerEmail: email('anon'),
        buyerName: 'Nul\u0000Buyer',
        items: [{ ticketTypeId: event.ticketTypeId, quantity: 1 }],
      },
    });
    expect(Date.now() - started).toBeLessThan(1_000);
    expectRefusedField(response, 'body.buyerName');
    expect(await salesOf(event)).toHaveLength(0);
  });

  test('a NUL byte in a query parameter of GET /api/v1/sales: 422 naming the parameter', async () => {
    const response = await api.request({
      method: 'GET',
      url: '/api/v1/sales?buyer=ana%00gomez',
      headers: bearer(organizer.key),
    });
    expectRefusedField(response, 'querystring.buyer');
  });

  test('names, emails and ids are single-line: a line feed in buyer.name or in a seat label is refused', async () => {
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, email('newline'));
    const body = orderBody(event, 1);
    const name = await reserveOrder(api, token, { ...body, buyer: { ...body.buyer, name: 'Ana\nGómez' } });
    expectRefusedField(name, 'body.buyer.name');
    const seat = await reserveOrder(api, token, {
      ...body,
      items: [{ ticketTypeId: event.ticketTypeId, quantity: 1, seats: ['A-1\u0007'] }],
      holdToken: 'token',
    });
    expectRefusedField(seat, 'body.items.0.seats.0');
    expect(await salesOf(event)).toHaveLength(0);
  });

  test('free text keeps its line breaks and tabs, but not other controls', async () => {
    const created = await api.request({
      method: 'POST',
      url: '/api/v1/events',
      headers: bearer(organizer.key),
      payload: { name: 'Line breaks', description: 'First line\r\nSecond line\twith a tab' },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().data.description).toBe('First line\r\nSecond line\twith a tab');
    const bell = await api.request({
      method: 'POST',
      url: '/api/v1/events',
      headers: bearer(organizer.key),
      payload: { name: 'Bell', description: 'ding\u0007' },
    });
    expectRefusedField(bell, 'body.description');
  });

  test.each([
    ['DEL', 'Ana\u007fGómez'],
    ['a C1 control (NEL)', 'Ana\u0085Gómez'],
    ['a C1 control (CSI)', 'Ana\u009b31mGómez'],
    ['a bidi override (RLO)', 'Ana \u202eexe.txt'],
    ['a bidi isolate (RLI)', 'Ana \u2067Gómez\u2069'],
    ['a zero-width space', 'Ana\u200bGómez'],
    ['a zero-width joiner', 'Ana\u200dGómez'],
    ['a word joiner', 'Ana\u2060Gómez'],
    ['a byte-order mark', '\ufeffAna Gómez'],
  ])('a name carrying %s is refused with 422 naming the field', async (_label, name) => {
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/events',
      headers: bearer(organizer.key),
      payload: { name },
    });
    expectRefusedField(response, 'body.name');
  });

  test('prose keeps zero-width joiners (emoji, Persian) but not bidi overrides or C1 controls', async () => {
    const family = 'Para toda la familia 👨\u200d👩\u200d👧 · می\u200cخواهم';
    const created = await api.request({
      method: 'POST',
      url: '/api/v1/events',
      headers: bearer(organizer.key),
      payload: { name: 'Familia', description: family },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().data.description).toBe(family);
    for (const description of ['reversed \u202etxt.exe', 'control \u0090 here']) {
      const refused = await api.request({
        method: 'POST',
        url: '/api/v1/events',
        headers: bearer(organizer.key),
        payload: { name: 'Prose', description },
      });
      expectRefusedField(refused, 'body.description');
    }
  });

  test('a reservation whose data the database refuses ends at once with 422, not after the reserve wait', async () => {
    // Past the HTTP validation (as a future route or a missed field would be): the checkout's reserve step is the
    // one that meets PostgreSQL's refusal and must not retry it.
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const started = Date.now();
    const outcome = await reserveThroughCheckout(
      api.services,
      storefrontReserveRequest(event, email('unstorable'), 'Nul\u0000Name'),
    ).then(
      () => null,
      (error: AppError) => error,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(outcome?.toBody()).toEqual({
      error: {
        code: 'VALIDATION_FAILED',
        message: expect.any(String),
        retryable: false,
        details: { reason: 'unstorable_input' },
      },
    });
    expect(outcome?.message).not.toMatch(/SQLSTATE|invalid message format|Temporal|activity/i);
    expect(await salesOf(event)).toHaveLength(0);
  });
});
