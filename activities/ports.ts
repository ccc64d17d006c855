/**
 * What the activities need from the outside world. The worker wires these to the `integrations/` clients
 * (which speak each provider's protocol over HTTP/SMTP); keeping the shape here lets activities read like the
 * business process and lets the wiring adapt a provider's API in one place.
 */

export type GatewayAStatus =
  | 'approved'
  | 'rejected'
  | 'pending'
  | 'in_process'
  | 'refunded'
  | 'cancelled'
  | 'charged_back'
  | string;

export interface GatewayAPayment {
  id: string;
  status: GatewayAStatus;
  statusDetail: string | null;
  externalReference: string | null;
  /** Minor units of the sale's currency. */
  amount: number;
  currency: string;
}

export interface GatewayAPort {
  publicKey: string;
  chargeCard(input: {
    idempotencyKey: string;
    cardToken: string;
    paymentMethodId: string | null;
    installments: number;
    amount: number;
    currency: string;
    description: string;
    reference: string;
    payerEmail: string;
    notificationUrl: string;
  }): Promise<GatewayAPayment>;
  createPsePreference(input: {
    idempotencyKey: string;
    amount: number;
    currency: string;
    title: string;
    reference: string;
    payerEmail: string;
    notificationUrl: string;
    returnUrl: string;
    expiresAt: Date;
  }): Promise<{ preferenceId: string; redirectUrl: string }>;
  /** A checkout preference paid by card or PSE at the gateway's page (memberships); same input as the PSE one. */
  createCheckoutPreference(
    input: Parameters<GatewayAPort['createPsePreference']>[0],
  ): Promise<{ preferenceId: string; redirectUrl: string }>;
  /** Closes a checkout preference's link now (a membership payment request that closed unpaid). */
  expirePreference(preferenceId: string): Promise<void>;
  getPayment(paymentId: string): Promise<GatewayAPayment>;
  findPaymentsByReference(reference: string): Promise<GatewayAPayment[]>;
  refund(input: { paymentId: string; idempotencyKey: string }): Promise<{ refundId: string; status: string }>;
}

export type GatewayBStatus =
  | 'APPROVED'
  | 'REJECTED'
  | 'PENDING'
  | 'PROCESSING'
  | 'NO_TRANSACTION_FOUND'
  | 'VOIDED'
  | string;

export interface GatewayBTransaction {
  orderId: string;
  status: GatewayBStatus;
  transactionId: string | null;
  /** In gateway B's unit (cents for USD), not yet our minor units: see integrations/gateway-b/amounts.ts. */
  amount: number | null;
  currency: string | null;
}

export interface GatewayBPort {
  apiKey: string;
  renderMode: string;
  integritySignature(input: { orderId: string; amount: number; currency: string }): string;
  paymentStatus(orderId: string): Promise<GatewayBTransaction>;
  void(input: { orderId: string; transactionId: string | null; idempotencyKey: string }): Promise<{ status: string }>;
}

export interface MailPort {
  send(message: {
    to: string;
    subject: string;
    text: string;
    html: string;
    attachments?: Array<{ filename: string; content: Buffer; contentType: string; cid?: string }>;
  }): Promise<void>;
}

export interface SeatMapSeat {
  label: string;
  status: string;
  holdToken: string | null;
  orderId: string | null;
  categoryKey: string | null;
  categoryLabel: string | null;
}

export interface SeatMapPort {
  hold(input: { eventKey: string; labels: string[]; holdToken: string }): Promise<void>;
  release(input: { eventKey: string; labels: string[]; holdToken?: string | null }): Promise<void>;
  book(input: { eventKey: string; labels: string[]; holdToken: string | null; orderId?: string | null }): Promise<void>;
  /** A new hold token and its expiry (epoch ms). */
  createHoldToken(expiresInMinutes: number): Promise<{ holdToken: string; expiresAtMs: number }>;
  /** Null once the token expired or never existed. */
  getHoldToken(holdToken: string): Promise<{ holdToken: string; expiresAtMs: number } | null>;
  /** Moves the token's expiry to `expiresInMinutes` from now (0 expires it and frees its seats). */
  updateHoldTokenExpiry(holdToken: string, expiresInMinutes: number): Promise<{ expiresAtMs: number }>;
  objectStatuses(eventKey: string, labels?: string[]): Promise<SeatMapSeat[]>;
}

export interface Providers {
  gatewayA: GatewayAPort;
  gatewayB: GatewayBPort;
  mail: MailPort;
  seatMap: SeatMapPort | null;
}
