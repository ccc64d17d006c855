/**
 * Rules for moving a sold ticket to another date and/or ticket type of its own event (PATCH /tickets/{code}). Pure:
 * api/services/tickets.ts loads and locks the rows, asks these rules in order, and moves the stock unit.
 */
import { AppError } from './errors.js';

/** The ticket as locked together with its sale. */
export interface TicketToMove {
  status: string;
  saleStatus: string;
  ticketTypeId: string;
  eventId: string;
  eventDateId: string;
  seatLabel: string | null;
}

/** The ticket type the ticket has now. */
export interface CurrentTicketType {
  name: string;
  seatMapCategoryKey: string | null;
  currency: string;
}

/** Where the organizer asked the ticket to go; at least one of the two is sent. */
export interface ReassignRequest {
  eventDateId?: string | undefined;
  ticketTypeId?: string | undefined;
}

/** The ticket type the ticket would move to, with its date. */
export interface ReassignTarget {
  ticketTypeId: string;
  eventDateId: string;
  eventId: string;
  seatMapCategoryKey: string | null;
  currency: string;
  startsAt: Date;
  dateCancelledAt: Date | null;
}

/** Only a ticket someone may still use at the door moves: VALID, of a CONFIRMED sale. */
export function assertReassignable(ticket: TicketToMove): void {
  if (ticket.status !== 'VALID' || ticket.saleStatus !== 'CONFIRMED') {
    throw new AppError('INVALID_STATE', 'Only a VALID ticket of a CONFIRMED sale can be reassigned', {
      details: { ticketStatus: ticket.status, saleStatus: ticket.saleStatus },
    });
  }
}

/**
 * Which ticket type to look for: the one named by id, or else the type with the ticket's current type name on the
 * target date (the date asked for, or the ticket's own).
 */
export function targetWanted(
  ticket: TicketToMove,
  current: CurrentTicketType | undefined,
  request: ReassignRequest,
): { eventDateId: string } & ({ ticketTypeId: string } | { ticketTypeName: string }) {
  const eventDateId = request.eventDateId ?? ticket.eventDateId;
  return request.ticketTypeId !== undefined
    ? { eventDateId, ticketTypeId: request.ticketTypeId }
    : { eventDateId, ticketTypeName: current?.name ?? '' };
}

/** No such target: a type named by id is missing (404); a same-name type absent from the date needs an id (422). */
export function targetNotFound(request: ReassignRequest, current: CurrentTicketType | undefined): AppError {
  if (request.ticketTypeId) return new AppError('NOT_FOUND', 'Ticket type not found on that event date');
  return new AppError(
    'VALIDATION_FAILED',
    `No ticket type named "${current?.name ?? ''}" on that date; send ticketTypeId`,
    { details: { fields: [{ field: 'ticketTypeId', message: 'required for this date' }] } },
  );
}

/**
 * The target must be a date of the ticket's own event that is neither cancelled nor started, unnumbered on both
 * sides (seats move through the seat map, not here), and sold in the same currency (the price is not changed).
 */
export function assertTargetAllowed(
  ticket: TicketToMove,
  current: CurrentTicketType | undefined,
  target: ReassignTarget,
  now: Date,
): void {
  if (target.eventId !== ticket.eventId) {
    throw new AppError('CONFLICT', 'A ticket can only move to a date of its own event', {
      details: { reason: 'other_event' },
    });
  }
  if (target.dateCancelledAt || target.startsAt.getTime() <= now.getTime()) {
    throw new AppError('CONFLICT', 'The target date is cancelled or has already started', {
      details: { reason: 'date_not_available' },
    });
  }
  if (ticket.seatLabel || target.seatMapCategoryKey || current?.seatMapCategoryKey) {
    throw new AppError('CONFLICT', 'Numbered (seated) tickets cannot be reassigned here', {
      details: { reason: 'numbered_not_supported' },
    });
  }
  if (target.currency !== current?.currency) {
    throw new AppError('CONFLICT', 'The target ticket type is sold in another currency', {
      details: { reason: 'currency_mismatch' },
    });
  }
}

/** Asked to move where it already is: nothing to do, and no stock moves. */
export const alreadyThere = (ticket: TicketToMove, target: ReassignTarget): boolean =>
  target.ticketTypeId === ticket.ticketTypeId && target.eventDateId === ticket.eventDateId;

/** The target type has no unit left for the ticket. */
export const targetSoldOut = (target: ReassignTarget): AppError =>
  new AppError('CONFLICT', 'The target ticket type is sold out', {
    details: { reason: 'sold_out', ticketTypeId: target.ticketTypeId },
  });
