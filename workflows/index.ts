/** The workflow bundle's entry: every workflow type the worker registers, with its versioning behaviour. */
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { buyerSignIn } from './buyer-sign-in.js';
import { cancellation } from './cancellation.js';
import { checkout } from './checkout.js';
import { eventCancellation } from './event-cancellation.js';
import { healthProbe } from './health-probe.js';
import { membership } from './membership.js';
import { organizerAccountEmail } from './organizer-account-email.js';
import { purchaseSession } from './purchase-session.js';
import { reconciler } from './reconciler.js';
import { refund } from './refund.js';
import { settlement } from './settlement.js';
import { settlementSweep } from './settlement-sweep.js';
import { ticketMailer } from './ticket-mailer.js';
import { ticketResend } from './ticket-resend.js';
import { VERSIONING_BEHAVIOURS } from './versioning-behaviours.js';
import { webhookDelivery } from './webhook-delivery.js';
import { webhookDispatcher } from './webhook-dispatcher.js';

/**
 * The behaviour is declared only on a versioned worker (one whose task carries a deployment version): the server
 * refuses a workflow task completion that declares one from an unversioned worker (WORKER_VERSIONING=false, the dev
 * stack, the tests). Asked once per run, at its first activation.
 */
function annotate<A extends unknown[], R>(
  name: keyof typeof VERSIONING_BEHAVIOURS,
  workflow: (...args: A) => Promise<R>,
) {
  setWorkflowOptions(
    () =>
      workflowInfo().currentDeploymentVersion?.deploymentName
        ? { versioningBehavior: VERSIONING_BEHAVIOURS[name] }
        : {},
    workflow,
  );
}
annotate('buyerSignIn', buyerSignIn);
annotate('cancellation', cancellation);
annotate('checkout', checkout);
annotate('eventCancellation', eventCancellation);
annotate('healthProbe', healthProbe);
annotate('membership', membership);
annotate('organizerAccountEmail', organizerAccountEmail);
annotate('purchaseSession', purchaseSession);
annotate('reconciler', reconciler);
annotate('refund', refund);
annotate('settlement', settlement);
annotate('settlementSweep', settlementSweep);
annotate('ticketMailer', ticketMailer);
annotate('ticketResend', ticketResend);
annotate('webhookDelivery', webhookDelivery);
annotate('webhookDispatcher', webhookDispatcher);

export {
  buyerSignIn,
  cancellation,
  checkout,
  eventCancellation,
  healthProbe,
  membership,
  organizerAccountEmail,
  purchaseSession,
  reconciler,
  refund,
  settlement,
  settlementSweep,
  ticketMailer,
  ticketResend,
  webhookDelivery,
  webhookDispatcher,
};
