/**
 * Membership plans of a workspace: a plan is priced in the workspace currency, a benefits change keeps the benefits
 * it does not name, a plan with live subscribers cannot be deleted, and its subscribers are listed with their buyer.
 * Routes keep the HTTP side.
 */
import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../../domain/errors.js';
import type { IBuyer } from '../../entities/buyer.js';
import { isUuid, newId } from '../../entities/ids.js';
import { Buyer, MembershipPlan, MembershipSubscription, Workspace } from '../../entities/index.js';
import type { IMembershipPlan } from '../../entities/membership-plan.js';
import type { IMembershipSubscription } from '../../entities/membership-subscription.js';

/** Subscriptions in these states keep a member's benefits, so their plan cannot be deleted. */
const LIVE_SUBSCRIPTION_STATUSES = ['PENDING', 'ACTIVE'] as const;

type Benefits = IMembershipPlan['benefits'];

export interface NewPlan {
  name: string;
  description?: string | null | undefined;
  price: number;
  period: IMembershipPlan['period'];
  benefits: Benefits;
  active: boolean;
}

/** A change leaves every field it does not name as it is, inside benefits too. */
export interface PlanChange {
  name?: string | undefined;
  description?: string | null | undefined;
  price?: number | undefined;
  period?: IMembershipPlan['period'] | undefined;
  benefits?: { [K in keyof Benefits]?: Benefits[K] | undefined } | undefined;
  active?: boolean | undefined;
}

export async function findPlan(em: EntityManager, id: string): Promise<IMembershipPlan> {
  const plan = isUuid(id) ? await em.findOne(MembershipPlan, { id }) : null;
  if (!plan) throw notFound('Membership plan');
  return plan;
}

/** Newest first; `after` is the last id of the previous page. */
export async function listPlans(
  em: EntityManager,
  query: { after: string | undefined; limit: number; active?: boolean | undefined },
): Promise<IMembershipPlan[]> {
  const where: FilterQuery<IMembershipPlan> = {
    ...(query.after ? { id: { $lt: query.after } } : {}),
    ...(query.active !== undefined ? { active: query.active } : {}),
  };
  return em.find(MembershipPlan, where, { orderBy: { id: 'desc' }, limit: query.limit });
}

/** A plan is priced in its workspace's currency. */
export async function createPlan(em: EntityManager, workspaceId: string, input: NewPlan): Promise<IMembershipPlan> {
  const { currency } = await em.findOneOrFail(Workspace, { id: workspaceId });
  const plan = em.create(MembershipPlan, {
    id: newId(),
    workspace: workspaceId,
    name: input.name,
    description: input.description ?? null,
    price: input.price,
    currency,
    period: input.period,
    benefits: input.benefits,
    active: input.active,
    deletedAt: null,
  });
  await em.flush();
  return plan;
}

export async function updatePlan(em: EntityManager, id: string, change: PlanChange): Promise<IMembershipPlan> {
  const plan = await findPlan(em, id);
  if (change.name !== undefined) plan.name = change.name;
  if (change.description !== undefined) plan.description = change.description;
  if (change.price !== undefined) plan.price = change.price;
  if (change.period !== undefined) plan.period = change.period;
  if (change.active !== undefined) plan.active = change.active;
  if (change.benefits !== undefined) {
    // A new object, so the ORM sees the JSON column change.
    plan.benefits = {
      membersOnlyAccess: change.benefits.membersOnlyAccess ?? plan.benefits.membersOnlyAccess,
      discountPercent: change.benefits.discountPercent ?? plan.benefits.discountPercent,
    };
  }
  await em.flush();
  return plan;
}

/** Soft-deletes a plan no PENDING or ACTIVE subscription holds (409 INVALID_STATE otherwise: deactivate it instead). */
export async function deletePlan(em: EntityManager, id: string): Promise<IMembershipPlan> {
  const plan = await findPlan(em, id);
  const live = await em.count(MembershipSubscription, {
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
  await em.flush();
  return plan;
}

/** Subscriptions of a plan (404 for an unknown plan), newest first; `after` is the last id of the previous page. */
export async function listSubscriptions(
  em: EntityManager,
  planId: string,
  query: { after: string | undefined; limit: number; status?: IMembershipSubscription['status'] | undefined },
): Promise<IMembershipSubscription[]> {
  const plan = await findPlan(em, planId);
  const where: FilterQuery<IMembershipSubscription> = {
    plan: plan.id,
    ...(query.after ? { id: { $lt: query.after } } : {}),
    ...(query.status ? { status: query.status } : {}),
  };
  return em.find(MembershipSubscription, where, { orderBy: { id: 'desc' }, limit: query.limit });
}

/** The buyers behind subscriptions, by buyer id. */
export async function subscribersOf(
  em: EntityManager,
  subscriptions: IMembershipSubscription[],
): Promise<Map<string, IBuyer>> {
  const buyers = subscriptions.length
    ? await em.find(Buyer, { id: { $in: [...new Set(subscriptions.map((s) => s.buyer))] } })
    : [];
  return new Map(buyers.map((buyer) => [buyer.id, buyer]));
}
