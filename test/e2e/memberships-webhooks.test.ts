/**
 * Membership events reach organizers through the same signed webhook delivery as sale events: the outbox row written
 * with the subscription change, the dispatcher and one delivery per endpoint, verified here by a real receiver.
 * The receiver listens on 127.0.0.1, so its endpoint is registered through an API with WEBHOOK_ALLOW_PRIVATE_TARGETS
 * (see test/integration/webhooks-delivery.test.ts).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhookSignature } from '../../domain/webhook-signature.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { confirmAtBank, eventually, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let onPrem: TestApi;
let organizer: Organizer;
let receiver: Server;
let base: string;
const received: Array<{ path: string; headers: IncomingHttpHeaders; rawBody: string }> = [];

beforeAll(async () => {
  api = await startTestApi({ MEMBERSHIP_PAYMENT_POLL_MS: '2000' });
  onPrem = await startTestApi({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  organizer = await createOrganizer(api.orm.em.fork());
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ path: request.url ?? '/', headers: request.headers, rawBody: Buffer.concat(chunks).toString() });
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
  await onPrem.close();
  await api.close();
});

test('membership.activated is delivered signed to the endpoints subscribed to it, without buyer contact data', async () => {
  const registered = await onPrem.request({
    method: 'POST',
    url: '/api/v1/webhooks',
    headers: bearer(organizer.key),
    payload: { url: `${base}/members`, events: ['membership.activated', 'membership.cancelled'] },
  });
  expect(registered.statusCode).toBe(201);
  const hook = registered.json().data as { signingSecret: string };
  const salesOnly = await onPrem.request({
    method: 'POST',
    url: '/api/v1/webhooks',
    headers: bearer(organizer.key),
    payload: { url: `${base}/sales-only`, events: ['sale.confirmed'] },
  });
  expect(salesOnly.statusCode).toBe(201);

  const plan = await api.request({
    method: 'POST',
    url: '/api/v1/membership-plans',
    headers: bearer(organizer.key),
    payload: { name: 'Webhook club', price: 12_000, period: 'YEARLY' },
  });
  const email = `hooked-${Math.random().toString(36).slice(2, 8)}@buyers.test`;
  const token = await signInBuyer(api, email);
  const signup = await api.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions',
    headers: session(token),
    payload: { planId: plan.json().data.id },
  });
  expect(signup.statusCode).toBe(201);
  const { subscriptionId, checkoutUrl } = signup.json().data;
  const view = await api.request({
    method: 'GET',
    url: `/api/v1/customer/membership?workspaceId=${organizer.workspaceId}`,
    headers: session(token),
  });
  await confirmAtBank(checkoutUrl, email);
  await fetch(`${api.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reference: view.json().data.payment.reference, outcome: 'approved' }),
  });

  const deliveries = await eventually(
    async () => received.filter((r) => r.path === '/members'),
    (list) => list.length >= 1,
    30_000,
  );
  const delivery = deliveries[0]!;
  expect(
    verifyWebhookSignature({
      secret: hook.signingSecret,
      rawBody: delivery.rawBody,
      signature: String(delivery.headers['x-ticketing-signature']),
      signatureV2: String(delivery.headers['x-ticketing-signature-v2']),
      timestamp: String(delivery.headers['x-ticketing-timestamp']),
    }),
  ).toEqual({ ok: true });
  const body = JSON.parse(delivery.rawBody);
  expect(body.event).toBe('membership.activated');
  expect(body.data).toEqual({
    subscriptionId,
    organizationId: organizer.workspaceId,
    planId: plan.json().data.id,
    status: 'ACTIVE',
    periodNumber: 1,
    currentPeriodEnd: expect.stringMatching(/Z$/),
  });
  expect(delivery.rawBody).not.toContain(email);
  expect(received.filter((r) => r.path === '/sales-only')).toEqual([]);
}, 120_000);
