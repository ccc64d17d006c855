/**
 * The sale state machine (contract part 3) and the ticket access states.
 *
 * Sale statuses: PENDING, CONFIRMED, ABANDONED, CANCELLED, REFUNDED.
 *
 * | from      | event                  | to        | notes                                                          |
 * |-----------|------------------------|-----------|----------------------------------------------------------------|
 * | (none)    | reserve                | PENDING   | stock reserved under lock, reservation has expiresAt           |
 * | (none)    | free_confirm           | CONFIRMED | 100 % discount or complimentary: no gateway, no payment opened |
 * | PENDING   | payment_approved       | CONFIRMED | the gateway settled the payment                                |
 * | PENDING   | payment_rejected       | PENDING   | the attempt failed; the buyer may retry until expiresAt        |
 * | PENDING   | expire                 | ABANDONED | reservation ran out unpaid: stock and seats released           |
 * | PENDING   | release                | ABANDONED | the buyer gives the reservation up (release, or buyer cancel)  |
 * | PENDING   | cancel                 | CANCELLED | organizer; gateway-B live status guards (rules 2–4)            |
 * | CONFIRMED | cancel                 | CANCELLED | organizer; only if no ticket was used at the door (rule 1)     |
 * | CONFIRMED | refund                 | REFUNDED  | allowed with used tickets ("use refund instead")               |
 * | ABANDONED | late_payment_confirmed | CONFIRMED | paid after the close and the stock (and seats) could be re-taken |
 * | ABANDONED | late_payment_refunded  | ABANDONED | paid after the close, stock gone: the payment goes back         |
 * | CANCELLED | late_payment_refunded  | CANCELLED | an organizer's cancel stands: a late payment is always refunded |
 *
 * A late payment that is refunded leaves the sale as it was: the sale was never sold, so it is not REFUNDED (that
 * status means a sale that was paid and then given back). The payment's own record carries the refund
 * (paymentStatus FT_LATE_PAYMENT_REFUNDED and a REFUND payment attempt). The checkout workflow follows this table.
 *
 * Repeating the event that led into a state is accepted and changes nothing (`changed: false`), so a duplicated
 * webhook, a timer racing a release or a double click is harmless: CONFIRMED + payment_approved (gateway re-notifies
 * a confirmed charge), CONFIRMED + late_payment_confirmed, ABANDONED + expire/release/late_payment_refunded,
 * CANCELLED + cancel/late_payment_refunded, REFUNDED + refund/late_payment_refunded. Every other pair is rejected with a typed code; nothing ever returns to
 * PENDING, and REFUNDED is final.
 *
 * Ticket access: VALID → USED by check-in (only while the sale is CONFIRMED); VALID/USED → INVALID when the sale is
 * cancelled or refunded. INVALID is final.
 *
 * Pure: `now` is an argument, never read from a clock. Safe to import from Temporal workflow code.
 */
import type { ErrorCode } from './errors.js';

export const SALE_STATUSES = ['PENDING', 'CONFIRMED', 'ABANDONED', 'CANCELLED', 'REFUNDED'] as const;
export type SaleStatus = (typeof SALE_STATUSES)[number];

export const isSaleStatus = (value: string): value is SaleStatus =>
  (SALE_STATUSES as readonly string[]).includes(value);

/**
 * What the organizer's cancel learnt from gateway B's live payment status of a PENDING sale:
 * - not_applicable: another gateway, or no payment started (rule 4: cancelled without the check);
 * - approved: the gateway reports the payment approved (rule 2: never cancelled);
 * - open / unreadable: a payment may still complete (rule 3: needs acknowledge_open_payment);
 * - declined: the payment failed at the gateway (nothing can arrive; cancelled).
 */
export type LivePaymentStatus = 'not_applicable' | 'approved' | 'open' | 'unreadable' | 'declined';

export type SaleEvent =
  | { readonly type: 'reserve' }
  | { readonly type: 'free_confirm' }
  | { readonly type: 'payment_approved' }
  | { readonly type: 'payment_rejected' }
  | { readonly type: 'expire' }
  | { readonly type: 'release' }
  | {
      readonly type: 'cancel';
      /** Some ticket of the sale was checked in at the door. */
      readonly ticketsCheckedIn: boolean;
      /** Gateway B's live status, re-read for a PENDING sale; not_applicable otherwise. */
      readonly livePayment: LivePaymentStatus;
      /** The caller sent acknowledge_open_payment: true. */
      readonly acknowledgeOpenPayment: boolean;
    }
  | { readonly type: 'refund' }
  | { readonly type: 'late_payment_confirmed' }
  | { readonly type: 'late_payment_refunded' };

export type SaleEventType = SaleEvent['type'];

export const SALE_EVENT_TYPES = [
  'reserve',
  'free_confirm',
  'payment_approved',
  'payment_rejected',
  'expire',
  'release',
  'cancel',
  'refund',
  'late_payment_confirmed',
  'late_payment_refunded',
] as const satisfies readonly SaleEventType[];

/** The error codes (errors.ts, contract part 7.3) a rejected transition maps to. */
export type SaleRejectionCode = Extract<
  ErrorCode,
  'INVALID_STATE' | 'SALE_ALREADY_CHECKED_IN' | 'SALE_PAID_AT_GATEWAY' | 'OPEN_PAYMENT_CONFIRMATION_REQUIRED'
>;

export type SaleTransition =
  | { readonly ok: true; readonly from: SaleStatus | null; readonly to: SaleStatus; readonly changed: boolean }
  | {
      readonly ok: false;
      readonly from: SaleStatus | null;
      readonly event: SaleEventType;
      readonly code: SaleRejectionCode;
      readonly message: string;
    };

/** Table key for `from === null`, "no sale yet" (the contract's "(none)" row). */
export type SaleOrigin = SaleStatus | 'NONE';

/**
 * Allowed moves, before guards. Self-loops are the idempotent repeats (and PENDING + payment_rejected, which keeps
 * the reservation). Exported so documentation and tests read the same table the code runs.
 */
export const SALE_TRANSITIONS: Readonly<Record<SaleOrigin, Readonly<Partial<Record<SaleEventType, SaleStatus>>>>> = {
  NONE: { reserve: 'PENDING', free_confirm: 'CONFIRMED' },
  PENDING: {
    payment_approved: 'CONFIRMED',
    payment_rejected: 'PENDING',
    expire: 'ABANDONED',
    release: 'ABANDONED',
    cancel: 'CANCELLED',
  },
  CONFIRMED: {
    payment_approved: 'CONFIRMED',
    late_payment_confirmed: 'CONFIRMED',
    cancel: 'CANCELLED',
    refund: 'REFUNDED',
  },
  ABANDONED: {
    expire: 'ABANDONED',
    release: 'ABANDONED',
    late_payment_confirmed: 'CONFIRMED',
    late_payment_refunded: 'ABANDONED',
  },
  CANCELLED: { cancel: 'CANCELLED', late_payment_refunded: 'CANCELLED' },
  REFUNDED: { refund: 'REFUNDED', late_payment_refunded: 'REFUNDED' },
};

type CancelEvent = Extract<SaleEvent, { type: 'cancel' }>;

/** Contract part 3, rules 1–4, for a cancel that the table allows. */
function cancelRejection(from: SaleStatus, event: CancelEvent): { code: SaleRejectionCode; message: string } | null {
  if (event.ticketsCheckedIn) {
    return {
      code: 'SALE_ALREADY_CHECKED_IN',
      message: 'A ticket of this sale was used at the door; refund it instead',
    };
  }
  if (from !== 'PENDING') return null;
  if (event.livePayment === 'approved') {
    return {
      code: 'SALE_PAID_AT_GATEWAY',
      message: 'The gateway reports this payment approved; it cannot be cancelled',
    };
  }
  if ((event.livePayment === 'open' || event.livePayment === 'unreadable') && !event.acknowledgeOpenPayment) {
    return {
      code: 'OPEN_PAYMENT_CONFIRMATION_REQUIRED',
      message: 'A payment is open or unreadable at the gateway; send acknowledge_open_payment: true to cancel anyway',
    };
  }
  return null;
}

/** The next sale status for `event`, or a typed rejection. Pure and total over every (state, event) pair. */
export function transition(from: SaleStatus | null, event: SaleEvent): SaleTransition {
  const to = SALE_TRANSITIONS[from ?? 'NONE'][event.type];
  if (to === undefined) {
    return {
      ok: false,
      from,
      event: event.type,
      code: 'INVALID_STATE',
      message: `A ${from ?? 'new'} sale does not accept ${event.type}`,
    };
  }
  if (event.type === 'cancel' && from !== null && from !== to) {
    const rejection = cancelRejection(from, event);
    if (rejection) return { ok: false, from, event: event.type, ...rejection };
  }
  return { ok: true, from, to, changed: from !== to };
}

/** Cancelled and refunded sales invalidate their tickets. */
export const saleStatusInvalidatesTickets = (status: SaleStatus): boolean =>
  status === 'CANCELLED' || status === 'REFUNDED';

// ── Payment opening ────────────────────────────────────────────────────────────────────────────────────────────

export type PaymentOpenCheck =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly code: Extract<ErrorCode, 'PAYMENT_UNAVAILABLE'>;
      readonly reason: 'not_pending' | 'reservation_expired';
    };

/** Payment can be opened only for a PENDING sale whose reservation has not expired (contract 4.3, 4.4). */
export function canOpenPayment(
  sale: { readonly status: SaleStatus; readonly expiresAt: Date | null },
  now: Date,
): PaymentOpenCheck {
  if (sale.status !== 'PENDING') return { ok: false, code: 'PAYMENT_UNAVAILABLE', reason: 'not_pending' };
  if (sale.expiresAt !== null && now.getTime() >= sale.expiresAt.getTime()) {
    return { ok: false, code: 'PAYMENT_UNAVAILABLE', reason: 'reservation_expired' };
  }
  return { ok: true };
}

// ── Public order status (public API) ──────────────────────────────────────────────────────────────────────────

export const PUBLIC_ORDER_STATUSES = ['pending', 'paid', 'expired', 'cancelled'] as const;
export type PublicOrderStatus = (typeof PUBLIC_ORDER_STATUSES)[number];

export interface PublicOrderView {
  readonly status: PublicOrderStatus;
  /** ISO 8601 UTC instant while pending, null once the order no longer is. */
  readonly expiresAt: string | null;
}

/**
 * Status and expiresAt of a public order (GET /orders/{id}):
 * - PENDING before expiresAt → pending (expiresAt repeated);
 * - PENDING at or after expiresAt → expired (the expiry has passed even if the workflow has not moved it yet);
 * - CONFIRMED → paid; ABANDONED (expired or released) → expired;
 * - CANCELLED → cancelled; REFUNDED → cancelled (the order no longer grants entry).
 */
export function publicOrderView(
  sale: { readonly status: SaleStatus; readonly expiresAt: Date | null },
  now: Date,
): PublicOrderView {
  switch (sale.status) {
    case 'PENDING':
      if (sale.expiresAt !== null && now.getTime() >= sale.expiresAt.getTime()) {
        return { status: 'expired', expiresAt: null };
      }
      return { status: 'pending', expiresAt: sale.expiresAt?.toISOString() ?? null };
    case 'CONFIRMED':
      return { status: 'paid', expiresAt: null };
    case 'ABANDONED':
      return { status: 'expired', expiresAt: null };
    case 'CANCELLED':
    case 'REFUNDED':
      return { status: 'cancelled', expiresAt: null };
  }
}

// ── Ticket access ─────────────────────────────────────────────────────────────────────────────────────────────

export const TICKET_STATUSES = ['VALID', 'USED', 'INVALID'] as const;
export type TicketStatus = (typeof TICKET_STATUSES)[number];

export type TicketEvent =
  /** Door check-in (POST /tickets/{ticketCode}/checkin); the sale's current status is checked too. */
  | { readonly type: 'checkin'; readonly saleStatus: SaleStatus }
  /** The sale was cancelled or refunded. */
  | { readonly type: 'invalidate' };

export type TicketRejectionReason = 'already_used' | 'ticket_invalid' | 'sale_not_confirmed';

export type TicketTransition =
  | { readonly ok: true; readonly from: TicketStatus; readonly to: TicketStatus; readonly changed: boolean }
  | {
      readonly ok: false;
      readonly from: TicketStatus;
      readonly code: Extract<ErrorCode, 'INVALID_STATE'>;
      readonly reason: TicketRejectionReason;
    };

/**
 * checkin: VALID → USED while the sale is CONFIRMED; a second scan is rejected (already_used), as is an INVALID
 * ticket. invalidate: VALID/USED → INVALID; repeating it changes nothing.
 */
export function ticketTransition(from: TicketStatus, event: TicketEvent): TicketTransition {
  if (event.type === 'invalidate') return { ok: true, from, to: 'INVALID', changed: from !== 'INVALID' };
  if (from === 'USED') return { ok: false, from, code: 'INVALID_STATE', reason: 'already_used' };
  if (from === 'INVALID') return { ok: false, from, code: 'INVALID_STATE', reason: 'ticket_invalid' };
  if (event.saleStatus !== 'CONFIRMED') return { ok: false, from, code: 'INVALID_STATE', reason: 'sale_not_confirmed' };
  return { ok: true, from, to: 'USED', changed: true };
}

/** TicketAccess.valid: the ticket would be admitted now (VALID, of a CONFIRMED sale). Does not consume it. */
export const isTicketAdmissible = (ticket: TicketStatus, sale: SaleStatus): boolean =>
  ticket === 'VALID' && sale === 'CONFIRMED';
