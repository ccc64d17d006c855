/**
 * Organizer webhook delivery through the real stack: the outbox row written with the sale, the dispatcher workflow,
 * one delivery workflow per endpoint and event, and a real HTTP receiver in this test that verifies signatures.
 *
 * The receiver listens on 127.0.0.1, which the URL rules refuse. Its endpoints are registered through a second
 * in-process API running with WEBHOOK_ALLOW_PRIVATE_TARGETS=true, which records that decision on the endpoint
 * (`allow_private_targets`, never settable through the API); the shared worker honours it per endpoint, so every
 * other endpoint keeps the private-address rule at delivery.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Providers } from '../../activities/ports.js';
import { createWebhookActivities } from '../../activities/webhooks.js';
import { webhookTaskQueue } from '../../config/env.js';
import { verifyWebhookSignature } from '../../domain/webhook-signature.js';
import type { HostResolver } from '../../domain/webhook-targets.js';
import { WEBHOOK_DISPATCHER_WORKFLOW_ID, webhookDeliveryWorkflowId } from '../../workflows/definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, publishEvent } from '../support/purchase.js';
import { complimentary, payByCard, reserve, sleep } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
}

let api: TestApi;
let onPrem: TestApi;
let receiver: Server;
let base: string;
const received: Received[] = [];
const failOnce = new Set<string>();
/** Requests to /gate/… are held open until the test opens the gate: a receiver as slow as the test needs. */
const gate = { open: false, held: new Set<ServerResponse>(), maxHeld: 0 };
function openGate(): void {
  gate.open = true;
  for (const response of gate.held) response.writeHead(200).end('ok');
  gate.held.clear();
}

beforeAll(async () => {
  api = await startTestApi();
  onPrem = await startTestApi({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      received.push({ path, headers: request.headers, rawBody: Buffer.concat(chunks).toString('utf8') });
      if (path.startsWith('/fail-once')) {
        const eventId = String(request.headers['x-ticketing-event-id']);
        if (!failOnce.has(eventId)) {
          failOnce.add(eventId);
          response.writeHead(500).end('try again');
          return;
        }
      }
      if (path.startsWith('/gate') && !gate.open) {
        gate.held.add(response);
        gate.maxHeld = Math.max(gate.maxHeld, gate.held.size);
        // The delivery gave up waiting (its timeout) and closed the connection: no longer held.
        response.once('close', () => gate.held.delete(response));
        return;
      }
      if (path.startsWith('/always-500')) return void response.writeHead(500).end('down');
      if (path.startsWith('/redirect')) {
        return void response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      }
      if (path.startsWith('/slow')) {
        return void setTimeout(() => response.writeHead(200).end('late'), 6_500).unref();
      }
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  openGate();
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
  await onPrem.close();
  await api.close();
});

async function register(organizer: Organizer, path: string, events = ['sale.confirmed', 'sale.refunded']) {
  const response = await onPrem.request({
    method: 'POST',
    url: '/api/v1/webhooks',
    headers: bearer(organizer.key),
    payload: { url: `${base}${path}`, events },
  });
  expect(response.statusCode).toBe(201);
  return response.json().data as { id: string; signingSecret: string };
}

async function webhookRow(organizer: Organizer, id: string) {
  const response = await api.request({
    method: 'GET',
    url: '/api/v1/webhooks?limit=100',
    headers: bearer(organizer.key),
  });
  return response.json().data.find((hook: { id: string }) => hook.id === id) as {
    lastDeliveryAt: string | null;
    lastDeliveryStatus: string | null;
    failureCount: number;
    pausedAt: string | null;
    active: boolean;
  };
}

const quiet: Logger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

const at = (path: string) => received.filter((entry) => entry.path === path);

describe('signed deliveries (contract part 6)', () => {
  test('sale.confirmed and sale.refunded reach a real receiver that verifies both signatures over the raw body', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const hook = await register(organizer, '/ok/signed');
    const event = await publishEvent(api, organizer, { capacity: 10 });

    const sale = await complimentary(api, organizer, event);
    const [delivery] = await eventually(
      async () => at('/ok/signed'),
      (list) => list.length >= 1,
    );
    const verified = verifyWebhookSignature({
      secret: hook.signingSecret,
      rawBody: delivery!.rawBody,
      signature: String(delivery!.headers['x-ticketing-signature']),
      signatureV2: String(delivery!.headers['x-ticketing-signature-v2']),
      timestamp: String(delivery!.headers['x-ticketing-timestamp']),
    });
    expect(verified).toEqual({ ok: true });
    expect(
      verifyWebhookSignature({
        secret: 'wrong',
        rawBody: delivery!.rawBody,
        signature: String(delivery!.headers['x-ticketing-signature']),
      }).ok,
    ).toBe(false);
    expect(delivery!.headers['content-type']).toBe('application/json');
    const body = JSON.parse(delivery!.rawBody);
    expect(Object.keys(body).sort()).toEqual(['data', 'event', 'sentAt']);
    expect(body).toEqual({
      event: 'sale.confirmed',
      data: { saleId: sale.id, organizationId: organizer.workspaceId, reference: sale.reference, total: 0 },
      sentAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    // The signed sentAt is the attempt's instant, the same as the timestamp header: the contract signature's window.
    expect(Math.floor(Date.parse(body.sentAt) / 1000)).toBe(Number(delivery!.headers['x-ticketing-timestamp']));
    const row = await eventually(
      () => webhookRow(organizer, hook.id),
      (h) => h.lastDeliveryStatus === '200',
    );
    expect(row.failureCount).toBe(0);
    expect(row.lastDeliveryAt).not.toBeNull();

    // A paid sale: confirmed by the gateway, then refunded by the organizer.
    const { token, order } = await reserve(api, event, 'webhook-refund');
    await payByCard(api, token, order.saleId, 'APRO');
    const refunded = await api.request({
      method: 'POST',
      url: `/api/v1/sales/${order.saleId}/refund`,
      headers: bearer(organizer.key),
      payload: { reason: 'webhook test' },
    });
    expect(refunded.statusCode).toBe(200);
    const events = await eventually(
      async () => at('/ok/signed').map((entry) => JSON.parse(entry.rawBody)),
      (list) => list.some((e) => e.event === 'sale.refunded'),
    );
    expect(events.find((e) => e.event === 'sale.confirmed' && e.data.saleId === order.saleId)).toBeDefined();
    const refundEvent = events.find((e) => e.event === 'sale.refunded');
    expect(refundEvent.data).toMatchObject({
      saleId: order.saleId,
      organizationId: organizer.workspaceId,
      reference: order.reference,
      total: order.total,
      currency: 'COP',
      reason: 'webhook test',
    });
  });

  test('an endpoint subscribed only to sale.refunded receives no sale.confirmed', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    await register(organizer, '/ok/refunds-only', ['sale.refunded']);
    const event = await publishEvent(api, organizer, { capacity: 10 });
    await complimentary(api, organizer, event);
    await sleep(3_000);
    expect(at('/ok/refunds-only')).toHaveLength(0);
  });
});

describe('retries, failures and pausing', () => {
  test('a failed attempt is retried with backoff; the same event id is delivered again and the failure count resets', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const hook = await register(organizer, '/fail-once');
    const event = await publishEvent(api, organizer, { capacity: 10 });
    await complimentary(api, organizer, event);
    const attempts = await eventually(
      async () => at('/fail-once').filter((entry) => JSON.parse(entry.rawBody).event === 'sale.confirmed'),
      (list) => list.length >= 2,
      30_000,
    );
    expect(attempts[0]!.headers['x-ticketing-event-id']).toBe(attempts[1]!.headers['x-ticketing-event-id']);
    const row = await eventually(
      () => webhookRow(organizer, hook.id),
      (h) => h.lastDeliveryStatus === '200',
    );
    expect(row.failureCount).toBe(0);
  });

  test('an endpoint failing repeatedly is paused; PATCH active: true resumes it', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const hook = await register(organizer, '/always-500');
    const event = await publishEvent(api, organizer, { capacity: 30 });
    for (let i = 0; i < api.env.WEBHOOK_PAUSE_AFTER_FAILURES; i += 1) await complimentary(api, organizer, event);
    const paused = await eventually(
      () => webhookRow(organizer, hook.id),
      (h) => h.pausedAt !== null,
      40_000,
    );
    expect(paused.failureCount).toBeGreaterThanOrEqual(api.env.WEBHOOK_PAUSE_AFTER_FAILURES);
    expect(paused.lastDeliveryStatus).toBe('500');
    // Paused: new events are not sent to it.
    const before = at('/always-500').length;
    await complimentary(api, organizer, event);
    await sleep(3_000);
    expect(at('/always-500').length).toBe(before);

    const resumed = await api.request({
      method: 'PATCH',
      url: `/api/v1/webhooks/${hook.id}`,
      headers: bearer(organizer.key),
      payload: { active: true },
    });
    expect(resumed.json().data).toMatchObject({ active: true, pausedAt: null, failureCount: 0 });
  });

  test('a redirect is not followed (it could point at an internal address): the attempt fails', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const hook = await register(organizer, '/redirect');
    const event = await publishEvent(api, organizer, { capacity: 10 });
    await complimentary(api, organizer, event);
    const row = await eventually(
      () => webhookRow(organizer, hook.id),
      (h) => h.lastDeliveryStatus !== null,
    );
    expect(row.lastDeliveryStatus).toBe('302 redirect_not_followed');
    expect(row.failureCount).toBeGreaterThanOrEqual(1);
  });

  test('a receiver slower than the 5-second limit counts as a failure (timeout)', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const hook = await register(organizer, '/slow');
    const event = await publishEvent(api, organizer, { capacity: 10 });
    await complimentary(api, organizer, event);
    const row = await eventually(
      () => webhookRow(organizer, hook.id),
      (h) => h.lastDeliveryStatus !== null,
      20_000,
    );
    expect(row.lastDeliveryStatus).toBe('timeout');
  });
});

describe('deliveries run apart from checkouts (their own task queue and worker slots)', () => {
  const outboxEventOf = async (saleId: string) => {
    const rows = await api.orm.em
      .fork()
      .execute<{ id: string }[]>(
        `select id from outbox_events where payload->>'saleId' = ? and type = 'sale.confirmed'`,
        [saleId],
      );
    return rows[0]!.id;
  };

  test("a delivery execution and the dispatcher run on the webhooks task queue, not the checkouts' queue", async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const hook = await register(organizer, '/ok/queue', ['sale.confirmed']);
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const sale = await complimentary(api, organizer, event);
    await eventually(
      async () => at('/ok/queue'),
      (list) => list.length >= 1,
    );
    const expected = `${api.env.TEMPORAL_TASK_QUEUE}-webhooks`;
    expect(webhookTaskQueue(api.env)).toBe(expected);
    const delivery = await api.services.temporal.workflow
      .getHandle(webhookDeliveryWorkflowId(hook.id, await outboxEventOf(sale.id)))
      .describe();
    expect(delivery.taskQueue).toBe(expected);
    const dispatcher = await api.services.temporal.workflow.getHandle(WEBHOOK_DISPATCHER_WORKFLOW_ID).describe();
    expect(dispatcher.status.name).toBe('RUNNING');
    expect(dispatcher.taskQueue).toBe(expected);
  });

  test("slow endpoints fill at most the webhook worker's slots and a checkout meanwhile confirms at once", async () => {
    const slots = api.env.WEBHOOK_WORKER_MAX_ACTIVITIES;
    const slow = await createOrganizer(api.orm.em.fork());
    const endpoints = slots + 5;
    for (let i = 0; i < endpoints; i += 1) await register(slow, `/gate/${i}`, ['sale.confirmed']);
    // The buyer's sale is reserved before the receivers stall; what is timed is its payment.
    const shop = await createOrganizer(api.orm.em.fork());
    const shopEvent = await publishEvent(api, shop, { capacity: 10 });
    const { token, order } = await reserve(api, shopEvent, 'webhook-starvation');

    await complimentary(api, slow, await publishEvent(api, slow, { capacity: 10 }));
    // Every slot but the dispatcher's long poll is taken by a POST the receiver does not answer.
    await eventually(
      async () => gate.held.size,
      (held) => held >= slots - 1,
      20_000,
    );
    const occupying = new Set(gate.held);
    const paid = await payByCard(api, token, order.saleId, 'APRO');
    // The POSTs that filled the slots before the payment started were all still unanswered when it was confirmed:
    // the checkout never needed one of those slots.
    const slotsStayedTaken = [...occupying].every((response) => gate.held.has(response));
    openGate();

    expect(paid.saleStatus).toBe('CONFIRMED');
    expect(occupying.size).toBeGreaterThanOrEqual(slots - 1);
    expect(slotsStayedTaken).toBe(true);
    // More endpoints than slots, yet never more POSTs in flight than the webhook worker's slots.
    expect(gate.maxHeld).toBeLessThanOrEqual(slots);
    // Every endpoint is still served once the receivers answer.
    await eventually(
      async () =>
        (await api.request({ method: 'GET', url: '/api/v1/webhooks?limit=100', headers: bearer(slow.key) })).json()
          .data as Array<{ lastDeliveryStatus: string | null }>,
      (hooks) => hooks.length === endpoints && hooks.every((hook) => hook.lastDeliveryStatus === '200'),
      60_000,
    );
  }, 120_000);
});

describe('SSRF at delivery time: the URL is checked again against the address it resolves to then', () => {
  test('a name that resolved publicly at registration and now resolves to a private address is refused (DNS rebinding)', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    api.services.resolveHost = async () => [{ address: '93.184.216.34', family: 4 }];
    const created = await api.request({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: bearer(organizer.key),
      payload: { url: 'http://rebind.example.test/hook', events: ['sale.confirmed'] },
    });
    api.services.resolveHost = undefined;
    expect(created.statusCode).toBe(201);
    const hookId = created.json().data.id;
    const event = await publishEvent(api, organizer, { capacity: 10 });
    const sale = await complimentary(api, organizer, event);
    const rows = await api.orm.em
      .fork()
      .execute<{ id: string }[]>(
        `select id from outbox_events where payload->>'saleId' = ? and type = 'sale.confirmed'`,
        [sale.id],
      );
    const eventId = rows[0]!.id;

    for (const address of ['127.0.0.1', '10.0.0.8', '::1', '169.254.169.254']) {
      const rebound: HostResolver = async () => [{ address, family: address.includes(':') ? 6 : 4 }];
      const activities = createWebhookActivities({
        env: api.env,
        orm: api.orm,
        redis: api.services.redis,
        providers: {} as Providers,
        temporal: api.services.temporal,
        resolveHost: rebound,
      });
      const result = await new MockActivityEnvironment(undefined, { logger: quiet }).run(activities.deliverWebhook, {
        webhookId: hookId,
        eventId,
        attempt: 1,
      });
      expect(result).toEqual({
        outcome: 'failed',
        status: 'blocked_address: resolves_to_private_address',
        retryable: false,
      });
    }
  });
});
