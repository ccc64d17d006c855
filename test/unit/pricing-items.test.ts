import fc from 'fast-check';
import { type FeePolicy, priceOrder, priceOrderItems, quoteMemberUnit, quoteUnit } from '../../domain/pricing.js';

const feePolicy: fc.Arbitrary<FeePolicy> = fc.record({
  serviceFeeBps: fc.integer({ min: 0, max: 10_000 }),
  serviceFeeFixed: fc.integer({ min: 0, max: 200_000 }),
  feeAbsorbedByOrganizer: fc.boolean(),
  seatingSurcharge: fc.integer({ min: 0, max: 100_000 }),
});
const item = fc.record({
  unitPrice: fc.integer({ min: 0, max: 20_000_000 }),
  quantity: fc.integer({ min: 1, max: 30 }),
  feePolicy,
  numbered: fc.boolean(),
});
const items = fc.array(item, { minLength: 1, maxLength: 10 });

describe('an order of several items (domain/pricing.ts rule 10)', () => {
  test('the charge equals Σ quantity × buyerTotal of each item’s quote: the quote/charge equality holds per order', () => {
    fc.assert(
      fc.property(items, (lines) => {
        const price = priceOrderItems(lines);
        const quoted = lines.reduce(
          (sum, line) =>
            sum +
            line.quantity *
              quoteUnit({ price: line.unitPrice, feePolicy: line.feePolicy, numbered: line.numbered }).buyerTotal,
          0,
        );
        expect(price.total).toBe(quoted);
        expect(price.subtotal - price.discountAmount + price.serviceFee + price.iva).toBe(price.total);
      }),
    );
  });

  test('with a member discount each item is discounted per ticket: the charge is Σ quantity × member buyerTotal', () => {
    const percent = fc.integer({ min: 0, max: 10_000 }).map((bps) => bps / 100);
    fc.assert(
      fc.property(items, percent, (lines, memberDiscountPercent) => {
        const price = priceOrderItems(lines.map((line) => ({ ...line, memberDiscountPercent })));
        const quoted = lines.reduce(
          (sum, line) =>
            sum +
            line.quantity *
              quoteMemberUnit({
                price: line.unitPrice,
                feePolicy: line.feePolicy,
                numbered: line.numbered,
                discountPercent: memberDiscountPercent,
              }).buyerTotal,
          0,
        );
        expect(price.total).toBe(quoted);
      }),
    );
  });

  test('every stored amount is the sum of the items’ own prices', () => {
    fc.assert(
      fc.property(items, (lines) => {
        const price = priceOrderItems(lines);
        const each = lines.map((line) => priceOrder(line));
        for (const field of ['subtotal', 'discountAmount', 'serviceFee', 'iva', 'organizerServiceFee'] as const) {
          expect(price[field]).toBe(each.reduce((sum, one) => sum + one[field], 0));
        }
        expect(price.items).toEqual(each);
      }),
    );
  });

  test('the order is free only when every item is: a free ticket next to a paid one is charged for the paid one', () => {
    const policy: FeePolicy = {
      serviceFeeBps: 1000,
      serviceFeeFixed: 0,
      feeAbsorbedByOrganizer: false,
      seatingSurcharge: 0,
    };
    const mixed = priceOrderItems([
      { unitPrice: 0, quantity: 2, feePolicy: policy, numbered: false },
      { unitPrice: 40_000, quantity: 1, feePolicy: policy, numbered: false },
    ]);
    expect(mixed).toMatchObject({ free: false, subtotal: 40_000, serviceFee: 4_000, iva: 760, total: 44_760 });
    const allFree = priceOrderItems([
      { unitPrice: 0, quantity: 2, feePolicy: policy, numbered: false },
      { unitPrice: 0, quantity: 1, feePolicy: policy, numbered: true },
    ]);
    expect(allFree).toMatchObject({ free: true, total: 0 });
  });

  test('a discount code is a per-order rule: several items with a code are refused, one item with a code is priced', () => {
    const line = {
      unitPrice: 10_000,
      quantity: 1,
      feePolicy: { serviceFeeBps: 0, serviceFeeFixed: 0, feeAbsorbedByOrganizer: false, seatingSurcharge: 0 },
      numbered: false,
    };
    const discount = { type: 'FIXED' as const, value: 5_000 };
    expect(() => priceOrderItems([{ ...line, discount }, line])).toThrow(RangeError);
    expect(priceOrderItems([{ ...line, discount }]).total).toBe(5_000);
    expect(() => priceOrderItems([])).toThrow(RangeError);
  });
});
