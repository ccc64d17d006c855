import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  type IMembershipSubscription,
  RENEWAL_STATES,
  SUBSCRIPTION_STATUSES,
} from '../../../entities/membership-subscription.js';
import { dataOf } from '../../http/envelope.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, isoOrNull } from '../../http/schemas.js';
import { cancelSubscription } from '../../services/memberships.js';
import type { ApiServices } from '../../services.js';

export const SubscriptionSchema = z
  .object({
    id: z.string(),
    planId: z.string(),
    buyerId: z.string(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    renewalState: z.enum(RENEWAL_STATES),
    periodNumber: z.number().int(),
    currentPeriodEnd: z.string().nullable(),
    cancelledAt: z.string().nullable(),
    cancelledBy: z.string().nullable(),
    endedAt: z.string().nullable(),
    endReason: z.string().nullable(),
  })
  .meta({ id: 'MembershipSubscription' });

const toSubscription = (subscription: IMembershipSubscription) => ({
  id: subscription.id,
  planId: subscription.plan,
  buyerId: subscription.buyer,
  status: subscription.status,
  renewalState: subscription.renewalState,
  periodNumber: subscription.periodNumber,
  currentPeriodEnd: isoOrNull(subscription.currentPeriodEnd),
  cancelledAt: isoOrNull(subscription.cancelledAt),
  cancelledBy: subscription.cancelledBy ?? null,
  endedAt: isoOrNull(subscription.endedAt),
  endReason: subscription.endReason ?? null,
});

/** Organizer operations on membership subscriptions (contract part 4: POST /subscriptions/{id}/cancel). */
export const subscriptionRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.post(
    '/subscriptions/:id/cancel',
    {
      config: organizer('ADMIN', 'memberships'),
      schema: {
        tags: ['subscriptions'],
        summary: 'Cancel a membership: a pending signup ends now, an active one keeps access until its period ends',
        params: IdParamSchema,
        response: { 200: dataOf(SubscriptionSchema) },
      },
    },
    async (request) => {
      const after = await cancelSubscription(services, request.em, request.params.id);
      return { data: toSubscription(after) };
    },
  );
};
