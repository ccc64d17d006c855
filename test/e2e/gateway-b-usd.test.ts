/**
 * Money outside COP through gateway B: the button charges the gateway's unit (cents for USD), and the amount the
 * gateway reports back is compared with the sale after the same conversion, so a USD payment confirms its sale and
 * a payment of any other amount still never does.
 */
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { customerOrder, eventually, publishEvent } from '../support/purchase.js';
import { control, gatewayBSignature, openGatewayB, reserve } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let dollars: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  dollars = await createOrganizer(api.orm.em.fork());
  // Currency, plan and allowlist are operator settings, not organizer API fields.
  await api.orm.em
    .fork()
    .execute(`update workspaces set currency = 'USD', plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [
      dollars.workspaceId,
    ]);
});
afterAll(async () => {
  await api.close();
});

describe('a USD event paid through gateway B', () => {
  test('the button charges the total in cents under its signature, and the approved payment confirms the sale', async () => {
    // US$ 42.37: not a whole number of dollars, so rounding to dollars anywhere would show.
    const event = await publishEvent(api, dollars, { price: 4_237 });
    const { token, order } = await reserve(api, event, 'usd');
    const config = await openGatewayB(api, token, order.saleId);
    expect(config).toMatchObject({ orderId: order.reference, currency: 'USD', amount: order.total });
    expect(order.total % 100).not.toBe(0);
    expect(config.integritySignature).toBe(gatewayBSignature(api, order.reference, order.total, 'USD'));

    const paid = await control(api, '/gateway-b/pay', { ...config, outcome: 'approved' });
    expect(paid.status).toBe(201);
    const confirmed = await eventually(
      () => customerOrder(api, token, order.saleId),
      (o) => o.status === 'CONFIRMED' || o.paymentStatus === 'FT_MISMATCH_REFUNDED',
    );
    expect(confirmed).toMatchObject({
      status: 'CONFIRMED',
      paymentProvider: 'GATEWAY_B',
      paymentStatus: 'APPROVED',
      currency: 'USD',
      total: order.total,
    });
  });

  test('a tampered amount is refused: by the signature at the gateway, and by the amount check if charged anyway', async () => {
    const event = await publishEvent(api, dollars, { price: 4_237 });
    const { token, order } = await reserve(api, event, 'usd-tampered');
    const config = await openGatewayB(api, token, order.saleId);

    // A dollar less under the signature of the real amount: the gateway refuses to charge it.
    const unsigned = await control(api, '/gateway-b/pay', { ...config, amount: config.amount - 100 });
    expect(unsigned.status).toBe(422);
    expect(((await unsigned.json()) as { error: { code: string } }).error.code).toBe('INTEGRITY_SIGNATURE_MISMATCH');

    // Charged anyway (a button signed for another amount): the money never buys the sale and goes back.
    const other = order.total - 100;
    const charged = await control(api, '/gateway-b/pay', {
      ...config,
      amount: other,
      integritySignature: gatewayBSignature(api, order.reference, other, 'USD'),
      outcome: 'approved',
    });
    expect(charged.status).toBe(201);
    const refunded = await eventually(
      () => customerOrder(api, token, order.saleId),
      (o) => o.paymentStatus === 'FT_MISMATCH_REFUNDED' || o.status !== 'PENDING',
    );
    expect(refunded).toMatchObject({ status: 'PENDING', paymentStatus: 'FT_MISMATCH_REFUNDED' });
  });
});
