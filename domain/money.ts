/**
 * Money in integer minor units.
 *
 * Every amount the service stores, compares or charges is a non-negative safe integer in the currency's minor
 * unit. A currency's exponent says how many minor units make one major unit: COP has exponent 0 here (pesos carry
 * no cents in practice, and gateway B takes whole pesos), USD/EUR/MXN have 2. Conversion to a major-unit number
 * happens only at the edge that needs one (gateway A's `amount`), through `toMajorUnits`.
 *
 * Rounding rule (the only one in the service): a fraction of an amount is computed with `mulDivRoundHalfUp(a, num,
 * den)` = round(a × num / den), ties rounded up (away from zero, as all operands are non-negative). It is exact
 * integer arithmetic (BigInt inside), never floating point, so the same inputs give the same result on every
 * machine and in workflow replay.
 *
 * Pure: no I/O, no clock, no randomness. Safe to import from Temporal workflow code.
 */

/** An amount in a currency's minor unit: a non-negative safe integer. */
export type MinorUnits = number;

export interface CurrencyInfo {
  /** ISO 4217 code. */
  readonly code: string;
  /** Minor units per major unit = 10^exponent. */
  readonly exponent: number;
}

export const CURRENCIES = {
  COP: { code: 'COP', exponent: 0 },
  USD: { code: 'USD', exponent: 2 },
  EUR: { code: 'EUR', exponent: 2 },
  MXN: { code: 'MXN', exponent: 2 },
  PEN: { code: 'PEN', exponent: 2 },
  BRL: { code: 'BRL', exponent: 2 },
  ARS: { code: 'ARS', exponent: 2 },
  CLP: { code: 'CLP', exponent: 0 },
} as const satisfies Record<string, CurrencyInfo>;

export type CurrencyCode = keyof typeof CURRENCIES;

export const CURRENCY_CODES = Object.keys(CURRENCIES) as CurrencyCode[];

export const isCurrencyCode = (value: string): value is CurrencyCode => Object.hasOwn(CURRENCIES, value);

export const currencyExponent = (currency: CurrencyCode): number => CURRENCIES[currency].exponent;

/** True when `value` is a valid amount: a safe integer ≥ 0. */
export const isMinorUnits = (value: unknown): value is MinorUnits =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * Returns `value` when it is a valid amount, otherwise throws a RangeError naming `label`. Input from clients is
 * validated at the API edge; this guards the domain's own invariants.
 */
export function assertMinorUnits(value: number, label = 'amount'): MinorUnits {
  if (!isMinorUnits(value)) {
    throw new RangeError(`${label} must be a non-negative safe integer in minor units, got ${String(value)}`);
  }
  return value;
}

/** Sum of amounts; throws when the sum leaves the safe-integer range. */
export function addMinor(...amounts: readonly MinorUnits[]): MinorUnits {
  let total = 0;
  for (const amount of amounts) total += assertMinorUnits(amount);
  return assertMinorUnits(total, 'sum');
}

/** `a − b`; throws when the result would be negative. */
export function subtractMinor(a: MinorUnits, b: MinorUnits): MinorUnits {
  return assertMinorUnits(assertMinorUnits(a) - assertMinorUnits(b), 'difference');
}

/** `amount × factor` for a non-negative integer factor (a quantity); throws on overflow. */
export function multiplyMinor(amount: MinorUnits, factor: number): MinorUnits {
  assertMinorUnits(amount);
  assertMinorUnits(factor, 'factor');
  return assertMinorUnits(amount * factor, 'product');
}

/**
 * round(a × num / den) with ties rounded up, in exact integer arithmetic.
 * All of `a`, `num` are non-negative safe integers and `den` a positive safe integer.
 * floor((2·a·num + den) / (2·den)) equals floor(a·num/den + ½), i.e. half-up rounding.
 */
export function mulDivRoundHalfUp(a: number, num: number, den: number): MinorUnits {
  assertMinorUnits(a, 'a');
  assertMinorUnits(num, 'num');
  if (!Number.isSafeInteger(den) || den <= 0) throw new RangeError(`den must be a positive safe integer, got ${den}`);
  const bigDen = BigInt(den);
  const result = (2n * BigInt(a) * BigInt(num) + bigDen) / (2n * bigDen);
  if (result > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`${a} × ${num} / ${den} is not a safe integer`);
  return Number(result);
}

/** Basis points per whole: 10,000 bps = 100 %. */
export const BPS_PER_UNIT = 10_000;

/** `bps` basis points of `amount`, rounded half up. */
export const applyBps = (amount: MinorUnits, bps: number): MinorUnits => mulDivRoundHalfUp(amount, bps, BPS_PER_UNIT);

/**
 * A percentage (0–100, at most two decimals, e.g. 12.5) as basis points (1250). Throws for values outside 0–100
 * or with finer precision than a basis point, so a stored percentage never rounds silently.
 */
export function percentToBps(percent: number): number {
  if (!Number.isFinite(percent) || percent < 0 || percent > 100) {
    throw new RangeError(`percent must be between 0 and 100, got ${percent}`);
  }
  const bps = Math.round(percent * 100);
  // Division is correctly rounded, so bps / 100 is the double nearest to the two-decimal value: equality means
  // `percent` was exactly that value (0.29 → 29 bps passes; 0.125 fails).
  if (bps / 100 !== percent) {
    throw new RangeError(`percent allows at most two decimals, got ${percent}`);
  }
  return bps;
}

/**
 * An amount as a number of major units, for providers that take one (gateway A's `amount`).
 * 5000000 USD cents → 50000; 50000 COP → 50000. Exact for every safe amount at exponent ≤ 2 once printed as JSON.
 */
export function toMajorUnits(minor: MinorUnits, currency: CurrencyCode): number {
  assertMinorUnits(minor);
  const exponent = currencyExponent(currency);
  return exponent === 0 ? minor : minor / 10 ** exponent;
}

/**
 * A major-unit number from a provider (e.g. `transaction_amount: 50000.0`) back in minor units.
 * Throws when it is negative, not finite, or has more decimals than the currency allows, so a mismatched amount
 * is never rounded into a match.
 */
export function fromMajorUnits(major: number, currency: CurrencyCode): MinorUnits {
  if (!Number.isFinite(major) || major < 0) throw new RangeError(`major amount must be ≥ 0, got ${major}`);
  const minor = assertMinorUnits(Math.round(major * 10 ** currencyExponent(currency)));
  // Round trip: `toMajorUnits` divides exactly once (correctly rounded), so it reproduces the parsed number iff
  // the provider's amount had no more decimals than the currency's exponent.
  if (toMajorUnits(minor, currency) !== major) {
    throw new RangeError(`${major} has more decimals than ${currency} allows`);
  }
  return minor;
}

/**
 * Human-readable amount for emails, statements and PDFs: "$ 50.000" for COP in es-CO, "US$ 12,34" for USD.
 * Always shows exactly the currency's exponent of decimals (COP never shows ",00").
 */
export function formatMoney(minor: MinorUnits, currency: CurrencyCode, locale = 'es-CO'): string {
  const exponent = currencyExponent(currency);
  return new Intl.NumberFormat(locale, {
    style: 'currency',
    currency,
    minimumFractionDigits: exponent,
    maximumFractionDigits: exponent,
  }).format(toMajorUnits(minor, currency));
}
