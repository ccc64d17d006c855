/**
 * What a gateway's own record of a payment means for a sale. Pure: the checkout activities apply it to what they read
 * from the gateway, and the gateway A notification route to the payment it re-reads before waking the checkout.
 */
import type { Gateway } from '../workflows/definitions.js';

/** What the gateway says about a sale's payment, after re-reading it from the gateway's own API. */
export interface PaymentVerdict {
  gateway: Gateway;
  outcome: 'approved' | 'rejected' | 'pending' | 'refunded' | 'unknown';
  providerPaymentId: string | null;
  rawStatus: string;
  statusDetail: string | null;
  /** True when the payment's amount or currency do not match the sale: it never buys the sale and goes back. */
  mismatch: boolean;
  /** True when the payment names another sale's reference: not this sale's money to judge or refund. */
  foreign: boolean;
}

/** What each gateway A payment status means; memberships read their payments the same way. */
const GATEWAY_A_OUTCOME: Record<string, PaymentVerdict['outcome']> = {
  approved: 'approved',
  authorized: 'pending',
  pending: 'pending',
  in_process: 'pending',
  in_mediation: 'pending',
  rejected: 'rejected',
  cancelled: 'rejected',
  refunded: 'refunded',
  charged_back: 'refunded',
};

/** What each gateway B transaction status means. */
const GATEWAY_B_OUTCOME: Record<string, PaymentVerdict['outcome']> = {
  APPROVED: 'approved',
  PENDING: 'pending',
  PROCESSING: 'pending',
  REJECTED: 'rejected',
  FAILED: 'rejected',
  VOIDED: 'refunded',
  NO_TRANSACTION_FOUND: 'unknown',
};

/** What a payment status recorded from `gateway` means, as its verdict said when it was read. */
export function outcomeOfStatus(gateway: Gateway, rawStatus: string): PaymentVerdict['outcome'] {
  return (gateway === 'GATEWAY_A' ? GATEWAY_A_OUTCOME : GATEWAY_B_OUTCOME)[rawStatus] ?? 'unknown';
}

/** The sale a payment is judged against. */
export interface SaleMoney {
  reference: string;
  total: number;
  currency: string;
}

/** The fields of a gateway A payment a verdict reads. */
export interface GatewayAPaymentRecord {
  id: string;
  status: string;
  statusDetail: string | null;
  amount: number;
  currency: string;
  externalReference: string | null;
}

export function gatewayAVerdict(payment: GatewayAPaymentRecord, sale: SaleMoney): PaymentVerdict {
  return {
    gateway: 'GATEWAY_A',
    outcome: outcomeOfStatus('GATEWAY_A', payment.status),
    providerPaymentId: payment.id,
    rawStatus: payment.status,
    statusDetail: payment.statusDetail,
    mismatch: payment.amount !== sale.total || payment.currency !== sale.currency,
    foreign: payment.externalReference !== sale.reference,
  };
}
