/**
 * The checkout's activities answered by a simulation world, for the scripted stories that run the real checkout code
 * on a local Temporal server (run-lost-local-charge.ts, run-charge-during-reservation.ts): names and shapes as in
 * activities/, as run-simulation.ts does. A story overrides the one activity its fault lives in.
 */
import type { PaymentNotification, ReserveRequest } from '../../workflows/definitions.js';
import type { World } from './world.js';

export function storyActivities(world: World, saleId: string) {
  return {
    reserveSale: async (input: { request: Parameters<World['reserveSale']>[1] }) =>
      world.reserveSale(saleId, input.request),
    readSaleSnapshot: async () => world.readSaleSnapshot(),
    confirmSale: async (input: { paymentRef: string | null; queueTicketEmail?: boolean }) =>
      world.confirmSale(input.paymentRef, input.queueTicketEmail === true),
    closeUnpaidSale: async (input: { to: 'ABANDONED' | 'CANCELLED' }) => world.closeUnpaidSale(input.to),
    confirmLatePayment: async (input: { paymentRef: string | null; queueTicketEmail?: boolean }) =>
      world.confirmLatePayment(input.paymentRef, input.queueTicketEmail === true),
    recordPaymentStatus: async () => undefined,
    flagGatewayBRenotification: async () => ({ flagged: false }),
    recordAttempt: async (input: { kind: string; dedupeKey: string | null; providerPaymentId: string | null }) =>
      world.recordAttempt(input.kind, input.dedupeKey, input.providerPaymentId),
    markAttempt: async () => undefined,
    recordRefundRefused: async (input: { providerPaymentId: string | null }) =>
      world.recordRefundRefused(input.providerPaymentId),
    choosePaymentRail: async () => ({ gateway: 'GATEWAY_A' as const, gatewayBOnly: false, eligibleForB: true }),
    buildPaymentConfiguration: async () => ({
      gateway: 'GATEWAY_A' as const,
      publicKey: 'simulated',
      amount: 1,
      currency: 'COP',
      reference: world.sale?.reference ?? '',
      payerEmail: 'buyer@simulation.test',
    }),
    chargeCard: async (input: { request: { cardToken: string }; recordBeforeCharging?: boolean }) => {
      // As activities/payments.ts: the charge is recorded as leaving before the gateway is called.
      if (input.recordBeforeCharging) world.recordAttempt('CARD', `card-charging:${input.request.cardToken}`, null);
      return world.chargeCard(input.request.cardToken);
    },
    openPsePayment: async () => world.openPsePayment(),
    readPayment: async (input: { notification: PaymentNotification }) => world.readPayment(input.notification),
    findSalePayments: async () => world.findSalePayments(),
    refundPayment: async (input: { providerPaymentId: string | null }) => world.refundPayment(input.providerPaymentId),
    bookSaleSeats: async () => world.bookSaleSeats(),
    releaseSaleSeats: async () => world.releaseSaleSeats(),
    releaseBookedSeats: async () => world.releaseBookedSeats(),
    emailTickets: async () => world.emailTickets(),
  };
}

/** The one-ticket order a story's buyer reserves, paid within `paymentWindowMs`. */
export const storyReserveRequest = (paymentWindowMs: number): ReserveRequest => ({
  origin: 'CUSTOMER',
  channel: 'WEB',
  pinnedWorkspaceId: null,
  eventDateId: 'simulated-date',
  ticketTypeId: 'simulated-type',
  quantity: 1,
  seats: null,
  holdToken: null,
  discountCode: null,
  buyerId: null,
  buyerEmail: 'buyer@simulation.test',
  buyer: { name: 'Simulated Buyer', phone: null, idType: null, idNumber: null, nitDigit: null },
  returnUrl: null,
  confirmImmediately: false,
  complimentary: false,
  paymentWindowMs,
});
