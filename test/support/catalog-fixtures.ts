/**
 * Catalog and inventory rows written directly (entities + the stock functions checkout uses), for tests of the
 * storefront that must not depend on the organizer catalog routes. Stock goes through `createStock`/`takeStock`,
 * so the inventory invariants are exactly the ones checkout relies on.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { saleReferenceFromBytes } from '../../domain/codes.js';
import type { SaleStatus } from '../../domain/sale-state.js';
import type { EVENT_STATUSES, SALES_MODES } from '../../entities/event.js';
import { newId } from '../../entities/ids.js';
import { Event, EventDate, Sale, TicketType, Venue, Workspace } from '../../entities/index.js';
import { createStock, takeStock } from '../../entities/stock.js';

const DAY = 24 * 60 * 60 * 1000;
/** An instant `days` days from now (negative: in the past). */
export const daysFromNow = (days: number): Date => new Date(Date.now() + days * DAY);

export interface TicketTypeFixture {
  name?: string;
  description?: string | null;
  price: number;
  capacity: number;
  currency?: string;
  maxPerOrder?: number;
  membersOnly?: boolean;
  seatMapCategoryKey?: string | null;
  feeAbsorbedByOrganizer?: boolean;
  serviceFeeBps?: number | null;
  serviceFeeFixed?: number | null;
  seatingSurcharge?: number;
  sortOrder?: number;
  deleted?: boolean;
}

export interface EventDateFixture {
  label?: string | null;
  startsAt: Date;
  endsAt?: Date | null;
  timezone?: string;
  salesStartAt?: Date | null;
  salesEndAt?: Date | null;
  cancelled?: boolean;
  deleted?: boolean;
  types?: TicketTypeFixture[];
}

export interface EventFixture {
  /** An existing workspace; otherwise a new one with the given fee policy. */
  workspaceId?: string;
  workspace?: { serviceFeeBps?: number; serviceFeeFixed?: number; currency?: string };
  name?: string;
  slug?: string;
  description?: string | null;
  imageUrl?: string | null;
  status?: (typeof EVENT_STATUSES)[number];
  salesMode?: (typeof SALES_MODES)[number];
  externalSalesUrl?: string | null;
  deleted?: boolean;
  venue?: { name: string; city: string | null } | null;
  dates: EventDateFixture[];
}

export interface CreatedEvent {
  workspaceId: string;
  eventId: string;
  slug: string;
  venueId: string | null;
  /** In the order given, each with its ticket type ids in the order given. */
  dates: Array<{ id: string; typeIds: string[] }>;
}

/** One event with its dates, ticket types and stock rows, in one transaction. */
export async function createEventFixture(em: EntityManager, fixture: EventFixture): Promise<CreatedEvent> {
  const suffix = randomUUID().slice(0, 8);
  return em.fork().transactional(async (tx) => {
    const workspaceId =
      fixture.workspaceId ??
      tx.create(Workspace, {
        id: newId(),
        name: `Organizer ${suffix}`,
        slug: `org-${suffix}`,
        currency: fixture.workspace?.currency ?? 'COP',
        serviceFeeBps: fixture.workspace?.serviceFeeBps ?? 1000,
        serviceFeeFixed: fixture.workspace?.serviceFeeFixed ?? 0,
      }).id;
    const venue =
      fixture.venue === null
        ? null
        : tx.create(Venue, {
            id: newId(),
            workspace: workspaceId,
            name: fixture.venue?.name ?? `Teatro ${suffix}`,
            city: fixture.venue ? fixture.venue.city : 'Bogotá',
          });
    const now = new Date();
    const status = fixture.status ?? 'PUBLISHED';
    const event = tx.create(Event, {
      id: newId(),
      workspace: workspaceId,
      venue: venue?.id ?? null,
      name: fixture.name ?? `Concierto ${suffix}`,
      slug: fixture.slug ?? `concierto-${suffix}`,
      description: fixture.description ?? null,
      imageUrl: fixture.imageUrl ?? null,
      status,
      salesMode: fixture.salesMode ?? 'INTERNAL',
      externalSalesUrl: fixture.externalSalesUrl ?? null,
      publishedAt: status === 'DRAFT' ? null : now,
      cancelledAt: status === 'CANCELLED' ? now : null,
      deletedAt: fixture.deleted ? now : null,
    });
    const stock: Array<{ typeId: string; capacity: number }> = [];
    const dates = fixture.dates.map((date) => {
      const row = tx.create(EventDate, {
        id: newId(),
        workspace: workspaceId,
        event: event.id,
        label: date.label ?? null,
        startsAt: date.startsAt,
        endsAt: date.endsAt ?? null,
        timezone: date.timezone ?? 'America/Bogota',
        salesStartAt: date.salesStartAt ?? null,
        salesEndAt: date.salesEndAt ?? null,
        cancelledAt: date.cancelled ? now : null,
        deletedAt: date.deleted ? now : null,
      });
      const typeIds = (date.types ?? []).map((type, index) => {
        const created = tx.create(TicketType, {
          id: newId(),
          workspace: workspaceId,
          event: event.id,
          eventDate: row.id,
          name: type.name ?? `Tipo ${index + 1}`,
          description: type.description ?? null,
          price: type.price,
          currency: type.currency ?? fixture.workspace?.currency ?? 'COP',
          capacity: type.capacity,
          maxPerOrder: type.maxPerOrder ?? 10,
          membersOnly: type.membersOnly ?? false,
          seatMapCategoryKey: type.seatMapCategoryKey ?? null,
          feeAbsorbedByOrganizer: type.feeAbsorbedByOrganizer ?? false,
          serviceFeeBps: type.serviceFeeBps ?? null,
          serviceFeeFixed: type.serviceFeeFixed ?? null,
          seatingSurcharge: type.seatingSurcharge ?? 0,
          sortOrder: type.sortOrder ?? index,
          deletedAt: type.deleted ? now : null,
        });
        stock.push({ typeId: created.id, capacity: type.capacity });
        return created.id;
      });
      return { id: row.id, typeIds };
    });
    await tx.flush();
    for (const { typeId, capacity } of stock) await createStock(tx, typeId, capacity);
    return { workspaceId, eventId: event.id, slug: event.slug, venueId: venue?.id ?? null, dates };
  });
}

/**
 * A sale of `status` holding `quantity` units of a ticket type, taken from stock with `takeStock` as checkout does:
 * PENDING counts as reserved, CONFIRMED as sold. Returns the sale id; throws (and writes nothing) when too few
 * units are left.
 */
export async function holdStock(
  em: EntityManager,
  input: {
    workspaceId: string;
    eventId: string;
    eventDateId: string;
    ticketTypeId: string;
    quantity: number;
    status: Extract<SaleStatus, 'PENDING' | 'CONFIRMED'>;
  },
  /** Wraps the transaction the stock step runs in (a test observing its statements). */
  stockStepEm: (tx: EntityManager) => EntityManager = (tx) => tx,
): Promise<string> {
  return em.fork().transactional(async (tx) => {
    const sale = tx.create(Sale, {
      id: newId(),
      workspace: input.workspaceId,
      reference: saleReferenceFromBytes(randomBytes(5)),
      status: input.status,
      origin: 'PUBLIC',
      event: input.eventId,
      eventDate: input.eventDateId,
      buyerName: 'Ana Compradora',
      buyerEmail: `buyer-${randomUUID().slice(0, 8)}@example.test`,
      subtotal: 0,
      discountAmount: 0,
      serviceFee: 0,
      iva: 0,
      total: 0,
      currency: 'COP',
      expiresAt: input.status === 'PENDING' ? new Date(Date.now() + 30 * 60_000) : null,
      confirmedAt: input.status === 'CONFIRMED' ? new Date() : null,
    });
    await tx.flush();
    const taken = await takeStock(stockStepEm(tx), {
      saleId: sale.id,
      ticketTypeId: input.ticketTypeId,
      quantity: input.quantity,
    });
    if (!taken) throw new Error(`only fewer than ${input.quantity} units of ${input.ticketTypeId} are left`);
    return sale.id;
  });
}

/** Units of a ticket type held by CONFIRMED (sold) and PENDING (reserved) sales, and left in its stock rows. */
export async function inventoryOf(
  em: EntityManager,
  ticketTypeId: string,
): Promise<{ available: number; sold: number; reserved: number }> {
  const [row] = await em.execute<{ available: string | null; sold: string | null; reserved: string | null }[]>(
    `select (select sum(available) from ticket_stock where ticket_type_id = ?) as available,
            (select sum(a.quantity) from sale_stock_allocations a join sales s on s.id = a.sale_id
              where a.ticket_type_id = ? and s.status = 'CONFIRMED') as sold,
            (select sum(a.quantity) from sale_stock_allocations a join sales s on s.id = a.sale_id
              where a.ticket_type_id = ? and s.status = 'PENDING') as reserved`,
    [ticketTypeId, ticketTypeId, ticketTypeId],
  );
  return { available: Number(row?.available ?? 0), sold: Number(row?.sold ?? 0), reserved: Number(row?.reserved ?? 0) };
}
