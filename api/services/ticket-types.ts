/**
 * Ticket types of a workspace: listing them, creating one (on a live event's date, with its stock), changing one
 * (capacity adjusted under lock, the presale window kept ordered), deleting one only while no sale holds its units,
 * and the stock figures and fee policy a view quotes with. Routes keep the HTTP side.
 */
import { type FilterQuery, LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../../domain/errors.js';
import { LIVE_SALE_STATUSES } from '../../domain/events.js';
import { invalidField } from '../../domain/field-errors.js';
import type { FeePolicy } from '../../domain/pricing.js';
import { isUuid, newId } from '../../entities/ids.js';
import { Event, EventDate, TicketType, Workspace } from '../../entities/index.js';
import { adjustCapacity, createStock, type StockLevels, stockLevels } from '../../entities/stock.js';
import type { ITicketType } from '../../entities/ticket-type.js';
import { dateOrNull, patchedDate } from '../http/dates.js';

export interface TicketTypeFields {
  name: string;
  description: string | null;
  price: number;
  capacity: number;
  maxPerOrder: number;
  membersOnly: boolean;
  /** ISO date-times as sent; null or absent: no bound. */
  presaleStartsAt: string | null;
  presaleEndsAt: string | null;
  seatMapCategoryKey: string | null;
  feeAbsorbedByOrganizer: boolean;
  serviceFeeBps: number | null;
  serviceFeeFixed: number | null;
  seatingSurcharge: number;
  sortOrder: number;
}

type OptionalOnCreate =
  | 'description'
  | 'presaleStartsAt'
  | 'presaleEndsAt'
  | 'seatMapCategoryKey'
  | 'serviceFeeBps'
  | 'serviceFeeFixed';

export type NewTicketType = Omit<TicketTypeFields, OptionalOnCreate> & {
  [K in OptionalOnCreate]?: TicketTypeFields[K] | undefined;
} & { eventId: string; eventDateId: string };

/** A change leaves every field it does not name as it is; nullable fields accept null to clear them. */
export type TicketTypeChange = { [K in keyof TicketTypeFields]?: TicketTypeFields[K] | undefined };

function assertPresaleWindow(startsAt: Date | null, endsAt: Date | null): void {
  if (startsAt && endsAt && endsAt.getTime() <= startsAt.getTime()) {
    throw invalidField('body.presaleEndsAt', 'must be after presaleStartsAt');
  }
}

/** The workspace's default fee policy (ticket types override parts of it). */
async function workspaceFeePolicy(em: EntityManager, workspaceId: string): Promise<FeePolicy> {
  const workspace = await em.findOneOrFail(Workspace, { id: workspaceId });
  return {
    serviceFeeBps: workspace.serviceFeeBps,
    serviceFeeFixed: workspace.serviceFeeFixed,
    feeAbsorbedByOrganizer: false,
    seatingSurcharge: 0,
  };
}

/** What a view of ticket types quotes with: their stock figures read fresh, and the workspace's fee policy. */
export async function ticketTypeFigures(
  em: EntityManager,
  workspaceId: string,
  ticketTypeIds: string[],
): Promise<{ levels: Map<string, StockLevels>; policy: FeePolicy }> {
  const [levels, policy] = await Promise.all([stockLevels(em, ticketTypeIds), workspaceFeePolicy(em, workspaceId)]);
  return { levels, policy };
}

/** Newest first, one more than `limit` (the page builder tells whether there is more); `after` is the last id seen. */
export async function listTicketTypes(
  em: EntityManager,
  query: {
    after: string | null | undefined;
    limit: number;
    event?: string | undefined;
    eventDate?: string | undefined;
  },
): Promise<ITicketType[]> {
  const { after, limit, event, eventDate } = query;
  const where: FilterQuery<ITicketType> = {
    ...(after ? { id: { $lt: after } } : {}),
    ...(event ? { event } : {}),
    ...(eventDate ? { eventDate } : {}),
  };
  return em.find(TicketType, where, { orderBy: { id: 'desc' }, limit: limit + 1 });
}

/** A ticket type and its stock, on a date of an event of the workspace that is not cancelled; priced in its currency. */
export async function createTicketType(
  em: EntityManager,
  workspaceId: string,
  input: NewTicketType,
): Promise<ITicketType> {
  const presaleStartsAt = dateOrNull(input.presaleStartsAt);
  const presaleEndsAt = dateOrNull(input.presaleEndsAt);
  assertPresaleWindow(presaleStartsAt, presaleEndsAt);
  return em.transactional(async (tx) => {
    // The event row is locked so a concurrent cancel or delete cannot slip between the check and the insert.
    const event = await tx.findOne(Event, { id: input.eventId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!event) throw invalidField('body.eventId', 'no event with this id in your workspace');
    if (event.status === 'CANCELLED') {
      throw new AppError('INVALID_STATE', `Event ${event.id} is cancelled; it cannot get new ticket types`, {
        details: { reason: 'event_cancelled' },
      });
    }
    const date = await tx.findOne(EventDate, { id: input.eventDateId, event: event.id });
    if (!date) throw invalidField('body.eventDateId', 'no date with this id in event eventId');
    const currency = (await tx.findOneOrFail(Workspace, { id: workspaceId })).currency;
    const type = tx.create(TicketType, {
      id: newId(),
      workspace: workspaceId,
      event: event.id,
      eventDate: date.id,
      name: input.name,
      description: input.description ?? null,
      price: input.price,
      currency,
      capacity: input.capacity,
      maxPerOrder: input.maxPerOrder,
      membersOnly: input.membersOnly,
      presaleStartsAt,
      presaleEndsAt,
      seatMapCategoryKey: input.seatMapCategoryKey ?? null,
      feeAbsorbedByOrganizer: input.feeAbsorbedByOrganizer,
      serviceFeeBps: input.serviceFeeBps ?? null,
      serviceFeeFixed: input.serviceFeeFixed ?? null,
      seatingSurcharge: input.seatingSurcharge,
      sortOrder: input.sortOrder,
      deletedAt: null,
    });
    await tx.flush();
    await createStock(tx, type.id, type.capacity);
    return type;
  });
}

/** Changes a ticket type; a new capacity adjusts the stock under lock (409 below what is sold or reserved). */
export async function updateTicketType(em: EntityManager, id: string, change: TicketTypeChange): Promise<ITicketType> {
  return em.transactional(async (tx) => {
    const type = await findTicketType(tx, id, { lock: true });
    const presaleStartsAt = patchedDate(change.presaleStartsAt, type.presaleStartsAt);
    const presaleEndsAt = patchedDate(change.presaleEndsAt, type.presaleEndsAt);
    assertPresaleWindow(presaleStartsAt, presaleEndsAt);
    if (change.capacity !== undefined && change.capacity !== type.capacity) {
      await adjustCapacity(tx, type.id, change.capacity - type.capacity);
      type.capacity = change.capacity;
    }
    type.presaleStartsAt = presaleStartsAt;
    type.presaleEndsAt = presaleEndsAt;
    if (change.name !== undefined) type.name = change.name;
    if (change.description !== undefined) type.description = change.description;
    if (change.price !== undefined) type.price = change.price;
    if (change.maxPerOrder !== undefined) type.maxPerOrder = change.maxPerOrder;
    if (change.membersOnly !== undefined) type.membersOnly = change.membersOnly;
    if (change.seatMapCategoryKey !== undefined) type.seatMapCategoryKey = change.seatMapCategoryKey;
    if (change.feeAbsorbedByOrganizer !== undefined) type.feeAbsorbedByOrganizer = change.feeAbsorbedByOrganizer;
    if (change.serviceFeeBps !== undefined) type.serviceFeeBps = change.serviceFeeBps;
    if (change.serviceFeeFixed !== undefined) type.serviceFeeFixed = change.serviceFeeFixed;
    if (change.seatingSurcharge !== undefined) type.seatingSurcharge = change.seatingSurcharge;
    if (change.sortOrder !== undefined) type.sortOrder = change.sortOrder;
    return type;
  });
}

export async function findTicketType(
  em: EntityManager,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ITicketType> {
  const type = isUuid(id)
    ? await em.findOne(TicketType, { id }, options.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {})
    : null;
  if (!type) throw notFound('Ticket type');
  return type;
}

/** Sales still holding units of the type, reserved (PENDING) or sold (CONFIRMED): what the inventory counts. */
async function liveSalesOfType(em: EntityManager, ticketTypeId: string): Promise<number> {
  const [row] = await em.execute<Array<{ sales: number }>>(
    `select count(distinct s.id)::int as sales
       from sale_stock_allocations a join sales s on s.id = a.sale_id
      where a.ticket_type_id = ? and s.status in (${LIVE_SALE_STATUSES.map(() => '?').join(', ')})`,
    [ticketTypeId, ...LIVE_SALE_STATUSES],
  );
  return row?.sales ?? 0;
}

/**
 * Soft-deletes a ticket type that no PENDING or CONFIRMED sale holds (409 INVALID_STATE otherwise, as DELETE /events
 * answers): deleting one with sold or reserved units would drop those units from the inventory while the money and
 * the tickets stay. The type's row and its stock shards are locked first, so a purchase taking units meanwhile is
 * either counted or waits; the stock left is then zeroed, so a purchase that read the type before the delete finds
 * nothing to take once it proceeds.
 */
export async function deleteTicketType(em: EntityManager, id: string): Promise<ITicketType> {
  return em.transactional(async (tx) => {
    const type = await findTicketType(tx, id, { lock: true });
    await tx.execute('select shard from ticket_stock where ticket_type_id = ? order by shard for update', [type.id]);
    const sales = await liveSalesOfType(tx, type.id);
    if (sales > 0) {
      throw new AppError(
        'INVALID_STATE',
        `Ticket type ${type.id} has ${sales} pending or confirmed sale(s) and cannot be deleted; lower its capacity ` +
          'to stop selling it, or cancel the event',
        { details: { reason: 'ticket_type_has_sales', sales } },
      );
    }
    type.deletedAt = new Date();
    await tx.execute('update ticket_stock set available = 0 where ticket_type_id = ?', [type.id]);
    return type;
  });
}
