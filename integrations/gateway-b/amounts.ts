import { assertMinorUnits, currencyExponent, isCurrencyCode, type MinorUnits } from '../../domain/money.js';

/**
 * Gateway B (Bold) amounts. The button's amount, the integrity signature over it, and the totals the gateway reports
 * back (payment voucher, webhooks) are integers in the gateway's own unit per currency: whole pesos for COP, cents
 * for USD; it takes no other currency. Our amounts are integer minor units at the exponent of domain/money.ts.
 * Everything that crosses to or from gateway B goes through this pair, so the amount a buyer is asked to pay and the
 * amount checked on the way back are the same conversion read in both directions.
 */

/** Gateway B's decimal places per currency: its integer × 10^-exponent is the amount in major units. */
export const GATEWAY_B_EXPONENTS = { COP: 0, USD: 2 } as const;

export type GatewayBCurrency = keyof typeof GATEWAY_B_EXPONENTS;

export const isGatewayBCurrency = (currency: string): currency is GatewayBCurrency =>
  Object.hasOwn(GATEWAY_B_EXPONENTS, currency);

/** Gateway B's exponent minus ours; null for a currency one of the two does not know. */
function shiftOf(currency: string): number | null {
  if (!isGatewayBCurrency(currency) || !isCurrencyCode(currency)) return null;
  return GATEWAY_B_EXPONENTS[currency] - currencyExponent(currency);
}

/** `amount × 10^shift` when that is an exact safe integer; null otherwise (never rounded). */
function rescale(amount: number, shift: number): number | null {
  if (!Number.isSafeInteger(amount) || amount < 0) return null;
  const factor = 10 ** Math.abs(shift);
  if (shift >= 0) {
    const scaled = amount * factor;
    return Number.isSafeInteger(scaled) ? scaled : null;
  }
  return amount % factor === 0 ? amount / factor : null;
}

/**
 * The integer gateway B charges for `minor` units of `currency`. Throws a RangeError for a currency gateway B does
 * not take, or an amount it cannot charge exactly (a fraction of its unit).
 */
export function toGatewayBAmount(minor: MinorUnits, currency: string): number {
  assertMinorUnits(minor);
  const shift = shiftOf(currency);
  if (shift === null) throw new RangeError(`gateway B does not charge ${currency}`);
  const amount = rescale(minor, shift);
  if (amount === null) throw new RangeError(`${minor} ${currency} minor units is not a whole gateway B amount`);
  return amount;
}

/**
 * Our minor units for an amount gateway B reports in `currency`. Null when the currency is not one gateway B charges
 * or the amount is not a whole number of our minor units: such an amount matches no sale.
 */
export function fromGatewayBAmount(amount: number, currency: string): MinorUnits | null {
  const shift = shiftOf(currency);
  return shift === null ? null : rescale(amount, -shift);
}
