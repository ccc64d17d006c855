/**
 * Customer order rules that hold without the stack (api/services/customer-orders.ts): a payment is opened only on a
 * PENDING, unexpired sale; only a PENDING reservation is released; the bank's return goes to the order's returnUrl,
 * else the service's own order page, with the reference.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import {
  assertPayable,
  paymentReturnTarget,
  releaseOrder,
  unfinishedOrder,
} from '../../api/services/customer-orders.js';
import type { ISale } from '../../entities/sale.js';
import { appErrorOf } from '../support/app-errors.js';
import { servicesWithoutTemporal } from '../support/unreachable-temporal.js';

const silentLog: FastifyBaseLogger = pino({ level: 'silent' });

const saleId = '0190a0b0-0000-7000-8000-000000000002';
const now = Date.parse('2026-06-01T12:00:00Z');

const saleOf = (overrides: Partial<ISale> = {}) =>
  ({
    id: saleId,
    reference: 'TK-ABC123',
    workspace: 'workspace-1',
    eventDate: 'date-1',
    status: 'PENDING',
    expiresAt: new Date(now + 60_000),
    currency: 'COP',
    returnUrl: null,
    ...overrides,
  }) as ISale;

/** Finds the given sale, and a workspace that asks for no purchase session; nothing else is read. */
const emFinding = (sale: ISale | null) =>
  ({
    findOne: async (_entity: unknown, where: { id?: string }) =>
      where.id === saleId ? sale : { id: where.id, requiresPurchaseSession: false },
  }) as unknown as EntityManager;

/** No checkout is reachable: a rule that needs one fails the test. */
const services = servicesWithoutTemporal(
  { GATEWAY_A_CURRENCIES: 'COP', PUBLIC_ORIGIN: 'https://tickets.example.com/' },
  'the checkout',
);

describe('customer order rules', () => {
  const buyer = { buyerId: 'buyer-1', presentedSessionId: null };

  test('a payment on a sale that is not PENDING is 409 PAYMENT_UNAVAILABLE (not_pending)', async () => {
    const sale = saleOf({ status: 'ABANDONED' });
    const error = await appErrorOf(assertPayable(services, emFinding(sale), sale, buyer, now));
    expect(error.code).toBe('PAYMENT_UNAVAILABLE');
    expect(error.details).toEqual({ reason: 'not_pending' });
  });

  test('a payment on a PENDING sale whose reservation has expired is 409 PAYMENT_UNAVAILABLE (reservation_expired)', async () => {
    for (const expiresAt of [new Date(now), new Date(now - 1), null]) {
      const sale = saleOf({ expiresAt });
      const error = await appErrorOf(assertPayable(services, emFinding(sale), sale, buyer, now));
      expect(error.code).toBe('PAYMENT_UNAVAILABLE');
      expect(error.details).toEqual({ reason: 'reservation_expired' });
    }
    const live = saleOf();
    await expect(assertPayable(services, emFinding(live), live, buyer, now)).resolves.toBeUndefined();
  });

  test('only a PENDING reservation is released (409 INVALID_STATE), without asking the checkout', async () => {
    const error = await appErrorOf(releaseOrder(services, silentLog, saleOf({ status: 'CONFIRMED' })));
    expect(error.code).toBe('INVALID_STATE');
  });

  test("the bank's return goes to the order's returnUrl, else the service's order page, with the reference", async () => {
    expect(await paymentReturnTarget(emFinding(saleOf()), saleId, 'https://tickets.example.com/')).toBe(
      `https://tickets.example.com/api/public/orders/${saleId}?reference=TK-ABC123`,
    );
    const shop = saleOf({ returnUrl: 'https://shop.example.com/thanks?x=1' });
    expect(await paymentReturnTarget(emFinding(shop), saleId, 'https://tickets.example.com')).toBe(
      'https://shop.example.com/thanks?x=1&reference=TK-ABC123',
    );
    expect((await appErrorOf(paymentReturnTarget(emFinding(null), saleId, 'https://t.example'))).code).toBe(
      'NOT_FOUND',
    );
    expect((await appErrorOf(paymentReturnTarget(emFinding(shop), 'not-a-uuid', 'https://t.example'))).code).toBe(
      'NOT_FOUND',
    );
  });

  test('an event date id that is not a UUID has no unfinished order (null, never a database error)', async () => {
    const em = {
      findOne: async () => {
        throw new Error('no query for a malformed id');
      },
    } as unknown as EntityManager;
    expect(await unfinishedOrder(em, { buyerId: 'buyer-1', pinnedWorkspaceId: null }, 'x', new Date(now))).toBeNull();
  });
});
