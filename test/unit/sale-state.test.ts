import fc from 'fast-check';
import {
  canOpenPayment,
  isTicketAdmissible,
  type LivePaymentStatus,
  publicOrderView,
  SALE_EVENT_TYPES,
  SALE_STATUSES,
  type SaleEvent,
  type SaleEventType,
  type SaleStatus,
  saleStatusInvalidatesTickets,
  TICKET_STATUSES,
  ticketTransition,
  transition,
} from '../../domain/sale-state.js';

/** A cancel that passes every guard: no ticket used, no gateway-B payment to check. */
const plainCancel = {
  type: 'cancel',
  ticketsCheckedIn: false,
  livePayment: 'not_applicable',
  acknowledgeOpenPayment: false,
} as const satisfies SaleEvent;

const eventOf = (type: SaleEventType): SaleEvent => (type === 'cancel' ? plainCancel : { type });

/**
 * The contract's table (part 3) plus the moves the brief fixes, written out independently of SALE_TRANSITIONS.
 * [from, event, to, changed]. Every pair not listed must be rejected with INVALID_STATE.
 */
const ALLOWED: ReadonlyArray<readonly [SaleStatus | null, SaleEventType, SaleStatus, boolean]> = [
  [null, 'reserve', 'PENDING', true],
  [null, 'free_confirm', 'CONFIRMED', true],
  ['PENDING', 'payment_approved', 'CONFIRMED', true],
  ['PENDING', 'payment_rejected', 'PENDING', false],
  ['PENDING', 'expire', 'ABANDONED', true],
  ['PENDING', 'release', 'ABANDONED', true],
  ['PENDING', 'cancel', 'CANCELLED', true],
  ['CONFIRMED', 'cancel', 'CANCELLED', true],
  ['CONFIRMED', 'refund', 'REFUNDED', true],
  ['CONFIRMED', 'payment_approved', 'CONFIRMED', false],
  ['CONFIRMED', 'late_payment_confirmed', 'CONFIRMED', false],
  ['ABANDONED', 'late_payment_confirmed', 'CONFIRMED', true],
  ['ABANDONED', 'late_payment_refunded', 'ABANDONED', false],
  ['ABANDONED', 'expire', 'ABANDONED', false],
  ['ABANDONED', 'release', 'ABANDONED', false],
  ['CANCELLED', 'late_payment_refunded', 'CANCELLED', false],
  ['CANCELLED', 'cancel', 'CANCELLED', false],
  ['REFUNDED', 'refund', 'REFUNDED', false],
  ['REFUNDED', 'late_payment_refunded', 'REFUNDED', false],
];

const ORIGINS: ReadonlyArray<SaleStatus | null> = [null, ...SALE_STATUSES];
const label = (s: SaleStatus | null): string => s ?? '(none)';
const isAllowed = (from: SaleStatus | null, type: SaleEventType): boolean =>
  ALLOWED.some(([f, e]) => f === from && e === type);

const REJECTED = ORIGINS.flatMap((from) =>
  SALE_EVENT_TYPES.filter((type) => !isAllowed(from, type)).map((type) => [label(from), type, from] as const),
);

describe('sale state machine: every allowed transition', () => {
  test.each(ALLOWED.map(([from, type, to, changed]) => [label(from), type, to, changed, from] as const))(
    '%s + %s → %s (status changed: %s)',
    (_label, type, to, changed, from) => {
      expect(transition(from, eventOf(type))).toEqual({ ok: true, from, to, changed });
    },
  );
});

describe('sale state machine: every other (state, event) pair is rejected with INVALID_STATE', () => {
  test.each(REJECTED)('%s + %s is rejected', (_label, type, from) => {
    expect(transition(from, eventOf(type))).toMatchObject({ ok: false, from, event: type, code: 'INVALID_STATE' });
  });

  test('the table covers all 60 (state, event) pairs', () => {
    expect(ALLOWED.length + REJECTED.length).toBe(ORIGINS.length * SALE_EVENT_TYPES.length);
  });
});

describe('sale state machine: named rules of the contract', () => {
  test('a 100 % discount confirms the sale at creation, without a PENDING step', () => {
    expect(transition(null, { type: 'free_confirm' })).toMatchObject({ ok: true, to: 'CONFIRMED' });
  });

  test('a rejected payment keeps the reservation PENDING so the buyer can retry', () => {
    expect(transition('PENDING', { type: 'payment_rejected' })).toMatchObject({
      ok: true,
      to: 'PENDING',
      changed: false,
    });
  });

  test('expiry and buyer release land in ABANDONED', () => {
    expect(transition('PENDING', { type: 'expire' })).toMatchObject({ to: 'ABANDONED' });
    expect(transition('PENDING', { type: 'release' })).toMatchObject({ to: 'ABANDONED' });
  });

  test('a paid sale cannot be released by the buyer (only if not yet paid)', () => {
    expect(transition('CONFIRMED', { type: 'release' })).toMatchObject({ ok: false, code: 'INVALID_STATE' });
  });

  test('a reservation that already expired is never abandoned twice nor confirmed by expiry', () => {
    expect(transition('CONFIRMED', { type: 'expire' })).toMatchObject({ ok: false, code: 'INVALID_STATE' });
  });

  test('a gateway re-notifying a confirmed charge changes nothing (duplicate webhook)', () => {
    expect(transition('CONFIRMED', { type: 'payment_approved' })).toEqual({
      ok: true,
      from: 'CONFIRMED',
      to: 'CONFIRMED',
      changed: false,
    });
  });

  test('a late payment after expiry is confirmed when stock is re-taken, otherwise refunded and the sale stays ABANDONED', () => {
    expect(transition('ABANDONED', { type: 'late_payment_confirmed' })).toMatchObject({ to: 'CONFIRMED' });
    expect(transition('ABANDONED', { type: 'late_payment_refunded' })).toMatchObject({
      ok: true,
      to: 'ABANDONED',
      changed: false,
    });
  });

  test('a late payment on an organizer-cancelled sale is refunded, never confirmed, and the sale stays CANCELLED', () => {
    expect(transition('CANCELLED', { type: 'late_payment_confirmed' })).toMatchObject({ ok: false });
    expect(transition('CANCELLED', { type: 'late_payment_refunded' })).toMatchObject({
      ok: true,
      to: 'CANCELLED',
      changed: false,
    });
  });

  test('a plain payment notification on an abandoned sale is not a confirmation: the workflow decides late confirm or refund', () => {
    expect(transition('ABANDONED', { type: 'payment_approved' })).toMatchObject({ ok: false, code: 'INVALID_STATE' });
  });

  test('only a CONFIRMED sale can be refunded', () => {
    for (const from of ['PENDING', 'ABANDONED', 'CANCELLED'] as const) {
      expect(transition(from, { type: 'refund' })).toMatchObject({ ok: false, code: 'INVALID_STATE' });
    }
  });
});

describe('organizer cancel (contract part 3, rules 1–4)', () => {
  const cancel = (livePayment: LivePaymentStatus, acknowledgeOpenPayment = false, ticketsCheckedIn = false) =>
    ({ type: 'cancel', livePayment, acknowledgeOpenPayment, ticketsCheckedIn }) as const;

  test('rule 1: cancel with a ticket already used at the door gets SALE_ALREADY_CHECKED_IN; refund is still possible', () => {
    expect(transition('CONFIRMED', cancel('not_applicable', false, true))).toMatchObject({
      ok: false,
      code: 'SALE_ALREADY_CHECKED_IN',
    });
    expect(transition('CONFIRMED', { type: 'refund' })).toMatchObject({ ok: true, to: 'REFUNDED' });
  });

  test('rule 2: a PENDING gateway-B sale the gateway reports approved gets SALE_PAID_AT_GATEWAY, even acknowledged', () => {
    expect(transition('PENDING', cancel('approved'))).toMatchObject({ ok: false, code: 'SALE_PAID_AT_GATEWAY' });
    expect(transition('PENDING', cancel('approved', true))).toMatchObject({ ok: false, code: 'SALE_PAID_AT_GATEWAY' });
  });

  test('rule 3: an open or unreadable gateway-B payment needs acknowledge_open_payment true', () => {
    for (const live of ['open', 'unreadable'] as const) {
      expect(transition('PENDING', cancel(live))).toMatchObject({
        ok: false,
        code: 'OPEN_PAYMENT_CONFIRMATION_REQUIRED',
      });
      expect(transition('PENDING', cancel(live, true))).toMatchObject({ ok: true, to: 'CANCELLED' });
    }
  });

  test('rule 4: other gateways, no payment started, or a declined payment are cancelled without the check', () => {
    expect(transition('PENDING', cancel('not_applicable'))).toMatchObject({ ok: true, to: 'CANCELLED' });
    expect(transition('PENDING', cancel('declined'))).toMatchObject({ ok: true, to: 'CANCELLED' });
  });

  test("the gateway-B live status only guards PENDING sales; a CONFIRMED sale's cancel ignores it", () => {
    expect(transition('CONFIRMED', cancel('open'))).toMatchObject({ ok: true, to: 'CANCELLED' });
  });

  test('repeating a cancel on a cancelled sale changes nothing', () => {
    expect(transition('CANCELLED', cancel('open', false, true))).toMatchObject({ ok: true, changed: false });
  });
});

describe('sale state machine properties', () => {
  const cancelEvent = fc.record({
    type: fc.constant('cancel' as const),
    ticketsCheckedIn: fc.boolean(),
    livePayment: fc.constantFrom<LivePaymentStatus>('not_applicable', 'approved', 'open', 'unreadable', 'declined'),
    acknowledgeOpenPayment: fc.boolean(),
  });
  const anyEvent: fc.Arbitrary<SaleEvent> = fc.oneof(
    fc.constantFrom(...SALE_EVENT_TYPES.filter((t) => t !== 'cancel')).map((type) => ({ type }) as SaleEvent),
    cancelEvent,
  );

  test('random event sequences never leave the set of states, never return to PENDING, and REFUNDED is final', () => {
    fc.assert(
      fc.property(fc.array(anyEvent, { maxLength: 40 }), (events) => {
        let state: SaleStatus | null = null;
        let leftPending = false;
        for (const event of events) {
          const result = transition(state, event);
          if (!result.ok) {
            expect(result.from).toBe(state);
            continue;
          }
          expect(SALE_STATUSES).toContain(result.to);
          expect(result.changed).toBe(result.to !== state);
          if (state === 'REFUNDED') expect(result.to).toBe('REFUNDED');
          if (leftPending) expect(result.to).not.toBe('PENDING');
          state = result.to;
          if (state !== 'PENDING') leftPending = true;
        }
      }),
    );
  });

  test('the same event applied twice in a row is idempotent whenever the first one was accepted', () => {
    fc.assert(
      fc.property(fc.constantFrom(null, ...SALE_STATUSES), anyEvent, (from, event) => {
        const first = transition(from, event);
        fc.pre(first.ok && first.to !== 'PENDING' && from !== null);
        if (!first.ok) return;
        expect(transition(first.to, event)).toMatchObject({ ok: true, to: first.to, changed: false });
      }),
    );
  });
});

describe('payment opening', () => {
  const now = new Date('2026-03-01T12:00:00.000Z');
  const later = new Date('2026-03-01T12:30:00.000Z');

  test('payment opens only for a PENDING sale before its reservation expires', () => {
    expect(canOpenPayment({ status: 'PENDING', expiresAt: later }, now)).toEqual({ ok: true });
  });

  test('an expired reservation gets PAYMENT_UNAVAILABLE (reservation_expired), at the exact instant too', () => {
    expect(canOpenPayment({ status: 'PENDING', expiresAt: now }, now)).toEqual({
      ok: false,
      code: 'PAYMENT_UNAVAILABLE',
      reason: 'reservation_expired',
    });
  });

  test.each(SALE_STATUSES.filter((s) => s !== 'PENDING'))(
    'a %s sale gets PAYMENT_UNAVAILABLE (not_pending)',
    (status) => {
      expect(canOpenPayment({ status, expiresAt: later }, now)).toMatchObject({ ok: false, reason: 'not_pending' });
    },
  );
});

describe('public order status', () => {
  const now = new Date('2026-03-01T12:00:00.000Z');
  const expiresAt = new Date('2026-03-01T12:30:00.000Z');

  test('a PENDING order before expiresAt is pending and repeats expiresAt as ISO 8601 UTC', () => {
    expect(publicOrderView({ status: 'PENDING', expiresAt }, now)).toEqual({
      status: 'pending',
      expiresAt: '2026-03-01T12:30:00.000Z',
    });
  });

  test('a PENDING order whose expiresAt has passed is expired even before the workflow moves it', () => {
    expect(publicOrderView({ status: 'PENDING', expiresAt }, expiresAt)).toEqual({
      status: 'expired',
      expiresAt: null,
    });
  });

  test.each([
    ['CONFIRMED', 'paid'],
    ['ABANDONED', 'expired'],
    ['CANCELLED', 'cancelled'],
    ['REFUNDED', 'cancelled'],
  ] as const)('a %s sale is %s and expiresAt is null once not pending', (status, expected) => {
    expect(publicOrderView({ status, expiresAt }, now)).toEqual({ status: expected, expiresAt: null });
  });
});

describe('ticket access', () => {
  test('check-in moves a VALID ticket of a CONFIRMED sale to USED', () => {
    expect(ticketTransition('VALID', { type: 'checkin', saleStatus: 'CONFIRMED' })).toEqual({
      ok: true,
      from: 'VALID',
      to: 'USED',
      changed: true,
    });
  });

  test('a second check-in of the same ticket is rejected as already_used', () => {
    expect(ticketTransition('USED', { type: 'checkin', saleStatus: 'CONFIRMED' })).toMatchObject({
      ok: false,
      code: 'INVALID_STATE',
      reason: 'already_used',
    });
  });

  test('an INVALID ticket never checks in', () => {
    expect(ticketTransition('INVALID', { type: 'checkin', saleStatus: 'CONFIRMED' })).toMatchObject({
      ok: false,
      reason: 'ticket_invalid',
    });
  });

  test.each(SALE_STATUSES.filter((s) => s !== 'CONFIRMED'))(
    'a VALID ticket of a %s sale does not check in',
    (saleStatus) => {
      expect(ticketTransition('VALID', { type: 'checkin', saleStatus })).toMatchObject({
        ok: false,
        reason: 'sale_not_confirmed',
      });
    },
  );

  test.each([
    ['VALID', true],
    ['USED', true],
    ['INVALID', false],
  ] as const)('invalidate moves a %s ticket to INVALID (changed: %s)', (from, changed) => {
    expect(ticketTransition(from, { type: 'invalidate' })).toEqual({ ok: true, from, to: 'INVALID', changed });
  });

  test('INVALID is final: no event brings a ticket back', () => {
    for (const saleStatus of SALE_STATUSES) {
      const result = ticketTransition('INVALID', { type: 'checkin', saleStatus });
      expect(result.ok).toBe(false);
    }
  });

  test('the access check admits only a VALID ticket of a CONFIRMED sale', () => {
    for (const ticket of TICKET_STATUSES) {
      for (const sale of SALE_STATUSES) {
        expect(isTicketAdmissible(ticket, sale)).toBe(ticket === 'VALID' && sale === 'CONFIRMED');
      }
    }
  });

  test('cancelled and refunded sales invalidate their tickets; other statuses do not', () => {
    expect(SALE_STATUSES.filter(saleStatusInvalidatesTickets)).toEqual(['CANCELLED', 'REFUNDED']);
  });
});
