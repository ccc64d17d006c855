import { createBuyerAuthActivities } from './buyer-auth.js';
import { createCheckoutActivities } from './checkout.js';
import type { ActivityDeps } from './deps.js';
import { createEventCancellationActivities } from './event-cancellation.js';
import { createHealthActivities } from './health.js';
import { createMembershipReconcilerActivities } from './membership-reconciler.js';
import { createMembershipActivities } from './memberships.js';
import { mergeActivities } from './merge.js';
import { createOrganizerAccountActivities } from './organizer-accounts.js';
import { createPaymentActivities } from './payments.js';
import { createReconcilerActivities } from './reconciler.js';
import { createSalesOpsActivities } from './sales-ops.js';
import { createSeatActivities } from './seats.js';
import { createSettlementActivities } from './settlements.js';
import { createTicketOpsActivities } from './ticket-ops.js';
import { createTicketActivities } from './tickets.js';
import { createWebhookActivities } from './webhooks.js';

/**
 * All activities, built once per worker with its clients (the dependency-injection pattern of Temporal's samples).
 * Names must be unique across the factories: `mergeActivities` refuses a duplicate, so a worker with one does not
 * start.
 */
export function createActivities(deps: ActivityDeps) {
  // Both the checkout and the membership record a refund refused for good as `recordRefundRefused`, and committed
  // histories of both name it, so neither can be renamed: each factory's own is taken out of the merge and one
  // activity of that name serves both, by its input (a sale's record names its sale).
  const { recordRefundRefused: recordSaleRefundRefused, ...checkout } = createCheckoutActivities(deps);
  const { recordRefundRefused: recordMembershipRefundRefused, ...memberships } = createMembershipActivities(deps);
  const recordRefundRefused = (
    input: Parameters<typeof recordSaleRefundRefused>[0] | Parameters<typeof recordMembershipRefundRefused>[0],
  ) => ('saleId' in input ? recordSaleRefundRefused(input) : recordMembershipRefundRefused(input));
  return mergeActivities({
    health: createHealthActivities(deps),
    memberships,
    membershipReconciler: createMembershipReconcilerActivities(deps),
    buyerAuth: createBuyerAuthActivities(deps),
    organizerAccounts: createOrganizerAccountActivities(deps),
    checkout,
    eventCancellation: createEventCancellationActivities(deps),
    payments: createPaymentActivities(deps),
    reconciler: createReconcilerActivities(deps),
    tickets: createTicketActivities(deps),
    salesOps: createSalesOpsActivities(deps),
    seats: createSeatActivities(deps),
    settlements: createSettlementActivities(deps),
    ticketOps: createTicketOpsActivities(deps),
    webhooks: createWebhookActivities(deps),
    refundRefusals: { recordRefundRefused },
  });
}
export type Activities = ReturnType<typeof createActivities>;
