import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type IMembershipPlan, MEMBERSHIP_PERIODS } from '../../../entities/membership-plan.js';
import { RENEWAL_STATES, SUBSCRIPTION_STATUSES } from '../../../entities/membership-subscription.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import {
  createPlan,
  deletePlan,
  findPlan,
  listPlans,
  listSubscriptions,
  subscribersOf,
  updatePlan,
} from '../../services/membership-plans.js';

const BenefitsSchema = z.object({
  membersOnlyAccess: z.boolean().meta({ description: 'Members may buy members-only ticket types' }),
  discountPercent: z.number().meta({ description: 'Percentage off the ticket subtotal for members, 0–100' }),
});

export const MembershipPlanSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    price: minorUnits('Price per period', 120000),
    currency: z.string(),
    period: z.enum(MEMBERSHIP_PERIODS),
    benefits: BenefitsSchema,
    active: z.boolean().meta({ description: 'Inactive plans accept no new subscribers' }),
    createdAt: z.string(),
  })
  .meta({ id: 'MembershipPlan' });

export const MembershipSubscriberSchema = z
  .object({
    id: z.string().meta({ description: 'Subscription id' }),
    buyerId: z.string(),
    name: z.string().nullable(),
    email: z.string(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    since: z.string().meta({ description: 'When the buyer became a member (signup time while unpaid)' }),
    renewalState: z.enum(RENEWAL_STATES),
    currentPeriodEnd: z.string().nullable(),
    cancelledAt: z.string().nullable(),
  })
  .meta({ id: 'MembershipSubscriber' });

const DiscountPercent = z
  .number()
  .min(0)
  .max(100)
  .refine((value) => Math.round(value * 100) / 100 === value, 'at most two decimals');

const BenefitsInput = z.object({ membersOnlyAccess: z.boolean(), discountPercent: DiscountPercent });

const PlanFields = z.object({
  name: z.string().trim().min(1).max(160),
  description: z.string().max(5000).nullable(),
  price: minorUnits('Price per period, in the workspace currency', 120000).min(0).max(1_000_000_000_000),
  period: z.enum(MEMBERSHIP_PERIODS),
  benefits: BenefitsInput,
  active: z.boolean(),
});

const CreatePlanBody = PlanFields.extend({
  description: PlanFields.shape.description.optional(),
  benefits: z
    .object({
      membersOnlyAccess: BenefitsInput.shape.membersOnlyAccess.default(false),
      discountPercent: DiscountPercent.default(0),
    })
    .default({ membersOnlyAccess: false, discountPercent: 0 }),
  active: PlanFields.shape.active.default(true),
});

/** PATCH is partial, benefits included: `{ benefits: { discountPercent: 10 } }` keeps membersOnlyAccess. */
const UpdatePlanBody = PlanFields.extend({ benefits: BenefitsInput.partial() }).partial();

const BooleanQuery = z.enum(['true', 'false']).transform((value) => value === 'true');

const ListPlansQuery = PageQuerySchema.extend({ active: BooleanQuery.optional() });
const ListSubscribersQuery = PageQuerySchema.extend({ status: z.enum(SUBSCRIPTION_STATUSES).optional() });

const toPlan = (plan: IMembershipPlan) => ({
  id: plan.id,
  name: plan.name,
  description: plan.description ?? null,
  price: plan.price,
  currency: plan.currency,
  period: plan.period,
  benefits: {
    membersOnlyAccess: plan.benefits.membersOnlyAccess,
    discountPercent: plan.benefits.discountPercent,
  },
  active: plan.active,
  createdAt: plan.createdAt.toISOString(),
});

export const membershipPlanRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/membership-plans',
    {
      config: organizer('VIEWER', 'memberships'),
      schema: {
        tags: ['membership-plans'],
        summary: 'List membership plans, newest first',
        querystring: ListPlansQuery,
        response: { 200: listOf(MembershipPlanSchema) },
      },
    },
    async (request) => {
      const { limit, cursor, active } = request.query;
      const rows = await listPlans(request.em, { after: decodeCursor(cursor), limit: limit + 1, active });
      const { items, page } = toPage(rows, limit);
      return { data: items.map(toPlan), page, ...(request.warnings.length ? { warnings: request.warnings } : {}) };
    },
  );

  app.post(
    '/membership-plans',
    {
      config: organizer('ADMIN', 'memberships'),
      schema: {
        tags: ['membership-plans'],
        summary: 'Create a membership plan',
        body: CreatePlanBody,
        response: { 201: dataOf(MembershipPlanSchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const plan = await createPlan(request.em, workspace.workspaceId, request.body);
      return reply.status(201).send({ data: toPlan(plan) });
    },
  );

  app.get(
    '/membership-plans/:id',
    {
      config: organizer('VIEWER', 'memberships'),
      schema: {
        tags: ['membership-plans'],
        summary: 'Get a membership plan',
        params: IdParamSchema,
        response: { 200: dataOf(MembershipPlanSchema) },
      },
    },
    async (request) => ({ data: toPlan(await findPlan(request.em, request.params.id)) }),
  );

  app.patch(
    '/membership-plans/:id',
    {
      config: organizer('ADMIN', 'memberships'),
      schema: {
        tags: ['membership-plans'],
        summary: 'Update a membership plan (partial)',
        params: IdParamSchema,
        body: UpdatePlanBody,
        response: { 200: dataOf(MembershipPlanSchema) },
      },
    },
    async (request) => ({ data: toPlan(await updatePlan(request.em, request.params.id, request.body)) }),
  );

  app.delete(
    '/membership-plans/:id',
    {
      config: organizer('ADMIN', 'memberships'),
      schema: {
        tags: ['membership-plans'],
        summary: 'Soft-delete a membership plan without live subscribers',
        description: 'A plan with PENDING or ACTIVE subscriptions cannot be deleted (409); deactivate it instead.',
        params: IdParamSchema,
        response: { 200: dataOf(MembershipPlanSchema) },
      },
    },
    async (request) => ({ data: toPlan(await deletePlan(request.em, request.params.id)) }),
  );

  app.get(
    '/membership-plans/:id/subscribers',
    {
      // Buyers' names and emails: the same personal data as the subscribers export, so the same role (ADMIN).
      config: organizer('ADMIN', 'memberships'),
      schema: {
        tags: ['membership-plans'],
        summary: 'List the subscribers of a plan, newest first (ADMIN: it carries buyer names and emails)',
        params: IdParamSchema,
        querystring: ListSubscribersQuery,
        response: { 200: listOf(MembershipSubscriberSchema) },
      },
    },
    async (request) => {
      const { limit, cursor, status } = request.query;
      const rows = await listSubscriptions(request.em, request.params.id, {
        after: decodeCursor(cursor),
        limit: limit + 1,
        status,
      });
      const { items, page } = toPage(rows, limit);
      const byId = await subscribersOf(request.em, items);
      const data = items.map((subscription) => {
        const buyer = byId.get(subscription.buyer);
        return {
          id: subscription.id,
          buyerId: subscription.buyer,
          name: buyer?.name ?? null,
          email: buyer?.email ?? '',
          status: subscription.status,
          since: (subscription.activatedAt ?? subscription.createdAt).toISOString(),
          renewalState: subscription.renewalState,
          currentPeriodEnd: isoOrNull(subscription.currentPeriodEnd),
          cancelledAt: isoOrNull(subscription.cancelledAt),
        };
      });
      return { data, page, ...(request.warnings.length ? { warnings: request.warnings } : {}) };
    },
  );
};
