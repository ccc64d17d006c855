import { z } from 'zod';

/** A text field a provider may send as a string, null or not at all; read as string or null. */
export const nullableString = z
  .string()
  .nullish()
  .transform((value) => value ?? null);
