import { AppError } from '../../domain/errors.js';
import {
  assertNoLiveSalesOnDate,
  assertNoLiveSalesOnEvent,
  assertNotCancelled,
  assertSalesMode,
  cancel,
  dateWindowProblems,
  type EventState,
  eventSlugBase,
  publish,
} from '../../domain/events.js';
import { validationFailed } from '../../domain/field-errors.js';

const draft = (): EventState => ({ id: 'e1', status: 'DRAFT', publishedAt: null, cancelledAt: null });
const now = new Date('2026-02-01T12:00:00.000Z');

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected an AppError');
}

describe('publishing', () => {
  test('a draft with a date and a ticket type is published with the time', () => {
    const event = draft();
    expect(publish(event, { dates: 1, ticketTypes: 1 }, now)).toBe(true);
    expect(event).toMatchObject({ status: 'PUBLISHED', publishedAt: now });
  });

  test('without dates, or without ticket types, it stays a draft', () => {
    const noDates = draft();
    expect(refusal(() => publish(noDates, { dates: 0, ticketTypes: 3 }, now))).toMatchObject({
      code: 'INVALID_STATE',
      details: { reason: 'no_dates' },
    });
    const noTypes = draft();
    expect(refusal(() => publish(noTypes, { dates: 2, ticketTypes: 0 }, now)).details).toEqual({
      reason: 'no_ticket_types',
    });
    expect(noDates.status).toBe('DRAFT');
    expect(noTypes.status).toBe('DRAFT');
  });

  test('publishing twice keeps the first publishedAt', () => {
    const first = new Date('2026-01-01T00:00:00.000Z');
    const event: EventState = { id: 'e1', status: 'PUBLISHED', publishedAt: first };
    expect(publish(event, { dates: 1, ticketTypes: 1 }, now)).toBe(false);
    expect(event.publishedAt).toBe(first);
  });

  test('a cancelled event is never published again', () => {
    const event: EventState = { id: 'e1', status: 'CANCELLED', cancelledAt: now };
    expect(refusal(() => publish(event, { dates: 1, ticketTypes: 1 }, now))).toMatchObject({
      code: 'INVALID_STATE',
      details: { reason: 'event_cancelled' },
    });
    expect(event.status).toBe('CANCELLED');
  });
});

describe('cancelling', () => {
  test('a draft or a published event becomes CANCELLED; a second cancel keeps the first time', () => {
    const event = draft();
    expect(cancel(event, now)).toBe(true);
    expect(event).toMatchObject({ status: 'CANCELLED', cancelledAt: now });
    expect(cancel(event, new Date(now.getTime() + 60_000))).toBe(false);
    expect(event.cancelledAt).toBe(now);
  });

  test('a cancelled event takes no new dates', () => {
    expect(() => assertNotCancelled(draft(), 'adding dates')).not.toThrow();
    expect(refusal(() => assertNotCancelled({ id: 'e1', status: 'CANCELLED' }, 'adding dates')).message).toBe(
      'Event e1 is cancelled; adding dates is not possible',
    );
  });
});

describe('deleting', () => {
  test('an event or date with live sales is refused with the count', () => {
    expect(() => assertNoLiveSalesOnEvent('e1', 0)).not.toThrow();
    expect(refusal(() => assertNoLiveSalesOnEvent('e1', 2)).details).toEqual({ reason: 'event_has_sales', sales: 2 });
    expect(() => assertNoLiveSalesOnDate('d1', 0)).not.toThrow();
    expect(refusal(() => assertNoLiveSalesOnDate('d1', 1)).details).toEqual({ reason: 'date_has_sales', sales: 1 });
  });
});

describe('field rules', () => {
  test('an EXTERNAL event needs its sales address', () => {
    expect(() => assertSalesMode('INTERNAL', null)).not.toThrow();
    expect(() => assertSalesMode('EXTERNAL', 'https://tickets.example.com/e1')).not.toThrow();
    expect(refusal(() => assertSalesMode('EXTERNAL', null))).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { fields: [{ field: 'body.externalSalesUrl' }] },
    });
  });

  test('endsAt after startsAt and salesEndAt after salesStartAt; equal instants are refused', () => {
    const at = (iso: string) => new Date(iso);
    const ok = {
      startsAt: at('2026-03-01T20:00:00Z'),
      endsAt: at('2026-03-01T23:00:00Z'),
      salesStartAt: at('2026-02-01T00:00:00Z'),
      salesEndAt: at('2026-03-01T19:00:00Z'),
    };
    expect(dateWindowProblems(ok, 'body')).toEqual([]);
    expect(dateWindowProblems({ ...ok, endsAt: null, salesStartAt: null }, 'body')).toEqual([]);
    expect(
      dateWindowProblems({ ...ok, endsAt: ok.startsAt, salesEndAt: at('2026-01-01T00:00:00Z') }, 'body.dates.2'),
    ).toEqual([
      { field: 'body.dates.2.endsAt', message: 'must be after startsAt' },
      { field: 'body.dates.2.salesEndAt', message: 'must be after salesStartAt' },
    ]);
  });

  test('VALIDATION_FAILED repeats the first field in its message and lists them all', () => {
    const error = validationFailed([
      { field: 'body.a', message: 'bad' },
      { field: 'body.b', message: 'worse' },
    ]);
    expect(error).toMatchObject({ code: 'VALIDATION_FAILED', status: 422, message: 'body.a: bad' });
    expect(error.details).toEqual({
      fields: [
        { field: 'body.a', message: 'bad' },
        { field: 'body.b', message: 'worse' },
      ],
    });
  });

  test('the generated event slug is cut to 100 characters and falls back to "event"', () => {
    expect(eventSlugBase('x'.repeat(150))).toHaveLength(100);
    expect(eventSlugBase('¡¡!!')).toBe('event');
  });
});
