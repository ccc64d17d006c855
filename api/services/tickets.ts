/**
 * Ticket operations the organizer routes run beyond reading: the door's check-in, and reassignment, applying the
 * rules of domain/ticket-reassignment.ts inside the transaction and locks it needs, and moving the ticket's stock unit.
 * Routes keep the HTTP side (schemas, status codes, mapping).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../domain/errors.js';
import {
  alreadyThere,
  assertReassignable,
  assertTargetAllowed,
  type CurrentTicketType,
  type ReassignRequest,
  type ReassignTarget,
  type TicketToMove,
  targetNotFound,
  targetSoldOut,
  targetWanted,
} from '../../domain/ticket-reassignment.js';
import { isUuid } from '../../entities/ids.js';
import { takeStock } from '../../entities/stock.js';
import { returnUnits } from '../../entities/stock-moves.js';
import type { TicketRow } from '../http/ticket-views.js';

/**
 * Consumes a ticket at the door: VALID → USED, only while its sale is CONFIRMED. True when this scan admitted the
 * holder; concurrent scans at two doors admit exactly one (the conditional update), and the sale is share-locked so a
 * cancel or refund (which lock it for update) waits for this scan, or this scan for it.
 */
export async function checkInTicket(em: EntityManager, code: string, workspaceId: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    const sales = await tx.execute<{ status: string }[]>(
      `select s.status from sales s join tickets t on t.sale_id = s.id
        where t.code = ? and t.workspace_id = ? for share of s`,
      [code, workspaceId],
    );
    if (sales[0]?.status !== 'CONFIRMED') return false;
    const used = await tx.execute<{ id: string }[]>(
      `update tickets set status = 'USED', checked_in_at = now(), updated_at = now()
        where code = ? and workspace_id = ? and status = 'VALID' returning id`,
      [code, workspaceId],
    );
    return used.length === 1;
  });
}

/** Why a scan did not admit the holder of `ticket` (read after the scan): already used, invalid, or not yet paid. */
export function checkInRefusal(ticket: TicketRow): AppError {
  if (ticket.status === 'USED') {
    return new AppError('TICKET_ALREADY_USED', 'This ticket was already used at the door', {
      details: {
        ticketCode: ticket.code,
        checkedInAt: ticket.checked_in_at ? new Date(ticket.checked_in_at).toISOString() : null,
      },
    });
  }
  return new AppError(
    'INVALID_STATE',
    ticket.status === 'INVALID'
      ? 'This ticket is not valid (its sale was cancelled or refunded)'
      : `The sale is ${ticket.sale_status}, not CONFIRMED`,
    {
      details: {
        reason: ticket.status === 'INVALID' ? 'ticket_invalid' : 'sale_not_confirmed',
        ticketStatus: ticket.status,
        saleStatus: ticket.sale_status,
      },
    },
  );
}

interface LockedTicketRow {
  id: string;
  sale_id: string;
  status: string;
  sale_status: string;
  ticket_type_id: string;
  event_id: string;
  event_date_id: string;
  seat_label: string | null;
}

interface TargetRow {
  type_id: string;
  event_date_id: string;
  event_id: string;
  seat_map_category_key: string | null;
  currency: string;
  starts_at: Date;
  date_cancelled_at: Date | null;
}

/** The ticket `code` of the workspace, locked with its sale: a cancel, refund or check-in waits for the move. */
async function lockTicket(
  tx: EntityManager,
  code: string,
  workspaceId: string,
): Promise<(TicketToMove & { id: string; saleId: string }) | undefined> {
  const [row] = await tx.execute<LockedTicketRow[]>(
    `select t.id, t.sale_id, t.status, s.status as sale_status, t.ticket_type_id, t.event_id, t.event_date_id, t.seat_label
       from tickets t join sales s on s.id = t.sale_id
      where t.code = ? and t.workspace_id = ? for update of t, s`,
    [code, workspaceId],
  );
  return (
    row && {
      id: row.id,
      saleId: row.sale_id,
      status: row.status,
      saleStatus: row.sale_status,
      ticketTypeId: row.ticket_type_id,
      eventId: row.event_id,
      eventDateId: row.event_date_id,
      seatLabel: row.seat_label,
    }
  );
}

async function currentType(tx: EntityManager, ticketTypeId: string): Promise<CurrentTicketType | undefined> {
  const [row] = await tx.execute<{ name: string; seat_map_category_key: string | null; currency: string }[]>(
    'select name, seat_map_category_key, currency from ticket_types where id = ?',
    [ticketTypeId],
  );
  return row && { name: row.name, seatMapCategoryKey: row.seat_map_category_key, currency: row.currency };
}

/** The first matching live ticket type of the live date in the workspace, in the organizer's display order. */
async function findTarget(
  tx: EntityManager,
  workspaceId: string,
  wanted: ReturnType<typeof targetWanted>,
): Promise<ReassignTarget | undefined> {
  const byId = 'ticketTypeId' in wanted;
  const [row] = await tx.execute<TargetRow[]>(
    `select tt.id as type_id, d.id as event_date_id, d.event_id, tt.seat_map_category_key,
            tt.currency, d.starts_at, d.cancelled_at as date_cancelled_at
       from ticket_types tt join event_dates d on d.id = tt.event_date_id
      where d.id = ? and ${byId ? 'tt.id = ?' : 'tt.name = ?'} and tt.workspace_id = ?
        and tt.deleted_at is null and d.deleted_at is null
      order by tt.sort_order, tt.id limit 1`,
    [wanted.eventDateId, byId ? wanted.ticketTypeId : wanted.ticketTypeName, workspaceId],
  );
  return (
    row && {
      ticketTypeId: row.type_id,
      eventDateId: row.event_date_id,
      eventId: row.event_id,
      seatMapCategoryKey: row.seat_map_category_key,
      currency: row.currency,
      startsAt: new Date(row.starts_at),
      dateCancelledAt: row.date_cancelled_at ? new Date(row.date_cancelled_at) : null,
    }
  );
}

/**
 * Moves the ticket `ticketCode` of the workspace to another date and/or ticket type of its event, in one transaction:
 * one unit taken from the new type (409 sold_out when none is left) and one returned to the old, so the sale's
 * allocation follows and availability stays exact. The price is not changed. Asking for where the ticket already is
 * changes nothing.
 */
export async function reassignTicket(
  em: EntityManager,
  input: { workspaceId: string; ticketCode: string; to: ReassignRequest; now?: Date },
): Promise<void> {
  const now = input.now ?? new Date();
  await em.transactional(async (tx) => {
    const ticket = await lockTicket(tx, input.ticketCode, input.workspaceId);
    if (!ticket) throw new AppError('NOT_FOUND', 'Ticket not found');
    assertReassignable(ticket);
    const dateId = input.to.eventDateId ?? ticket.eventDateId;
    if (!isUuid(dateId) || (input.to.ticketTypeId !== undefined && !isUuid(input.to.ticketTypeId))) {
      throw new AppError('NOT_FOUND', 'Event date or ticket type not found');
    }
    const current = await currentType(tx, ticket.ticketTypeId);
    const target = await findTarget(tx, input.workspaceId, targetWanted(ticket, current, input.to));
    if (!target) throw targetNotFound(input.to, current);
    assertTargetAllowed(ticket, current, target, now);
    if (alreadyThere(ticket, target)) return;

    const taken = await takeStock(tx, { saleId: ticket.saleId, ticketTypeId: target.ticketTypeId, quantity: 1 });
    if (!taken) throw targetSoldOut(target);
    const returned = await returnUnits(tx, { saleId: ticket.saleId, ticketTypeId: ticket.ticketTypeId, quantity: 1 });
    if (returned !== 1) throw new Error(`sale ${ticket.saleId} holds no unit of ${ticket.ticketTypeId} to return`);
    await tx.execute('update tickets set ticket_type_id = ?, event_date_id = ?, updated_at = now() where id = ?', [
      target.ticketTypeId,
      target.eventDateId,
      ticket.id,
    ]);
  });
}
