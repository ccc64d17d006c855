import fc from 'fast-check';
import { type Discount, type FeePolicy, type PriceOrderInput, priceOrder } from '../../domain/pricing.js';
import type { SaleStatus } from '../../domain/sale-state.js';
import {
  allocationProblem,
  defaultAllocations,
  GATEWAY_COSTS,
  gatewayCost,
  organizerIvaOf,
  type SettledSale,
  type SettlementAdjustmentInput,
  settlementFigures,
} from '../../domain/settlement.js';

// ── Arbitraries: sales priced by the storefront's own pricing module, in every status ──────────────────────────

const feePolicy: fc.Arbitrary<FeePolicy> = fc.record({
  serviceFeeBps: fc.integer({ min: 0, max: 2_000 }),
  serviceFeeFixed: fc.integer({ min: 0, max: 5_000 }),
  feeAbsorbedByOrganizer: fc.boolean(),
  seatingSurcharge: fc.integer({ min: 0, max: 3_000 }),
});
const ticketTypes = ['General', 'VIP', 'Palco'] as const;

interface GeneratedSale extends SettledSale {
  status: SaleStatus;
}

const sale: fc.Arbitrary<GeneratedSale> = fc
  .record({
    id: fc.uuid(),
    status: fc.constantFrom<SaleStatus>('CONFIRMED', 'CONFIRMED', 'ABANDONED', 'CANCELLED', 'REFUNDED', 'PENDING'),
    type: fc.constantFrom(...ticketTypes),
    unitPrice: fc.integer({ min: 0, max: 2_000_000 }),
    quantity: fc.integer({ min: 1, max: 30 }),
    policy: feePolicy,
    numbered: fc.boolean(),
    discountPercent: fc.option(fc.integer({ min: 0, max: 100 }), { nil: null }),
    provider: fc.constantFrom<'GATEWAY_A' | 'GATEWAY_B' | null>('GATEWAY_A', 'GATEWAY_B', null),
  })
  .map(({ id, status, type, unitPrice, quantity, policy, numbered, discountPercent, provider }) => {
    const price = priceOrder({
      unitPrice,
      quantity,
      feePolicy: policy,
      numbered,
      discount: discountPercent === null ? null : { type: 'PERCENT', value: discountPercent },
    });
    return {
      saleId: id,
      status,
      quantity,
      subtotal: price.subtotal,
      discountAmount: price.discountAmount,
      serviceFee: price.serviceFee,
      iva: price.iva,
      total: price.total,
      organizerServiceFee: price.organizerServiceFee,
      paymentProvider: price.free ? null : provider,
      items: [{ ticketTypeId: `tt-${type}`, ticketTypeName: type, quantity, unitPrice }],
    };
  });

const adjustment: fc.Arbitrary<SettlementAdjustmentInput> = fc.record({
  saleId: fc.uuid(),
  amount: fc.integer({ min: -5_000_000, max: 0 }),
  reason: fc.constant('Refund after the settlement was sent'),
});

/** round½↑(a × bps / 10 000), computed independently of the module under test. */
const halfUpBps = (amount: number, bps: number) => Math.floor((amount * bps * 2 + 10_000) / 20_000);

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

describe('settlementFigures over random sale mixes', () => {
  test('only the CONFIRMED sales the caller passes count: gross, units and counts are theirs exactly', () => {
    fc.assert(
      fc.property(fc.array(sale, { maxLength: 40 }), (sales) => {
        const confirmed = sales.filter((each) => each.status === 'CONFIRMED');
        const figures = settlementFigures(confirmed, []);
        expect(figures.salesCount).toBe(confirmed.length);
        expect(figures.gross).toBe(sum(confirmed.map((each) => each.subtotal - each.discountAmount)));
        expect(figures.unitsSold).toBe(sum(confirmed.map((each) => each.quantity)));
        expect(figures.collected).toBe(sum(confirmed.map((each) => each.total)));
        expect(figures.buyerServiceFees).toBe(sum(confirmed.map((each) => each.serviceFee)));
        expect(figures.buyerIva).toBe(sum(confirmed.map((each) => each.iva)));
      }),
    );
  });

  test('costs = absorbed fee + its IVA + gateway costs, each rounded per sale', () => {
    fc.assert(
      fc.property(fc.array(sale, { maxLength: 40 }), (sales) => {
        const figures = settlementFigures(sales, []);
        const fee = sum(sales.map((each) => each.organizerServiceFee));
        const iva = sum(sales.map((each) => halfUpBps(each.organizerServiceFee, 1900)));
        const gateway = sum(
          sales.map((each) =>
            each.paymentProvider && each.total > 0 ? halfUpBps(each.total, GATEWAY_COSTS[each.paymentProvider]) : 0,
          ),
        );
        expect(figures.organizerServiceFee).toBe(fee);
        expect(figures.organizerIva).toBe(iva);
        expect(figures.gatewayCosts).toBe(gateway);
        expect(figures.costs).toBe(fee + iva + gateway);
      }),
    );
  });

  test('net payable = gross − costs − box-office cash + adjustments = Σ per-sale nets + adjustments', () => {
    fc.assert(
      fc.property(fc.array(sale, { maxLength: 40 }), fc.array(adjustment, { maxLength: 5 }), (sales, adjustments) => {
        const figures = settlementFigures(sales, adjustments);
        const adjustmentsTotal = sum(adjustments.map((each) => each.amount));
        expect(figures.adjustmentsTotal).toBe(adjustmentsTotal);
        const heldByOrganizer = sum(sales.filter((each) => each.paymentProvider === null).map((each) => each.total));
        expect(figures.collectedByOrganizer).toBe(heldByOrganizer);
        expect(figures.netPayable).toBe(figures.gross - figures.costs - heldByOrganizer + adjustmentsTotal);
        expect(sum(figures.perSale.map((each) => each.net)) + adjustmentsTotal).toBe(figures.netPayable);
        expect(sum(figures.perSale.map((each) => each.gross))).toBe(figures.gross);
        expect(sum(figures.perSale.map((each) => each.costs))).toBe(figures.costs);
        expect(figures.perSale.map((each) => each.saleId)).toEqual(sales.map((each) => each.saleId));
      }),
    );
  });

  test('the ticket-type lines add up to the units sold and the list subtotal', () => {
    fc.assert(
      fc.property(fc.array(sale, { maxLength: 40 }), (sales) => {
        const figures = settlementFigures(sales, []);
        expect(sum(figures.lines.map((line) => line.quantity))).toBe(figures.unitsSold);
        expect(sum(figures.lines.map((line) => line.subtotal))).toBe(figures.listSubtotal);
        expect(figures.listSubtotal).toBe(sum(sales.map((each) => each.subtotal)));
        expect(figures.listSubtotal - figures.discounts).toBe(figures.gross);
        for (const line of figures.lines) expect(line.subtotal).toBe(line.quantity * line.unitPrice);
      }),
    );
  });
});

describe('the settlement reads what the storefront charged', () => {
  /** Any order the storefront can price: a discount code (percent with decimals, or fixed) and/or a member discount. */
  const chargedSale: fc.Arbitrary<SettledSale> = fc
    .record({
      id: fc.uuid(),
      unitPrice: fc.integer({ min: 0, max: 20_000_000 }),
      quantity: fc.integer({ min: 1, max: 30 }),
      policy: fc.record({
        serviceFeeBps: fc.integer({ min: 0, max: 10_000 }),
        serviceFeeFixed: fc.integer({ min: 0, max: 200_000 }),
        feeAbsorbedByOrganizer: fc.boolean(),
        seatingSurcharge: fc.integer({ min: 0, max: 100_000 }),
      }),
      numbered: fc.boolean(),
      code: fc.option(
        fc.oneof(
          fc.integer({ min: 0, max: 10_000 }).map((bps): Discount => ({ type: 'PERCENT', value: bps / 100 })),
          fc.integer({ min: 0, max: 700_000_000 }).map((value): Discount => ({ type: 'FIXED', value })),
        ),
        { nil: null },
      ),
      memberPercent: fc.option(
        fc.integer({ min: 0, max: 10_000 }).map((bps) => bps / 100),
        { nil: null },
      ),
      provider: fc.constantFrom<'GATEWAY_A' | 'GATEWAY_B' | null>('GATEWAY_A', 'GATEWAY_B', null),
    })
    .map(({ id, unitPrice, quantity, policy, numbered, code, memberPercent, provider }) => {
      const order: PriceOrderInput = {
        unitPrice,
        quantity,
        feePolicy: policy,
        numbered,
        discount: code,
        memberDiscountPercent: memberPercent,
      };
      const price = priceOrder(order);
      return {
        saleId: id,
        quantity,
        subtotal: price.subtotal,
        discountAmount: price.discountAmount,
        serviceFee: price.serviceFee,
        iva: price.iva,
        total: price.total,
        organizerServiceFee: price.organizerServiceFee,
        paymentProvider: price.free ? null : provider,
        items: [{ ticketTypeId: 'tt', ticketTypeName: 'General', quantity, unitPrice }],
      };
    });

  test('what buyers paid splits exactly into ticket revenue, buyer service fees and buyer IVA, whatever the discount', () => {
    fc.assert(
      fc.property(fc.array(chargedSale, { maxLength: 20 }), (sales) => {
        const figures = settlementFigures(sales, []);
        expect(figures.collected).toBe(figures.gross + figures.buyerServiceFees + figures.buyerIva);
        expect(figures.gross).toBe(figures.listSubtotal - figures.discounts);
        expect(figures.salesCount).toBe(sales.length);
        expect(figures.unitsSold).toBe(sum(sales.map((each) => each.quantity)));
      }),
    );
  });

  test('hand-computed: two card sales at 10 % + 1,000, one fee absorbed → gross 230,000, costs 18,982, net 211,018', () => {
    const policy: FeePolicy = {
      serviceFeeBps: 1_000,
      serviceFeeFixed: 1_000,
      feeAbsorbedByOrganizer: false,
      seatingSurcharge: 0,
    };
    const settled = (saleId: string, order: PriceOrderInput): SettledSale => {
      const price = priceOrder(order);
      return {
        saleId,
        quantity: order.quantity,
        subtotal: price.subtotal,
        discountAmount: price.discountAmount,
        serviceFee: price.serviceFee,
        iva: price.iva,
        total: price.total,
        organizerServiceFee: price.organizerServiceFee,
        paymentProvider: 'GATEWAY_A',
        items: [{ ticketTypeId: saleId, ticketTypeName: saleId, quantity: order.quantity, unitPrice: order.unitPrice }],
      };
    };
    // 3 × 50,000 + fee 3 × 6,000 + IVA 3 × 1,140 = 171,420; 80,000 with its 9,000 fee absorbed: the buyer pays 80,000.
    const paid = settled('paid', { unitPrice: 50_000, quantity: 3, feePolicy: policy, numbered: false });
    const absorbed = settled('absorbed', {
      unitPrice: 80_000,
      quantity: 1,
      feePolicy: { ...policy, feeAbsorbedByOrganizer: true },
      numbered: false,
    });
    expect(settlementFigures([paid, absorbed], [])).toMatchObject({
      salesCount: 2,
      unitsSold: 4,
      collected: 171_420 + 80_000,
      gross: 230_000,
      buyerServiceFees: 18_000,
      buyerIva: 3_420,
      organizerServiceFee: 9_000,
      organizerIva: 1_710,
      // round½↑(171,420 × 3.29 %) = 5,640 (5,639.72) + round½↑(80,000 × 3.29 %) = 2,632
      gatewayCosts: 8_272,
      costs: 18_982,
      collectedByOrganizer: 0,
      netPayable: 211_018,
    });
  });
});

describe('settlement rules by example', () => {
  const card: SettledSale = {
    saleId: 'a',
    quantity: 2,
    subtotal: 100_000,
    discountAmount: 0,
    serviceFee: 10_000,
    iva: 1_900,
    total: 111_900,
    organizerServiceFee: 0,
    paymentProvider: 'GATEWAY_A',
    items: [{ ticketTypeId: 't', ticketTypeName: 'General', quantity: 2, unitPrice: 50_000 }],
  };

  test('gateway costs are 3.29 % (A) and 2.99 % (B) of what the buyer paid, rounded half up; free sales cost nothing', () => {
    expect(gatewayCost(111_900, 'GATEWAY_A')).toBe(3_682); // 3 681.51
    expect(gatewayCost(111_900, 'GATEWAY_B')).toBe(3_346); // 3 345.81
    expect(gatewayCost(0, 'GATEWAY_A')).toBe(0);
    expect(gatewayCost(50_000, null)).toBe(0);
  });

  test('a box-office sale pays nothing out: the organizer holds its cash and owes the buyer fee and IVA', () => {
    const boxOffice: SettledSale = { ...card, paymentProvider: null };
    const figures = settlementFigures([boxOffice], []);
    expect(figures.gross).toBe(100_000);
    expect(figures.gatewayCosts).toBe(0);
    expect(figures.collectedByOrganizer).toBe(111_900);
    expect(figures.netPayable).toBe(-11_900);
  });

  test('the platform invoices 19 % IVA on the service fee the organizer absorbed', () => {
    expect(organizerIvaOf(5_000)).toBe(950);
    expect(organizerIvaOf(5)).toBe(1); // 0.95 rounds up
  });

  test('a sale whose stored amounts do not add up fails loudly instead of skewing a payout', () => {
    expect(() => settlementFigures([{ ...card, total: 111_901 }], [])).toThrow(/do not add up/);
    expect(() =>
      settlementFigures([{ ...card, items: [{ ...(card.items[0] as SettledSale['items'][0]), quantity: 1 }] }], []),
    ).toThrow(/items do not add up/);
  });
});

describe('payout allocations', () => {
  const accounts = [
    { id: 'acc-1', defaultPercentage: 60 },
    { id: 'acc-2', defaultPercentage: 40 },
  ];

  test('default to the accounts’ own shares, which sum to 100', () => {
    expect(defaultAllocations(accounts)).toEqual([
      { bankAccountId: 'acc-1', percentage: 60 },
      { bankAccountId: 'acc-2', percentage: 40 },
    ]);
    expect(allocationProblem(defaultAllocations(accounts), accounts)).toBeNull();
  });

  test('must name the workspace’s accounts once each, in whole percents summing to exactly 100', () => {
    const pct = (a: number, b: number) => [
      { bankAccountId: 'acc-1', percentage: a },
      { bankAccountId: 'acc-2', percentage: b },
    ];
    expect(allocationProblem(pct(50, 50), accounts)).toBeNull();
    expect(allocationProblem(pct(50, 49), accounts)).toBe('percentages_do_not_sum_to_100');
    expect(allocationProblem(pct(50.5, 49.5), accounts)).toBe('percentage_not_whole_1_to_100');
    expect(allocationProblem([{ bankAccountId: 'other', percentage: 100 }], accounts)).toBe('unknown_payout_account');
    expect(
      allocationProblem(
        [
          { bankAccountId: 'acc-1', percentage: 50 },
          { bankAccountId: 'acc-1', percentage: 50 },
        ],
        accounts,
      ),
    ).toBe('duplicate_payout_account');
    expect(allocationProblem([], accounts)).toBe('no_allocations');
    expect(allocationProblem([{ bankAccountId: 'acc-1', percentage: 100 }], [])).toBe('no_payout_accounts');
  });
});
