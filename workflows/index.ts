/** The workflow bundle's entry: every workflow type the worker registers. */
export { buyerSignIn } from './buyer-sign-in.js';
export { cancellation } from './cancellation.js';
export { checkout } from './checkout.js';
export { eventCancellation } from './event-cancellation.js';
export { healthProbe } from './health-probe.js';
export { membership } from './membership.js';
export { organizerAccountEmail } from './organizer-account-email.js';
export { purchaseSession } from './purchase-session.js';
export { reconciler } from './reconciler.js';
export { refund } from './refund.js';
export { settlement } from './settlement.js';
export { settlementSweep } from './settlement-sweep.js';
export { ticketMailer } from './ticket-mailer.js';
export { ticketResend } from './ticket-resend.js';
export { webhookDelivery } from './webhook-delivery.js';
export { webhookDispatcher } from './webhook-dispatcher.js';
