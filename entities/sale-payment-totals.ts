import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Sale } from './sale.js';

/**
 * What the gateways did with a sale's money, folded from its payment attempts: a row per sale that has any attempt.
 * Written only by the database (trigger `refresh_sale_payment_totals` on payment_attempts, in the same transaction
 * as the attempt), so reconciliation reads one narrow row per sale instead of re-aggregating every attempt of the
 * period; the folding rules live in that trigger's SQL function (see the migration that created it).
 */
export const SalePaymentTotals = defineEntity({
  name: 'SalePaymentTotals',
  tableName: 'sale_payment_totals',
  primaryKeys: ['sale'],
  properties: {
    sale: () => p.manyToOne(Sale).mapToPk().primary().deleteRule('cascade'),
    /** Distinct approved gateway payments. */
    approvedPayments: p.integer(),
    /** Σ approved payments (the amount the gateway reported, else the sale's total). */
    charged: p.integer(),
    /** Σ refunds the gateway reports done. */
    refunded: p.integer(),
    /** Payments with a refund asked for and not yet reported done. */
    refundsPending: p.integer(),
  },
});
export type ISalePaymentTotals = InferEntity<typeof SalePaymentTotals>;
