/**
 * Steps of the organizer's sale operations: cancellation (`workflows/cancellation.ts`) and refund
 * (`workflows/refund.ts`). Every step that changes a sale is one transaction that first locks the sale row, so a
 * cancel, a refund and a door check-in of the same sale are serialized; every change is conditional on the status it
 * expects, so a retried step changes nothing.
 */

import type { EntityManager } from '@mikro-orm/postgresql';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { workflowRefusal } from '../config/workflow-refusals.js';
import type { LivePaymentStatus, SaleStatus } from '../domain/sale-state.js';
import { newId } from '../entities/ids.js';
import { releaseStock } from '../entities/stock.js';
import { REFUND_REFUSED_ALERT, refundMetrics } from '../observability/metrics.js';
import {
  checkoutWorkflowId,
  type Gateway,
  type ReleaseResult,
  releaseUpdate,
  saleStatusChangedSignal,
} from '../workflows/definitions.js';
import type { ActivityDeps } from './deps.js';
import { gatewayBudgetOf } from './gateway-budget.js';
import { refundIdempotencyKey, throwIfRefundDeclined, throwUnlessVoided } from './gateway-refunds.js';
import { appendSaleEvent } from './outbox.js';
import { freeSeatsOfClosedSale } from './seats.js';

interface SaleRow {
  id: string;
  status: SaleStatus;
  reference: string;
  payment_provider: Gateway | null;
  payment_ref: string | null;
  payment_status: string | null;
  discount_id: string | null;
}

async function lockSale(tx: EntityManager, saleId: string): Promise<SaleRow | null> {
  const rows = await tx.execute<SaleRow[]>(
    `select id, status, reference, payment_provider, payment_ref, payment_status, discount_id
       from sales where id = ? for update`,
    [saleId],
  );
  return rows[0] ?? null;
}

async function usedTickets(
  em: EntityManager,
  saleId: string,
): Promise<{ count: number; lastCheckedInAt: string | null }> {
  const rows = await em.execute<{ count: string; last: Date | null }[]>(
    `select count(*) as count, max(checked_in_at) as last from tickets where sale_id = ? and status = 'USED'`,
    [saleId],
  );
  const row = rows[0];
  return { count: Number(row?.count ?? 0), lastCheckedInAt: row?.last ? new Date(row.last).toISOString() : null };
}

/** A sale was paid through a gateway when a gateway payment confirmed it; complimentary and box-office sales were not. */
const paidThroughGateway = (sale: Pick<SaleRow, 'payment_provider' | 'payment_ref'>): boolean =>
  sale.payment_provider !== null && sale.payment_ref !== null;

async function recordRefundAttempt(
  em: EntityManager,
  input: {
    saleId: string;
    gateway: Gateway;
    providerPaymentId: string | null;
    status: string;
    dedupeKey: string;
    note: string;
    /**
     * The organizer's refund request only: whether the buyer gets the courtesy email. A row already there takes the
     * latest choice given (an organizer who asks again after an execution ended may have changed it); absent, the
     * row keeps what it has.
     */
    notifyBuyer?: boolean;
  },
): Promise<void> {
  await em.execute(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, status_detail, amount, dedupe_key, note, notify_buyer, created_at)
     select ?, s.id, ?, 'REFUND', ?, ?, null, s.total, ?, ?, ?, now() from sales s where s.id = ?
     on conflict (dedupe_key) do update set notify_buyer = excluded.notify_buyer
       where excluded.notify_buyer is not null and payment_attempts.notify_buyer is distinct from excluded.notify_buyer`,
    [
      newId(),
      input.gateway,
      input.providerPaymentId,
      input.status.slice(0, 60),
      input.dedupeKey,
      input.note.slice(0, 300),
      input.notifyBuyer ?? null,
      input.saleId,
    ],
  );
}

/**
 * Tells the sale's checkout that this process moved the sale after the checkout had settled it, so the checkout's
 * phase, status query and SaleStatus search attribute say what the database says. Sent after the commit and again on
 * every retry (the checkout treats a repeat as nothing new). A checkout that has finished, or never ran, has no view
 * left to correct.
 */
async function tellCheckout(
  deps: ActivityDeps,
  saleId: string,
  status: SaleStatus,
  source: 'refund' | 'cancellation',
): Promise<void> {
  try {
    await deps.temporal.workflow
      .getHandle(checkoutWorkflowId(saleId))
      .signal(saleStatusChangedSignal, { status, source });
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}

export interface CancelInspection {
  found: boolean;
  status: SaleStatus | null;
  ticketsUsed: number;
  lastCheckedInAt: string | null;
  /** The gateway a payment was started with (PENDING) or paid through (CONFIRMED); null: none started. */
  paymentGateway: Gateway | null;
  paidThroughGateway: boolean;
}

export type RefundPreparation =
  | {
      state: 'ready';
      gateway: Gateway;
      paymentRef: string;
      reference: string;
      /**
       * How many times this refund was asked for again after the gateway refused it for good (an operator's retry, a
       * new request): 0 for the first. Each retry asks the gateway under an idempotency key of its own. Absent from
       * results recorded before retries were counted.
       */
      retry?: number;
    }
  /** No gateway holds the money (complimentary, box office): the organizer returns it by hand, if there was any. */
  | { state: 'offline'; reference: string }
  | { state: 'already_refunded'; gateway: Gateway | null }
  | {
      state: 'rejected';
      code: 'NOT_FOUND' | 'SALE_NOT_REFUNDABLE' | 'SALE_ALREADY_CHECKED_IN';
      message: string;
      details: Record<string, unknown>;
    };

/** The retry count a refund request row keeps in its status detail (`retry <n>`); none yet: 0. */
function retryOf(statusDetail: string | null): number {
  const match = statusDetail ? /^retry ([0-9]+)$/.exec(statusDetail) : null;
  return match ? Number(match[1]) : 0;
}

export function createSalesOpsActivities(deps: ActivityDeps) {
  const { gatewayA, gatewayB } = deps.providers;

  return {
    /** What the cancel rules need to know about a sale, read in one go. */
    async inspectSaleForCancel(saleId: string): Promise<CancelInspection> {
      const em = deps.orm.em.fork();
      const rows = await em.execute<SaleRow[]>(
        `select id, status, reference, payment_provider, payment_ref, payment_status, discount_id from sales where id = ?`,
        [saleId],
      );
      const sale = rows[0];
      if (!sale) {
        return {
          found: false,
          status: null,
          ticketsUsed: 0,
          lastCheckedInAt: null,
          paymentGateway: null,
          paidThroughGateway: false,
        };
      }
      const used = await usedTickets(em, saleId);
      let gateway = sale.payment_provider;
      if (gateway === null) {
        const attempts = await em.execute<{ gateway: Gateway }[]>(
          'select gateway from payment_attempts where sale_id = ? order by created_at desc, id desc limit 1',
          [saleId],
        );
        gateway = attempts[0]?.gateway ?? null;
      }
      return {
        found: true,
        status: sale.status,
        ticketsUsed: used.count,
        lastCheckedInAt: used.lastCheckedInAt,
        paymentGateway: gateway,
        paidThroughGateway: paidThroughGateway(sale),
      };
    },

    /**
     * Gateway B's live status of a PENDING sale's payment (contract part 3, rules 2–3), read now from the gateway.
     * Never throws: a gateway that cannot be read is `unreadable`, which the rules treat like an open payment.
     */
    async readLivePaymentStatus(saleId: string): Promise<{ live: LivePaymentStatus; rawStatus: string | null }> {
      const em = deps.orm.em.fork();
      const rows = await em.execute<{ reference: string }[]>('select reference from sales where id = ?', [saleId]);
      const reference = rows[0]?.reference;
      if (!reference) return { live: 'unreadable', rawStatus: null };
      try {
        const transaction = await gatewayB.paymentStatus(reference);
        const status = String(transaction.status).toUpperCase();
        if (status === 'APPROVED') return { live: 'approved', rawStatus: status };
        if (status === 'REJECTED' || status === 'FAILED' || status === 'VOIDED')
          return { live: 'declined', rawStatus: status };
        // PENDING, PROCESSING, or NO_TRANSACTION_FOUND while the button configuration is still payable.
        return { live: 'open', rawStatus: status };
      } catch (error) {
        Context.current().log.warn('gateway B status unreadable', { saleId, error: String(error) });
        return { live: 'unreadable', rawStatus: null };
      }
    },

    /**
     * Cancels a PENDING sale through its checkout workflow (update `release`, reason organizer_cancel). The checkout
     * serializes it with payment notifications, so a cancel racing a payment ends in exactly one outcome: the sale is
     * either confirmed (this returns CONFIRMED) or cancelled (a payment that arrives later is refunded there). The
     * update id is tied to this cancellation run, so a retried activity gets the first answer, not a second cancel.
     */
    async cancelPendingThroughCheckout(input: {
      saleId: string;
      acknowledgeOpenPayment: boolean;
    }): Promise<ReleaseResult> {
      const info = Context.current().info;
      const handle = deps.temporal.workflow.getHandle(checkoutWorkflowId(input.saleId));
      try {
        return await handle.executeUpdate(releaseUpdate, {
          args: [{ reason: 'organizer_cancel', acknowledgeOpenPayment: input.acknowledgeOpenPayment }],
          updateId: `organizer-cancel/${info.workflowExecution?.runId ?? info.activityId}`,
        });
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) {
          return { ok: false, code: 'INVALID_STATE', message: 'The sale has no running checkout; it is not PENDING' };
        }
        // The checkout's validator refuses a release once the sale left PENDING (paid first, or already closed): an
        // answer, not a failure to retry.
        const refused = workflowRefusal(error);
        if (refused?.code === 'INVALID_STATE') return { ok: false, code: 'INVALID_STATE', message: refused.message };
        throw error;
      }
    },

    /**
     * CONFIRMED → CANCELLED for a sale that was never paid through a gateway (complimentary, box office): the status,
     * the tickets (INVALID), the stock and the discount use change together, or nothing changes.
     */
    async cancelConfirmedSale(input: {
      saleId: string;
      reason: string | null;
    }): Promise<
      | { ok: true; changed: boolean; status: SaleStatus }
      | { ok: false; code: 'INVALID_STATE' | 'SALE_ALREADY_CHECKED_IN' | 'REFUND_REQUIRED'; status: SaleStatus | null }
    > {
      const em = deps.orm.em.fork();
      const outcome = await em.transactional(async (tx) => {
        const sale = await lockSale(tx, input.saleId);
        if (!sale) return { ok: false as const, code: 'INVALID_STATE' as const, status: null };
        if (sale.status === 'CANCELLED') return { ok: true as const, changed: false, status: sale.status };
        if (sale.status !== 'CONFIRMED')
          return { ok: false as const, code: 'INVALID_STATE' as const, status: sale.status };
        if ((await usedTickets(tx, input.saleId)).count > 0) {
          return { ok: false as const, code: 'SALE_ALREADY_CHECKED_IN' as const, status: sale.status };
        }
        if (paidThroughGateway(sale))
          return { ok: false as const, code: 'REFUND_REQUIRED' as const, status: sale.status };
        await tx.execute(
          `update sales set status = 'CANCELLED', closed_at = now(), updated_at = now(),
             failure_reason = coalesce(?, 'cancelled by the organizer') where id = ? and status = 'CONFIRMED'`,
          [input.reason, input.saleId],
        );
        await tx.execute(
          `update tickets set status = 'INVALID', updated_at = now() where sale_id = ? and status <> 'INVALID'`,
          [input.saleId],
        );
        await releaseStock(tx, input.saleId);
        if (sale.discount_id) {
          await tx.execute('update discounts set uses = uses - 1 where id = ? and uses > 0', [sale.discount_id]);
        }
        return { ok: true as const, changed: true, status: 'CANCELLED' as const };
      });
      // After the commit, and on every retry: the checkout hears of it, and the seats go back on sale with the stock.
      // The checkout first, so its view does not wait on the seat-map provider.
      if (outcome.ok) {
        await tellCheckout(deps, input.saleId, outcome.status, 'cancellation');
        await freeSeatsOfClosedSale(deps, input.saleId);
      }
      return outcome;
    },

    /**
     * Checks that a refund is allowed and stops admission while it runs: the sale is locked, its VALID tickets become
     * INVALID (so nobody enters on a ticket whose money is going back), and the request is recorded. Idempotent.
     */
    /**
     * `force` is ignored: executions recorded while refunds of checked-in sales needed it still pass it. `notifyBuyer`
     * is the organizer's choice, kept with the request for a refund the reconciler starts again; absent (executions
     * recorded before it was passed, an event cancellation, which emails every buyer itself), none is recorded.
     */
    async prepareRefund(input: {
      saleId: string;
      force?: boolean;
      reason: string;
      notifyBuyer?: boolean;
    }): Promise<RefundPreparation> {
      const em = deps.orm.em.fork();
      return em.transactional(async (tx): Promise<RefundPreparation> => {
        const sale = await lockSale(tx, input.saleId);
        if (!sale) return { state: 'rejected', code: 'NOT_FOUND', message: 'Sale not found', details: {} };
        if (sale.status === 'REFUNDED') return { state: 'already_refunded', gateway: sale.payment_provider };
        if (sale.status !== 'CONFIRMED') {
          return {
            state: 'rejected',
            code: 'SALE_NOT_REFUNDABLE',
            message: `Only CONFIRMED sales can be refunded; this sale is ${sale.status}`,
            details: { reason: 'not_confirmed', status: sale.status },
          };
        }
        // Tickets used at the door do not stop a refund (contract part 3, rule 1: "use refund instead").
        await tx.execute(
          `update tickets set status = 'INVALID', updated_at = now() where sale_id = ? and status = 'VALID'`,
          [input.saleId],
        );
        if (!paidThroughGateway(sale) || sale.payment_provider === null || sale.payment_ref === null) {
          return { state: 'offline', reference: sale.reference };
        }
        const requestKey = `refund-request:${input.saleId}`;
        await recordRefundAttempt(tx, {
          saleId: input.saleId,
          gateway: sale.payment_provider,
          providerPaymentId: sale.payment_ref,
          status: 'requested',
          dedupeKey: requestKey,
          note: `refund requested by the organizer: ${input.reason}`,
          notifyBuyer: input.notifyBuyer,
        });
        // A refund parked `refund_refused` asked for again (the operator's retry, the organizer's new request): owed
        // again, and counted, so this retry asks the gateway under a key of its own. Under the sale's lock, and only
        // from `refund_refused`: a repeat of this step (or a duplicate retry) finds it `requested` and keeps the count.
        // One round trip (an event cancellation prepares thousands): the outer select reads the row as it was before
        // the update, so the bumped count comes first.
        const [request] = await tx.execute<{ status_detail: string | null }[]>(
          `with bumped as (
             update payment_attempts set status = 'requested',
                 status_detail = 'retry ' || (coalesce(substring(status_detail from '^retry ([0-9]+)$')::int, 0) + 1)
               where dedupe_key = ? and status = 'refund_refused' returning status_detail)
           select coalesce((select status_detail from bumped),
                           (select status_detail from payment_attempts where dedupe_key = ?)) as status_detail`,
          [requestKey, requestKey],
        );
        return {
          state: 'ready',
          gateway: sale.payment_provider,
          paymentRef: sale.payment_ref,
          reference: sale.reference,
          retry: retryOf(request?.status_detail ?? null),
        };
      });
    },

    /**
     * Asks the sale's gateway to return the money and succeeds only once the gateway confirms it. Never issues a
     * second refund: the request carries the idempotency key of this ask (`refund-<saleId>` for the first,
     * gateway-refunds.ts refundIdempotencyKey), so a retry after a lost answer gets the first refund back. A gateway B
     * void answered with anything but voided or in progress is a refusal (non-retryable), bounded by the caller like
     * gateway A's. Every request takes its token from the gateway's budget shared by all workers (gateway-budget.ts).
     *
     * Gateway A's payment is read only when that can change the answer, not before every refund (the read doubled a
     * mass refund's requests, and gateway A's budget is what bounds its refunds per second):
     * - Before an ask under a key of its own (an operator's retry, an ask after a refusal): an earlier ask under
     *   another key, or someone at the gateway's dashboard, may have refunded it meanwhile.
     * - After a refusal: gateway A answers a refund of a payment refunded already with a final 400 (not refundable in
     *   status refunded); read, that is the refund done, not a refusal. This also covers a payment refunded under this
     *   very key whose key the gateway no longer remembers.
     * Not on the first ask, nor on its retries: the same key replays the refund an earlier (even unanswered) attempt
     * made, and gives nothing back twice.
     */
    async refundAtGateway(input: {
      saleId: string;
      gateway: Gateway;
      paymentRef: string;
      reference: string;
      /** The refund's retry after a refusal for good (RefundPreparation.retry); absent in older histories: 0. */
      retry?: number;
      /** Which ask of this execution after a refusal; absent in older histories: 0. */
      ask?: number;
    }): Promise<{ status: string; refundId: string | null; attempt: number }> {
      const idempotencyKey = refundIdempotencyKey(input.saleId, { retry: input.retry, ask: input.ask });
      // Which try of this activity reached the answer: the workflow reports the gateway calls it took.
      const attempt = Context.current().info.attempt;
      const budget = gatewayBudgetOf(deps);
      if (input.gateway === 'GATEWAY_A') {
        const readPayment = () => budget.send('GATEWAY_A', () => gatewayA.getPayment(input.paymentRef));
        const ownKey = (input.retry ?? 0) > 0 || (input.ask ?? 0) > 0;
        if (ownKey && (await readPayment()).status === 'refunded') {
          return { status: 'refunded', refundId: null, attempt };
        }
        let refund: { refundId: string; status: string };
        try {
          refund = await budget.send('GATEWAY_A', () =>
            gatewayA.refund({ paymentId: input.paymentRef, idempotencyKey }),
          );
          throwIfRefundDeclined(refund);
        } catch (refusal) {
          if (!(refusal instanceof ApplicationFailure && refusal.nonRetryable)) throw refusal;
          let payment: Awaited<ReturnType<typeof readPayment>>;
          try {
            payment = await readPayment();
          } catch (readFailure) {
            // A read that may succeed later leaves the refund undecided (asked again later); one that cannot (the
            // payment unknown) leaves the refusal as it was.
            if (readFailure instanceof ApplicationFailure && readFailure.nonRetryable) throw refusal;
            throw readFailure;
          }
          if (payment.status === 'refunded') return { status: 'refunded', refundId: null, attempt };
          throw refusal;
        }
        if (refund.status !== 'approved' && refund.status !== 'refunded') {
          throw ApplicationFailure.retryable(
            `gateway A has not confirmed refund ${refund.refundId} yet (${refund.status})`,
          );
        }
        return { status: 'refunded', refundId: refund.refundId, attempt };
      }
      // Gateway B's status is still read first: its voids are few (a void is possible only the day of the charge), so
      // the read costs its budget little, and what its real API answers to a void of a voided transaction under
      // another key is not documented (the sandbox answers VOID_APPROVED).
      const transaction = await budget.send('GATEWAY_B', () => gatewayB.paymentStatus(input.reference));
      if (String(transaction.status).toUpperCase() === 'VOIDED') return { status: 'VOIDED', refundId: null, attempt };
      const voided = await budget.send('GATEWAY_B', () =>
        gatewayB.void({ orderId: input.reference, transactionId: input.paymentRef, idempotencyKey }),
      );
      throwUnlessVoided(voided);
      return { status: 'VOIDED', refundId: null, attempt };
    },

    /**
     * Records a refund the gateway confirmed, in one transaction: CONFIRMED → REFUNDED, every ticket INVALID, the
     * stock back, the REFUND payment attempt and the `sale.refunded` outbox event. A repeat changes nothing.
     */
    async completeRefund(input: {
      saleId: string;
      /** Null for an offline refund (no gateway payment): nothing is recorded as a gateway attempt. */
      gateway: Gateway | null;
      paymentRef: string | null;
      gatewayStatus: string;
      refundId: string | null;
      reason: string;
    }): Promise<{ changed: boolean; status: SaleStatus }> {
      const em = deps.orm.em.fork();
      const outcome = await em.transactional(async (tx) => {
        const sale = await lockSale(tx, input.saleId);
        if (!sale) throw ApplicationFailure.nonRetryable(`sale ${input.saleId} disappeared`);
        if (sale.status !== 'CONFIRMED') return { changed: false, status: sale.status };
        await tx.execute(
          `update sales set status = 'REFUNDED', closed_at = now(), updated_at = now(), payment_status = ?,
             failure_reason = ? where id = ? and status = 'CONFIRMED'`,
          [input.gatewayStatus, `refunded: ${input.reason}`.slice(0, 300), input.saleId],
        );
        await tx.execute(
          `update tickets set status = 'INVALID', updated_at = now() where sale_id = ? and status <> 'INVALID'`,
          [input.saleId],
        );
        await releaseStock(tx, input.saleId);
        if (input.gateway) {
          // The organizer's request is settled too: a refund row left `requested` reads as money still owed.
          await tx.execute(`update payment_attempts set status = 'refunded' where dedupe_key = ?`, [
            `refund-request:${input.saleId}`,
          ]);
          await recordRefundAttempt(tx, {
            saleId: input.saleId,
            gateway: input.gateway,
            // Every REFUND attempt names the payment it gives back (the reconciler and the checkout match on it).
            providerPaymentId: input.paymentRef,
            status: input.gatewayStatus,
            dedupeKey: `refund:${input.saleId}`,
            note: `refund ${input.refundId ?? '(id not reported)'} confirmed by the gateway: ${input.reason}`,
          });
        }
        await appendSaleEvent(tx, 'sale.refunded', input.saleId, { reason: input.reason });
        return { changed: true, status: 'REFUNDED' as const };
      });
      // After the commit, and on every retry: the checkout hears of it, and the seats go back on sale with the stock.
      // The checkout first, so its view does not wait on the seat-map provider.
      if (outcome.status === 'REFUNDED') {
        await tellCheckout(deps, input.saleId, 'REFUNDED', 'refund');
        await freeSeatsOfClosedSale(deps, input.saleId);
      }
      return outcome;
    },

    /**
     * The gateway refused the organizer's refund `refusals` times in a row: the refund request becomes
     * `refund_refused` (listed for operators, who retry it with `operator refunds-refused retry <saleId>`), the
     * metric counts it and an alert line is logged, and the tickets the refund had stopped are valid again (the sale
     * stays CONFIRMED). Only the first record counts and alerts: a retried step changes nothing more.
     */
    async recordOrganizerRefundRefused(input: {
      saleId: string;
      message: string;
      refusals: number;
    }): Promise<{ recorded: boolean }> {
      const em = deps.orm.em.fork();
      const outcome = await em.transactional(async (tx) => {
        const sale = await lockSale(tx, input.saleId);
        if (sale?.status !== 'CONFIRMED') return { recorded: false, gateway: null };
        await tx.execute(
          `update tickets set status = 'VALID', updated_at = now() where sale_id = ? and status = 'INVALID' and checked_in_at is null`,
          [input.saleId],
        );
        const rows = await tx.execute<{ id: string }[]>(
          `update payment_attempts set status = 'refund_refused', note = ?
            where dedupe_key = ? and status is distinct from 'refund_refused' returning id`,
          [
            `refused ${input.refusals} times by the gateway: ${input.message}`.slice(0, 300),
            `refund-request:${input.saleId}`,
          ],
        );
        return { recorded: rows.length > 0, gateway: sale.payment_provider };
      });
      if (outcome.recorded) {
        refundMetrics.refused.inc({ process: 'sale', gateway: outcome.gateway ?? 'none' });
        log.error(REFUND_REFUSED_ALERT, {
          saleId: input.saleId,
          gateway: outcome.gateway,
          refusals: input.refusals,
          reason: input.message,
          action: `operator refunds-refused retry ${input.saleId}`,
        });
      }
      return { recorded: outcome.recorded };
    },

    /** Compensation when the gateway refused the refund for good: the tickets the refund had stopped are valid again. */
    async reinstateTicketsAfterFailedRefund(input: { saleId: string; message: string }): Promise<void> {
      const em = deps.orm.em.fork();
      await em.transactional(async (tx) => {
        const sale = await lockSale(tx, input.saleId);
        if (sale?.status !== 'CONFIRMED') return;
        await tx.execute(
          `update tickets set status = 'VALID', updated_at = now() where sale_id = ? and status = 'INVALID' and checked_in_at is null`,
          [input.saleId],
        );
        if (sale.payment_provider) {
          await recordRefundAttempt(tx, {
            saleId: input.saleId,
            gateway: sale.payment_provider,
            providerPaymentId: sale.payment_ref,
            status: 'refused',
            dedupeKey: `refund-refused:${input.saleId}:${newId()}`,
            note: `the gateway refused the refund: ${input.message}`,
          });
        }
      });
    },
  };
}

export type SalesOpsActivities = ReturnType<typeof createSalesOpsActivities>;
