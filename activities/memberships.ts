/**
 * Steps of the membership workflow (workflows/membership.ts). Database steps are short transactions that lock the
 * subscription row and change it only from the state the story expects, so a retried or replayed step changes
 * nothing; gateway steps re-read what the gateway holds and carry idempotency keys, so a retry never charges or
 * refunds twice.
 */
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { membershipReferenceFromBytes, SALE_REFERENCE_RANDOM_BYTES } from '../domain/codes.js';
import { formatMoney, isCurrencyCode } from '../domain/money.js';
import { outcomeOfStatus } from '../domain/payment-verdict.js';
import { newId } from '../entities/ids.js';
import { Buyer, MembershipPayment, MembershipPlan, MembershipSubscription } from '../entities/index.js';
import type { MembershipBenefits } from '../entities/membership-plan.js';
import type { RenewalState, SubscriptionStatus } from '../entities/membership-subscription.js';
import { REFUND_REFUSED_ALERT, refundMetrics } from '../observability/metrics.js';
import { type CancelledBy, type MembershipPeriod, periodEndMs } from '../workflows/membership-definitions.js';
import type { ActivityDeps } from './deps.js';
import { throwIfRefundDeclined } from './gateway-refunds.js';
import { appendMembershipEvent } from './outbox.js';
import type { GatewayAPayment } from './ports.js';

const ANY_TENANT = { filters: { tenant: false } } as const;
/** A plan soft-deleted while members hold it still defines their periods. */
const INCLUDING_DELETED = { filters: { tenant: false, notDeleted: false } } as const;

/** What the workflow knows about a subscription, read from its row. */
export interface MembershipSnapshot {
  subscriptionId: string;
  planId: string;
  status: SubscriptionStatus;
  renewalState: RenewalState;
  periodNumber: number;
  /** Epoch ms; null while the signup is unpaid. */
  currentPeriodEndMs: number | null;
  cancelAtPeriodEnd: boolean;
  /** The payment link the buyer is asked to pay now (signup or renewal), if one is open. */
  openPayment: OpenPayment | null;
}

export interface OpenPayment {
  paymentId: string;
  reference: string;
  periodNumber: number;
  amount: number;
  currency: string;
  expiresAtMs: number;
  checkoutUrl: string | null;
}

export type SignupOutcome =
  | { ok: true; snapshot: MembershipSnapshot; payment: OpenPayment }
  | { ok: false; code: 'ALREADY_MEMBER' | 'INVALID_STATE' | 'NOT_FOUND'; reason: string; message: string };

/** A gateway A payment of a membership reference, as the gateway's own API reports it. */
export interface MembershipVerdict {
  outcome: 'approved' | 'rejected' | 'pending' | 'refunded' | 'unknown';
  providerPaymentId: string;
  reference: string | null;
  amount: number;
  currency: string;
  rawStatus: string;
  statusDetail: string | null;
}

export type ApprovedPaymentOutcome =
  /** The signup's payment: the subscription is ACTIVE, period 1. */
  | 'activated'
  /** The next period's payment: renewalState PAID. */
  | 'renewal_paid'
  /** Already recorded as paying a period (a duplicated notification) or already refunded: nothing to do. */
  | 'already_applied'
  /** Pays nothing (late, second, wrong amount, cancelled): recorded REFUND_REQUESTED, to be refunded. */
  | 'give_back'
  /** The reference is not a membership payment of ours. */
  | 'not_ours';

export type MembershipMailKind =
  | 'signup_link'
  | 'activated'
  | 'renewal_due'
  | 'renewal_reminder'
  | 'renewal_final_notice'
  | 'renewal_declined'
  | 'renewal_paid'
  | 'renewed'
  | 'cancel_scheduled'
  | 'cancelled'
  | 'expired';

export interface MembershipMailInput {
  subscriptionId: string;
  kind: MembershipMailKind;
  /** The payment request whose link and amount the mail carries, if it asks for money. */
  paymentId: string | null;
}

/**
 * Quick tries of the declined-payment notice inside its database step (its first retries come within about four
 * seconds); after them the decline is recorded without the notice.
 */
const DECLINE_NOTICE_TRIES = 4;

const verdictOf = (payment: GatewayAPayment): MembershipVerdict => ({
  outcome: outcomeOfStatus('GATEWAY_A', payment.status),
  providerPaymentId: payment.id,
  reference: payment.externalReference,
  amount: payment.amount,
  currency: payment.currency,
  rawStatus: payment.status,
  statusDetail: payment.statusDetail,
});

interface SubscriptionRow {
  id: string;
  workspace_id: string;
  plan_id: string;
  buyer_id: string;
  status: SubscriptionStatus;
  renewal_state: RenewalState;
  period_number: number;
  /** Raw rows carry timestamps as the driver returns them (a string here); read them through `new Date`. */
  current_period_end: Date | string | null;
  cancelled_at: Date | string | null;
}

interface PaymentRow {
  id: string;
  subscription_id: string;
  workspace_id: string;
  period_number: number;
  reference: string;
  status: string;
  provider_payment_id: string | null;
  amount: number;
  currency: string;
}

async function lockSubscription(tx: EntityManager, id: string): Promise<SubscriptionRow | null> {
  const rows = await tx.execute<SubscriptionRow[]>(
    `select id, workspace_id, plan_id, buyer_id, status, renewal_state, period_number, current_period_end, cancelled_at
       from membership_subscriptions where id = ? for update`,
    [id],
  );
  return rows[0] ?? null;
}

async function newMembershipReference(em: EntityManager): Promise<string> {
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const reference = membershipReferenceFromBytes(randomBytes(SALE_REFERENCE_RANDOM_BYTES));
    const taken = await em.execute<{ one: number }[]>('select 1 as one from membership_payments where reference = ?', [
      reference,
    ]);
    if (taken.length === 0) return reference;
  }
  throw new Error('could not draw a free membership reference');
}

async function planOf(em: EntityManager, planId: string) {
  return em.findOneOrFail(MembershipPlan, { id: planId }, INCLUDING_DELETED);
}

/** The subscription as the workflow sees it, with the payment link that is open now, if any. */
async function snapshotOf(em: EntityManager, subscriptionId: string): Promise<MembershipSnapshot | null> {
  const subscription = await em.findOne(
    MembershipSubscription,
    { id: subscriptionId },
    { ...ANY_TENANT, refresh: true },
  );
  if (!subscription) return null;
  const [open] = await em.find(
    MembershipPayment,
    { subscription: subscriptionId, status: 'OPEN' },
    { ...ANY_TENANT, orderBy: { periodNumber: 'desc' }, limit: 1, refresh: true },
  );
  return {
    subscriptionId: subscription.id,
    planId: subscription.plan,
    status: subscription.status,
    renewalState: subscription.renewalState,
    periodNumber: subscription.periodNumber,
    currentPeriodEndMs: subscription.currentPeriodEnd?.getTime() ?? null,
    cancelAtPeriodEnd: subscription.renewalState === 'CANCEL_AT_PERIOD_END',
    openPayment: open
      ? {
          paymentId: open.id,
          reference: open.reference,
          periodNumber: open.periodNumber,
          amount: open.amount,
          currency: open.currency,
          expiresAtMs: open.expiresAt?.getTime() ?? 0,
          checkoutUrl: open.checkoutUrl ?? null,
        }
      : null,
  };
}

const mustSnapshot = async (em: EntityManager, id: string): Promise<MembershipSnapshot> => {
  const snapshot = await snapshotOf(em, id);
  if (!snapshot) throw ApplicationFailure.nonRetryable(`membership subscription ${id} does not exist`);
  return snapshot;
};

const escapeHtml = (value: string): string =>
  value.replace(
    /[&<>"']/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char,
  );

export function createMembershipActivities(deps: ActivityDeps) {
  const { gatewayA } = deps.providers;
  const origin = deps.env.PUBLIC_ORIGIN.replace(/\/$/, '');
  const notificationUrl = `${(deps.env.GATEWAY_NOTIFICATION_ORIGIN ?? origin).replace(/\/$/, '')}/api/v1/webhooks/gateway-a`;

  /** Renders and sends one membership email (the texts of every kind are here); the link goes in those that ask. */
  async function sendMembershipMail(em: EntityManager, input: MembershipMailInput): Promise<void> {
    const subscription = await em.findOneOrFail(MembershipSubscription, { id: input.subscriptionId }, ANY_TENANT);
    const plan = await planOf(em, subscription.plan);
    const buyer = await em.findOneOrFail(Buyer, { id: subscription.buyer });
    const payment = input.paymentId ? await em.findOne(MembershipPayment, { id: input.paymentId }, ANY_TENANT) : null;
    const price = (amount: number, currency: string) =>
      isCurrencyCode(currency) ? formatMoney(amount, currency) : `${amount} ${currency}`;
    const until = subscription.currentPeriodEnd?.toISOString().slice(0, 16).replace('T', ' ') ?? '';
    const link = payment?.checkoutUrl ?? null;
    const ask = payment ? `Pay ${price(payment.amount, payment.currency)} here: ${link ?? '(link pending)'}` : '';
    const texts: Record<MembershipMailKind, { subject: string; body: string }> = {
      signup_link: { subject: `Complete your ${plan.name} membership`, body: ask },
      activated: { subject: `Welcome to ${plan.name}`, body: `Your membership is active until ${until} UTC.` },
      renewal_due: { subject: `Renew your ${plan.name} membership`, body: `${ask}\nYour period ends ${until} UTC.` },
      renewal_reminder: {
        subject: `Reminder: renew your ${plan.name} membership`,
        body: `${ask}\nYour period ends ${until} UTC.`,
      },
      renewal_final_notice: {
        subject: `Final notice: your ${plan.name} membership ends ${until} UTC`,
        body: `${ask}\nWithout this payment your access ends ${until} UTC.`,
      },
      renewal_declined: {
        subject: `Your ${plan.name} renewal payment was declined`,
        body:
          'The payment for your next period was declined. The same link still works; try again with another card or bank.' +
          `\n${ask}\nWithout this payment your access ends ${until} UTC.`,
      },
      renewal_paid: {
        subject: `Renewal received for ${plan.name}`,
        body: `Thank you; your next period starts ${until} UTC.`,
      },
      renewed: { subject: `Your ${plan.name} membership renewed`, body: `Active until ${until} UTC.` },
      cancel_scheduled: {
        subject: `Your ${plan.name} membership is cancelled`,
        body: `You keep your access until ${until} UTC; it will not renew.`,
      },
      cancelled: { subject: `Your ${plan.name} membership has ended`, body: 'It was cancelled; thank you.' },
      expired: {
        subject: `Your ${plan.name} membership has expired`,
        body: 'The payment did not arrive in time. You can join again any time.',
      },
    };
    const { subject, body } = texts[input.kind];
    const greeting = `Hello${buyer.name ? ` ${buyer.name}` : ''},`;
    await deps.providers.mail.send({
      to: buyer.email,
      subject,
      text: `${greeting}\n\n${body}\n`,
      html: `<p>${escapeHtml(greeting)}</p>${body
        .split('\n')
        .map((line) =>
          link && line.includes(link)
            ? `<p><a href="${escapeHtml(link)}">${escapeHtml(line)}</a></p>`
            : `<p>${escapeHtml(line)}</p>`,
        )
        .join('')}`,
    });
  }

  return {
    async readMembership(subscriptionId: string): Promise<MembershipSnapshot | null> {
      return snapshotOf(deps.orm.em.fork(), subscriptionId);
    },

    /**
     * Creates the PENDING subscription and its first payment request, or answers with the buyer's pending signup
     * for the same plan. Ids come from the workflow, so a retried step finds what its first try wrote.
     */
    async startSignup(input: {
      subscriptionId: string;
      paymentId: string;
      workspaceId: string;
      buyerId: string;
      planId: string;
      nowMs: number;
      signupWindowMs: number;
    }): Promise<SignupOutcome> {
      const em = deps.orm.em.fork();
      const refusal = await em.transactional(async (tx): Promise<SignupOutcome | { ok: true; id: string }> => {
        const live = await tx.execute<{ id: string; status: SubscriptionStatus; plan_id: string }[]>(
          `select id, status, plan_id from membership_subscriptions
            where workspace_id = ? and buyer_id = ? and status in ('PENDING', 'ACTIVE') order by created_at desc for update`,
          [input.workspaceId, input.buyerId],
        );
        const current = live[0];
        if (current?.status === 'ACTIVE') {
          return { ok: false, code: 'ALREADY_MEMBER', reason: 'already_member', message: 'You are already a member' };
        }
        if (current) {
          if (current.plan_id === input.planId) return { ok: true, id: current.id };
          return {
            ok: false,
            code: 'INVALID_STATE',
            reason: 'signup_pending_other_plan',
            message: 'A signup for another plan is waiting for its payment; cancel it first',
          };
        }
        const plan = await tx.findOne(MembershipPlan, { id: input.planId, workspace: input.workspaceId }, ANY_TENANT);
        if (!plan) return { ok: false, code: 'NOT_FOUND', reason: 'plan_not_found', message: 'Plan not found' };
        if (!plan.active) {
          return {
            ok: false,
            code: 'INVALID_STATE',
            reason: 'plan_inactive',
            message: 'This plan accepts no new members',
          };
        }
        tx.create(MembershipSubscription, {
          id: input.subscriptionId,
          workspace: input.workspaceId,
          plan: plan.id,
          buyer: input.buyerId,
          status: 'PENDING',
          renewalState: 'AWAITING_SIGNUP_PAYMENT',
          periodNumber: 0,
          currency: plan.currency,
        });
        tx.create(MembershipPayment, {
          id: input.paymentId,
          workspace: input.workspaceId,
          subscription: input.subscriptionId,
          periodNumber: 1,
          reference: await newMembershipReference(tx),
          gateway: 'GATEWAY_A',
          amount: plan.price,
          currency: plan.currency,
          status: 'OPEN',
          expiresAt: new Date(input.nowMs + input.signupWindowMs),
        });
        await tx.flush();
        return { ok: true, id: input.subscriptionId };
      });
      if (!refusal.ok) return refusal;
      if (!('id' in refusal)) return refusal;
      const snapshot = await mustSnapshot(em.fork(), refusal.id);
      if (!snapshot.openPayment) {
        return {
          ok: false,
          code: 'INVALID_STATE',
          reason: 'signup_closing',
          message: 'The pending signup is closing; try again in a moment',
        };
      }
      return { ok: true, snapshot, payment: snapshot.openPayment };
    },

    /** The gateway A link (card or PSE) of a payment request; created once, then read back from the row. */
    async openPaymentLink(input: { paymentId: string }): Promise<{ checkoutUrl: string }> {
      const em = deps.orm.em.fork();
      const payment = await em.findOneOrFail(MembershipPayment, { id: input.paymentId }, ANY_TENANT);
      if (payment.checkoutUrl) return { checkoutUrl: payment.checkoutUrl };
      const subscription = await em.findOneOrFail(MembershipSubscription, { id: payment.subscription }, ANY_TENANT);
      const plan = await planOf(em, subscription.plan);
      const buyer = await em.findOneOrFail(Buyer, { id: subscription.buyer });
      const preference = await gatewayA.createCheckoutPreference({
        idempotencyKey: `membership-${payment.id}`,
        amount: payment.amount,
        currency: payment.currency,
        title: `${plan.name} · ${payment.reference}`.slice(0, 100),
        reference: payment.reference,
        payerEmail: buyer.email,
        notificationUrl,
        returnUrl: `${origin}/`,
        expiresAt: payment.expiresAt ?? new Date(Date.now() + 30 * 60_000),
      });
      await em.execute(
        `update membership_payments set preference_id = ?, checkout_url = ?, updated_at = now()
          where id = ? and checkout_url is null`,
        [preference.preferenceId, preference.redirectUrl, payment.id],
      );
      return { checkoutUrl: preference.redirectUrl };
    },

    /** Re-reads one payment from gateway A: a notification only says "look again". */
    async readMembershipGatewayPayment(input: { providerPaymentId: string }): Promise<MembershipVerdict> {
      return verdictOf(await gatewayA.getPayment(input.providerPaymentId));
    },

    /** Pull reconciliation: every payment gateway A holds for a membership reference. */
    async findMembershipGatewayPayments(input: { reference: string }): Promise<MembershipVerdict[]> {
      return (await gatewayA.findPaymentsByReference(input.reference)).map(verdictOf);
    },

    /**
     * Returns a payment to the buyer; the same key on every retry of one ask, so the gateway refunds once. An ask after
     * a refusal (`ask`, the refusals met before it) has a key of its own: the gateway replays a refused answer per key.
     */
    async refundMembershipGatewayPayment(input: {
      providerPaymentId: string;
      ask?: number;
    }): Promise<{ status: string }> {
      const refund = await gatewayA.refund({
        paymentId: input.providerPaymentId,
        idempotencyKey: `membership-refund-${input.providerPaymentId}${input.ask ? `-a${input.ask}` : ''}`,
      });
      throwIfRefundDeclined(refund);
      return { status: refund.status };
    },

    /**
     * The one decision for approved money: it pays the period its reference asks for when that request is still
     * open, for this execution's subscription, with its exact amount and currency; otherwise it pays nothing and is
     * recorded REFUND_REQUESTED (the workflow then refunds it). The provider payment id is unique, so a duplicated
     * notification finds the first decision and changes nothing.
     */
    async applyApprovedPayment(input: {
      currentSubscriptionId: string | null;
      verdict: MembershipVerdict;
      nowMs: number;
      periodMs: number | null;
    }): Promise<{ outcome: ApprovedPaymentOutcome; snapshot: MembershipSnapshot | null }> {
      const em = deps.orm.em.fork();
      const { verdict } = input;
      const outcome = await em.transactional(async (tx): Promise<ApprovedPaymentOutcome> => {
        const seen = await tx.execute<{ status: string }[]>(
          'select status from membership_payments where provider_payment_id = ? for update',
          [verdict.providerPaymentId],
        );
        if (seen[0]?.status === 'REJECTED') {
          // Recorded as declined, now reported approved (a gateway may revise its verdict): the decline record gives
          // way, and the money is decided below like any other, so it is never taken for already applied.
          await tx.execute(`delete from membership_payments where provider_payment_id = ? and status = 'REJECTED'`, [
            verdict.providerPaymentId,
          ]);
        } else if (seen[0]) return seen[0].status === 'REFUND_REQUESTED' ? 'give_back' : 'already_applied';
        if (!verdict.reference) return 'not_ours';
        const [row] = await tx.execute<PaymentRow[]>(
          `select id, subscription_id, workspace_id, period_number, reference, status, provider_payment_id, amount, currency
             from membership_payments where reference = ? for update`,
          [verdict.reference],
        );
        if (!row) return 'not_ours';
        const subscription = await lockSubscription(tx, row.subscription_id);
        if (!subscription) return 'not_ours';
        const payable =
          row.status === 'OPEN' &&
          row.subscription_id === input.currentSubscriptionId &&
          verdict.amount === row.amount &&
          verdict.currency === row.currency;
        const markPaid = () =>
          tx.execute(
            `update membership_payments set status = 'APPROVED', provider_payment_id = ?, approved_at = now(),
                    status_detail = ?, updated_at = now() where id = ?`,
            [verdict.providerPaymentId, verdict.statusDetail, row.id],
          );
        if (payable && row.period_number === 1 && subscription.status === 'PENDING') {
          const plan = await planOf(tx, subscription.plan_id);
          const end = periodEndMs(input.nowMs, plan.period as MembershipPeriod, input.periodMs);
          await markPaid();
          await tx.execute(
            `update membership_subscriptions set status = 'ACTIVE', renewal_state = 'SCHEDULED', period_number = 1,
                    activated_at = ?, current_period_start = ?, current_period_end = ?, period_price = ?,
                    period_benefits = ?::jsonb, updated_at = now()
              where id = ? and status = 'PENDING'`,
            [
              new Date(input.nowMs),
              new Date(input.nowMs),
              new Date(end),
              row.amount,
              JSON.stringify(plan.benefits satisfies MembershipBenefits),
              subscription.id,
            ],
          );
          await appendMembershipEvent(tx, 'membership.activated', subscription.id);
          return 'activated';
        }
        const renewalOpen =
          subscription.status === 'ACTIVE' &&
          subscription.cancelled_at === null &&
          row.period_number === subscription.period_number + 1 &&
          (subscription.renewal_state === 'DUE' || subscription.renewal_state === 'FAILED');
        if (payable && renewalOpen) {
          await markPaid();
          await tx.execute(
            `update membership_subscriptions set renewal_state = 'PAID', updated_at = now() where id = ?`,
            [subscription.id],
          );
          return 'renewal_paid';
        }
        const why =
          verdict.amount !== row.amount || verdict.currency !== row.currency
            ? 'refund: amount or currency does not match'
            : row.status === 'APPROVED'
              ? 'refund: this period was already paid'
              : 'refund: the payment request was no longer open';
        if (row.provider_payment_id === null && row.status !== 'OPEN' && row.status !== 'APPROVED') {
          await tx.execute(
            `update membership_payments set status = 'REFUND_REQUESTED', provider_payment_id = ?, status_detail = ?,
                    updated_at = now() where id = ?`,
            [verdict.providerPaymentId, why, row.id],
          );
        } else {
          // A second payment of one request gets a row of its own: every payment the gateway holds is recorded.
          await tx.execute(
            `insert into membership_payments (id, created_at, updated_at, workspace_id, subscription_id, period_number,
                    reference, gateway, amount, currency, status, provider_payment_id, status_detail)
             values (?, now(), now(), ?, ?, ?, ?, 'GATEWAY_A', ?, ?, 'REFUND_REQUESTED', ?, ?)`,
            [
              newId(),
              row.workspace_id,
              row.subscription_id,
              row.period_number,
              await newMembershipReference(tx),
              verdict.amount,
              verdict.currency,
              verdict.providerPaymentId,
              `${why} (${row.reference})`.slice(0, 120),
            ],
          );
        }
        return 'give_back';
      });
      const snapshot = input.currentSubscriptionId ? await snapshotOf(em.fork(), input.currentSubscriptionId) : null;
      return { outcome, snapshot };
    },

    /**
     * The gateway declined a payment of the open request: the link stays open to try again and an unpaid renewal
     * shows FAILED. The buyer hears of each declined renewal payment once, at once (the link and the instant access
     * ends unpaid): the decline is recorded as a REJECTED row under its provider payment id, which is unique, after
     * the notice went out, so a repeated notification or a retried step finds the record and sends nothing. The
     * mail gets DECLINE_NOTICE_TRIES quick tries; then the decline is recorded without it, because this step holds
     * up the money handling of the execution behind it.
     */
    async notePaymentRejected(input: {
      reference: string;
      providerPaymentId: string;
      statusDetail: string | null;
      /**
       * The workflow mails the notice itself, from a task-queue activity (set by executions since
       * MEMBERSHIP_MONEY_NEVER_STRANDED): this step only records the decline and says whether the notice is owed. A
       * mail sent from inside this local step was sent again whenever a slow send outlived the step's timeout.
       */
      noticeByWorkflow?: boolean;
    }): Promise<{ noticeOwedFor: string | null }> {
      const em = deps.orm.em.fork();
      const detail = input.statusDetail ?? 'rejected';
      const unrecorded = await em.transactional(async (tx): Promise<PaymentRow | null> => {
        const rows = await tx.execute<PaymentRow[]>(
          `update membership_payments set status_detail = ?, updated_at = now()
            where reference = ? and status = 'OPEN'
            returning id, subscription_id, workspace_id, period_number, reference, status, provider_payment_id, amount,
                      currency`,
          [detail, input.reference],
        );
        const request = rows[0];
        if (!request) return null;
        if (request.period_number > 1) {
          await tx.execute(
            `update membership_subscriptions set renewal_state = 'FAILED', updated_at = now()
              where id = ? and renewal_state = 'DUE'`,
            [request.subscription_id],
          );
        }
        const recorded = await tx.execute<{ one: number }[]>(
          'select 1 as one from membership_payments where provider_payment_id = ?',
          [input.providerPaymentId],
        );
        return recorded.length === 0 ? request : null;
      });
      if (!unrecorded) return { noticeOwedFor: null };
      let noticeSent = true;
      // A declined signup needs no mail: the buyer is on the payment page that just said so.
      if (unrecorded.period_number > 1 && !input.noticeByWorkflow) {
        try {
          await sendMembershipMail(em.fork(), {
            subscriptionId: unrecorded.subscription_id,
            kind: 'renewal_declined',
            paymentId: unrecorded.id,
          });
        } catch (error) {
          const context = Context.current();
          if (context.info.attempt < DECLINE_NOTICE_TRIES) throw error;
          context.log.warn('the declined-payment notice could not be sent; the decline is recorded without it', {
            subscriptionId: unrecorded.subscription_id,
            providerPaymentId: input.providerPaymentId,
            error: String(error),
          });
          noticeSent = false;
        }
      }
      await em.fork().transactional(async (tx) => {
        await tx.execute(
          `insert into membership_payments (id, created_at, updated_at, workspace_id, subscription_id, period_number,
                  reference, gateway, amount, currency, status, provider_payment_id, status_detail)
           values (?, now(), now(), ?, ?, ?, ?, 'GATEWAY_A', ?, ?, 'REJECTED', ?, ?)
           on conflict (provider_payment_id) do nothing`,
          [
            newId(),
            unrecorded.workspace_id,
            unrecorded.subscription_id,
            unrecorded.period_number,
            await newMembershipReference(tx),
            unrecorded.amount,
            unrecorded.currency,
            input.providerPaymentId,
            `${detail} (${unrecorded.reference}${noticeSent ? '' : '; notice not sent'})`.slice(0, 120),
          ],
        );
      });
      return { noticeOwedFor: input.noticeByWorkflow && unrecorded.period_number > 1 ? unrecorded.id : null };
    },

    /** A signup that ends unpaid: EXPIRED when its window passed, CANCELLED when the buyer or organizer cancelled. */
    async closeSignup(input: {
      subscriptionId: string;
      to: 'EXPIRED' | 'CANCELLED';
      cancelledBy: CancelledBy | null;
    }): Promise<MembershipSnapshot> {
      const em = deps.orm.em.fork();
      await em.transactional(async (tx) => {
        const closed = await tx.execute<{ id: string }[]>(
          `update membership_subscriptions set status = ?, renewal_state = 'ENDED', ended_at = now(), end_reason = ?,
                  cancelled_at = case when ? then now() else cancelled_at end, cancelled_by = coalesce(?, cancelled_by),
                  updated_at = now()
            where id = ? and status = 'PENDING' returning id`,
          [
            input.to,
            input.to === 'EXPIRED' ? 'signup_unpaid' : 'cancelled',
            input.to === 'CANCELLED',
            input.cancelledBy,
            input.subscriptionId,
          ],
        );
        if (closed.length > 0) await expireOpenPayments(tx, input.subscriptionId);
      });
      return mustSnapshot(em.fork(), input.subscriptionId);
    },

    /**
     * Asks for the next period's payment at the plan's current price (a price change reaches members from their
     * next period). A plan deleted since cannot renew: the renewal is FAILED and access ends at period end.
     */
    async openRenewal(input: {
      subscriptionId: string;
      paymentId: string;
      expiresAtMs: number;
    }): Promise<{ ok: true; payment: OpenPayment } | { ok: false; reason: 'plan_deleted' | 'not_renewable' }> {
      const em = deps.orm.em.fork();
      const opened = await em.transactional(async (tx) => {
        const subscription = await lockSubscription(tx, input.subscriptionId);
        const existing = await tx.findOne(MembershipPayment, { id: input.paymentId }, ANY_TENANT);
        if (existing) return { ok: true as const };
        if (subscription?.status !== 'ACTIVE' || subscription.cancelled_at !== null) {
          return { ok: false as const, reason: 'not_renewable' as const };
        }
        const plan = await planOf(tx, subscription.plan_id);
        if (plan.deletedAt) {
          await tx.execute(
            `update membership_subscriptions set renewal_state = 'FAILED', updated_at = now()
              where id = ? and renewal_state = 'SCHEDULED'`,
            [subscription.id],
          );
          return { ok: false as const, reason: 'plan_deleted' as const };
        }
        tx.create(MembershipPayment, {
          id: input.paymentId,
          workspace: subscription.workspace_id,
          subscription: subscription.id,
          periodNumber: subscription.period_number + 1,
          reference: await newMembershipReference(tx),
          gateway: 'GATEWAY_A',
          amount: plan.price,
          currency: plan.currency,
          status: 'OPEN',
          expiresAt: new Date(input.expiresAtMs),
        });
        await tx.execute(
          `update membership_subscriptions set renewal_state = 'DUE', updated_at = now()
            where id = ? and renewal_state = 'SCHEDULED'`,
          [subscription.id],
        );
        await tx.flush();
        return { ok: true as const };
      });
      if (!opened.ok) return opened;
      const payment = await em.fork().findOneOrFail(MembershipPayment, { id: input.paymentId }, ANY_TENANT);
      return {
        ok: true,
        payment: {
          paymentId: payment.id,
          reference: payment.reference,
          periodNumber: payment.periodNumber,
          amount: payment.amount,
          currency: payment.currency,
          expiresAtMs: payment.expiresAt?.getTime() ?? input.expiresAtMs,
          checkoutUrl: payment.checkoutUrl ?? null,
        },
      };
    },

    /**
     * Cancel of an ACTIVE membership: access stays until the period ends (CANCEL_AT_PERIOD_END), an open renewal
     * link is expired and a renewal already paid is marked REFUND_REQUESTED; its payment ids are returned to refund.
     */
    async requestCancel(input: {
      subscriptionId: string;
      by: CancelledBy;
    }): Promise<{ snapshot: MembershipSnapshot; refund: string[] }> {
      const em = deps.orm.em.fork();
      const refund = await em.transactional(async (tx) => {
        const subscription = await lockSubscription(tx, input.subscriptionId);
        if (subscription?.status !== 'ACTIVE') return [];
        await tx.execute(
          `update membership_subscriptions set renewal_state = 'CANCEL_AT_PERIOD_END',
                  cancelled_at = coalesce(cancelled_at, now()), cancelled_by = coalesce(cancelled_by, ?), updated_at = now()
            where id = ?`,
          [input.by, subscription.id],
        );
        await tx.execute(
          `update membership_payments set status = 'EXPIRED', updated_at = now()
            where subscription_id = ? and status = 'OPEN' and period_number > ?`,
          [subscription.id, subscription.period_number],
        );
        const paid = await tx.execute<{ provider_payment_id: string }[]>(
          `update membership_payments set status = 'REFUND_REQUESTED', status_detail = 'refund: cancelled before the period it paid',
                  updated_at = now()
            where subscription_id = ? and status = 'APPROVED' and period_number > ? and provider_payment_id is not null
            returning provider_payment_id`,
          [subscription.id, subscription.period_number],
        );
        return paid.map((row) => row.provider_payment_id);
      });
      // Refunds requested by an earlier try of this step are owed too.
      const owed = await em
        .fork()
        .find(MembershipPayment, { subscription: input.subscriptionId, status: 'REFUND_REQUESTED' }, ANY_TENANT);
      const all = new Set([...refund, ...owed.map((payment) => payment.providerPaymentId ?? '').filter(Boolean)]);
      return { snapshot: await mustSnapshot(em.fork(), input.subscriptionId), refund: [...all] };
    },

    /**
     * The paid renewal becomes the current period: it starts where the last one ended and freezes the plan's terms
     * as they are now (price paid, benefits). Idempotent: a run that already advanced returns the snapshot.
     */
    async startNextPeriod(input: {
      subscriptionId: string;
      fromPeriod: number;
      periodMs: number | null;
    }): Promise<MembershipSnapshot> {
      const em = deps.orm.em.fork();
      await em.transactional(async (tx) => {
        const subscription = await lockSubscription(tx, input.subscriptionId);
        if (!subscription || subscription.period_number !== input.fromPeriod || subscription.status !== 'ACTIVE')
          return;
        if (subscription.renewal_state !== 'PAID' || !subscription.current_period_end) return;
        const [payment] = await tx.execute<{ amount: number }[]>(
          `select amount from membership_payments where subscription_id = ? and period_number = ? and status = 'APPROVED'`,
          [subscription.id, input.fromPeriod + 1],
        );
        if (!payment) return;
        const plan = await planOf(tx, subscription.plan_id);
        const start = new Date(subscription.current_period_end).getTime();
        await tx.execute(
          `update membership_subscriptions set period_number = period_number + 1, renewal_state = 'SCHEDULED',
                  current_period_start = ?, current_period_end = ?, period_price = ?, period_benefits = ?::jsonb,
                  updated_at = now()
            where id = ?`,
          [
            new Date(start),
            new Date(periodEndMs(start, plan.period as MembershipPeriod, input.periodMs)),
            payment.amount,
            JSON.stringify(plan.benefits),
            subscription.id,
          ],
        );
        await appendMembershipEvent(tx, 'membership.renewed', subscription.id);
      });
      return mustSnapshot(em.fork(), input.subscriptionId);
    },

    /** Access ends at the period end: CANCELLED after a cancel, EXPIRED when the renewal was not paid. */
    async endMembership(input: { subscriptionId: string; to: 'CANCELLED' | 'EXPIRED' }): Promise<MembershipSnapshot> {
      const em = deps.orm.em.fork();
      await em.transactional(async (tx) => {
        const ended = await tx.execute<{ id: string }[]>(
          `update membership_subscriptions set status = ?, renewal_state = 'ENDED', ended_at = now(), end_reason = ?,
                  updated_at = now()
            where id = ? and status = 'ACTIVE' returning id`,
          [input.to, input.to === 'CANCELLED' ? 'cancelled' : 'renewal_unpaid', input.subscriptionId],
        );
        if (ended.length === 0) return;
        await expireOpenPayments(tx, input.subscriptionId);
        await appendMembershipEvent(
          tx,
          input.to === 'CANCELLED' ? 'membership.cancelled' : 'membership.expired',
          input.subscriptionId,
        );
      });
      return mustSnapshot(em.fork(), input.subscriptionId);
    },

    /** The gateway reports the payment refunded: REFUND_REQUESTED → REFUNDED. */
    async markMembershipPaymentRefunded(input: { providerPaymentId: string }): Promise<void> {
      await deps.orm.em.fork().execute(
        `update membership_payments set status = 'REFUNDED', updated_at = now()
            where provider_payment_id = ? and status in ('REFUND_REQUESTED', 'REFUND_REFUSED')`,
        [input.providerPaymentId],
      );
    },

    /**
     * The gateway refused the refund of this payment for good (MAX_REFUND_REFUSALS times): REFUND_REQUESTED →
     * REFUND_REFUSED, counted in `ticketing_refunds_refused_total` and logged as an alert the first time. The money is
     * still the buyer's: the execution parks until an operator retries (`operator refunds-refused retry`).
     */
    async recordRefundRefused(input: {
      providerPaymentId: string;
      reason: string;
    }): Promise<{ membershipPaymentId: string | null }> {
      const em = deps.orm.em.fork();
      const changed = await em.execute<{ id: string; subscription_id: string; amount: number; currency: string }[]>(
        `update membership_payments set status = 'REFUND_REFUSED', status_detail = ?, updated_at = now()
          where provider_payment_id = ? and status = 'REFUND_REQUESTED'
          returning id, subscription_id, amount, currency`,
        [`refund refused: ${input.reason}`.slice(0, 120), input.providerPaymentId],
      );
      const first = changed[0];
      if (first) {
        refundMetrics.refused.inc({ process: 'membership', gateway: 'GATEWAY_A' });
        Context.current().log.error(REFUND_REFUSED_ALERT, {
          what: 'refund_refused',
          process: 'membership',
          membershipPaymentId: first.id,
          subscriptionId: first.subscription_id,
          providerPaymentId: input.providerPaymentId,
          amount: first.amount,
          currency: first.currency,
          reason: input.reason,
        });
        return { membershipPaymentId: first.id };
      }
      const [row] = await em.execute<{ id: string }[]>(
        'select id from membership_payments where provider_payment_id = ?',
        [input.providerPaymentId],
      );
      return { membershipPaymentId: row?.id ?? null };
    },

    /**
     * A paid renewal whose period could not start (the subscription ended meanwhile) paid nothing: its payments are
     * marked REFUND_REQUESTED and returned to be refunded.
     */
    async releaseUnstartedRenewal(input: { subscriptionId: string }): Promise<{ refund: string[] }> {
      const em = deps.orm.em.fork();
      const refund = await em.transactional(async (tx) => {
        const subscription = await lockSubscription(tx, input.subscriptionId);
        if (!subscription) return [];
        const released = await tx.execute<{ provider_payment_id: string }[]>(
          `update membership_payments set status = 'REFUND_REQUESTED',
                  status_detail = 'refund: the renewal it paid could not start', updated_at = now()
            where subscription_id = ? and status = 'APPROVED' and period_number > ? and provider_payment_id is not null
            returning provider_payment_id`,
          [subscription.id, subscription.period_number],
        );
        return released.map((row) => row.provider_payment_id);
      });
      return { refund };
    },

    /**
     * Closes the gateway link of a payment request that closed unpaid, so the buyer cannot start paying it any more
     * (an old reminder link stays payable at the gateway until its own expiry otherwise). A payment already started
     * on it is still looked for by the workflow's last ask and the reconciler.
     */
    async expireMembershipPaymentLink(input: { reference: string }): Promise<void> {
      const [row] = await deps.orm.em
        .fork()
        .execute<{ preference_id: string | null }[]>(
          'select preference_id from membership_payments where reference = ?',
          [input.reference],
        );
      if (row?.preference_id) await gatewayA.expirePreference(row.preference_id);
    },

    /** One email of the membership's life; the payment link goes in the ones that ask for money. */
    async emailMembership(input: MembershipMailInput): Promise<void> {
      await sendMembershipMail(deps.orm.em.fork(), input);
    },
  };
}

async function expireOpenPayments(tx: EntityManager, subscriptionId: string): Promise<void> {
  await tx.execute(
    `update membership_payments set status = 'EXPIRED', updated_at = now() where subscription_id = ? and status = 'OPEN'`,
    [subscriptionId],
  );
}

export type MembershipActivities = ReturnType<typeof createMembershipActivities>;
