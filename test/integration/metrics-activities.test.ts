/**
 * The business counters the worker reads from the checkout's step results (observability/activity-metrics.ts), run
 * through the real activity interceptor in Temporal's mock activity environment: a step counts what its transaction
 * did, never a repeat, a refusal to change anything or a failure. The last tests pin the mapping to the reasons the
 * checkout workflows actually pass, so renaming one there cannot silently turn expiries into `other`.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import { activityMetricsInterceptor, closeReasonOf } from '../../observability/activity-metrics.js';
import { GIVE_BACK_REASONS, webhookFailureReason, workerRegistry } from '../../observability/metrics.js';
import type { ReservedSale } from '../../workflows/definitions.js';
import { parseMetrics, total } from '../support/prometheus.js';

const quiet: Logger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/** Runs a stand-in for activity `type` returning `result`, through the interceptor, as the worker would. */
async function step<K extends keyof Activities>(
  type: K,
  args: Parameters<Activities[K]>[0],
  result: Awaited<ReturnType<Activities[K]>> | Error,
): Promise<void> {
  const env = new MockActivityEnvironment(
    { activityType: type },
    { logger: quiet, interceptors: [activityMetricsInterceptor] },
  );
  const stub = async (_input: typeof args) => {
    if (result instanceof Error) throw result;
    return result;
  };
  await env.run(stub, args).catch((error: unknown) => {
    if (!(result instanceof Error)) throw error;
  });
}

const counter = async (name: string, labels: Record<string, string> = {}) =>
  total(parseMetrics(await workerRegistry.metrics()), name, labels);

let saleCounter = 0;
const newSaleId = () => `sale-${process.pid}-${++saleCounter}`;
const reserved = (saleId: string, status: 'PENDING' | 'CONFIRMED' = 'PENDING'): ReservedSale => ({
  ok: true,
  saleId,
  reference: 'FT-TESTTEST',
  workspaceId: 'ws',
  eventDateId: 'date',
  status,
  free: status === 'CONFIRMED',
  total: status === 'CONFIRMED' ? 0 : 10_000,
  currency: 'COP',
  expiresAtMs: status === 'CONFIRMED' ? null : Date.now() + 600_000,
});
const request = {} as Parameters<Activities['reserveSale']>[0]['request'];

describe('reservations are counted from the reserve step, once per sale', () => {
  test('a PENDING reservation counts as reserved, a free one as confirmed_at_once, a refusal by its code', async () => {
    const before = {
      reserved: await counter('ticketing_reservations_total', { outcome: 'reserved', code: 'none' }),
      atOnce: await counter('ticketing_reservations_total', { outcome: 'confirmed_at_once', code: 'none' }),
      soldOut: await counter('ticketing_reservations_total', { outcome: 'sold_out', code: 'ORDER_REJECTED' }),
      closed: await counter('ticketing_reservations_total', { outcome: 'rejected', code: 'SALE_CLOSED' }),
    };
    const pending = newSaleId();
    await step('reserveSale', { saleId: pending, request }, reserved(pending));
    const free = newSaleId();
    await step('reserveSale', { saleId: free, request }, reserved(free, 'CONFIRMED'));
    await step(
      'reserveSale',
      { saleId: newSaleId(), request },
      { ok: false, code: 'ORDER_REJECTED', reason: 'sold_out', message: 'Not enough tickets' },
    );
    await step(
      'reserveSale',
      { saleId: newSaleId(), request },
      { ok: false, code: 'SALE_CLOSED', reason: 'sales_window_closed', message: 'Closed' },
    );
    expect(await counter('ticketing_reservations_total', { outcome: 'reserved', code: 'none' })).toBe(
      before.reserved + 1,
    );
    expect(await counter('ticketing_reservations_total', { outcome: 'confirmed_at_once', code: 'none' })).toBe(
      before.atOnce + 1,
    );
    expect(await counter('ticketing_reservations_total', { outcome: 'sold_out', code: 'ORDER_REJECTED' })).toBe(
      before.soldOut + 1,
    );
    expect(await counter('ticketing_reservations_total', { outcome: 'rejected', code: 'SALE_CLOSED' })).toBe(
      before.closed + 1,
    );
  });

  test('a reserve step run again for the same sale (an evicted local step) is not counted twice', async () => {
    const before = await counter('ticketing_reservations_total');
    const saleId = newSaleId();
    await step('reserveSale', { saleId, request }, reserved(saleId));
    await step('reserveSale', { saleId, request }, reserved(saleId));
    expect(await counter('ticketing_reservations_total')).toBe(before + 1);
  });

  test('a reserve step that fails counts nothing', async () => {
    const before = await counter('ticketing_reservations_total');
    await step('reserveSale', { saleId: newSaleId(), request }, new Error('database restarting'));
    expect(await counter('ticketing_reservations_total')).toBe(before);
  });
});

describe('unpaid closes, late payments and payments given back', () => {
  test('an expiry counts as closed unpaid with reason expired; a close that changed nothing counts nothing', async () => {
    const labels = { status: 'ABANDONED', reason: 'expired' };
    const before = await counter('ticketing_sales_closed_unpaid_total', labels);
    const input = { saleId: newSaleId(), to: 'ABANDONED' as const, reason: 'payment window expired' };
    await step('closeUnpaidSale', input, { closed: true, status: 'ABANDONED', unitsReturned: 2 });
    await step('closeUnpaidSale', input, { closed: false, status: 'ABANDONED', unitsReturned: 0 });
    expect(await counter('ticketing_sales_closed_unpaid_total', labels)).toBe(before + 1);

    const cancelled = { status: 'CANCELLED', reason: 'cancelled' };
    const beforeCancel = await counter('ticketing_sales_closed_unpaid_total', cancelled);
    await step(
      'closeUnpaidSale',
      { saleId: newSaleId(), to: 'CANCELLED', reason: 'cancelled by the organizer' },
      { closed: true, status: 'CANCELLED', unitsReturned: 1 },
    );
    expect(await counter('ticketing_sales_closed_unpaid_total', cancelled)).toBe(beforeCancel + 1);
  });

  test('a late payment counts as confirmed only when it confirmed the sale', async () => {
    const before = await counter('ticketing_late_payments_total', { outcome: 'confirmed' });
    const input = { saleId: newSaleId(), provider: 'GATEWAY_A' as const, paymentRef: 'p-1', paymentStatus: 'approved' };
    await step('confirmLatePayment', input, { outcome: 'confirmed', status: 'CONFIRMED' });
    await step('confirmLatePayment', input, { outcome: 'already_confirmed', status: 'CONFIRMED', paymentRef: 'p-1' });
    await step('confirmLatePayment', input, { outcome: 'needs_refund', status: 'ABANDONED' });
    expect(await counter('ticketing_late_payments_total', { outcome: 'confirmed' })).toBe(before + 1);
  });

  test('a payment given back counts once by reason, and as a late payment refunded when it came late', async () => {
    const before = {
      late: await counter('ticketing_payments_returned_total', { reason: 'late_no_stock' }),
      second: await counter('ticketing_payments_returned_total', { reason: 'second_charge' }),
      lateRefunded: await counter('ticketing_late_payments_total', { outcome: 'refunded' }),
    };
    const refund = (statusDetail: string) => ({
      saleId: newSaleId(),
      gateway: 'GATEWAY_A' as const,
      kind: 'REFUND' as const,
      providerPaymentId: 'p-2',
      status: 'requested',
      statusDetail,
      amount: null,
      dedupeKey: `late-refund:${statusDetail}`,
      note: null,
    });
    await step('recordAttempt', refund('late_no_stock'), { duplicate: false });
    await step('recordAttempt', refund('late_no_stock'), { duplicate: true });
    await step('recordAttempt', refund('second_charge'), { duplicate: false });
    await step('recordAttempt', { ...refund('second_charge'), kind: 'NOTIFICATION' }, { duplicate: false });
    expect(await counter('ticketing_payments_returned_total', { reason: 'late_no_stock' })).toBe(before.late + 1);
    expect(await counter('ticketing_payments_returned_total', { reason: 'second_charge' })).toBe(before.second + 1);
    expect(await counter('ticketing_late_payments_total', { outcome: 'refunded' })).toBe(before.lateRefunded + 1);
  });
});

describe('labels come from fixed lists', () => {
  const source = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8');

  test('every reason the checkout closes an unpaid sale with has a label of its own', () => {
    for (const file of ['workflows/checkout.ts']) {
      const text = source(file);
      const reasons = [
        ...text.matchAll(/closeUnpaid\(\s*'(?:ABANDONED|CANCELLED)',\s*'([^']+)'/g),
        ...text.matchAll(/closeUnpaidSale\(\{[^}]*?reason: '([^']+)'/g),
        ...text.matchAll(/'organizer_cancel' \? '([a-z][^']+)' : '([a-z][^']+)'/g),
      ].flatMap((match) => match.slice(1).filter((reason): reason is string => reason !== undefined));
      expect(reasons.length).toBeGreaterThanOrEqual(3);
      for (const reason of reasons) expect([reason, closeReasonOf(reason)]).not.toEqual([reason, 'other']);
    }
  });

  test("every reason the checkout gives a payment back for is one of the metric's reasons", () => {
    const union = /type GiveBackReason =([^;]+);/.exec(source('workflows/checkout.ts'))?.[1] ?? '';
    const reasons = [...union.matchAll(/'([a-z_]+)'/g)].map((match) => match[1]);
    expect(reasons.length).toBeGreaterThanOrEqual(5);
    for (const reason of reasons) expect(GIVE_BACK_REASONS).toContain(reason);
  });

  test("webhook failure statuses map to a handful of reasons, never the receiver's text", () => {
    expect(webhookFailureReason('500')).toBe('http_5xx');
    expect(webhookFailureReason('404')).toBe('http_4xx');
    expect(webhookFailureReason('301 redirect_not_followed')).toBe('redirect');
    expect(webhookFailureReason('timeout')).toBe('timeout');
    expect(webhookFailureReason('blocked_address: resolves_to_private_address')).toBe('blocked_address');
    expect(webhookFailureReason('something new')).toBe('other');
  });
});
