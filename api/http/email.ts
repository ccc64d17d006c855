import { z } from 'zod';

/**
 * An email address someone types to sign in or sign up: at most 254 characters (RFC 5321's path limit) and kept in
 * lower case, so one inbox is one account and one rate-limit key whatever case it was typed in.
 */
export const EmailSchema = z
  .email()
  .max(254)
  .transform((value) => value.toLowerCase());
