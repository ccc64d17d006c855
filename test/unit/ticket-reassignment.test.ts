/**
 * The rules of PATCH /tickets/{code} on their own (domain/ticket-reassignment.ts); the stock moves and the HTTP side
 * are covered end to end in test/e2e/sales-ops-tickets.test.ts.
 */
import { AppError } from '../../domain/errors.js';
import {
  alreadyThere,
  assertReassignable,
  assertTargetAllowed,
  type CurrentTicketType,
  type ReassignTarget,
  type TicketToMove,
  targetNotFound,
  targetSoldOut,
  targetWanted,
} from '../../domain/ticket-reassignment.js';

const NOW = new Date('2026-06-01T12:00:00Z');
const ticket: TicketToMove = {
  status: 'VALID',
  saleStatus: 'CONFIRMED',
  ticketTypeId: 'type-general-d1',
  eventId: 'event-1',
  eventDateId: 'date-1',
  seatLabel: null,
};
const current: CurrentTicketType = { name: 'General', seatMapCategoryKey: null, currency: 'COP' };
const target: ReassignTarget = {
  ticketTypeId: 'type-general-d2',
  eventDateId: 'date-2',
  eventId: 'event-1',
  seatMapCategoryKey: null,
  currency: 'COP',
  startsAt: new Date('2026-07-01T20:00:00Z'),
  dateCancelledAt: null,
};

function refusal(run: () => void): { code: string; status: number; details: unknown } {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError)
      return { code: error.code, status: error.status, details: error.toBody().error.details };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('which tickets can move', () => {
  test('a VALID ticket of a CONFIRMED sale moves', () => {
    expect(() => assertReassignable(ticket)).not.toThrow();
  });

  test.each([
    ['USED', 'CONFIRMED'],
    ['INVALID', 'REFUNDED'],
    ['VALID', 'PENDING'],
  ])('a %s ticket of a %s sale is refused with 409 INVALID_STATE naming both', (status, saleStatus) => {
    expect(refusal(() => assertReassignable({ ...ticket, status, saleStatus }))).toEqual({
      code: 'INVALID_STATE',
      status: 409,
      details: { ticketStatus: status, saleStatus },
    });
  });
});

describe('which ticket type it moves to', () => {
  test('the type named by id, on the date asked for', () => {
    expect(targetWanted(ticket, current, { eventDateId: 'date-2', ticketTypeId: 'type-vip-d2' })).toEqual({
      eventDateId: 'date-2',
      ticketTypeId: 'type-vip-d2',
    });
  });

  test("without ticketTypeId, the type with the current type's name on the new date", () => {
    expect(targetWanted(ticket, current, { eventDateId: 'date-2' })).toEqual({
      eventDateId: 'date-2',
      ticketTypeName: 'General',
    });
  });

  test("without eventDateId, the ticket's own date", () => {
    expect(targetWanted(ticket, current, { ticketTypeId: 'type-vip-d1' })).toEqual({
      eventDateId: 'date-1',
      ticketTypeId: 'type-vip-d1',
    });
  });

  test('a type named by id that is not there is 404; a missing same-name type asks for ticketTypeId (422)', () => {
    expect(targetNotFound({ ticketTypeId: 'x' }, current)).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    const missingName = targetNotFound({ eventDateId: 'date-2' }, current);
    expect(missingName).toMatchObject({ code: 'VALIDATION_FAILED', status: 422 });
    expect(missingName.message).toContain('"General"');
    expect(missingName.toBody().error.details).toEqual({
      fields: [{ field: 'ticketTypeId', message: 'required for this date' }],
    });
  });
});

describe('where it may move (409 CONFLICT with details.reason)', () => {
  test('a live, later date of the same event, unnumbered, in the same currency: allowed', () => {
    expect(() => assertTargetAllowed(ticket, current, target, NOW)).not.toThrow();
  });

  test.each<[string, Partial<ReassignTarget>, Partial<TicketToMove>, Partial<CurrentTicketType>]>([
    ['other_event', { eventId: 'event-2' }, {}, {}],
    ['date_not_available', { dateCancelledAt: new Date('2026-05-30T00:00:00Z') }, {}, {}],
    ['date_not_available', { startsAt: NOW }, {}, {}],
    ['numbered_not_supported', {}, { seatLabel: 'A-12' }, {}],
    ['numbered_not_supported', { seatMapCategoryKey: 'balcony' }, {}, {}],
    ['numbered_not_supported', {}, {}, { seatMapCategoryKey: 'stalls' }],
    ['currency_mismatch', { currency: 'USD' }, {}, {}],
  ])('refused: %s', (reason, targetChange, ticketChange, currentChange) => {
    expect(
      refusal(() =>
        assertTargetAllowed(
          { ...ticket, ...ticketChange },
          { ...current, ...currentChange },
          { ...target, ...targetChange },
          NOW,
        ),
      ),
    ).toEqual({ code: 'CONFLICT', status: 409, details: { reason } });
  });

  test('the rules are asked in order: another event is reported before a started date', () => {
    const both = { ...target, eventId: 'event-2', startsAt: NOW };
    expect(refusal(() => assertTargetAllowed(ticket, current, both, NOW)).details).toEqual({ reason: 'other_event' });
  });

  test('a sold-out target names its ticket type', () => {
    expect(targetSoldOut(target).toBody().error).toMatchObject({
      code: 'CONFLICT',
      details: { reason: 'sold_out', ticketTypeId: 'type-general-d2' },
    });
  });
});

describe('a move to where the ticket already is', () => {
  test('is recognised, so no stock unit moves', () => {
    expect(alreadyThere(ticket, { ...target, ticketTypeId: 'type-general-d1', eventDateId: 'date-1' })).toBe(true);
    expect(alreadyThere(ticket, { ...target, ticketTypeId: 'type-general-d1' })).toBe(false);
    expect(alreadyThere(ticket, target)).toBe(false);
  });
});
