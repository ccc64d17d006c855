import { createHash } from 'node:crypto';

/** A digest that names a card token without storing it. */
export const cardTokenDigest = (cardToken: string): string =>
  createHash('sha256').update(cardToken).digest('hex').slice(0, 24);

/**
 * The idempotency key a card charge is sent to gateway A with: one per sale and card token, so the same token sent
 * again (a retry after a lost answer) is the same payment at the gateway, and the sale's payment history can tell
 * which charge a repeated request made.
 */
export const cardChargeKey = (saleId: string, cardToken: string): string =>
  `card-${saleId}-${cardTokenDigest(cardToken)}`;
