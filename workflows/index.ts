/** The workflow bundle's entry: every workflow type the worker registers. */
export { buyerSignIn } from './buyer-sign-in.js';
export { cancellation } from './cancellation.js';
export { checkout } from './checkout.js';
export { healthProbe } from './health-probe.js';
export { purchaseSession } from './purchase-session.js';
export { reconciler } from './reconciler.js';
export { refund } from './refund.js';
export { ticketResend } from './ticket-resend.js';
export { webhookDelivery } from './webhook-delivery.js';
export { webhookDispatcher } from './webhook-dispatcher.js';
