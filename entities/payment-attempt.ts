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
  // The reconciler's bounded sweeps (activities/reconciler.ts, reconciler-listings.ts) read through these.
  indexes: [
    // Approved payment records in the order the stranded-payment sweep walks them (created_at, id); the predicate is
    // the sweep's own (the kinds that record money taken, gateway A's and B's spellings of approved).
    {
      name: 'payment_attempts_approved_walk_index',
      expression: `create index "payment_attempts_approved_walk_index" on "payment_attempts" ("created_at", "id") where "kind" in ('CARD', 'NOTIFICATION', 'STATUS_CHECK', 'LATE_PAYMENT') and "provider_payment_id" is not null and (("gateway" = 'GATEWAY_A' and "status" = 'approved') or ("gateway" = 'GATEWAY_B' and "status" in ('APPROVED', 'SALE_APPROVED')))`,
    },
    // Refunds of a payment, by its id: "was this payment given back (or refused for good)?".
    {
      name: 'payment_attempts_refund_payment_index',
      expression: `create index "payment_attempts_refund_payment_index" on "payment_attempts" ("provider_payment_id", "status") where "kind" = 'REFUND'`,
    },
    // Done refunds of a sale: the overdue-refunds listing's "was it given back?" probe, by the sale's key.
    {
      name: 'payment_attempts_refund_done_index',
      expression: `create index "payment_attempts_refund_done_index" on "payment_attempts" ("sale_id") where "kind" = 'REFUND' and "status" in ('refunded', 'VOIDED', 'VOID_APPROVED', 'FT_REFUNDED_OFFLINE')`,
    },
    // Refund rows not (yet) done, oldest first: the overdue-refunds listing reads only these.
    {
      name: 'payment_attempts_refund_open_index',
      expression: `create index "payment_attempts_refund_open_index" on "payment_attempts" ("created_at") where "kind" = 'REFUND' and ("status" is null or "status" not in ('refunded', 'VOIDED', 'VOID_APPROVED', 'FT_REFUNDED_OFFLINE'))`,
    },
  ],
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
    /**
     * The idempotency key this service sent the gateway with the request that made the payment (card charges): a
     * repeated charge request finds the payment it made by it.
     */
    requestKey: p.string().length(200).nullable(),
    note: p.string().length(300).nullable(),
    /**
     * On the organizer's refund request (`refund-request:<saleId>`): whether the organizer asked for the buyer's
     * courtesy email, so a refund execution the reconciler starts again (it ended before recording the refund) keeps
     * that choice. Null on every other row, and on requests recorded before it was kept: no email then.
     */
    notifyBuyer: p.boolean().nullable(),
    createdAt: p.datetime().columnType('timestamptz'),
  },
});
export type IPaymentAttempt = InferEntity<typeof PaymentAttempt>;
