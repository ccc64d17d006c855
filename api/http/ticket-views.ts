import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { isTicketCode } from '../../domain/codes.js';
import {
  isTicketAdmissible,
  SALE_STATUSES,
  type SaleStatus,
  TICKET_STATUSES,
  type TicketStatus,
} from '../../domain/sale-state.js';

/** The contract's TicketAccess (part 2), exactly. */
export const TicketAccessSchema = z
  .object({
    ticketCode: z.string(),
    valid: z.boolean().meta({ description: 'true when the ticket would be admitted now (VALID, sale CONFIRMED)' }),
    status: z.enum(TICKET_STATUSES),
    saleStatus: z.enum(SALE_STATUSES),
    eventId: z.string(),
    eventName: z.string(),
    eventDateId: z.string(),
    startsAt: z.string(),
    ticketTypeName: z.string(),
    checkedInAt: z.string().nullable(),
  })
  .meta({ id: 'TicketAccess' });
export type TicketAccess = z.infer<typeof TicketAccessSchema>;

export interface TicketRow {
  id: string;
  code: string;
  status: TicketStatus;
  sale_id: string;
  sale_status: SaleStatus;
  sale_reference: string;
  buyer_id: string | null;
  workspace_id: string;
  event_id: string;
  event_name: string;
  event_date_id: string;
  starts_at: Date;
  ticket_type_id: string;
  ticket_type_name: string;
  seat_label: string | null;
  checked_in_at: Date | null;
}

const TICKET_SELECT = `select t.id, t.code, t.status, t.sale_id, s.status as sale_status, s.reference as sale_reference,
    s.buyer_id, t.workspace_id, t.event_id, e.name as event_name, t.event_date_id, d.starts_at, t.ticket_type_id,
    tt.name as ticket_type_name, t.seat_label, t.checked_in_at
  from tickets t
  join sales s on s.id = t.sale_id
  join events e on e.id = t.event_id
  join event_dates d on d.id = t.event_date_id
  join ticket_types tt on tt.id = t.ticket_type_id`;

/** A ticket by its code, within a workspace (organizer routes) or across them (public resend: workspaceId null). */
export async function findTicketByCode(
  em: EntityManager,
  code: string,
  workspaceId: string | null,
): Promise<TicketRow | null> {
  if (!isTicketCode(code)) return null;
  const rows = await em.execute<TicketRow[]>(
    `${TICKET_SELECT} where t.code = ?${workspaceId ? ' and t.workspace_id = ?' : ''}`,
    workspaceId ? [code, workspaceId] : [code],
  );
  return rows[0] ?? null;
}

/** Tickets of one buyer (their sales), newest first, keyset-paged by ticket id. */
export async function findBuyerTickets(
  em: EntityManager,
  input: {
    buyerId: string;
    workspaceId: string | null;
    beforeId?: string | undefined;
    limit: number;
    ticketId?: string;
  },
): Promise<TicketRow[]> {
  const where: string[] = ['s.buyer_id = ?'];
  const params: unknown[] = [input.buyerId];
  if (input.workspaceId) {
    where.push('t.workspace_id = ?');
    params.push(input.workspaceId);
  }
  if (input.ticketId) {
    where.push('t.id = ?');
    params.push(input.ticketId);
  }
  if (input.beforeId) {
    where.push('t.id < ?');
    params.push(input.beforeId);
  }
  params.push(input.limit);
  return em.execute<TicketRow[]>(`${TICKET_SELECT} where ${where.join(' and ')} order by t.id desc limit ?`, params);
}

export function toTicketAccess(row: TicketRow): TicketAccess {
  return {
    ticketCode: row.code,
    valid: isTicketAdmissible(row.status, row.sale_status),
    status: row.status,
    saleStatus: row.sale_status,
    eventId: row.event_id,
    eventName: row.event_name,
    eventDateId: row.event_date_id,
    startsAt: new Date(row.starts_at).toISOString(),
    ticketTypeName: row.ticket_type_name,
    checkedInAt: row.checked_in_at ? new Date(row.checked_in_at).toISOString() : null,
  };
}
