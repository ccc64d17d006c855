/**
 * A refund recorded `refund_refused` raises `ticketing_refunds_refused_total` and logs the alert line operators'
 * rules match (`refund refused by the gateway`, level error) once: a step run again after a lost workflow task finds
 * the row already refused and neither counts nor alerts again. Both recorders: the checkout's (a payment it was giving
 * back) and the organizer's refund workflow's (the sale stays CONFIRMED, its tickets valid again).
 */
import type { Logger, LogLevel, LogMetadata } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCheckoutActivities } from '../../activities/checkout.js';
import type { ActivityDeps } from '../../activities/deps.js';
import { recordPaymentAttempt } from '../../activities/payment-attempts.js';
import { createSalesOpsActivities } from '../../activities/sales-ops.js';
import { REFUND_REFUSED_ALERT, workerRegistry } from '../../observability/metrics.js';
import { createProviders } from '../../worker/providers.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { parseMetrics, total } from '../support/prometheus.js';
import { publishEvent, session } from '../support/purchase.js';
import { payByCard, reserve, ticketsOf } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
let deps: ActivityDeps;
let providers: ReturnType<typeof createProviders>;

beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  providers = createProviders(api.env);
  deps = { env: api.env, orm: api.orm, redis: api.services.redis, providers, temporal: api.services.temporal };
});

afterAll(async () => {
  providers?.close();
  await api?.close();
});

/** Runs an activity as the worker would, with a logger that keeps what it is given. */
async function run<A, R>(activity: (input: A) => Promise<R>, input: A) {
  const lines: Array<{ level: LogLevel; message: string; meta?: LogMetadata }> = [];
  const keep =
    (level: LogLevel) =>
    (message: string, meta?: LogMetadata): void => {
      lines.push({ level, message, ...(meta ? { meta } : {}) });
    };
  const logger: Logger = {
    log: (level, message, meta) => keep(level)(message, meta),
    trace: keep('TRACE'),
    debug: keep('DEBUG'),
    info: keep('INFO'),
    warn: keep('WARN'),
    error: keep('ERROR'),
  };
  const result = await new MockActivityEnvironment({}, { logger }).run(activity, input);
  return { result, alerts: lines.filter((line) => line.level === 'ERROR' && line.message === REFUND_REFUSED_ALERT) };
}

const refused = async (process: string) =>
  total(parseMetrics(await workerRegistry.metrics()), 'ticketing_refunds_refused_total', {
    process,
    gateway: 'GATEWAY_A',
  });

/** A CONFIRMED card sale, paid through gateway A. */
async function paidSale(label: string): Promise<{ saleId: string; paymentId: string }> {
  const event = await publishEvent(api, organizer, { capacity: 5 });
  const { token, order } = await reserve(api, event, label);
  await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${order.saleId}/payment`,
    headers: session(token),
  });
  const paid = await payByCard(api, token, order.saleId);
  expect(paid.saleStatus).toBe('CONFIRMED');
  return { saleId: order.saleId, paymentId: paid.paymentId };
}

test("the checkout's refused refund counts and alerts once, naming the sale and the operator's command", async () => {
  const { saleId, paymentId } = await paidSale('refused-alert');
  const dedupeKey = `second-charge-refund:${paymentId}-test`;
  await recordPaymentAttempt(api.orm.em.fork(), {
    saleId,
    gateway: 'GATEWAY_A',
    kind: 'REFUND',
    providerPaymentId: paymentId,
    status: 'requested',
    statusDetail: 'second_charge',
    amount: null,
    dedupeKey,
    note: null,
  });
  const activities = createCheckoutActivities(deps);
  const input = {
    saleId,
    dedupeKey,
    gateway: 'GATEWAY_A' as const,
    providerPaymentId: paymentId,
    refusals: 5,
    reason: 'insufficient balance',
  };
  const before = await refused('sale');

  const first = await run(activities.recordRefundRefused, input);
  expect(first.result).toEqual({ recorded: true });
  expect(first.alerts).toHaveLength(1);
  expect(first.alerts[0]?.meta).toMatchObject({ saleId, providerPaymentId: paymentId, refusals: 5 });
  expect(String(first.alerts[0]?.meta?.action)).toContain(`refunds-refused retry ${saleId}`);
  expect(await refused('sale')).toBe(before + 1);

  const again = await run(activities.recordRefundRefused, input);
  expect(again).toEqual({ result: { recorded: false }, alerts: [] });
  expect(await refused('sale')).toBe(before + 1);
  const [row] = await api.orm.em
    .fork()
    .execute<Array<{ status: string }>>('select status from payment_attempts where dedupe_key = ?', [dedupeKey]);
  expect(row?.status).toBe('refund_refused');
});

test("the organizer's refused refund counts and alerts once and gives the tickets back", async () => {
  const { saleId, paymentId } = await paidSale('refused-organizer');
  // What the refund workflow's first step leaves: the request recorded, the tickets stopped.
  await api.orm.em.fork().execute(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, dedupe_key, created_at)
     values (gen_random_uuid(), ?, 'GATEWAY_A', 'REFUND', ?, 'requested', ?, now())`,
    [saleId, paymentId, `refund-request:${saleId}`],
  );
  await api.orm.em.fork().execute(`update tickets set status = 'INVALID' where sale_id = ?`, [saleId]);
  const activities = createSalesOpsActivities(deps);
  const input = { saleId, message: 'insufficient balance', refusals: 5 };
  const before = await refused('sale');

  const first = await run(activities.recordOrganizerRefundRefused, input);
  expect(first.result).toEqual({ recorded: true });
  expect(first.alerts).toHaveLength(1);
  expect(await refused('sale')).toBe(before + 1);
  expect((await ticketsOf(api, organizer, saleId)).map((ticket) => ticket.status)).toEqual(['VALID']);

  const again = await run(activities.recordOrganizerRefundRefused, input);
  expect(again).toEqual({ result: { recorded: false }, alerts: [] });
  expect(await refused('sale')).toBe(before + 1);
  const listed = await api.request({
    method: 'GET',
    url: '/api/v1/reports/refunds-refused',
    headers: bearer(organizer.key),
  });
  expect(listed.json().data).toContainEqual(expect.objectContaining({ saleId, providerPaymentId: paymentId }));
});
