/**
 * A buyer's membership of a workspace as its membership execution runs it: handing it gateway payments, and the
 * signup and cancel it decides. Routes keep the HTTP side (schemas, the customer session).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { workflowRefusal } from '../../config/workflow-refusals.js';
import { AppError, notFound } from '../../domain/errors.js';
import { ANY_TENANT } from '../../entities/common.js';
import { isUuid } from '../../entities/ids.js';
import { MembershipPayment, MembershipPlan, MembershipSubscription } from '../../entities/index.js';
import type { IMembershipPayment } from '../../entities/membership-payment.js';
import type { IMembershipPlan } from '../../entities/membership-plan.js';
import type { IMembershipSubscription } from '../../entities/membership-subscription.js';
import { SA } from '../../workflows/definitions.js';
import type { membership } from '../../workflows/membership.js';
import {
  cancelMembershipUpdate,
  type MembershipCancelRequest,
  type MembershipPaymentNotification,
  membershipDurations,
  membershipPaymentSignal,
  membershipWorkflowId,
  type SignupResult,
  signupUpdate,
} from '../../workflows/membership-definitions.js';
import { lostUpdateError, refusalError } from '../http/workflow-refusals.js';
import type { ApiServices } from '../services.js';

/** How long a signup waits for the buyer's previous membership execution to finish closing. */
const CLOSING_WAIT_MS = 10_000;
const INCLUDING_DELETED = { filters: { tenant: false, notDeleted: false } } as const;

/**
 * Hands a verified gateway notification to the buyer's membership execution. If it has closed (money after the
 * membership ended), signal-with-start opens a run that settles that payment: money that arrives is never dropped.
 */
export async function notifyMembership(
  services: ApiServices,
  ids: { workspaceId: string; buyerId: string },
  notification: MembershipPaymentNotification,
): Promise<void> {
  await services.temporal.workflow.signalWithStart<typeof membership, [MembershipPaymentNotification]>('membership', {
    workflowId: membershipWorkflowId(ids.workspaceId, ids.buyerId),
    taskQueue: services.env.TEMPORAL_TASK_QUEUE,
    args: [{ ...ids, durations: membershipDurations(services.env), settleLateMoney: true }],
    typedSearchAttributes: [{ key: SA.workspaceId, value: ids.workspaceId }],
    signal: membershipPaymentSignal,
    signalArgs: [notification],
  });
}

/** Cancels through the buyer's membership execution; no running execution means there is nothing left to cancel. */
export async function cancelThroughWorkflow(
  services: ApiServices,
  ids: { workspaceId: string; buyerId: string },
  request: MembershipCancelRequest,
): Promise<void> {
  // A run that continues as new into the next period closes under the update: the next run takes it on a retry.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await services.temporal.workflow
        .getHandle(membershipWorkflowId(ids.workspaceId, ids.buyerId))
        .executeUpdate(cancelMembershipUpdate, { args: [request] });
      return;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError && attempt < 3) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        continue;
      }
      cancelFailure(error);
    }
  }
}

function cancelFailure(error: unknown): never {
  const refused = refusalError(error);
  if (refused) throw refused;
  if (error instanceof WorkflowNotFoundError) {
    throw new AppError('NOT_FOUND', 'There is no membership to cancel', { details: { reason: 'not_a_member' } });
  }
  if (error instanceof WorkflowUpdateFailedError) {
    throw new AppError('SERVICE_UNAVAILABLE', 'The cancel could not be completed; retry');
  }
  throw error;
}

/** The buyer's latest subscription in a workspace (a live one first), or null. */
export async function latestSubscription(em: EntityManager, workspaceId: string, buyerId: string) {
  const rows = await em.find(
    MembershipSubscription,
    { workspace: workspaceId, buyer: buyerId },
    { ...ANY_TENANT, orderBy: { createdAt: 'desc' }, limit: 10, refresh: true },
  );
  return rows.find((row) => row.status === 'ACTIVE' || row.status === 'PENDING') ?? rows[0] ?? null;
}

/**
 * Runs the signup update, starting the buyer's execution when none runs. An execution that is just closing the
 * previous membership refuses for a moment (retryable): the request waits for it to close and starts a fresh one.
 */
async function signUpThroughWorkflow(
  services: ApiServices,
  start: WithStartWorkflowOperation<typeof membership>,
  planId: string,
): Promise<SignupResult> {
  const deadline = Date.now() + CLOSING_WAIT_MS;
  for (let operation = start; ; ) {
    try {
      return await services.temporal.workflow.executeUpdateWithStart(signupUpdate, {
        args: [{ planId }],
        startWorkflowOperation: operation,
      });
    } catch (error) {
      const refusal = workflowRefusal(error);
      if (refusal?.code === 'SERVICE_UNAVAILABLE' && refusal.retryable && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        // A start operation is single use.
        operation = new WithStartWorkflowOperation<typeof membership>('membership', start.options);
        continue;
      }
      const refused = refusalError(error);
      if (refused) throw refused;
      if (error instanceof WorkflowUpdateFailedError) {
        throw new AppError('SERVICE_UNAVAILABLE', 'The signup could not be completed; retry');
      }
      throw (
        lostUpdateError(error, 'The signup got no answer in time; check your memberships before trying again') ?? error
      );
    }
  }
}

/** The workspace a customer request is about: the API key's pinned workspace, else the one named in the request. */
export function membershipWorkspace(pinnedWorkspaceId: string | null, named: string | undefined): string {
  if (pinnedWorkspaceId) {
    if (named && named !== pinnedWorkspaceId) throw new AppError('NOT_FOUND', 'Workspace not found');
    return pinnedWorkspaceId;
  }
  if (!named) {
    throw new AppError('VALIDATION_FAILED', 'Send workspaceId (or an API key that pins the workspace)', {
      details: { field: 'workspaceId', reason: 'workspace_required' },
    });
  }
  if (!isUuid(named)) throw new AppError('NOT_FOUND', 'Workspace not found');
  return named;
}

/** Member while ACTIVE and the current period has not ended. */
export const isMember = (subscription: IMembershipSubscription, nowMs: number): boolean => {
  const end = subscription.currentPeriodEnd ?? null;
  return subscription.status === 'ACTIVE' && end !== null && end.getTime() > nowMs;
};

/** The plan a subscription is on (deleted or not) and its open payment request (signup or renewal), if any. */
export async function planAndOpenPayment(
  em: EntityManager,
  subscription: IMembershipSubscription,
): Promise<{ plan: IMembershipPlan; open: IMembershipPayment | undefined }> {
  const plan = await em.findOneOrFail(MembershipPlan, { id: subscription.plan }, INCLUDING_DELETED);
  const [open] = await em.find(
    MembershipPayment,
    { subscription: subscription.id, status: 'OPEN' },
    { ...ANY_TENANT, orderBy: { periodNumber: 'desc' }, limit: 1 },
  );
  return { plan, open };
}

/** The plan a signup names, in any workspace; 404 when there is none. */
export async function findSignupPlan(em: EntityManager, planId: string): Promise<IMembershipPlan> {
  const plan = isUuid(planId) ? await em.findOne(MembershipPlan, { id: planId }, ANY_TENANT) : null;
  if (!plan) throw new AppError('NOT_FOUND', 'Membership plan not found');
  return plan;
}

/**
 * Signs the buyer up to a plan through their membership execution, started when none runs: refused while the plan
 * takes no new members, has no price to pay through a gateway, or the buyer is already a member of its workspace.
 */
export async function signUp(
  services: ApiServices,
  em: EntityManager,
  plan: IMembershipPlan,
  buyerId: string,
): Promise<SignupResult> {
  if (!plan.active) {
    throw new AppError('INVALID_STATE', 'This plan accepts no new members', {
      details: { reason: 'plan_inactive' },
    });
  }
  if (plan.price <= 0) {
    throw new AppError('INVALID_STATE', 'This plan has no price to pay through a gateway', {
      details: { reason: 'free_plan' },
    });
  }
  const live = await latestSubscription(em, plan.workspace, buyerId);
  if (live?.status === 'ACTIVE') {
    throw new AppError('ALREADY_MEMBER', 'You are already a member of this workspace', {
      details: { reason: 'already_member', subscriptionId: live.id },
    });
  }
  const ids = { workspaceId: plan.workspace, buyerId };
  const start = new WithStartWorkflowOperation<typeof membership>('membership', {
    workflowId: membershipWorkflowId(ids.workspaceId, ids.buyerId),
    taskQueue: services.env.TEMPORAL_TASK_QUEUE,
    args: [{ ...ids, durations: membershipDurations(services.env) }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: [{ key: SA.workspaceId, value: ids.workspaceId }],
  });
  return signUpThroughWorkflow(services, start, plan.id);
}

/**
 * An organizer cancels a subscription of their workspace through its buyer's membership execution: a pending signup
 * ends now, an active one keeps access until its period ends; one already ended is 409 INVALID_STATE. Answers the
 * subscription as the execution left it.
 */
export async function cancelSubscription(
  services: ApiServices,
  em: EntityManager,
  id: string,
): Promise<IMembershipSubscription> {
  const subscription = isUuid(id) ? await em.findOne(MembershipSubscription, { id }) : null;
  if (!subscription) throw notFound('Subscription');
  if (subscription.status === 'CANCELLED' || subscription.status === 'EXPIRED') {
    throw new AppError('INVALID_STATE', `The subscription is ${subscription.status}`, {
      details: { reason: 'subscription_ended', status: subscription.status },
    });
  }
  await cancelThroughWorkflow(
    services,
    { workspaceId: subscription.workspace, buyerId: subscription.buyer },
    { by: 'organizer', subscriptionId: subscription.id },
  );
  return em.findOneOrFail(MembershipSubscription, { id }, { refresh: true });
}
