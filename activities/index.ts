import { createBuyerAuthActivities } from './buyer-auth.js';
import { createCheckoutActivities } from './checkout.js';
import type { ActivityDeps } from './deps.js';
import { createEventCancellationActivities } from './event-cancellation.js';
import { createHealthActivities } from './health.js';
import { createMembershipActivities } from './memberships.js';
import { createOrganizerAccountActivities } from './organizer-accounts.js';
import { createPaymentActivities } from './payments.js';
import { createReconcilerActivities } from './reconciler.js';
import { createSalesOpsActivities } from './sales-ops.js';
import { createSeatActivities } from './seats.js';
import { createSettlementActivities } from './settlements.js';
import { createTicketOpsActivities } from './ticket-ops.js';
import { createTicketActivities } from './tickets.js';
import { createWebhookActivities } from './webhooks.js';

/** All activities, built once per worker with its clients (the dependency-injection pattern of Temporal's samples). */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createHealthActivities(deps),
    ...createMembershipActivities(deps),
    ...createBuyerAuthActivities(deps),
    ...createOrganizerAccountActivities(deps),
    ...createCheckoutActivities(deps),
    ...createEventCancellationActivities(deps),
    ...createPaymentActivities(deps),
    ...createReconcilerActivities(deps),
    ...createTicketActivities(deps),
    ...createSalesOpsActivities(deps),
    ...createSeatActivities(deps),
    ...createSettlementActivities(deps),
    ...createTicketOpsActivities(deps),
    ...createWebhookActivities(deps),
  };
}
export type Activities = ReturnType<typeof createActivities>;
