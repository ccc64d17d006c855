import type { EntityManager } from '@mikro-orm/postgresql';
import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Env } from '../../../config/env.js';
import { workflowRefusal } from '../../../config/workflow-refusals.js';
import { AppError } from '../../../domain/errors.js';
import { ANY_TENANT } from '../../../entities/common.js';
import { isUuid } from '../../../entities/ids.js';
import { MembershipPayment, MembershipPlan, MembershipSubscription } from '../../../entities/index.js';
import {
  type IMembershipSubscription,
  RENEWAL_STATES,
  SUBSCRIPTION_STATUSES,
} from '../../../entities/membership-subscription.js';
import { SA } from '../../../workflows/definitions.js';
import type { membership } from '../../../workflows/membership.js';
import {
  cancelMembershipUpdate,
  DEFAULT_MEMBERSHIP_DURATIONS,
  type MembershipCancelRequest,
  type MembershipDurations,
  type MembershipPaymentNotification,
  membershipPaymentSignal,
  membershipWorkflowId,
  type SignupResult,
  signupUpdate,
} from '../../../workflows/membership-definitions.js';
import { assertCustomerMayBuyIn } from '../../http/customer-scope.js';
import { dataOf } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { customerAccess } from '../../http/route-access.js';
import { isoOrNull } from '../../http/schemas.js';
import { refusalError } from '../../http/workflow-refusals.js';
import { type CustomerContext, currentCustomer } from '../../plugins/customer-auth.js';
import type { ApiServices } from '../../services.js';

/** How long a signup waits for the buyer's previous membership execution to finish closing. */
const CLOSING_WAIT_MS = 10_000;
const INCLUDING_DELETED = { filters: { tenant: false, notDeleted: false } } as const;

/** The production durations, with the MEMBERSHIP_* overrides applied outside production (tests and demos). */
export function membershipDurations(env: Env): MembershipDurations {
  const defaults = DEFAULT_MEMBERSHIP_DURATIONS;
  if (env.NODE_ENV === 'production') return defaults;
  return {
    periodMs: env.MEMBERSHIP_PERIOD_MS ?? defaults.periodMs,
    signupWindowMs: env.MEMBERSHIP_SIGNUP_WINDOW_MS ?? defaults.signupWindowMs,
    renewalNoticeMs: env.MEMBERSHIP_RENEWAL_NOTICE_MS ?? defaults.renewalNoticeMs,
    reminderIntervalMs: env.MEMBERSHIP_REMINDER_INTERVAL_MS ?? defaults.reminderIntervalMs,
    paymentPollMs: env.MEMBERSHIP_PAYMENT_POLL_MS ?? defaults.paymentPollMs,
    refundCheckMs: defaults.refundCheckMs,
  };
}

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
  const plan = await em.findOneOrFail(MembershipPlan, { id: subscription.plan }, INCLUDING_DELETED);
  const [open] = await em.find(
    MembershipPayment,
    { subscription: subscription.id, status: 'OPEN' },
    { ...ANY_TENANT, orderBy: { periodNumber: 'desc' }, limit: 1 },
  );
  const end = subscription.currentPeriodEnd ?? null;
  return {
    subscriptionId: subscription.id,
    workspaceId: subscription.workspace,
    planId: subscription.plan,
    planName: plan.name,
    status: subscription.status,
    member: subscription.status === 'ACTIVE' && end !== null && end.getTime() > Date.now(),
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

/** The buyer's latest subscription in a workspace (a live one first), or null. */
async function latestSubscription(em: EntityManager, workspaceId: string, buyerId: string) {
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
      throw error;
    }
  }
}

/** The workspace a customer request is about: the API key's pinned workspace, else the one named in the request. */
function workspaceOf(customer: CustomerContext, named: string | undefined): string {
  if (customer.pinnedWorkspaceId) {
    if (named && named !== customer.pinnedWorkspaceId) throw new AppError('NOT_FOUND', 'Workspace not found');
    return customer.pinnedWorkspaceId;
  }
  if (!named) {
    throw new AppError('VALIDATION_FAILED', 'Send workspaceId (or an API key that pins the workspace)', {
      details: { field: 'workspaceId', reason: 'workspace_required' },
    });
  }
  if (!isUuid(named)) throw new AppError('NOT_FOUND', 'Workspace not found');
  return named;
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
      const workspaceId = workspaceOf(customer, request.query.workspaceId);
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
      const plan = isUuid(planId) ? await request.em.findOne(MembershipPlan, { id: planId }, ANY_TENANT) : null;
      if (!plan) throw new AppError('NOT_FOUND', 'Membership plan not found');
      await assertCustomerMayBuyIn(request, customer, plan.workspace, 'Membership plan');
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
      const live = await latestSubscription(request.em, plan.workspace, customer.buyerId);
      if (live?.status === 'ACTIVE') {
        throw new AppError('ALREADY_MEMBER', 'You are already a member of this workspace', {
          details: { reason: 'already_member', subscriptionId: live.id },
        });
      }
      const ids = { workspaceId: plan.workspace, buyerId: customer.buyerId };
      const start = new WithStartWorkflowOperation<typeof membership>('membership', {
        workflowId: membershipWorkflowId(ids.workspaceId, ids.buyerId),
        taskQueue: services.env.TEMPORAL_TASK_QUEUE,
        args: [{ ...ids, durations: membershipDurations(services.env) }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [{ key: SA.workspaceId, value: ids.workspaceId }],
      });
      const result = await signUpThroughWorkflow(services, start, plan.id);
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
      const workspaceId = workspaceOf(customer, request.body.workspaceId);
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
