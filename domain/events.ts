/**
 * Rules of an event's life: DRAFT → PUBLISHED, either → CANCELLED, and nothing back from
 * CANCELLED. Pure: the caller loads the rows, counts what it needs and saves the result.
 */
import { AppError } from './errors.js';
import type { FieldProblem } from './field-errors.js';
import { validationFailed } from './field-errors.js';
import { slugify } from './slug.js';

/** Sales in these states hold the event's inventory or money; rows they point to cannot be deleted. */
export const LIVE_SALE_STATUSES = ['PENDING', 'CONFIRMED'] as const;

/** The fields the rules read and write; structural so the domain does not depend on the ORM entity. */
export interface EventState {
  id: string;
  status: 'DRAFT' | 'PUBLISHED' | 'CANCELLED';
  publishedAt?: Date | null;
  cancelledAt?: Date | null;
}

/** The slug an event gets when the organizer sends none; the column holds 120, the rest is room for a suffix. */
export const eventSlugBase = (name: string): string => slugify(name, { maxLength: 100, fallback: 'event' });

export function assertNotCancelled(event: EventState, action: string): void {
  if (event.status === 'CANCELLED') {
    throw new AppError('INVALID_STATE', `Event ${event.id} is cancelled; ${action} is not possible`, {
      details: { reason: 'event_cancelled', status: event.status },
    });
  }
}

/**
 * Publishes in place and answers whether anything changed. Publishing twice is a no-op; a storefront page with
 * no date or no ticket type would sell nothing, so both are required.
 */
export function publish(event: EventState, contents: { dates: number; ticketTypes: number }, now: Date): boolean {
  assertNotCancelled(event, 'publishing');
  if (event.status === 'PUBLISHED') return false;
  if (contents.dates === 0) {
    throw new AppError(
      'INVALID_STATE',
      'An event needs at least one date before it can be published; add one with POST /events/{id}/dates',
      { details: { reason: 'no_dates' } },
    );
  }
  if (contents.ticketTypes === 0) {
    throw new AppError(
      'INVALID_STATE',
      'An event needs at least one ticket type before it can be published; add one with POST /ticket-types',
      { details: { reason: 'no_ticket_types' } },
    );
  }
  event.status = 'PUBLISHED';
  event.publishedAt = now;
  return true;
}

/** Cancels in place; cancelling again keeps the first cancelledAt, so a repeated request changes nothing. */
export function cancel(event: EventState, now: Date): boolean {
  if (event.status === 'CANCELLED') return false;
  event.status = 'CANCELLED';
  event.cancelledAt = now;
  return true;
}

export function assertNoLiveSalesOnEvent(eventId: string, liveSales: number): void {
  if (liveSales > 0) {
    throw new AppError(
      'INVALID_STATE',
      `Event ${eventId} has ${liveSales} pending or confirmed sale(s); cancel it (POST /events/{id}/cancel) instead of deleting it`,
      { details: { reason: 'event_has_sales', sales: liveSales } },
    );
  }
}

export function assertNoLiveSalesOnDate(dateId: string, liveSales: number): void {
  if (liveSales > 0) {
    throw new AppError(
      'INVALID_STATE',
      `Date ${dateId} has ${liveSales} pending or confirmed sale(s) and cannot be deleted`,
      {
        details: { reason: 'date_has_sales', sales: liveSales },
      },
    );
  }
}

/** An EXTERNAL event is sold elsewhere; without the address the storefront would list it with no way to buy. */
export function assertSalesMode(salesMode: string, externalSalesUrl: string | null | undefined): void {
  if (salesMode === 'EXTERNAL' && !externalSalesUrl) {
    throw validationFailed([{ field: 'body.externalSalesUrl', message: 'is required when salesMode is EXTERNAL' }]);
  }
}

export interface DateWindow {
  startsAt: Date;
  endsAt: Date | null;
  salesStartAt: Date | null;
  salesEndAt: Date | null;
}

/** endsAt after startsAt and salesEndAt after salesStartAt, checked on the values the date will have. */
export function dateWindowProblems(date: DateWindow, prefix: string): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (date.endsAt && date.endsAt.getTime() <= date.startsAt.getTime()) {
    problems.push({ field: `${prefix}.endsAt`, message: 'must be after startsAt' });
  }
  if (date.salesStartAt && date.salesEndAt && date.salesEndAt.getTime() <= date.salesStartAt.getTime()) {
    problems.push({ field: `${prefix}.salesEndAt`, message: 'must be after salesStartAt' });
  }
  return problems;
}
