/**
 * Issue 13, proof: on random sale mixes (confirmed through gateway A or B or at the box office, free, member-priced,
 * abandoned, cancelled, refunded, pending), the summary, by-event, timeseries, financials and reconciliation reports
 * all add up to the same totals, those totals are what the mix holds, and financials equal the settlement statement
 * (domain/settlement.ts `settlementFigures`) of each date. Sales are written as checkout writes them: amounts from
 * domain/pricing.ts, one item, payment attempts as the checkout and the refund record them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { saleReferenceFromBytes } from '../../domain/codes.js';
import { type Discount, memberDiscountPerTicket, priceOrder } from '../../domain/pricing.js';
import { type SettledSale, settlementFigures } from '../../domain/settlement.js';
import { newId } from '../../entities/ids.js';
import { PaymentAttempt, Sale, SaleItem } from '../../entities/index.js';
import { createEventFixture } from '../support/catalog-fixtures.js';
import { bearer, createOrganizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const KINDS = [
  'gateway_a',
  'gateway_b',
  'box_office',
  'free',
  'member',
  'abandoned',
  'cancelled',
  'refunded',
  'pending',
] as const;
type Kind = (typeof KINDS)[number];

interface SaleSpec {
  kind: Kind;
  date: 0 | 1;
  type: 0 | 1;
  quantity: number;
  /** Days before now the sale was made (0–19). */
  daysAgo: number;
  /** Gateway B notified the approval twice, with and without an amount: still one payment. */
  duplicateNotification: boolean;
}

const saleSpec: fc.Arbitrary<SaleSpec> = fc.record({
  kind: fc.constantFrom(...KINDS),
  date: fc.constantFrom(0 as const, 1 as const),
  type: fc.constantFrom(0 as const, 1 as const),
  quantity: fc.integer({ min: 1, max: 6 }),
  daysAgo: fc.integer({ min: 0, max: 19 }),
  duplicateNotification: fc.boolean(),
});

const typeSpec = fc.record({
  price: fc.integer({ min: 1, max: 400 }).map((thousands) => thousands * 1000 + 500),
  serviceFeeBps: fc.integer({ min: 0, max: 2000 }),
  serviceFeeFixed: fc.integer({ min: 0, max: 3000 }),
  feeAbsorbedByOrganizer: fc.boolean(),
});

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
});

const DAY = 86_400_000;
const bogotaDay = (instant: Date) =>
  new Intl.DateTimeFormat('en-CA', {
    timeZone: 'America/Bogota',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(instant);

interface Written {
  status: string;
  total: number;
  gross: number;
  quantity: number;
  dateIndex: number;
  settled: SettledSale;
  paidThroughGateway: boolean;
  /** Calendar day the sale was made, America/Bogota (the fixture dates' zone). */
  day: string;
}

async function writeMix(
  workspaceId: string,
  catalog: { eventId: string; dates: Array<{ id: string; typeIds: string[] }> },
  types: Array<{ price: number; serviceFeeBps: number; serviceFeeFixed: number; feeAbsorbedByOrganizer: boolean }>,
  specs: SaleSpec[],
): Promise<Written[]> {
  const em = api.orm.em.fork();
  const written: Written[] = [];
  for (const spec of specs) {
    const date = catalog.dates[spec.date];
    const typeId = date?.typeIds[spec.type];
    const type = types[spec.type];
    if (!date || !typeId || !type) throw new Error('fixture mismatch');
    const discount: Discount | null =
      spec.kind === 'free'
        ? { type: 'PERCENT', value: 100 }
        : spec.kind === 'member'
          ? { type: 'FIXED', value: memberDiscountPerTicket(type.price, 15) * spec.quantity }
          : null;
    const feePolicy = { ...type, seatingSurcharge: 0 };
    const price = priceOrder({
      unitPrice: type.price,
      quantity: spec.quantity,
      feePolicy: spec.kind === 'box_office' ? { ...feePolicy, serviceFeeBps: 0, serviceFeeFixed: 0 } : feePolicy,
      numbered: false,
      discount,
    });
    const provider =
      spec.kind === 'gateway_b'
        ? 'GATEWAY_B'
        : ['gateway_a', 'member', 'refunded', 'abandoned'].includes(spec.kind)
          ? 'GATEWAY_A'
          : null;
    const status =
      spec.kind === 'abandoned'
        ? 'ABANDONED'
        : spec.kind === 'cancelled'
          ? 'CANCELLED'
          : spec.kind === 'refunded'
            ? 'REFUNDED'
            : spec.kind === 'pending'
              ? 'PENDING'
              : 'CONFIRMED';
    const paid = provider !== null && (status === 'CONFIRMED' || status === 'REFUNDED');
    const createdAt = new Date(Date.now() - spec.daysAgo * DAY - 60_000);
    const saleId = newId();
    const paymentId = `pay-${randomUUID()}`;
    em.create(Sale, {
      id: saleId,
      createdAt,
      updatedAt: createdAt,
      workspace: workspaceId,
      reference: saleReferenceFromBytes(randomBytes(5)),
      status,
      channel: spec.kind === 'box_office' ? 'POS' : 'WEB',
      origin: spec.kind === 'box_office' ? 'ORGANIZER' : 'CUSTOMER',
      event: catalog.eventId,
      eventDate: date.id,
      buyerName: 'Ana Gómez',
      buyerEmail: `buyer-${randomUUID().slice(0, 8)}@example.test`,
      subtotal: price.subtotal,
      discountAmount: price.discountAmount,
      serviceFee: price.serviceFee,
      iva: price.iva,
      total: price.total,
      organizerServiceFee: price.organizerServiceFee,
      currency: 'COP',
      paymentProvider: paid ? provider : null,
      paymentRef: paid ? paymentId : null,
      paymentStatus: spec.kind === 'box_office' ? 'FT_OFFLINE' : spec.kind === 'free' ? 'FT_FREE' : null,
      expiresAt: new Date(createdAt.getTime() + 30 * 60_000),
      confirmedAt: status === 'CONFIRMED' || status === 'REFUNDED' ? createdAt : null,
    });
    em.create(SaleItem, {
      id: newId(),
      sale: saleId,
      ticketType: typeId,
      ticketTypeName: `Tipo ${spec.type + 1}`,
      quantity: spec.quantity,
      unitPrice: type.price,
      unitServiceFee: price.unit.buyerServiceFee,
      unitIva: price.unit.iva,
    });
    const attempt = (kind: 'OPEN' | 'CARD' | 'NOTIFICATION' | 'REFUND', status: string | null, amount: number | null) =>
      em.create(PaymentAttempt, {
        id: newId(),
        sale: saleId,
        gateway: provider ?? 'GATEWAY_A',
        kind,
        providerPaymentId: kind === 'OPEN' ? null : paymentId,
        status,
        amount,
        dedupeKey: `${kind}:${randomUUID()}`,
        createdAt,
      });
    if (provider) attempt('OPEN', null, null);
    if (paid) {
      const approved = provider === 'GATEWAY_B' ? 'APPROVED' : 'approved';
      attempt(provider === 'GATEWAY_B' ? 'NOTIFICATION' : 'CARD', approved, price.total);
      if (spec.duplicateNotification) attempt('NOTIFICATION', approved, null);
    }
    if (status === 'REFUNDED') attempt('REFUND', 'refunded', spec.duplicateNotification ? null : price.total);
    written.push({
      status,
      total: price.total,
      gross: price.subtotal - price.discountAmount,
      quantity: spec.quantity,
      dateIndex: spec.date,
      paidThroughGateway: paid,
      day: bogotaDay(createdAt),
      settled: {
        saleId,
        quantity: spec.quantity,
        subtotal: price.subtotal,
        discountAmount: price.discountAmount,
        serviceFee: price.serviceFee,
        iva: price.iva,
        total: price.total,
        organizerServiceFee: price.organizerServiceFee,
        paymentProvider: paid ? (provider as 'GATEWAY_A' | 'GATEWAY_B') : null,
        items: [
          {
            ticketTypeId: typeId,
            ticketTypeName: `Tipo ${spec.type + 1}`,
            quantity: spec.quantity,
            unitPrice: type.price,
          },
        ],
      },
    });
  }
  await em.flush();
  return written;
}

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

test('summary, by-event, timeseries, financials and reconciliation add up to the same totals, and financials equal each date’s settlement statement', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(typeSpec, { minLength: 2, maxLength: 2 }),
      fc.array(saleSpec, { minLength: 0, maxLength: 25 }),
      async (types, specs) => {
        const organizer = await createOrganizer(api.orm.em.fork(), { role: 'VIEWER' });
        const catalog = await createEventFixture(api.orm.em.fork(), {
          workspaceId: organizer.workspaceId,
          dates: [0, 1].map((index) => ({
            startsAt: new Date(Date.now() + (10 + index) * DAY),
            types: types.map((type) => ({ ...type, capacity: 500 })),
          })),
        });
        const written = await writeMix(organizer.workspaceId, catalog, types, specs);
        const get = async (url: string) => {
          const response = await api.request({
            method: 'GET',
            url: `/api/v1${url}`,
            headers: bearer(organizer.readKey),
          });
          expect(response.statusCode).toBe(200);
          return response.json();
        };

        const confirmed = written.filter((sale) => sale.status === 'CONFIRMED');
        const expected = {
          collected: sum(confirmed.map((sale) => sale.total)),
          gross: sum(confirmed.map((sale) => sale.gross)),
          tickets: sum(confirmed.map((sale) => sale.quantity)),
          sales: confirmed.length,
        };

        const summary = (await get('/reports/summary')).data;
        expect(summary.revenue.collected).toBe(expected.collected);
        expect(summary.revenue.gross).toBe(expected.gross);
        expect(summary.tickets.sold).toBe(expected.tickets);
        expect(summary.sales.confirmed).toBe(expected.sales);
        expect(summary.sales.refunded).toBe(written.filter((sale) => sale.status === 'REFUNDED').length);
        expect(summary.sales.free).toBe(confirmed.filter((sale) => sale.total === 0).length);

        const byEvent = (await get('/reports/by-event')).data;
        expect(sum(byEvent.map((row: { revenue: { collected: number } }) => row.revenue.collected))).toBe(
          expected.collected,
        );
        expect(sum(byEvent.map((row: { ticketsSold: number }) => row.ticketsSold))).toBe(expected.tickets);
        expect(byEvent.map((row: { revenue: unknown }) => row.revenue)).toEqual([summary.revenue]);

        const today = bogotaDay(new Date());
        const from = bogotaDay(new Date(Date.now() - 25 * DAY));
        const series = (await get(`/reports/timeseries?interval=day&from=${from}&to=${today}`)).data;
        expect(series.points).toHaveLength(26);
        expect(sum(series.points.map((point: { sales: number }) => point.sales))).toBe(expected.sales);
        expect(sum(series.points.map((point: { tickets: number }) => point.tickets))).toBe(expected.tickets);
        expect(sum(series.points.map((point: { revenue: { collected: number } }) => point.revenue.collected))).toBe(
          expected.collected,
        );
        // Each sale sits in the bucket of the day it was made, in the workspace zone; the other days are empty.
        for (const point of series.points as Array<{ bucket: string; sales: number }>) {
          expect(point.sales).toBe(confirmed.filter((sale) => sale.day === point.bucket).length);
        }

        const financials = (await get('/reports/financials')).data;
        expect(financials).toHaveLength(2);
        expect(sum(financials.map((row: { gross: number }) => row.gross))).toBe(expected.gross);
        expect(sum(financials.map((row: { collected: number }) => row.collected))).toBe(expected.collected);
        catalog.dates.forEach((date, index) => {
          const statement = settlementFigures(
            confirmed.filter((sale) => sale.dateIndex === index).map((sale) => sale.settled),
            [],
          );
          const row = financials.find((each: { eventDateId: string }) => each.eventDateId === date.id);
          expect(row).toMatchObject({
            salesCount: statement.salesCount,
            unitsSold: statement.unitsSold,
            listSubtotal: statement.listSubtotal,
            discounts: statement.discounts,
            gross: statement.gross,
            buyerServiceFees: statement.buyerServiceFees,
            buyerIva: statement.buyerIva,
            collected: statement.collected,
            organizerServiceFee: statement.organizerServiceFee,
            organizerIva: statement.organizerIva,
            gatewayCosts: statement.gatewayCosts,
            costs: statement.costs,
            collectedByOrganizer: statement.collectedByOrganizer,
            netPayable: statement.netPayable,
          });
        });

        const reconciliationPage = await get('/reports/reconciliation?limit=100');
        const reconciliation = { totals: reconciliationPage.meta.totals, rows: reconciliationPage.data };
        const money = written.filter(
          (sale) => ['CONFIRMED', 'REFUNDED'].includes(sale.status) || sale.paidThroughGateway,
        );
        expect(reconciliation.totals.confirmedAmount).toBe(expected.collected);
        expect(reconciliation.totals.expectedAtGateway).toBe(
          sum(confirmed.filter((sale) => sale.paidThroughGateway).map((sale) => sale.total)),
        );
        expect(reconciliation.totals.charged).toBe(
          sum(written.filter((s) => s.paidThroughGateway).map((s) => s.total)),
        );
        expect(reconciliation.totals.refunded).toBe(
          sum(written.filter((s) => s.status === 'REFUNDED').map((s) => s.total)),
        );
        // Every payment was either kept by a confirmed sale or given back: nothing to flag.
        expect(reconciliation.totals.mismatches).toBe(0);
        expect(reconciliation.totals.netAtGateway).toBe(reconciliation.totals.expectedAtGateway);
        expect(sum(reconciliation.rows.map((row: { confirmedAmount: number }) => row.confirmedAmount))).toBe(
          expected.collected,
        );
        expect(reconciliation.rows.length).toBeGreaterThanOrEqual(money.length);
      },
    ),
    { numRuns: 20 },
  );
});

test('a payment kept without a confirmed sale, and a refund still in flight, are flagged as mismatches', async () => {
  const organizer = await createOrganizer(api.orm.em.fork(), { role: 'VIEWER' });
  const catalog = await createEventFixture(api.orm.em.fork(), {
    workspaceId: organizer.workspaceId,
    dates: [{ startsAt: new Date(Date.now() + 10 * DAY), types: [{ price: 50_000, capacity: 50 }] }],
  });
  const type = { price: 50_000, serviceFeeBps: 1000, serviceFeeFixed: 0, feeAbsorbedByOrganizer: false };
  const [abandoned, refunded] = await writeMix(
    organizer.workspaceId,
    { ...catalog, dates: [catalog.dates[0]!, catalog.dates[0]!] },
    [type, type],
    [
      { kind: 'abandoned', date: 0, type: 0, quantity: 1, daysAgo: 0, duplicateNotification: false },
      { kind: 'refunded', date: 0, type: 0, quantity: 2, daysAgo: 0, duplicateNotification: false },
    ],
  );
  const em = api.orm.em.fork();
  // An approved payment recorded for the abandoned sale that nothing gave back, and the refund not confirmed yet.
  await em.execute(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, created_at)
     values (?, ?, 'GATEWAY_A', 'NOTIFICATION', 'late-1', 'approved', ?, now())`,
    [newId(), abandoned!.settled.saleId, abandoned!.total],
  );
  await em.execute(`update payment_attempts set status = 'requested' where sale_id = ? and kind = 'REFUND'`, [
    refunded!.settled.saleId,
  ]);
  const response = await api.request({
    method: 'GET',
    url: '/api/v1/reports/reconciliation?mismatch=true',
    headers: bearer(organizer.readKey),
  });
  expect(response.statusCode).toBe(200);
  const { meta, data: rows } = response.json();
  const { totals } = meta;
  expect(totals.mismatches).toBe(2);
  const reasons = Object.fromEntries(
    rows.map((row: { saleId: string; mismatchReason: string }) => [row.saleId, row.mismatchReason]),
  );
  expect(reasons).toEqual({
    [abandoned!.settled.saleId]: 'money_kept_without_sale',
    [refunded!.settled.saleId]: 'refund_in_flight',
  });
  const kept = rows.find((row: { saleId: string }) => row.saleId === abandoned!.settled.saleId);
  expect(kept).toMatchObject({
    charged: abandoned!.total,
    refunded: 0,
    expectedAtGateway: 0,
    netAtGateway: abandoned!.total,
  });
});
