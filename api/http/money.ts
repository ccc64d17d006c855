import { z } from 'zod';

/** Said on every money field of the OpenAPI documents, so no integrator reads 85000 as 850.00. */
export const MINOR_UNITS_NOTE = 'Integer, minor units';

/**
 * An amount of money in an API schema: an integer in the currency's minor unit (domain/money.ts), described as such
 * with a realistic example. Examples are COP, which has no minor unit here: 85000 is COP 85.000.
 */
export const minorUnits = (description: string, example: number) =>
  z
    .number()
    .int()
    .meta({ description: `${description}. ${MINOR_UNITS_NOTE}`, examples: [example] });

/**
 * The largest per-ticket amount (a list price, a fixed service fee, a seating surcharge) the API takes. Sales store
 * their amounts in 32-bit integer columns (entities/sale.ts), and the largest order (30 tickets, each at this price
 * with this surcharge, a 100 % fee plus this fixed fee, and IVA on the fee) must still fit one: 30 × 4.38 × 10 000 000
 * is about 1.3 × 10⁹, under 2³¹ − 1. A larger amount would pass the schema and fail the insert with a 500.
 */
export const MAX_UNIT_AMOUNT = 10_000_000;

/** The largest ticket subtotal an order can reach (30 tickets at MAX_UNIT_AMOUNT): no fixed discount takes more. */
export const MAX_ORDER_SUBTOTAL = 30 * MAX_UNIT_AMOUNT;
