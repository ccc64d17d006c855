import fc from 'fast-check';
import {
  addMinor,
  applyBps,
  assertMinorUnits,
  CURRENCY_CODES,
  currencyExponent,
  formatMoney,
  fromMajorUnits,
  isCurrencyCode,
  isMinorUnits,
  mulDivRoundHalfUp,
  multiplyMinor,
  percentToBps,
  subtractMinor,
  toMajorUnits,
} from '../../domain/money.js';

describe('amounts are non-negative safe integers in minor units', () => {
  test('negative, fractional, unsafe and non-finite amounts are refused', () => {
    for (const bad of [-1, 0.5, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(isMinorUnits(bad)).toBe(false);
      expect(() => assertMinorUnits(bad)).toThrow(RangeError);
    }
    expect(isMinorUnits('5')).toBe(false);
    expect(isMinorUnits(0)).toBe(true);
    expect(isMinorUnits(Number.MAX_SAFE_INTEGER)).toBe(true);
  });

  test('arithmetic refuses to go negative or past the safe-integer range', () => {
    expect(addMinor(1, 2, 3)).toBe(6);
    expect(subtractMinor(5, 5)).toBe(0);
    expect(() => subtractMinor(4, 5)).toThrow(RangeError);
    expect(() => addMinor(Number.MAX_SAFE_INTEGER, 1)).toThrow(RangeError);
    expect(() => multiplyMinor(Number.MAX_SAFE_INTEGER, 2)).toThrow(RangeError);
    expect(() => multiplyMinor(10, 1.5)).toThrow(RangeError);
  });
});

describe('rounding rule: mulDivRoundHalfUp rounds half up in exact integer arithmetic', () => {
  test('examples: ties go up, everything else to the nearest integer', () => {
    expect(mulDivRoundHalfUp(5, 1, 2)).toBe(3); // 2.5 → 3
    expect(mulDivRoundHalfUp(7, 1, 2)).toBe(4); // 3.5 → 4
    expect(mulDivRoundHalfUp(10_010, 500, 10_000)).toBe(501); // 500.5 → 501
    expect(mulDivRoundHalfUp(501, 1900, 10_000)).toBe(95); // 95.19 → 95
    expect(mulDivRoundHalfUp(99_999, 1250, 10_000)).toBe(12_500); // 12,499.875 → 12,500
    expect(mulDivRoundHalfUp(0, 1900, 10_000)).toBe(0);
    expect(applyBps(6_000, 1900)).toBe(1_140);
  });

  test('the result r is the nearest integer to a·num/den, ties up: (2r−1)·den ≤ 2·a·num < (2r+1)·den', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 1, max: 100_000 }),
        (a, num, den) => {
          const exact = BigInt(a) * BigInt(num);
          fc.pre(exact / BigInt(den) < BigInt(Number.MAX_SAFE_INTEGER));
          const r = BigInt(mulDivRoundHalfUp(a, num, den));
          expect((2n * r - 1n) * BigInt(den) <= 2n * exact).toBe(true);
          expect(2n * exact < (2n * r + 1n) * BigInt(den)).toBe(true);
        },
      ),
    );
  });

  test('a result outside the safe-integer range and a zero or negative denominator are refused', () => {
    expect(() => mulDivRoundHalfUp(Number.MAX_SAFE_INTEGER, 2, 1)).toThrow(RangeError);
    expect(() => mulDivRoundHalfUp(1, 1, 0)).toThrow(RangeError);
    expect(() => mulDivRoundHalfUp(-1, 1, 1)).toThrow(RangeError);
  });
});

describe('percentages', () => {
  test('a percentage with at most two decimals converts exactly to basis points', () => {
    expect(percentToBps(0)).toBe(0);
    expect(percentToBps(100)).toBe(10_000);
    expect(percentToBps(12.5)).toBe(1250);
    expect(percentToBps(0.29)).toBe(29);
    fc.assert(fc.property(fc.integer({ min: 0, max: 10_000 }), (bps) => expect(percentToBps(bps / 100)).toBe(bps)));
  });

  test('a percentage outside 0–100 or finer than a basis point is refused', () => {
    for (const bad of [-0.01, 100.01, 12.345, Number.NaN]) expect(() => percentToBps(bad)).toThrow(RangeError);
  });
});

describe('currencies and major units', () => {
  test('each currency has its exponent: COP 0, CLP 0, USD/EUR/MXN 2', () => {
    expect(currencyExponent('COP')).toBe(0);
    expect(currencyExponent('CLP')).toBe(0);
    expect(currencyExponent('USD')).toBe(2);
    expect(currencyExponent('EUR')).toBe(2);
    expect(currencyExponent('MXN')).toBe(2);
    expect(isCurrencyCode('COP')).toBe(true);
    expect(isCurrencyCode('cop')).toBe(false);
    expect(isCurrencyCode('toString')).toBe(false);
  });

  test("gateway A's major-unit amount: 57,140 COP → 57140, 2,273 USD cents → 22.73", () => {
    expect(toMajorUnits(57_140, 'COP')).toBe(57_140);
    expect(toMajorUnits(2_273, 'USD')).toBe(22.73);
    expect(toMajorUnits(5, 'EUR')).toBe(0.05);
  });

  test('major units round-trip back to the same minor amount for every currency', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000_000_000 }),
        fc.constantFrom(...CURRENCY_CODES),
        (minor, currency) => {
          expect(fromMajorUnits(toMajorUnits(minor, currency), currency)).toBe(minor);
          expect(fromMajorUnits(JSON.parse(JSON.stringify(toMajorUnits(minor, currency))), currency)).toBe(minor);
        },
      ),
    );
  });

  test('a provider amount with more decimals than the currency allows is refused, not rounded', () => {
    expect(fromMajorUnits(50_000.0, 'COP')).toBe(50_000);
    expect(() => fromMajorUnits(50_000.5, 'COP')).toThrow(RangeError);
    expect(() => fromMajorUnits(22.735, 'USD')).toThrow(RangeError);
    expect(() => fromMajorUnits(-1, 'USD')).toThrow(RangeError);
  });

  test('formatMoney shows exactly the currency exponent of decimals', () => {
    const normalise = (s: string) => s.replace(/\s/g, ' ');
    expect(normalise(formatMoney(57_140, 'COP'))).toBe('$ 57.140');
    expect(normalise(formatMoney(2_273, 'USD', 'en-US'))).toBe('$22.73');
    expect(normalise(formatMoney(2_200, 'USD', 'en-US'))).toBe('$22.00');
  });
});
