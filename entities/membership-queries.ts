import type { EntityManager } from '@mikro-orm/postgresql';
import { percentToBps } from '../domain/money.js';
import { ANY_TENANT } from './common.js';
import { type MembershipBenefits, MembershipPlan } from './membership-plan.js';
import { MembershipSubscription } from './membership-subscription.js';

/** Memberships are read across tenants on purpose (storefront, checkout activity): the workspace is in the query. */
/** A plan soft-deleted after a period was paid still defines that period's benefits. */
const INCLUDING_DELETED = { filters: { tenant: false, notDeleted: false } } as const;

export interface ActiveMembership {
  subscriptionId: string;
  planId: string;
  benefits: MembershipBenefits;
}

const NO_BENEFITS: MembershipBenefits = { membersOnlyAccess: false, discountPercent: 0 };

/**
 * Stored JSON checked before pricing trusts it: a percentage outside 0–100 or finer than two decimals would make
 * the pricing engine throw for every order of this buyer, so it counts as no discount instead.
 */
function normalizedBenefits(raw: unknown): MembershipBenefits {
  if (!raw || typeof raw !== 'object') return NO_BENEFITS;
  const { membersOnlyAccess, discountPercent } = raw as Partial<Record<keyof MembershipBenefits, unknown>>;
  let percent = 0;
  if (typeof discountPercent === 'number') {
    try {
      percentToBps(discountPercent);
      percent = discountPercent;
    } catch {
      percent = 0;
    }
  }
  return { membersOnlyAccess: membersOnlyAccess === true, discountPercent: percent };
}

/**
 * The buyer's membership in a workspace at `now`, or null when they are not a member. A member has a subscription
 * there that is ACTIVE with currentPeriodEnd after `now` (a lapsed period is not membership, even before the
 * membership workflow marks it EXPIRED). The benefits are the ones frozen for the current period (periodBenefits), so
 * an organizer's plan change reaches members from their next period; the plan's live benefits count only for a
 * subscription that never froze any.
 *
 * Checkout and the public availability both decide membership here, so a quote and its charge cannot disagree. If a
 * buyer ever holds two live subscriptions in one workspace (the membership workflow keeps one per buyer and
 * workspace), the one with the largest discount counts, and members-only access if any of them grants it.
 */
export async function activeMembership(
  em: EntityManager,
  workspaceId: string,
  buyerId: string,
  now: Date,
): Promise<ActiveMembership | null> {
  const subscriptions = await em.find(
    MembershipSubscription,
    { workspace: workspaceId, buyer: buyerId, status: 'ACTIVE', currentPeriodEnd: { $gt: now } },
    { ...ANY_TENANT, orderBy: { id: 'asc' } },
  );
  if (subscriptions.length === 0) return null;
  const unfrozen = subscriptions.filter((subscription) => subscription.periodBenefits === null);
  const plans = unfrozen.length
    ? await em.find(
        MembershipPlan,
        { id: { $in: [...new Set(unfrozen.map((subscription) => subscription.plan))] } },
        INCLUDING_DELETED,
      )
    : [];
  const planBenefits = new Map(plans.map((plan) => [plan.id, plan.benefits]));
  let best: ActiveMembership | null = null;
  let anyAccess = false;
  for (const subscription of subscriptions) {
    const benefits = normalizedBenefits(subscription.periodBenefits ?? planBenefits.get(subscription.plan));
    anyAccess ||= benefits.membersOnlyAccess;
    if (!best || benefits.discountPercent > best.benefits.discountPercent) {
      best = { subscriptionId: subscription.id, planId: subscription.plan, benefits };
    }
  }
  return best && { ...best, benefits: { ...best.benefits, membersOnlyAccess: anyAccess } };
}
