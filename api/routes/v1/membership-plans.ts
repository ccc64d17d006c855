import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, notFound } from '../../../domain/errors.js';
import { isUuid, newId } from '../../../entities/ids.js';
import { Buyer, MembershipPlan, MembershipSubscription, Workspace } from '../../../entities/index.js';
import { type IMembershipPlan, MEMBERSHIP_PERIODS } from '../../../entities/membership-plan.js';
import {
  type IMembershipSubscription,
  RENEWAL_STATES,
  SUBSCRIPTION_STATUSES,
} from '../../../entities/membership-subscription.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';

/** Subscriptions in these states keep a member's benefits, so their plan cannot be deleted. */
const LIVE_SUBSCRIPTION_STATUSES = ['PENDING', 'ACTIVE'] as const;

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

async function findPlan(em: EntityManager, id: string): Promise<IMembershipPlan> {
  const plan = isUuid(id) ? await em.findOne(MembershipPlan, { id }) : null;
  if (!plan) throw notFound('Membership plan');
  return plan;
}

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
      const after = decodeCursor(cursor);
      const where: FilterQuery<IMembershipPlan> = {
        ...(after ? { id: { $lt: after } } : {}),
        ...(active !== undefined ? { active } : {}),
      };
      const rows = await request.em.find(MembershipPlan, where, { orderBy: { id: 'desc' }, limit: limit + 1 });
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
      const body = request.body;
      const { currency } = await request.em.findOneOrFail(Workspace, { id: workspace.workspaceId });
      const plan = request.em.create(MembershipPlan, {
        id: newId(),
        workspace: workspace.workspaceId,
        name: body.name,
        description: body.description ?? null,
        price: body.price,
        currency,
        period: body.period,
        benefits: body.benefits,
        active: body.active,
        deletedAt: null,
      });
      await request.em.flush();
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
    async (request) => {
      const plan = await findPlan(request.em, request.params.id);
      const body = request.body;
      if (body.name !== undefined) plan.name = body.name;
      if (body.description !== undefined) plan.description = body.description;
      if (body.price !== undefined) plan.price = body.price;
      if (body.period !== undefined) plan.period = body.period;
      if (body.active !== undefined) plan.active = body.active;
      if (body.benefits !== undefined) {
        // A new object, so the ORM sees the JSON column change.
        plan.benefits = {
          membersOnlyAccess: body.benefits.membersOnlyAccess ?? plan.benefits.membersOnlyAccess,
          discountPercent: body.benefits.discountPercent ?? plan.benefits.discountPercent,
        };
      }
      await request.em.flush();
      return { data: toPlan(plan) };
    },
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
    async (request) => {
      const plan = await findPlan(request.em, request.params.id);
      const live = await request.em.count(MembershipSubscription, {
        plan: plan.id,
        status: { $in: [...LIVE_SUBSCRIPTION_STATUSES] },
      });
      if (live > 0) {
        throw new AppError(
          'INVALID_STATE',
          `This plan has ${live} pending or active subscription(s); set active to false to stop new sign-ups instead`,
          { details: { reason: 'plan_has_subscribers', subscriptions: live } },
        );
      }
      plan.deletedAt = new Date();
      await request.em.flush();
      return { data: toPlan(plan) };
    },
  );

  app.get(
    '/membership-plans/:id/subscribers',
    {
      config: organizer('VIEWER', 'memberships'),
      schema: {
        tags: ['membership-plans'],
        summary: 'List the subscribers of a plan, newest first',
        params: IdParamSchema,
        querystring: ListSubscribersQuery,
        response: { 200: listOf(MembershipSubscriberSchema) },
      },
    },
    async (request) => {
      const plan = await findPlan(request.em, request.params.id);
      const { limit, cursor, status } = request.query;
      const after = decodeCursor(cursor);
      const where: FilterQuery<IMembershipSubscription> = {
        plan: plan.id,
        ...(after ? { id: { $lt: after } } : {}),
        ...(status ? { status } : {}),
      };
      const rows = await request.em.find(MembershipSubscription, where, { orderBy: { id: 'desc' }, limit: limit + 1 });
      const { items, page } = toPage(rows, limit);
      const buyers = items.length
        ? await request.em.find(Buyer, { id: { $in: [...new Set(items.map((s) => s.buyer))] } })
        : [];
      const byId = new Map(buyers.map((buyer) => [buyer.id, buyer]));
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
