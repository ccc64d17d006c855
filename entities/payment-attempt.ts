import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { PAYMENT_PROVIDERS, Sale } from './sale.js';

export const PAYMENT_ATTEMPT_KINDS = [
  'OPEN',
  'CARD',
  'PSE',
  'NOTIFICATION',
  'STATUS_CHECK',
  'REFUND',
  'LATE_PAYMENT',
] as const;

/** Every interaction with a gateway about a sale, for GET /sales/{id}/attempts. No card data is ever stored. */
export const PaymentAttempt = defineEntity({
  name: 'PaymentAttempt',
  tableName: 'payment_attempts',
  properties: {
    id: p.string().columnType('uuid').primary(),
    sale: () => p.manyToOne(Sale).mapToPk().deleteRule('cascade').index(),
    gateway: p.enum(PAYMENT_PROVIDERS),
    kind: p.enum(PAYMENT_ATTEMPT_KINDS),
    providerPaymentId: p.string().length(120).nullable(),
    status: p.string().length(60).nullable(),
    statusDetail: p.string().length(120).nullable(),
    amount: p.integer().nullable(),
    /** Deduplicates notifications: the same provider event recorded twice is one row. */
    dedupeKey: p.string().length(200).nullable().unique(),
    note: p.string().length(300).nullable(),
    createdAt: p.datetime().columnType('timestamptz'),
  },
});
export type IPaymentAttempt = InferEntity<typeof PaymentAttempt>;
