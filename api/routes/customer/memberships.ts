import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../domain/errors.js';
import {
  type IMembershipSubscription,
  RENEWAL_STATES,
  SUBSCRIPTION_STATUSES,
} from '../../../entities/membership-subscription.js';
import { membershipDurations } from '../../../workflows/membership-definitions.js';
import { assertCustomerMayBuyIn } from '../../http/customer-scope.js';
import { dataOf } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { customerAccess } from '../../http/route-access.js';
import { isoOrNull } from '../../http/schemas.js';
import { currentCustomer } from '../../plugins/customer-auth.js';
import {
  cancelThroughWorkflow,
  findSignupPlan,
  isMember,
  latestSubscription,
  membershipWorkspace,
  planAndOpenPayment,
  signUp,
} from '../../services/memberships.js';
import type { ApiServices } from '../../services.js';

export { membershipDurations };

const BenefitsSchema = z.object({ membersOnlyAccess: z.boolean(), discountPercent: z.number() });

export const CustomerMembershipSchema = z
  .object({
    subscriptionId: z.string(),
    workspaceId: z.string(),
    planId: z.string(),
    planName: z.string(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    member: z.boolean().meta({ description: 'True while ACTIVE and the current period has not ended' }),
    renewalState: z.enum(RENEWAL_STATES),
    periodNumber: z.number().int(),
    since: z.string().nullable().meta({ description: 'When the buyer first became a member' }),
    currentPeriodStart: z.string().nullable(),
    currentPeriodEnd: z.string().nullable(),
    periodPrice: minorUnits('Price paid for the current period', 120000).nullable(),
    currency: z.string(),
    benefits: BenefitsSchema.nullable().meta({ description: 'Benefits frozen for the current period' }),
    cancelledAt: z.string().nullable(),
    endedAt: z.string().nullable(),
    endReason: z.string().nullable(),
    payment: z
      .object({
        periodNumber: z.number().int(),
        reference: z.string().meta({ description: 'MB- reference the gateway shows for this payment' }),
        amount: minorUnits('Amount of this payment request', 120000),
        currency: z.string(),
        checkoutUrl: z.string().nullable(),
        expiresAt: z.string().nullable(),
      })
      .nullable()
      .meta({ description: 'The open payment request (signup or renewal), if any' }),
  })
  .meta({ id: 'CustomerMembership' });

const SignupCreatedSchema = z
  .object({
    subscriptionId: z.string(),
    planId: z.string(),
    status: z.enum(['PENDING', 'ACTIVE']),
    checkoutUrl: z.string().nullable().meta({ description: 'Gateway A checkout (card or PSE); open it in a browser' }),
    expiresAt: z.string().nullable(),
    amount: minorUnits('Price of the first period, to pay at checkoutUrl', 120000),
    currency: z.string(),
  })
  .meta({ id: 'MembershipSignup' });

export async function toCustomerMembership(em: EntityManager, subscription: IMembershipSubscription) {
  const { plan, open } = await planAndOpenPayment(em, subscription);
  const end = subscription.currentPeriodEnd ?? null;
  return {
    subscriptionId: subscription.id,
    workspaceId: subscription.workspace,
    planId: subscription.plan,
    planName: plan.name,
    status: subscription.status,
    member: isMember(subscription, Date.now()),
    renewalState: subscription.renewalState,
    periodNumber: subscription.periodNumber,
    since: isoOrNull(subscription.activatedAt),
    currentPeriodStart: isoOrNull(subscription.currentPeriodStart),
    currentPeriodEnd: isoOrNull(end),
    periodPrice: subscription.periodPrice ?? null,
    currency: subscription.currency,
    benefits: subscription.periodBenefits ?? null,
    cancelledAt: isoOrNull(subscription.cancelledAt),
    endedAt: isoOrNull(subscription.endedAt),
    endReason: subscription.endReason ?? null,
    payment: open
      ? {
          periodNumber: open.periodNumber,
          reference: open.reference,
          amount: open.amount,
          currency: open.currency,
          checkoutUrl: open.checkoutUrl ?? null,
          expiresAt: isoOrNull(open.expiresAt),
        }
      : null,
  };
}

const WorkspaceQuery = z.object({ workspaceId: z.string().min(1).max(100).optional() });

/** Buyer memberships (contract part 4: GET /customer/membership, POST /customer/subscriptions[/cancel]). */
export const customerMembershipRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.get(
    '/customer/membership',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: "The buyer's membership in a workspace (the key's pinned workspace, else ?workspaceId), or null",
        querystring: WorkspaceQuery,
        response: { 200: dataOf(CustomerMembershipSchema.nullable()) },
      },
    },
    async (request) => {
      const customer = currentCustomer(request);
      const workspaceId = membershipWorkspace(customer.pinnedWorkspaceId, request.query.workspaceId);
      const subscription = await latestSubscription(request.em, workspaceId, customer.buyerId);
      return { data: subscription ? await toCustomerMembership(request.em, subscription) : null };
    },
  );

  app.post(
    '/customer/subscriptions',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Start a membership signup; answers the payment link (the same pending signup gives the same link)',
        body: z.object({ planId: z.string().min(1).max(100) }),
        response: { 201: dataOf(SignupCreatedSchema) },
      },
    },
    async (request, reply) => {
      const customer = currentCustomer(request);
      const { planId } = request.body;
      const plan = await findSignupPlan(request.em, planId);
      await assertCustomerMayBuyIn(request, customer, plan.workspace, 'Membership plan');
      const result = await signUp(services, request.em, plan, customer.buyerId);
      request.log.info({ subscriptionId: result.subscriptionId, status: result.status }, 'membership signup');
      return reply.status(201).send({
        data: {
          subscriptionId: result.subscriptionId,
          planId: result.planId,
          status: result.status,
          checkoutUrl: result.checkoutUrl,
          expiresAt: result.expiresAtMs === null ? null : new Date(result.expiresAtMs).toISOString(),
          amount: result.amount,
          currency: result.currency,
        },
      });
    },
  );

  app.post(
    '/customer/subscriptions/cancel',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Cancel own membership: a pending signup ends now, an active one keeps access until its period ends',
        body: z.object({ workspaceId: z.string().min(1).max(100).optional() }).default({}),
        response: { 200: dataOf(CustomerMembershipSchema) },
      },
    },
    async (request) => {
      const customer = currentCustomer(request);
      const workspaceId = membershipWorkspace(customer.pinnedWorkspaceId, request.body.workspaceId);
      await cancelThroughWorkflow(
        services,
        { workspaceId, buyerId: customer.buyerId },
        { by: 'buyer', subscriptionId: null },
      );
      const subscription = await latestSubscription(request.em, workspaceId, customer.buyerId);
      if (!subscription) throw new AppError('NOT_FOUND', 'There is no membership to cancel');
      return { data: await toCustomerMembership(request.em, subscription) };
    },
  );
};
