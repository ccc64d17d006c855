/**
 * What a verified gateway notification does (api/services/payment-notifications.ts), without the stack: a reference we
 * never issued is acknowledged and signals nothing; an approval the checkout already holds does not wake it; a gateway
 * B event for a sale paying through gateway A is ignored; anything else reaches the checkout with its dedupe key.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  deliverGatewayAPayment,
  deliverGatewayBEvent,
  gatewayBEventIsFresh,
} from '../../api/services/payment-notifications.js';
import type { ApiServices } from '../../api/services.js';
import type { GatewayAPaymentRecord } from '../../domain/payment-verdict.js';
import type { ISale } from '../../entities/sale.js';
import type { GatewayBWebhookEvent } from '../../integrations/gateway-b/client.js';

const REFERENCE = 'FT-AB23CD45';
const saleId = '0190a0b0-0000-7000-8000-000000000001';

const saleOf = (overrides: Partial<ISale> = {}) =>
  ({
    id: saleId,
    reference: REFERENCE,
    workspace: 'workspace-1',
    event: 'event-1',
    status: 'PENDING',
    total: 50000,
    currency: 'COP',
    paymentRef: null,
    paymentProvider: null,
    ...overrides,
  }) as ISale;

/** Finds the sale by its reference and the given card rows; no payment attempt, event or membership is found. */
const emWith = (sale: ISale | null, approvedCardRows: unknown[] = []) =>
  ({
    findOne: async (_entity: unknown, where: { reference?: string }) => (where.reference === REFERENCE ? sale : null),
    find: async () => [],
    execute: async () => approvedCardRows,
  }) as unknown as EntityManager;

const signalled: Array<{ workflowId: string; notification: Record<string, unknown> }> = [];
const services = {
  env: { TEMPORAL_TASK_QUEUE: 'q', LATE_PAYMENT_GRACE_MS: 1000, WORKER_VERSIONING: false },
  temporal: {
    workflow: {
      signalWithStart: async (
        _type: string,
        options: { workflowId: string; signalArgs: [Record<string, unknown>] },
      ) => {
        signalled.push({ workflowId: options.workflowId, notification: options.signalArgs[0] });
      },
    },
  },
} as unknown as ApiServices;
const log = { warn: () => undefined };

beforeEach(() => {
  signalled.length = 0;
});

const paymentOf = (overrides: Partial<GatewayAPaymentRecord> = {}): GatewayAPaymentRecord => ({
  id: 'pay-1',
  status: 'approved',
  statusDetail: null,
  amount: 50000,
  currency: 'COP',
  externalReference: REFERENCE,
  ...overrides,
});

describe('a gateway A payment', () => {
  test('naming no sale or membership payment of ours is ignored and signals nothing', async () => {
    expect(await deliverGatewayAPayment(services, emWith(null), log, paymentOf())).toBe('unknown reference');
    expect(await deliverGatewayAPayment(services, emWith(saleOf()), log, paymentOf({ externalReference: null }))).toBe(
      'unknown reference',
    );
    const membership = paymentOf({ externalReference: 'MB-AB23CD45' });
    expect(await deliverGatewayAPayment(services, emWith(saleOf()), log, membership)).toBe('unknown reference');
    expect(signalled).toEqual([]);
  });

  test('already held by the checkout (the payment that confirmed it, or an approved card charge) does not wake it', async () => {
    const confirmed = saleOf({ status: 'CONFIRMED', paymentRef: 'pay-1' });
    expect(await deliverGatewayAPayment(services, emWith(confirmed), log, paymentOf())).toBe('already applied');
    expect(await deliverGatewayAPayment(services, emWith(saleOf(), [{ one: 1 }]), log, paymentOf())).toBe(
      'already applied',
    );
    expect(signalled).toEqual([]);
  });

  test("otherwise reaches the sale's checkout with its dedupe key and the verdict just read", async () => {
    expect(await deliverGatewayAPayment(services, emWith(saleOf()), log, paymentOf())).toBeNull();
    const rejected = paymentOf({ status: 'rejected' });
    expect(await deliverGatewayAPayment(services, emWith(saleOf(), [{ one: 1 }]), log, rejected)).toBeNull();
    expect(signalled.map(({ notification }) => notification.dedupeKey)).toEqual([
      'a:pay-1:approved',
      'a:pay-1:rejected',
    ]);
    expect(signalled[0]!.workflowId).toContain(saleId);
    expect(signalled[0]!.notification).toMatchObject({ gateway: 'GATEWAY_A', eventType: 'payment.approved' });
    expect(signalled[0]!.notification.verdict).toBeDefined();
  });
});

describe('a gateway B event', () => {
  const eventOf = (reference: string | null) =>
    ({
      id: 'evt-1',
      type: 'SALE_APPROVED',
      paymentId: 'b-pay-1',
      reference,
      time: 0,
    }) as unknown as GatewayBWebhookEvent;

  test('naming no sale of ours, or a sale paying through gateway A, is ignored and signals nothing', async () => {
    expect(await deliverGatewayBEvent(services, emWith(null), log, eventOf(REFERENCE))).toBe('unknown reference');
    const onA = saleOf({ paymentProvider: 'GATEWAY_A' });
    expect(await deliverGatewayBEvent(services, emWith(onA), log, eventOf(REFERENCE))).toBe('gateway mismatch');
    expect(signalled).toEqual([]);
  });

  test('for a sale paying through gateway B reaches its checkout, deduplicated by event id', async () => {
    const onB = saleOf({ paymentProvider: 'GATEWAY_B' });
    expect(await deliverGatewayBEvent(services, emWith(onB), log, eventOf(REFERENCE))).toBeNull();
    expect(signalled.map(({ notification }) => notification)).toEqual([
      expect.objectContaining({ gateway: 'GATEWAY_B', providerPaymentId: 'b-pay-1', dedupeKey: 'b:evt-1' }),
    ]);
  });

  test('is fresh for 15 minutes back and 5 ahead', () => {
    const now = Date.parse('2026-06-01T12:00:00Z');
    const ns = (ms: number) => ms * 1_000_000;
    expect(gatewayBEventIsFresh(ns(now - 15 * 60_000), now)).toBe(true);
    expect(gatewayBEventIsFresh(ns(now - 15 * 60_000 - 1), now)).toBe(false);
    expect(gatewayBEventIsFresh(ns(now + 5 * 60_000), now)).toBe(true);
    expect(gatewayBEventIsFresh(ns(now + 5 * 60_000 + 1), now)).toBe(false);
  });
});
