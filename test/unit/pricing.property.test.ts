import fc from 'fast-check';
import { toMajorUnits } from '../../domain/money.js';
import {
  type Discount,
  type FeePolicy,
  IVA_BPS,
  memberDiscountPerTicket,
  NO_FEES,
  priceOrder,
  quoteMemberUnit,
  quoteUnit,
  resolveFeePolicy,
} from '../../domain/pricing.js';

// ── Arbitraries ────────────────────────────────────────────────────────────────────────────────────────────────

const price = fc.integer({ min: 0, max: 20_000_000 });
const positivePrice = fc.integer({ min: 1, max: 20_000_000 });
const quantity = fc.integer({ min: 1, max: 30 });
const feePolicy: fc.Arbitrary<FeePolicy> = fc.record({
  serviceFeeBps: fc.integer({ min: 0, max: 10_000 }),
  serviceFeeFixed: fc.integer({ min: 0, max: 200_000 }),
  feeAbsorbedByOrganizer: fc.boolean(),
  seatingSurcharge: fc.integer({ min: 0, max: 100_000 }),
});
const discount: fc.Arbitrary<Discount> = fc.oneof(
  fc.integer({ min: 0, max: 10_000 }).map((bps): Discount => ({ type: 'PERCENT', value: bps / 100 })),
  fc.integer({ min: 0, max: 700_000_000 }).map((value): Discount => ({ type: 'FIXED', value })),
);

/** A plan's discountPercent: 0–100 with at most two decimals, as the membership plan API accepts it. */
const memberPercent = fc.integer({ min: 0, max: 10_000 }).map((bps) => bps / 100);

/** Independent oracle for IVA: half-up 19 % in plain integer arithmetic (exact for the ranges used here). */
const ivaOracle = (fee: number): number => Math.floor((2 * fee * IVA_BPS + 10_000) / 20_000);

// ── Example tests, computed by hand ───────────────────────────────────────────────────────────────────────────

const tenPercentPlus1000: FeePolicy = {
  serviceFeeBps: 1000,
  serviceFeeFixed: 1000,
  feeAbsorbedByOrganizer: false,
  seatingSurcharge: 0,
};

describe('unit quote (PublicTicketType), hand-computed examples', () => {
  test('50,000 COP with a 10 % + 1,000 fee: fee 6,000, IVA 1,140, buyerTotal 57,140', () => {
    expect(quoteUnit({ price: 50_000, feePolicy: tenPercentPlus1000, numbered: false })).toEqual({
      price: 50_000,
      buyerServiceFee: 6_000,
      seatingSurcharge: 0,
      iva: 1_140,
      buyerTotal: 57_140,
      organizerServiceFee: 0,
    });
  });

  test('a percentage fee ending in exactly half a peso rounds up: 5 % of 10,010 = 500.5 → 501, IVA 95.19 → 95', () => {
    const quote = quoteUnit({ price: 10_010, feePolicy: { ...NO_FEES, serviceFeeBps: 500 }, numbered: false });
    expect(quote).toMatchObject({ buyerServiceFee: 501, iva: 95, buyerTotal: 10_606 });
  });

  test('IVA ending in exactly half a peso rounds up: 19 % of 50 = 9.5 → 10', () => {
    const quote = quoteUnit({ price: 1_000, feePolicy: { ...NO_FEES, serviceFeeBps: 500 }, numbered: false });
    expect(quote).toMatchObject({ buyerServiceFee: 50, iva: 10, buyerTotal: 1_060 });
  });

  test('a numbered seat adds its seating surcharge to the buyer fee and IVA is charged on both: 80,000 → 93,090', () => {
    const quote = quoteUnit({
      price: 80_000,
      feePolicy: { ...tenPercentPlus1000, seatingSurcharge: 2_000 },
      numbered: true,
    });
    expect(quote).toEqual({
      price: 80_000,
      buyerServiceFee: 11_000,
      seatingSurcharge: 2_000,
      iva: 2_090,
      buyerTotal: 93_090,
      organizerServiceFee: 0,
    });
  });

  test('an absorbed fee on a numbered seat leaves the buyer only the seating surcharge; the organizer pays 9,000', () => {
    const policy = { ...tenPercentPlus1000, seatingSurcharge: 2_000, feeAbsorbedByOrganizer: true };
    expect(quoteUnit({ price: 80_000, feePolicy: policy, numbered: true })).toEqual({
      price: 80_000,
      buyerServiceFee: 2_000,
      seatingSurcharge: 2_000,
      iva: 380,
      buyerTotal: 82_380,
      organizerServiceFee: 9_000,
    });
  });

  test('the seating surcharge applies only to numbered ticket types', () => {
    const policy = { ...tenPercentPlus1000, seatingSurcharge: 2_000 };
    expect(quoteUnit({ price: 80_000, feePolicy: policy, numbered: false })).toMatchObject({
      buyerServiceFee: 9_000,
      seatingSurcharge: 0,
    });
  });

  test('an absorbed fee on general admission: buyerServiceFee 0, IVA 0, buyerTotal = price', () => {
    const policy = { ...tenPercentPlus1000, feeAbsorbedByOrganizer: true };
    expect(quoteUnit({ price: 50_000, feePolicy: policy, numbered: false })).toEqual({
      price: 50_000,
      buyerServiceFee: 0,
      seatingSurcharge: 0,
      iva: 0,
      buyerTotal: 50_000,
      organizerServiceFee: 6_000,
    });
  });

  test('a ticket type priced 0 carries no fee, surcharge or IVA', () => {
    const policy = { ...tenPercentPlus1000, seatingSurcharge: 2_000 };
    expect(quoteUnit({ price: 0, feePolicy: policy, numbered: true })).toMatchObject({ buyerTotal: 0, iva: 0 });
  });

  test('USD in cents: 19.99 with 10 % + 0.30 → fee 2.30, IVA 0.44, buyerTotal 22.73 major units', () => {
    const quote = quoteUnit({
      price: 1_999,
      feePolicy: { ...NO_FEES, serviceFeeBps: 1000, serviceFeeFixed: 30 },
      numbered: false,
    });
    expect(quote).toMatchObject({ buyerServiceFee: 230, iva: 44, buyerTotal: 2_273 });
    expect(toMajorUnits(quote.buyerTotal, 'USD')).toBe(22.73);
  });
});

describe('order price (the sale amounts), hand-computed examples', () => {
  test('3 × 50,000 COP with a 10 % + 1,000 fee: subtotal 150,000, fee 18,000, IVA 3,420, total 171,420', () => {
    expect(
      priceOrder({ unitPrice: 50_000, quantity: 3, feePolicy: tenPercentPlus1000, numbered: false }),
    ).toMatchObject({
      subtotal: 150_000,
      discountAmount: 0,
      serviceFee: 18_000,
      iva: 3_420,
      total: 171_420,
      free: false,
    });
  });

  test('a 20 % discount comes off the ticket subtotal only, fees stay on the list price: total 141,420', () => {
    const order = priceOrder({
      unitPrice: 50_000,
      quantity: 3,
      feePolicy: tenPercentPlus1000,
      numbered: false,
      discount: { type: 'PERCENT', value: 20 },
    });
    expect(order).toMatchObject({
      subtotal: 150_000,
      discountAmount: 30_000,
      serviceFee: 18_000,
      iva: 3_420,
      total: 141_420,
    });
  });

  test('a percentage discount ending in half a peso rounds up: 50 % of 10,001 = 5,000.5 → 5,001', () => {
    const order = priceOrder({
      unitPrice: 10_001,
      quantity: 1,
      feePolicy: NO_FEES,
      numbered: false,
      discount: { type: 'PERCENT', value: 50 },
    });
    expect(order).toMatchObject({ discountAmount: 5_001, total: 5_000 });
  });

  test('a percentage with two decimals: 12.5 % of 3 × 33,333 = 12,499.875 → 12,500', () => {
    const order = priceOrder({
      unitPrice: 33_333,
      quantity: 3,
      feePolicy: NO_FEES,
      numbered: false,
      discount: { type: 'PERCENT', value: 12.5 },
    });
    expect(order).toMatchObject({ subtotal: 99_999, discountAmount: 12_500, total: 87_499 });
  });

  test('a fixed discount larger than the subtotal is capped at it, and the order becomes free with no fee or IVA', () => {
    const order = priceOrder({
      unitPrice: 50_000,
      quantity: 3,
      feePolicy: { ...tenPercentPlus1000, seatingSurcharge: 2_000 },
      numbered: true,
      discount: { type: 'FIXED', value: 200_000 },
    });
    expect(order).toMatchObject({
      subtotal: 150_000,
      discountAmount: 150_000,
      serviceFee: 0,
      seatingSurcharge: 0,
      iva: 0,
      total: 0,
      free: true,
      organizerServiceFee: 0,
    });
  });

  test('a percentage above 100 or with more than two decimals is refused, not rounded', () => {
    const base = { unitPrice: 10_000, quantity: 1, feePolicy: NO_FEES, numbered: false };
    expect(() => priceOrder({ ...base, discount: { type: 'PERCENT', value: 100.01 } })).toThrow(RangeError);
    expect(() => priceOrder({ ...base, discount: { type: 'PERCENT', value: 12.345 } })).toThrow(RangeError);
    expect(() => priceOrder({ ...base, discount: { type: 'FIXED', value: 10.5 } })).toThrow(RangeError);
  });

  test('a quantity below 1 or fractional is refused', () => {
    const base = { unitPrice: 10_000, feePolicy: NO_FEES, numbered: false };
    expect(() => priceOrder({ ...base, quantity: 0 })).toThrow(RangeError);
    expect(() => priceOrder({ ...base, quantity: 1.5 })).toThrow(RangeError);
  });
});

describe('member pricing (rules 8 and 9), hand-computed examples', () => {
  test('a member discount is rounded per ticket: 12.5 % of 33,333 = 4,166.625 → 4,167 a ticket, 12,501 for three', () => {
    const order = priceOrder({
      unitPrice: 33_333,
      quantity: 3,
      feePolicy: NO_FEES,
      numbered: false,
      memberDiscountPercent: 12.5,
    });
    expect(order).toMatchObject({ subtotal: 99_999, discountAmount: 12_501, total: 87_498, appliedDiscount: 'MEMBER' });
    expect(memberDiscountPerTicket(33_333, 12.5)).toBe(4_167);
  });

  test('the member quote: 50,000 with a 10 % + 1,000 fee and 20 % off → 10,000 off, buyerTotal 47,140', () => {
    expect(
      quoteMemberUnit({ price: 50_000, feePolicy: tenPercentPlus1000, numbered: false, discountPercent: 20 }),
    ).toEqual({ discountPercent: 20, discountPerTicket: 10_000, buyerTotal: 47_140 });
    // The fee and IVA stay those of the list price: 6,000 and 1,140 a ticket.
    const order = priceOrder({
      unitPrice: 50_000,
      quantity: 2,
      feePolicy: tenPercentPlus1000,
      numbered: false,
      memberDiscountPercent: 20,
    });
    expect(order).toMatchObject({ discountAmount: 20_000, serviceFee: 12_000, iva: 2_280, total: 94_280 });
  });

  test('a 100 % member discount makes the order free, with no fee or IVA, and the member quote is 0', () => {
    const base = { unitPrice: 50_000, quantity: 2, feePolicy: tenPercentPlus1000, numbered: false };
    expect(priceOrder({ ...base, memberDiscountPercent: 100 })).toMatchObject({
      total: 0,
      serviceFee: 0,
      iva: 0,
      free: true,
      appliedDiscount: 'MEMBER',
    });
    expect(
      quoteMemberUnit({ price: 50_000, feePolicy: tenPercentPlus1000, numbered: false, discountPercent: 100 }),
    ).toMatchObject({ discountPerTicket: 50_000, buyerTotal: 0 });
  });

  test('no stacking: a code taking more than the member discount wins, and the member discount wins otherwise', () => {
    const base = { unitPrice: 50_000, quantity: 2, feePolicy: NO_FEES, numbered: false, memberDiscountPercent: 10 };
    expect(priceOrder({ ...base, discount: { type: 'PERCENT', value: 15 } })).toMatchObject({
      discountAmount: 15_000,
      appliedDiscount: 'CODE',
    });
    expect(priceOrder({ ...base, discount: { type: 'FIXED', value: 5_000 } })).toMatchObject({
      discountAmount: 10_000,
      appliedDiscount: 'MEMBER',
    });
  });

  test('a tie goes to the member discount (the code keeps its use) unless the code makes the order free', () => {
    const base = { unitPrice: 50_000, quantity: 2, feePolicy: NO_FEES, numbered: false };
    expect(
      priceOrder({ ...base, memberDiscountPercent: 10, discount: { type: 'FIXED', value: 10_000 } }),
    ).toMatchObject({ discountAmount: 10_000, appliedDiscount: 'MEMBER' });
    expect(
      priceOrder({ ...base, memberDiscountPercent: 100, discount: { type: 'PERCENT', value: 100 } }),
    ).toMatchObject({ total: 0, free: true, appliedDiscount: 'CODE' });
  });

  test('a member percentage above 100 or with more than two decimals is refused, not rounded', () => {
    const base = { unitPrice: 10_000, quantity: 1, feePolicy: NO_FEES, numbered: false };
    expect(() => priceOrder({ ...base, memberDiscountPercent: 100.01 })).toThrow(RangeError);
    expect(() => priceOrder({ ...base, memberDiscountPercent: 12.345 })).toThrow(RangeError);
  });
});

// ── Properties ────────────────────────────────────────────────────────────────────────────────────────────────

describe('pricing properties', () => {
  test('buyerTotal = price + buyerServiceFee + iva for every price, policy and seating', () => {
    fc.assert(
      fc.property(price, feePolicy, fc.boolean(), (p, policy, numbered) => {
        const q = quoteUnit({ price: p, feePolicy: policy, numbered });
        expect(q.buyerTotal).toBe(q.price + q.buyerServiceFee + q.iva);
        expect(q.price).toBe(p);
      }),
    );
  });

  test('IVA is 19 % of the buyer service fee, seating surcharge included, rounded half up', () => {
    fc.assert(
      fc.property(positivePrice, feePolicy, fc.boolean(), (p, policy, numbered) => {
        const q = quoteUnit({ price: p, feePolicy: policy, numbered });
        expect(q.iva).toBe(ivaOracle(q.buyerServiceFee));
        expect(q.seatingSurcharge).toBe(numbered ? policy.seatingSurcharge : 0);
      }),
    );
  });

  test('the service fee is the percentage of the list price (half up) plus the fixed fee, paid by exactly one side', () => {
    fc.assert(
      fc.property(positivePrice, feePolicy, fc.boolean(), (p, policy, numbered) => {
        const q = quoteUnit({ price: p, feePolicy: policy, numbered });
        const fee = Math.floor((2 * p * policy.serviceFeeBps + 10_000) / 20_000) + policy.serviceFeeFixed;
        expect(q.buyerServiceFee - q.seatingSurcharge + q.organizerServiceFee).toBe(fee);
        expect(policy.feeAbsorbedByOrganizer ? q.buyerServiceFee - q.seatingSurcharge : q.organizerServiceFee).toBe(0);
      }),
    );
  });

  test('an absorbed fee on a numbered type leaves the buyer fee equal to the seating surcharge only', () => {
    fc.assert(
      fc.property(positivePrice, feePolicy, (p, policy) => {
        const q = quoteUnit({ price: p, feePolicy: { ...policy, feeAbsorbedByOrganizer: true }, numbered: true });
        expect(q.buyerServiceFee).toBe(policy.seatingSurcharge);
        expect(q.seatingSurcharge).toBe(policy.seatingSurcharge);
        expect(q.iva).toBe(ivaOracle(policy.seatingSurcharge));
      }),
    );
  });

  test('rounding never loses or creates a peso across quantity 1–30: without a discount the order is q × the quote', () => {
    fc.assert(
      fc.property(positivePrice, quantity, feePolicy, fc.boolean(), (p, q, policy, numbered) => {
        const order = priceOrder({ unitPrice: p, quantity: q, feePolicy: policy, numbered });
        const unit = quoteUnit({ price: p, feePolicy: policy, numbered });
        expect(order.unit).toEqual(unit);
        expect(order.subtotal).toBe(q * unit.price);
        expect(order.serviceFee).toBe(q * unit.buyerServiceFee);
        expect(order.seatingSurcharge).toBe(q * unit.seatingSurcharge);
        expect(order.iva).toBe(q * unit.iva);
        expect(order.organizerServiceFee).toBe(q * unit.organizerServiceFee);
        expect(order.total).toBe(q * unit.buyerTotal);
        expect(order.free).toBe(false);
      }),
    );
  });

  test('discounts never make a total negative and never exceed the ticket subtotal', () => {
    fc.assert(
      fc.property(price, quantity, feePolicy, fc.boolean(), discount, (p, q, policy, numbered, d) => {
        const order = priceOrder({ unitPrice: p, quantity: q, feePolicy: policy, numbered, discount: d });
        expect(order.discountAmount).toBeGreaterThanOrEqual(0);
        expect(order.discountAmount).toBeLessThanOrEqual(order.subtotal);
        expect(order.total).toBeGreaterThanOrEqual(0);
        expect(order.total).toBe(order.subtotal - order.discountAmount + order.serviceFee + order.iva);
        expect(Number.isSafeInteger(order.total)).toBe(true);
      }),
    );
  });

  test('a discount touches only the ticket subtotal: a paying order keeps the full per-ticket fee and IVA', () => {
    fc.assert(
      fc.property(positivePrice, quantity, feePolicy, fc.boolean(), discount, (p, q, policy, numbered, d) => {
        const plain = priceOrder({ unitPrice: p, quantity: q, feePolicy: policy, numbered });
        const discounted = priceOrder({ unitPrice: p, quantity: q, feePolicy: policy, numbered, discount: d });
        fc.pre(!discounted.free);
        expect(discounted.serviceFee).toBe(plain.serviceFee);
        expect(discounted.iva).toBe(plain.iva);
        expect(discounted.total).toBe(plain.total - discounted.discountAmount);
      }),
    );
  });

  test('a 100 % discount makes the order free: total 0, no fee, no IVA', () => {
    fc.assert(
      fc.property(price, quantity, feePolicy, fc.boolean(), (p, q, policy, numbered) => {
        const order = priceOrder({
          unitPrice: p,
          quantity: q,
          feePolicy: policy,
          numbered,
          discount: { type: 'PERCENT', value: 100 },
        });
        expect(order).toMatchObject({ discountAmount: order.subtotal, serviceFee: 0, iva: 0, total: 0, free: true });
        expect(order.organizerServiceFee).toBe(0);
      }),
    );
  });

  test('an order is free exactly when the discounted subtotal is 0', () => {
    fc.assert(
      fc.property(price, quantity, feePolicy, fc.boolean(), fc.option(discount), (p, q, policy, numbered, d) => {
        const order = priceOrder({ unitPrice: p, quantity: q, feePolicy: policy, numbered, discount: d });
        expect(order.free).toBe(order.subtotal - order.discountAmount === 0);
        if (order.free) expect(order.total).toBe(0);
        else expect(order.total).toBeGreaterThan(0);
      }),
    );
  });

  test('a larger percentage never discounts less', () => {
    fc.assert(
      fc.property(
        positivePrice,
        quantity,
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        (p, q, a, b) => {
          const [low, high] = a <= b ? [a, b] : [b, a];
          const base = { unitPrice: p, quantity: q, feePolicy: NO_FEES, numbered: false };
          const lowOrder = priceOrder({ ...base, discount: { type: 'PERCENT', value: low / 100 } });
          const highOrder = priceOrder({ ...base, discount: { type: 'PERCENT', value: high / 100 } });
          expect(highOrder.discountAmount).toBeGreaterThanOrEqual(lowOrder.discountAmount);
        },
      ),
    );
  });
});

describe('member pricing properties', () => {
  test('a member order is quantity × the member quote, for every price, policy, seating, quantity 1–30 and percent', () => {
    fc.assert(
      fc.property(price, quantity, feePolicy, fc.boolean(), memberPercent, (p, q, policy, numbered, percent) => {
        const quote = quoteMemberUnit({ price: p, feePolicy: policy, numbered, discountPercent: percent });
        const order = priceOrder({
          unitPrice: p,
          quantity: q,
          feePolicy: policy,
          numbered,
          memberDiscountPercent: percent,
        });
        expect(order.total).toBe(q * quote.buyerTotal);
        expect(order.discountAmount).toBe(q * quote.discountPerTicket);
        expect(order.appliedDiscount).toBe('MEMBER');
      }),
    );
  });

  test('the member quote takes the discount off the list price only; fees and IVA stay unless the ticket is free', () => {
    fc.assert(
      fc.property(price, feePolicy, fc.boolean(), memberPercent, (p, policy, numbered, percent) => {
        const unit = quoteUnit({ price: p, feePolicy: policy, numbered });
        const member = quoteMemberUnit({ price: p, feePolicy: policy, numbered, discountPercent: percent });
        // Independent oracle: half-up of p × percent / 100 in plain integers (exact for these ranges).
        const bps = Math.round(percent * 100);
        expect(member.discountPerTicket).toBe(Math.floor((2 * p * bps + 10_000) / 20_000));
        expect(member.discountPerTicket).toBeLessThanOrEqual(p);
        if (member.discountPerTicket === p) expect(member.buyerTotal).toBe(0);
        else expect(member.buyerTotal).toBe(p - member.discountPerTicket + unit.buyerServiceFee + unit.iva);
      }),
    );
  });

  test('member and code never stack: the order gets the larger discount, so it pays the lower of the two totals', () => {
    fc.assert(
      fc.property(
        price,
        quantity,
        feePolicy,
        fc.boolean(),
        memberPercent,
        discount,
        (p, q, policy, numbered, percent, code) => {
          const base = { unitPrice: p, quantity: q, feePolicy: policy, numbered };
          const both = priceOrder({ ...base, discount: code, memberDiscountPercent: percent });
          const codeOnly = priceOrder({ ...base, discount: code });
          const memberOnly = priceOrder({ ...base, memberDiscountPercent: percent });
          expect(both.discountAmount).toBe(Math.max(codeOnly.discountAmount, memberOnly.discountAmount));
          expect(both.total).toBe(Math.min(codeOnly.total, memberOnly.total));
          const winner = both.appliedDiscount === 'CODE' ? codeOnly : memberOnly;
          expect(both).toEqual({ ...winner, appliedDiscount: both.appliedDiscount });
          if (both.appliedDiscount === 'MEMBER') {
            const quote = quoteMemberUnit({ price: p, feePolicy: policy, numbered, discountPercent: percent });
            expect(both.total).toBe(q * quote.buyerTotal);
          }
          // Ties: the member discount, unless the code makes the order free.
          if (codeOnly.discountAmount === memberOnly.discountAmount) {
            expect(both.appliedDiscount).toBe(codeOnly.free ? 'CODE' : 'MEMBER');
          }
        },
      ),
    );
  });

  test('the free rule holds with member discounts and codes: free exactly when the discounted subtotal is 0', () => {
    fc.assert(
      fc.property(
        price,
        quantity,
        feePolicy,
        fc.boolean(),
        fc.option(memberPercent),
        fc.option(discount),
        (p, q, policy, numbered, percent, code) => {
          const order = priceOrder({
            unitPrice: p,
            quantity: q,
            feePolicy: policy,
            numbered,
            discount: code,
            memberDiscountPercent: percent,
          });
          expect(order.free).toBe(order.subtotal - order.discountAmount === 0);
          expect(order.total).toBe(order.subtotal - order.discountAmount + order.serviceFee + order.iva);
          if (order.free) {
            expect(order).toMatchObject({
              total: 0,
              serviceFee: 0,
              iva: 0,
              seatingSurcharge: 0,
              organizerServiceFee: 0,
            });
          } else {
            expect(order.total).toBeGreaterThan(0);
            expect(order.serviceFee).toBe(q * order.unit.buyerServiceFee);
            expect(order.iva).toBe(q * order.unit.iva);
          }
        },
      ),
    );
  });
});

describe('fee policy resolution', () => {
  test('a ticket type override replaces only the fields it sets', () => {
    expect(resolveFeePolicy(tenPercentPlus1000, { feeAbsorbedByOrganizer: true, serviceFeeFixed: 0 })).toEqual({
      serviceFeeBps: 1000,
      serviceFeeFixed: 0,
      feeAbsorbedByOrganizer: true,
      seatingSurcharge: 0,
    });
    expect(resolveFeePolicy(tenPercentPlus1000, null)).toEqual(tenPercentPlus1000);
  });

  test('a policy with a fee above 100 % or a negative fixed fee is refused', () => {
    expect(() => resolveFeePolicy(tenPercentPlus1000, { serviceFeeBps: 10_001 })).toThrow(RangeError);
    expect(() => resolveFeePolicy(tenPercentPlus1000, { serviceFeeFixed: -1 })).toThrow(RangeError);
  });
});
