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
