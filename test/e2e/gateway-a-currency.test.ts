/**
 * Gateway A charges a card in its merchant account's currency (COP), whatever the sale's: a USD sale on its rails
 * must be refused before any money moves (409 PAYMENT_UNAVAILABLE), never charged in pesos and refunded. A gateway's
 * refusal of a valid request is a payment error of the contract, not a 422 of the request body.
 */
import { providerRefusalError } from '../../api/http/workflow-refusals.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { cardToken, publishEvent, session } from '../support/purchase.js';
import { payByCard, reserve } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let dollars: Organizer;
let pesos: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  dollars = await createOrganizer(api.orm.em.fork());
  pesos = await createOrganizer(api.orm.em.fork());
  // A USD workspace on the default plan: it pays through gateway A.
  await api.orm.em.fork().execute(`update workspaces set currency = 'USD' where id = ?`, [dollars.workspaceId]);
});
afterAll(async () => {
  await api.close();
});

async function chargesAtGatewayA(reference: string): Promise<number> {
  const response = await fetch(
    `${api.env.SANDBOX_URL}/gateway-a/v1/payments/search?external_reference=${encodeURIComponent(reference)}`,
    { headers: { authorization: `Bearer ${api.env.GATEWAY_A_ACCESS_TOKEN}` } },
  );
  const body = (await response.json()) as { results: unknown[] };
  return body.results.length;
}

describe('a USD sale on gateway A (merchant account in COP)', () => {
  test('opening the card form, charging a card and PSE are refused with 409 PAYMENT_UNAVAILABLE; nothing is charged', async () => {
    const event = await publishEvent(api, dollars, { price: 4_237 });
    const { token, order } = await reserve(api, event, 'usd-on-a');

    for (const [path, payload] of [
      ['payment', undefined],
      ['payment/card', { token: await cardToken(api, 'APRO') }],
      ['payment/pse', undefined],
    ] as const) {
      const response = await api.request({
        method: 'POST',
        url: `/api/v1/customer/orders/${order.saleId}/${path}`,
        headers: session(token),
        ...(payload ? { payload } : {}),
      });
      expect({ path, status: response.statusCode }).toEqual({ path, status: 409 });
      expect(response.json().error).toMatchObject({
        code: 'PAYMENT_UNAVAILABLE',
        details: { reason: 'currency_not_supported', currency: 'USD' },
      });
    }
    expect(await chargesAtGatewayA(order.reference)).toBe(0);
  });

  test('a COP sale on gateway A is still charged', async () => {
    const event = await publishEvent(api, pesos, { price: 20_000 });
    const { token, order } = await reserve(api, event, 'cop-on-a');
    const charged = await payByCard(api, token, order.saleId);
    expect(charged).toMatchObject({ status: 'approved', saleStatus: 'CONFIRMED' });
  });

  test('a card token the gateway refuses (already used) is the token field to redo, not a body validation failure', async () => {
    const event = await publishEvent(api, pesos, { price: 20_000 });
    const first = await reserve(api, event, 'token-first');
    const second = await reserve(api, event, 'token-second');
    const used = await cardToken(api, 'APRO');
    const paid = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${first.order.saleId}/payment/card`,
      headers: session(first.token),
      payload: { token: used },
    });
    expect(paid.statusCode).toBe(200);
    const again = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${second.order.saleId}/payment/card`,
      headers: session(second.token),
      payload: { token: used },
    });
    expect(again.statusCode).toBe(422);
    expect(again.json().error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { field: 'token', reason: 'card_token_refused', providerCode: 'gateway-a:3003' },
    });
  });
});

describe('provider refusals map to the contract payment codes', () => {
  test('a refused amount (e.g. a fraction the merchant currency cannot carry) is 409 PAYMENT_UNAVAILABLE', () => {
    const error = providerRefusalError('gateway-a:invalid_parameter', 'transaction_amount: at most two decimals');
    expect(error?.toBody().error).toMatchObject({
      code: 'PAYMENT_UNAVAILABLE',
      details: { reason: 'provider_refused', providerCode: 'gateway-a:invalid_parameter' },
    });
    expect(error?.status).toBe(409);
  });

  test('an error that is not a provider refusal is left alone', () => {
    expect(providerRefusalError('quantity', 'x')).toBeNull();
    expect(providerRefusalError(undefined, 'x')).toBeNull();
  });
});
