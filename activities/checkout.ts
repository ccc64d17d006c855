import type { EntityManager } from '@mikro-orm/postgresql';
import { log } from '@temporalio/activity';
import { outcomeOfStatus } from '../domain/payment-verdict.js';
import type { SaleStatus } from '../domain/sale-state.js';
import { ANY_TENANT } from '../entities/common.js';
import { Sale, SaleItem } from '../entities/index.js';
import type { ISale } from '../entities/sale.js';
import { releaseStock, takeStockInOrder } from '../entities/stock.js';
import { REFUND_REFUSED_ALERT, refundMetrics } from '../observability/metrics.js';
import {
  type Gateway,
  type ReservedSale,
  type ReserveRequest,
  type ReserveResult,
  reservedSaleOf,
  reserveItemsOf,
} from '../workflows/definitions.js';
import { rejectUnfixableDatabaseErrors } from './db-errors.js';
import type { ActivityDeps } from './deps.js';
import { type PaymentAttemptRecord, recordPaymentAttempt } from './payment-attempts.js';
import { type OrderCatalog, Rejected, readOrderCatalog, reject, reserveInTransaction } from './reservation.js';
import { isSeatRefusal, minutesUntil, seatMap, seatsOfSale } from './seats.js';
import { recordConfirmation } from './tickets.js';

export const toReserved = (sale: ISale): ReservedSale => reservedSaleOf(sale);

interface PreparedSeats {
  /** The hold token the sale will own (the buyer's session's, or one created here for a public order). */
  holdToken: string | null;
  /** Created here: expired again if the reservation is refused. */
  created: boolean;
  eventKey: string | null;
}

const NO_SEATS: PreparedSeats = { holdToken: null, created: false, eventKey: null };

/**
 * The provider-side half of a numbered reservation, before the transaction: the queue turn (a public order never
 * holds seats without one), every seat checked against the hold token, or held with a token of the order's TTL.
 */
async function prepareSeats(
  deps: ActivityDeps,
  saleId: string,
  request: ReserveRequest,
  { date, types }: OrderCatalog,
): Promise<PreparedSeats> {
  const items = reserveItemsOf(request);
  const typeById = new Map(types.map((type) => [type.id, type]));
  // Unknown, foreign or closed dates are refused by the transaction's own checks, with their own codes.
  if (!date || items.some((item) => !typeById.has(item.ticketTypeId))) return NO_SEATS;
  if (request.pinnedWorkspaceId && date.workspace !== request.pinnedWorkspaceId) return NO_SEATS;
  if (date.virtualQueue && request.origin !== 'ORGANIZER' && !request.queueTurnAdmitted) {
    reject('QUEUE_REQUIRED', 'queue_turn_required', 'This date sells through a waiting room; join the queue first', {
      eventDateId: date.id,
    });
  }
  const lines = items.map((item) => ({
    item,
    categoryKey: typeById.get(item.ticketTypeId)?.seatMapCategoryKey ?? null,
  }));
  if (lines.some((line) => line.categoryKey === null && (line.item.seats?.length ?? 0) > 0)) {
    reject('VALIDATION_FAILED', 'not_numbered', 'This ticket type does not sell seats');
  }
  const seated = lines.filter((line) => line.categoryKey !== null);
  if (seated.length === 0) return NO_SEATS;
  if (items.length > 1) {
    // One hold token and one seat check per order keep the seat-map side of a sale simple: numbered tickets sell
    // in one-item orders (the storefront refuses the mix before reaching here).
    reject('VALIDATION_FAILED', 'seats_single_item', 'Numbered tickets are sold in one-item orders only');
  }
  const { item, categoryKey } = seated[0]!;
  const labels = item.seats ?? [];
  if (labels.length !== item.quantity || new Set(labels).size !== labels.length) {
    reject('VALIDATION_FAILED', 'seats_required', 'Numbered tickets need one distinct seat label per unit', {
      quantity: item.quantity,
      seats: labels.length,
    });
  }
  const eventKey = date.seatMapEventKey;
  if (!eventKey) return reject('ORDER_REJECTED', 'seats_not_held', 'This date has no seat map to hold seats in');
  const port = seatMap(deps);
  const statuses = await port.objectStatuses(eventKey, labels);
  const byLabel = new Map(statuses.map((seat) => [seat.label, seat]));
  const unknown = labels.filter((label) => byLabel.get(label)?.categoryKey !== categoryKey);
  if (unknown.length > 0) {
    reject('SEAT_NOT_AVAILABLE', 'seat_not_in_category', "A seat does not exist in this ticket type's category", {
      seats: unknown,
    });
  }
  if (request.holdToken) {
    if (!(await port.getHoldToken(request.holdToken))) {
      reject(
        'PURCHASE_SESSION_EXPIRED',
        'hold_token_expired',
        'The seat-map hold expired; open a new purchase session',
      );
    }
    const others = labels.filter((label) => {
      const seat = byLabel.get(label)!;
      return seat.status === 'booked' || (seat.status === 'reservedByToken' && seat.holdToken !== request.holdToken);
    });
    if (others.length > 0) {
      reject('SEAT_NOT_AVAILABLE', 'seat_taken', 'A seat is already sold or held by another buyer', { seats: others });
    }
    const notHeld = labels.filter((label) => byLabel.get(label)!.status !== 'reservedByToken');
    if (notHeld.length > 0) {
      reject('ORDER_REJECTED', 'seats_not_held', 'Hold every seat with your purchase session before ordering', {
        seats: notHeld,
      });
    }
    return { holdToken: request.holdToken, created: false, eventKey };
  }
  if (request.origin !== 'PUBLIC') {
    return reject('ORDER_REJECTED', 'seats_not_held', 'Seats need the hold token of your purchase session');
  }
  const busy = labels.filter((label) => byLabel.get(label)!.status !== 'free');
  if (busy.length > 0) {
    reject('SEAT_NOT_AVAILABLE', 'seat_taken', 'A seat is already sold or held', { seats: busy });
  }
  // One token per sale, remembered so a retried activity does not hold the seats twice.
  const key = `seat-hold:${saleId}`;
  let holdToken = await deps.redis.get(key);
  const windowMs = request.paymentWindowMs ?? date.paymentWindowMinutes * 60_000;
  if (!holdToken || !(await port.getHoldToken(holdToken))) {
    holdToken = (await port.createHoldToken(minutesUntil(Date.now() + windowMs, Date.now()))).holdToken;
    await deps.redis.set(key, holdToken, 'EX', 86_400);
  }
  try {
    await port.hold({ eventKey, labels, holdToken });
  } catch (error) {
    if (!isSeatRefusal(error)) throw error;
    await port.updateHoldTokenExpiry(holdToken, 0).catch(() => undefined);
    reject('SEAT_NOT_AVAILABLE', 'seat_taken', 'A seat was taken by another buyer meanwhile', { seats: labels });
  }
  return { holdToken, created: true, eventKey };
}

export interface LatePaymentOutcome {
  /** payment_refunded: this payment is being given back already; it buys nothing. */
  outcome: 'confirmed' | 'needs_refund' | 'already_confirmed' | 'payment_refunded';
  status: SaleStatus;
  /** When already confirmed: the payment that paid the sale. */
  paymentRef?: string | null;
}

/** What a resumed checkout reads of its sale. */
export interface SaleSnapshot extends ReservedSale {
  seated: boolean;
  gateway: Gateway | null;
  attemptOpened: boolean;
  /**
   * Payments the sale's history records the gateway rejecting: a rejection is final, so later news of one still
   * pending is stale. Absent from snapshots recorded before it existed.
   */
  rejectedPayments?: string[];
}

/** A refund was requested or done for this payment: it must never confirm anything afterwards. */
async function isBeingRefunded(tx: EntityManager, saleId: string, paymentRef: string | null): Promise<boolean> {
  if (!paymentRef) return false;
  const rows = await tx.execute<{ one: number }[]>(
    "select 1 as one from payment_attempts where sale_id = ? and kind = 'REFUND' and provider_payment_id = ? limit 1",
    [saleId, paymentRef],
  );
  return rows.length > 0;
}

export function createCheckoutActivities(deps: ActivityDeps) {
  return {
    /**
     * Creates the sale and takes its stock in one transaction, or changes nothing and says why. Idempotent by sale
     * id: a retry after a commit whose answer was lost returns the sale that exists.
     */
    async reserveSale(input: { saleId: string; request: ReserveRequest }): Promise<ReserveResult> {
      const em = deps.orm.em.fork();
      const catalog = await readOrderCatalog(em, input.request, input.saleId);
      const { existing } = catalog;
      if (existing) {
        const items = await em.find(SaleItem, { sale: existing.id });
        const seated = items.some((item) => (item.seats?.length ?? 0) > 0);
        return seated ? { ...toReserved(existing), seated } : toReserved(existing);
      }
      let prepared = NO_SEATS;
      try {
        prepared = await prepareSeats(deps, input.saleId, input.request, catalog);
        const request = { ...input.request, holdToken: prepared.holdToken ?? input.request.holdToken };
        // Data the database refuses (a NUL byte…) fails the same way on every retry: answer at once instead.
        const sale = await rejectUnfixableDatabaseErrors(() =>
          em.transactional((tx) => reserveInTransaction(tx, input.saleId, request, new Date(), catalog)),
        );
        if (!prepared.eventKey || !prepared.holdToken) return toReserved(sale);
        const port = seatMap(deps);
        if (sale.status === 'CONFIRMED') {
          await port.book({
            eventKey: prepared.eventKey,
            labels: reserveItemsOf(input.request).flatMap((item) => item.seats ?? []),
            holdToken: prepared.holdToken,
            orderId: sale.id,
          });
        } else if (sale.expiresAt) {
          // The seats stay held for the order's window (and a minute more, so a last-second payment still books).
          await port.updateHoldTokenExpiry(prepared.holdToken, minutesUntil(sale.expiresAt.getTime(), Date.now()));
        }
        return { ...toReserved(sale), seated: true };
      } catch (error) {
        if (error instanceof Rejected) {
          if (prepared.created && prepared.holdToken) {
            await seatMap(deps)
              .updateHoldTokenExpiry(prepared.holdToken, 0)
              .catch(() => undefined);
          }
          return error.rejection;
        }
        throw error;
      }
    },

    /** The sale as it is now, for an execution of the first checkout version resumed after the first one closed. */
    async loadSaleSnapshot(saleId: string): Promise<ReservedSale> {
      const sale = await deps.orm.em.fork().findOneOrFail(Sale, { id: saleId }, ANY_TENANT);
      return toReserved(sale);
    },

    /**
     * Everything a resumed checkout needs to carry on where the database says the sale is: whether it holds numbered
     * seats, which gateway it pays through, and whether a payment was ever opened (money may exist at the gateway).
     * Null when no such sale exists.
     */
    async readSaleSnapshot(saleId: string): Promise<SaleSnapshot | null> {
      const em = deps.orm.em.fork();
      const sale = await em.findOne(Sale, { id: saleId }, ANY_TENANT);
      if (!sale) return null;
      const rows = await em.execute<
        {
          seated: boolean;
          gateway: Gateway | null;
          opened: boolean;
          statuses: { gateway: Gateway; payment: string; status: string }[] | null;
        }[]
      >(
        `select exists (select 1 from sale_items where sale_id = ? and coalesce(jsonb_array_length(seats::jsonb), 0) > 0) as seated,
                (select gateway from payment_attempts where sale_id = ? order by created_at limit 1) as gateway,
                exists (select 1 from payment_attempts where sale_id = ? and kind in ('OPEN', 'PSE', 'CARD')) as opened,
                (select json_agg(json_build_object('gateway', gateway, 'payment', provider_payment_id, 'status', status))
                   from payment_attempts
                  where sale_id = ? and provider_payment_id is not null and status is not null
                    and kind in ('CARD', 'NOTIFICATION', 'STATUS_CHECK')) as statuses`,
        [saleId, saleId, saleId, saleId],
      );
      const facts = rows[0];
      const rejected = (facts?.statuses ?? []).filter(
        (recorded) => outcomeOfStatus(recorded.gateway, recorded.status) === 'rejected',
      );
      return {
        ...toReserved(sale),
        seated: facts?.seated === true,
        gateway: sale.paymentProvider ?? facts?.gateway ?? null,
        attemptOpened: facts?.opened === true,
        rejectedPayments: [...new Set(rejected.map((recorded) => recorded.payment))],
      };
    },

    /** PENDING → CONFIRMED with the payment that paid it, and its tickets. A repeat finds it confirmed and does nothing. */
    async confirmSale(input: {
      saleId: string;
      provider: 'GATEWAY_A' | 'GATEWAY_B';
      paymentRef: string | null;
      paymentStatus: string;
      /** The ticket email is owed in the same transaction, for the ticket mailer (every checkout since the launch baseline). */
      queueTicketEmail?: boolean;
    }): Promise<{ confirmed: boolean; status: SaleStatus; paymentRef: string | null; paymentRefunded?: boolean }> {
      const em = deps.orm.em.fork();
      return em.transactional(async (tx) => {
        if (await isBeingRefunded(tx, input.saleId, input.paymentRef)) {
          const sale = await tx.findOneOrFail(Sale, { id: input.saleId }, ANY_TENANT);
          return { confirmed: false, status: sale.status, paymentRef: sale.paymentRef ?? null, paymentRefunded: true };
        }
        const updated = await tx.execute<{ id: string }[]>(
          `update sales set status = 'CONFIRMED', confirmed_at = now(), updated_at = now(), payment_provider = ?,
             payment_ref = ?, payment_status = ?, decline_code = null
           where id = ? and status = 'PENDING' returning id`,
          [input.provider, input.paymentRef, input.paymentStatus, input.saleId],
        );
        if (updated.length > 0) {
          await recordConfirmation(tx, input.saleId, input);
          return { confirmed: true, status: 'CONFIRMED' as const, paymentRef: input.paymentRef };
        }
        const sale = await tx.findOneOrFail(Sale, { id: input.saleId }, ANY_TENANT);
        return { confirmed: sale.status === 'CONFIRMED', status: sale.status, paymentRef: sale.paymentRef ?? null };
      });
    },

    /**
     * PENDING → ABANDONED (expiry, buyer release) or CANCELLED (organizer cancel): the status change, the stock and
     * the discount use go back together. A repeat changes nothing.
     */
    async closeUnpaidSale(input: {
      saleId: string;
      to: 'ABANDONED' | 'CANCELLED';
      reason: string;
    }): Promise<{ closed: boolean; status: SaleStatus | null; unitsReturned: number }> {
      const em = deps.orm.em.fork();
      return em.transactional(async (tx) => {
        const updated = await tx.execute<{ discount_id: string | null }[]>(
          `update sales set status = ?, closed_at = now(), updated_at = now(), failure_reason = coalesce(failure_reason, ?)
            where id = ? and status = 'PENDING' returning discount_id`,
          [input.to, input.reason, input.saleId],
        );
        const row = updated[0];
        if (!row) {
          // A reservation that failed before committing left no sale: there is nothing to give back.
          const sale = await tx.findOne(Sale, { id: input.saleId }, ANY_TENANT);
          return { closed: false, status: sale?.status ?? null, unitsReturned: 0 };
        }
        const unitsReturned = await releaseStock(tx, input.saleId);
        if (row.discount_id) {
          await tx.execute('update discounts set uses = uses - 1 where id = ? and uses > 0', [row.discount_id]);
        }
        return { closed: true, status: input.to, unitsReturned };
      });
    },

    /**
     * An approved payment for a sale that already left PENDING unpaid. If the stock can be taken again the sale is
     * confirmed; otherwise the caller refunds. A CANCELLED sale stays cancelled: the organizer's decision stands.
     */
    async confirmLatePayment(input: {
      saleId: string;
      provider: 'GATEWAY_A' | 'GATEWAY_B';
      paymentRef: string | null;
      paymentStatus: string;
      /** The caller booked the seats on the task queue (checkout v2); v1 executions book them here. */
      seatsBookedByCaller?: boolean;
      /** As for confirmSale. */
      queueTicketEmail?: boolean;
    }): Promise<LatePaymentOutcome> {
      const em = deps.orm.em.fork();
      class NoStock extends Error {}
      const seats = input.seatsBookedByCaller ? null : await seatsOfSale(deps, input.saleId);
      if (seats) {
        const state = await em.findOne(Sale, { id: input.saleId }, ANY_TENANT);
        if (state?.status === 'ABANDONED') {
          // The seats went back on sale when the sale closed; they are the sale's again only if still free.
          try {
            await seatMap(deps).book({
              eventKey: seats.eventKey,
              labels: seats.labels,
              holdToken: null,
              orderId: input.saleId,
            });
          } catch (error) {
            if (isSeatRefusal(error)) return { outcome: 'needs_refund', status: 'ABANDONED' };
            throw error;
          }
        }
      }
      try {
        return await em.transactional(async (tx) => {
          const rows = await tx.execute<{ status: SaleStatus; payment_ref: string | null; event_status: string }[]>(
            `select s.status, s.payment_ref, e.status as event_status
               from sales s join events e on e.id = s.event_id where s.id = ? for update of s`,
            [input.saleId],
          );
          const status = rows[0]?.status;
          if (await isBeingRefunded(tx, input.saleId, input.paymentRef)) {
            return { outcome: 'payment_refunded' as const, status: status ?? 'ABANDONED' };
          }
          if (status === 'CONFIRMED')
            return { outcome: 'already_confirmed' as const, status, paymentRef: rows[0]?.payment_ref ?? null };
          if (status !== 'ABANDONED') return { outcome: 'needs_refund' as const, status: status ?? 'ABANDONED' };
          // The event was called off after this sale lapsed: the money goes back instead of selling a dead ticket.
          if (rows[0]?.event_status === 'CANCELLED') return { outcome: 'needs_refund' as const, status };
          const items = await tx.find(SaleItem, { sale: input.saleId });
          const short = await takeStockInOrder(
            tx,
            input.saleId,
            items.map((item) => ({ ticketTypeId: item.ticketType, quantity: item.quantity })),
          );
          if (short) throw new NoStock();
          await tx.execute(
            `update sales set status = 'CONFIRMED', confirmed_at = now(), updated_at = now(), payment_provider = ?,
               payment_ref = ?, payment_status = ?, closed_at = null where id = ?`,
            [input.provider, input.paymentRef, input.paymentStatus, input.saleId],
          );
          await recordConfirmation(tx, input.saleId, input);
          return { outcome: 'confirmed' as const, status: 'CONFIRMED' as const };
        });
      } catch (error) {
        if (error instanceof NoStock) return { outcome: 'needs_refund', status: 'ABANDONED' };
        throw error;
      }
    },

    /** The latest word from the gateway on the sale's projection (raw status, decline code). */
    async recordPaymentStatus(input: {
      saleId: string;
      paymentStatus: string;
      declineCode: string | null;
      provider: 'GATEWAY_A' | 'GATEWAY_B' | null;
    }): Promise<void> {
      await deps.orm.em
        .fork()
        .execute(
          'update sales set payment_status = ?, decline_code = ?, payment_provider = coalesce(?, payment_provider), updated_at = now() where id = ?',
          [input.paymentStatus, input.declineCode, input.provider, input.saleId],
        );
    },

    /** Moves a recorded attempt on (a refund the gateway now reports done); the attempt is found by its dedupe key. */
    async markAttempt(input: { dedupeKey: string; status: string }): Promise<void> {
      await deps.orm.em
        .fork()
        .execute('update payment_attempts set status = ? where dedupe_key = ?', [input.status, input.dedupeKey]);
    },

    /**
     * A refund the gateway refused `refusals` times in a row: its REFUND attempt becomes `refund_refused` (the operator
     * listing reads it), the metric counts it and an alert line is logged. Only the first record counts and alerts: a
     * step run again after a lost task changes nothing.
     */
    async recordRefundRefused(input: {
      saleId: string;
      dedupeKey: string;
      gateway: Gateway;
      providerPaymentId: string | null;
      refusals: number;
      reason: string;
    }): Promise<{ recorded: boolean }> {
      const rows = await deps.orm.em.fork().execute<{ id: string }[]>(
        `update payment_attempts set status = 'refund_refused', note = ?
          where dedupe_key = ? and status is distinct from 'refund_refused' returning id`,
        [`refused ${input.refusals} times by the gateway: ${input.reason}`.slice(0, 300), input.dedupeKey],
      );
      if (rows.length === 0) return { recorded: false };
      refundMetrics.refused.inc({ process: 'sale', gateway: input.gateway });
      log.error(REFUND_REFUSED_ALERT, {
        saleId: input.saleId,
        gateway: input.gateway,
        providerPaymentId: input.providerPaymentId,
        refusals: input.refusals,
        reason: input.reason,
        action: `operator refunds-refused retry ${input.saleId}`,
      });
      return { recorded: true };
    },

    /** Appends to the sale's payment history; a notification seen before (same dedupe key) is reported as a duplicate. */
    async recordAttempt(input: PaymentAttemptRecord): Promise<{ duplicate: boolean }> {
      return recordPaymentAttempt(deps.orm.em.fork(), input);
    },
  };
}

export type CheckoutActivities = ReturnType<typeof createCheckoutActivities>;
