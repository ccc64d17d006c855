/**
 * Issue 13: reconciliation reads each sale's money from `sale_payment_totals`, which the database folds from the
 * sale's payment attempts in the same transaction as every insert, update or delete of an attempt. These tests hold
 * that fold to an independent one written here in TypeScript, on random attempt histories written in random batches
 * (several sales per statement, duplicates, refunds confirmed later, attempts removed), and show that two writers of
 * one sale never overwrite each other's total.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import fc from 'fast-check';
import pg from 'pg';
import { saleReferenceFromBytes } from '../../domain/codes.js';
import { newId } from '../../entities/ids.js';
import { Sale } from '../../entities/index.js';
import { initOrm } from '../../entities/orm.js';
import { createEventFixture } from '../support/catalog-fixtures.js';
import { createOrganizer } from '../support/fixtures.js';
import { testEnv } from '../support/stack.js';

const SALE_TOTAL = 55_950;

interface Attempt {
  id: string;
  saleId: string;
  gateway: 'GATEWAY_A' | 'GATEWAY_B';
  kind: 'OPEN' | 'CARD' | 'PSE' | 'NOTIFICATION' | 'STATUS_CHECK' | 'REFUND' | 'LATE_PAYMENT';
  providerPaymentId: string | null;
  status: string | null;
  amount: number | null;
}

interface Totals {
  approvedPayments: number;
  charged: number;
  refunded: number;
  refundsPending: number;
}

/** The fold, stated plainly: per payment (its provider id, else the sale on that gateway), then per sale. */
function expectedTotals(attempts: Attempt[]): Totals | null {
  if (attempts.length === 0) return null;
  const approvedSpelling = (a: Attempt) =>
    a.gateway === 'GATEWAY_A' ? a.status === 'approved' : a.status === 'APPROVED' || a.status === 'SALE_APPROVED';
  const payments = new Map<string, Attempt[]>();
  for (const attempt of attempts) {
    const key = attempt.providerPaymentId ?? `${attempt.gateway}:${attempt.saleId}`;
    payments.set(key, [...(payments.get(key) ?? []), attempt]);
  }
  const totals: Totals = { approvedPayments: 0, charged: 0, refunded: 0, refundsPending: 0 };
  const largest = (values: Array<number | null>) => {
    const known = values.filter((value): value is number => value !== null);
    return known.length === 0 ? null : Math.max(...known);
  };
  for (const group of payments.values()) {
    const approvals = group.filter((a) => a.kind !== 'REFUND' && approvedSpelling(a));
    const refunds = group.filter((a) => a.kind === 'REFUND');
    const approvedAmount = largest(approvals.map((a) => a.amount));
    const refundDone = refunds.some((a) => a.status === 'refunded');
    if (approvals.length > 0) {
      totals.approvedPayments += 1;
      totals.charged += approvedAmount ?? SALE_TOTAL;
    }
    if (refundDone) totals.refunded += largest(refunds.map((a) => a.amount)) ?? approvedAmount ?? SALE_TOTAL;
    if (refunds.length > 0 && !refundDone) totals.refundsPending += 1;
  }
  return totals;
}

let orm: MikroORM;
let pool: pg.Pool;
let fixture: { workspaceId: string; eventId: string; eventDateId: string };

beforeAll(async () => {
  orm = await initOrm({ databaseUrl: testEnv().DATABASE_URL, poolMax: 4 });
  pool = new pg.Pool({ connectionString: testEnv().DATABASE_URL, max: 4 });
  const organizer = await createOrganizer(orm.em.fork());
  const catalog = await createEventFixture(orm.em.fork(), {
    workspaceId: organizer.workspaceId,
    dates: [{ startsAt: new Date(Date.now() + 86_400_000), types: [{ price: 50_000, capacity: 1000 }] }],
  });
  fixture = { workspaceId: organizer.workspaceId, eventId: catalog.eventId, eventDateId: catalog.dates[0]!.id };
});
afterAll(async () => {
  await pool.end();
  await orm.close(true);
});

async function createSales(count: number): Promise<string[]> {
  const em = orm.em.fork();
  const ids = Array.from({ length: count }, () => newId());
  for (const id of ids) {
    em.create(Sale, {
      id,
      workspace: fixture.workspaceId,
      reference: saleReferenceFromBytes(randomBytes(5)),
      status: 'PENDING',
      channel: 'WEB',
      origin: 'CUSTOMER',
      event: fixture.eventId,
      eventDate: fixture.eventDateId,
      buyerName: 'Ana Gómez',
      buyerEmail: `buyer-${randomUUID().slice(0, 8)}@example.test`,
      subtotal: 50_000,
      discountAmount: 0,
      serviceFee: 5_000,
      iva: 950,
      total: SALE_TOTAL,
      organizerServiceFee: 0,
      currency: 'COP',
      expiresAt: new Date(Date.now() + 600_000),
    });
  }
  await em.flush();
  return ids;
}

/** One multi-row INSERT: the statement-level trigger folds every sale it touched once. */
async function insertAttempts(client: pg.Pool | pg.PoolClient, attempts: Attempt[]): Promise<void> {
  if (attempts.length === 0) return;
  const values: unknown[] = [];
  const rows = attempts.map((a, index) => {
    values.push(a.id, a.saleId, a.gateway, a.kind, a.providerPaymentId, a.status, a.amount);
    const at = index * 7;
    return `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}, $${at + 6}, $${at + 7}, now())`;
  });
  await client.query(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, created_at)
     values ${rows.join(', ')}`,
    values,
  );
}

async function storedTotals(saleIds: string[]): Promise<Map<string, Totals>> {
  const result = await pool.query<{
    sale_id: string;
    approved_payments: number;
    charged: number;
    refunded: number;
    refunds_pending: number;
  }>('select * from sale_payment_totals where sale_id = any($1::uuid[])', [saleIds]);
  return new Map(
    result.rows.map((row) => [
      row.sale_id,
      {
        approvedPayments: row.approved_payments,
        charged: row.charged,
        refunded: row.refunded,
        refundsPending: row.refunds_pending,
      },
    ]),
  );
}

async function expectFolded(saleIds: string[], attempts: Attempt[]): Promise<void> {
  const stored = await storedTotals(saleIds);
  for (const saleId of saleIds) {
    const expected = expectedTotals(attempts.filter((a) => a.saleId === saleId));
    expect({ saleId, totals: stored.get(saleId) ?? null }).toEqual({ saleId, totals: expected });
  }
}

const attemptShape = fc.record({
  sale: fc.nat({ max: 3 }),
  gateway: fc.constantFrom('GATEWAY_A' as const, 'GATEWAY_B' as const),
  kind: fc.constantFrom('OPEN', 'CARD', 'PSE', 'NOTIFICATION', 'STATUS_CHECK', 'REFUND', 'LATE_PAYMENT'),
  payment: fc.option(fc.constantFrom('p1', 'p2', 'p3'), { nil: null }),
  status: fc.option(
    fc.constantFrom(
      'approved',
      'rejected',
      'pending',
      'APPROVED',
      'SALE_APPROVED',
      'REJECTED',
      'refunded',
      'requested',
    ),
    { nil: null },
  ),
  amount: fc.option(fc.constantFrom(55_950, 60_000, 10_000), { nil: null }),
});

test('the stored totals equal the fold of every attempt, through batched inserts, later refund updates and deletions', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(attemptShape, { minLength: 1, maxLength: 14 }),
      fc.integer({ min: 1, max: 5 }),
      fc.array(fc.nat(), { maxLength: 3 }),
      async (shapes, batchSize, removals) => {
        const saleIds = await createSales(4);
        const attempts: Attempt[] = shapes.map((shape) => {
          const saleId = saleIds[shape.sale]!;
          return {
            id: newId(),
            saleId,
            gateway: shape.gateway,
            kind: shape.kind as Attempt['kind'],
            // Payment ids are per sale at the gateway: the same label on two sales is two payments.
            providerPaymentId: shape.payment ? `${shape.payment}-${saleId}` : null,
            status: shape.status,
            amount: shape.amount,
          };
        });
        for (let start = 0; start < attempts.length; start += batchSize) {
          await insertAttempts(pool, attempts.slice(start, start + batchSize));
        }
        await expectFolded(saleIds, attempts);

        // The gateway confirms the refunds asked for: one UPDATE across sales.
        await pool.query(
          `update payment_attempts set status = 'refunded' where kind = 'REFUND' and sale_id = any($1::uuid[])`,
          [saleIds],
        );
        for (const attempt of attempts) if (attempt.kind === 'REFUND') attempt.status = 'refunded';
        await expectFolded(saleIds, attempts);

        // Attempts removed (a sale with none left has no row).
        const removed = new Set(removals.map((index) => attempts[index % attempts.length]!.id));
        await pool.query('delete from payment_attempts where id = any($1::uuid[])', [[...removed]]);
        await expectFolded(
          saleIds,
          attempts.filter((attempt) => !removed.has(attempt.id)),
        );
      },
    ),
    { numRuns: 40 },
  );
}, 120_000);

test('two transactions writing attempts of one sale at once: the later one folds the earlier one in', async () => {
  const [saleId] = await createSales(1);
  const first = await pool.connect();
  const second = await pool.connect();
  try {
    const approval: Attempt = {
      id: newId(),
      saleId: saleId!,
      gateway: 'GATEWAY_A',
      kind: 'NOTIFICATION',
      providerPaymentId: 'pay-1',
      status: 'approved',
      amount: SALE_TOTAL,
    };
    const refund: Attempt = { ...approval, id: newId(), kind: 'REFUND', status: 'refunded', amount: null };
    await first.query('begin');
    await insertAttempts(first, [approval]);
    await second.query('begin');
    // Waits for the first transaction (the sale's row lock), then folds what it committed.
    const secondWrite = insertAttempts(second, [refund]);
    const raced = await Promise.race([
      secondWrite.then(() => 'written'),
      new Promise((resolve) => setTimeout(() => resolve('waiting'), 300)),
    ]);
    expect(raced).toBe('waiting');
    await first.query('commit');
    await secondWrite;
    await second.query('commit');
    expect((await storedTotals([saleId!])).get(saleId!)).toEqual({
      approvedPayments: 1,
      charged: SALE_TOTAL,
      refunded: SALE_TOTAL,
      refundsPending: 0,
    });
  } finally {
    first.release();
    second.release();
  }
});

test('deleting a sale removes its totals with its attempts', async () => {
  const [saleId] = await createSales(1);
  await insertAttempts(pool, [
    {
      id: newId(),
      saleId: saleId!,
      gateway: 'GATEWAY_B',
      kind: 'NOTIFICATION',
      providerPaymentId: 'tx-1',
      status: 'SALE_APPROVED',
      amount: null,
    },
  ]);
  expect((await storedTotals([saleId!])).get(saleId!)).toMatchObject({ approvedPayments: 1, charged: SALE_TOTAL });
  await pool.query('delete from sales where id = $1', [saleId]);
  expect((await storedTotals([saleId!])).size).toBe(0);
});
