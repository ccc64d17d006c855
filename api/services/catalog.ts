/**
 * The storefront's catalog (contract 4.18): which published events and upcoming dates it lists, the prices it quotes
 * (by the engine checkout charges with, member prices included) and the seats a buyer can order now. It reads every
 * organizer's catalog, so each query turns the tenant filter off explicitly; the notDeleted filter stays on, so
 * soft-deleted events, dates and ticket types never show. Routes keep the HTTP side (schemas, caching, the session).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../../domain/errors.js';
import {
  type FeePolicy,
  type MemberUnitQuote,
  quoteMemberUnit,
  quoteUnit,
  ticketTypeFeePolicy,
  type UnitQuote,
} from '../../domain/pricing.js';
import { ANY_TENANT } from '../../entities/common.js';
import type { EVENT_STATUSES, IEvent } from '../../entities/event.js';
import type { IEventDate } from '../../entities/event-date.js';
import { Event, EventDate, TicketType, Venue, Workspace } from '../../entities/index.js';
import type { ActiveMembership } from '../../entities/membership-queries.js';
import { availableUnits } from '../../entities/stock.js';
import type { ITicketType } from '../../entities/ticket-type.js';
import type { IVenue } from '../../entities/venue.js';
import type { IWorkspace } from '../../entities/workspace.js';
import type { SeatMapObjectInfo } from '../../integrations/seatmap/client.js';
import { seatMapClient } from '../http/seatmap.js';
import type { ApiServices } from '../services.js';

const PUBLISHED: (typeof EVENT_STATUSES)[number] = 'PUBLISHED';

/**
 * One page of the catalog, newest events first: published events with an upcoming date still on sale or about to go
 * on sale. `after` is the last id of the previous page; `lastId` is this page's, whether or not that event still
 * loads.
 */
export async function listCatalogEvents(
  em: EntityManager,
  page: { after: string | null | undefined; limit: number },
  now: Date,
): Promise<{ events: IEvent[]; hasMore: boolean; lastId: string | undefined }> {
  const { after, limit } = page;
  // Which events to list is decided in SQL (dates filtered there, not in memory), then one page of events is
  // loaded. Raw SQL bypasses the ORM filters, so soft-deleted rows are excluded explicitly here.
  const rows = await em.execute<{ id: string }[]>(
    `select e.id from events e
      where e.status = ? and e.deleted_at is null ${after ? 'and e.id < ?' : ''}
        and exists (
          select 1 from event_dates d
           where d.event_id = e.id and d.deleted_at is null and d.cancelled_at is null
             and d.starts_at > ?::timestamptz and (d.sales_end_at is null or d.sales_end_at > ?::timestamptz))
      order by e.id desc
      limit ?`,
    [PUBLISHED, ...(after ? [after] : []), now.toISOString(), now.toISOString(), limit + 1],
  );
  const ids = rows.slice(0, limit).map((row) => row.id);
  const events = ids.length
    ? await em.find(Event, { id: { $in: ids } }, { ...ANY_TENANT, orderBy: { id: 'desc' } })
    : [];
  return { events, hasMore: rows.length > limit, lastId: ids[ids.length - 1] };
}

/** The workspace's fee policy with the ticket type's overrides: the policy checkout charges with. */
export const feePolicyFor = (workspace: IWorkspace, type: ITicketType): FeePolicy =>
  ticketTypeFeePolicy(workspace, type);

export const isNumbered = (type: ITicketType): boolean => type.seatMapCategoryKey !== null;

export const quoteOf = (workspace: IWorkspace, type: ITicketType): UnitQuote =>
  quoteUnit({ price: type.price, feePolicy: feePolicyFor(workspace, type), numbered: isNumbered(type) });

/** The member price of a type the member may buy, by the same engine checkout charges with; undefined otherwise. */
export const memberQuoteOf = (
  workspace: IWorkspace,
  type: ITicketType,
  membership: ActiveMembership | null,
): MemberUnitQuote | undefined => {
  if (!membership || (type.membersOnly && !membership.benefits.membersOnlyAccess)) return undefined;
  return quoteMemberUnit({
    price: type.price,
    feePolicy: feePolicyFor(workspace, type),
    numbered: isNumbered(type),
    discountPercent: membership.benefits.discountPercent,
  });
};

export const salesStatus = (date: IEventDate, now: Date): 'OPEN' | 'UPCOMING' | 'ENDED' => {
  if (date.salesEndAt && date.salesEndAt <= now) return 'ENDED';
  if (date.salesStartAt && date.salesStartAt > now) return 'UPCOMING';
  return 'OPEN';
};

export interface CatalogEntry {
  event: IEvent;
  workspace: IWorkspace;
  venue: IVenue | null;
  /** Upcoming dates (startsAt > now, not cancelled or deleted), earliest first. */
  dates: IEventDate[];
  /** Live ticket types per date id, in display order. */
  types: Map<string, ITicketType[]>;
}

/** Loads, for published events, everything the storefront shows about them, in a fixed number of queries. */
export async function loadCatalog(em: EntityManager, events: IEvent[], now: Date): Promise<Map<string, CatalogEntry>> {
  const entries = new Map<string, CatalogEntry>();
  if (events.length === 0) return entries;
  const eventIds = events.map((event) => event.id);
  const venueIds = events.flatMap((event) => (event.venue ? [event.venue] : []));
  const [workspaces, venues, dates] = await Promise.all([
    em.find(Workspace, { id: { $in: [...new Set(events.map((event) => event.workspace))] } }),
    venueIds.length ? em.find(Venue, { id: { $in: venueIds } }, ANY_TENANT) : Promise.resolve([]),
    em.find(
      EventDate,
      { event: { $in: eventIds }, startsAt: { $gt: now }, cancelledAt: null },
      { ...ANY_TENANT, orderBy: { startsAt: 'asc', id: 'asc' } },
    ),
  ]);
  const types = dates.length
    ? await em.find(
        TicketType,
        { eventDate: { $in: dates.map((date) => date.id) } },
        { ...ANY_TENANT, orderBy: { sortOrder: 'asc', id: 'asc' } },
      )
    : [];
  const workspaceById = new Map(workspaces.map((workspace) => [workspace.id, workspace]));
  const venueById = new Map(venues.map((venue) => [venue.id, venue]));
  for (const event of events) {
    const workspace = workspaceById.get(event.workspace);
    if (!workspace) continue;
    entries.set(event.id, {
      event,
      workspace,
      venue: event.venue ? (venueById.get(event.venue) ?? null) : null,
      dates: dates.filter((date) => date.event === event.id),
      types: new Map(),
    });
  }
  for (const date of dates) entries.get(date.event)?.types.set(date.id, []);
  for (const type of types) entries.get(type.event)?.types.get(type.eventDate)?.push(type);
  return entries;
}

/** A published, live event by its public slug, or 404 (drafts, cancelled and deleted events do not exist here). */
export async function publishedEvent(em: EntityManager, slug: string): Promise<IEvent> {
  const event = await em.findOne(Event, { slug, status: PUBLISHED }, ANY_TENANT);
  if (!event) throw notFound('Event');
  return event;
}

/** Seats of a numbered type straight from the provider: the date's seat-map event filtered by the type's category. */
async function providerSeats(
  services: ApiServices,
  eventKey: string,
  cache: Map<string, Promise<SeatMapObjectInfo[]>>,
  categoryKey: string,
) {
  let all = cache.get(eventKey);
  if (!all) {
    all = seatMapClient(services.env).objectStatuses(eventKey);
    cache.set(eventKey, all);
  }
  try {
    // Only seats a buyer can order now: held (reservedByToken) and booked seats would fail at checkout.
    return (await all)
      .filter((seat) => seat.categoryKey === categoryKey && seat.status === 'free')
      .map((seat) => ({
        label: seat.label,
        categoryKey: seat.categoryKey,
        categoryLabel: seat.categoryLabel,
        status: seat.status,
      }));
  } catch (error) {
    throw new AppError('PROVIDER_UNAVAILABLE', 'The seat-map provider did not answer; retry', {
      details: { cause: (error as Error).message },
    });
  }
}

/** The dates of an entry whose sales have not ended, earliest first: the first is the event's next date. */
export const sellableDates = (entry: CatalogEntry, now: Date): IEventDate[] =>
  entry.dates.filter((date) => salesStatus(date, now) !== 'ENDED');

/** The lowest buyer total among the types of the sellable dates open to every buyer (members-only types excluded). */
export function cheapestOpenPrice(entry: CatalogEntry, now: Date): { buyerTotal: number; currency: string } | null {
  let cheapest: { buyerTotal: number; currency: string } | null = null;
  for (const date of sellableDates(entry, now)) {
    for (const type of entry.types.get(date.id) ?? []) {
      if (type.membersOnly) continue;
      const { buyerTotal } = quoteOf(entry.workspace, type);
      if (!cheapest || buyerTotal < cheapest.buyerTotal) cheapest = { buyerTotal, currency: type.currency };
    }
  }
  return cheapest;
}

/**
 * What can be ordered now of every type of a catalog entry: units per type, and for numbered types the free seats of
 * their category (empty while the date has no seat map).
 */
export async function stockOf(
  services: ApiServices,
  em: EntityManager,
  entry: CatalogEntry,
): Promise<{ stock: Map<string, number>; seatsByType: Map<string, Awaited<ReturnType<typeof providerSeats>>> }> {
  const allTypes = [...entry.types.values()].flat();
  const stock = await availableUnits(
    em,
    allTypes.map((type) => type.id),
  );
  const seatCache = new Map<string, Promise<SeatMapObjectInfo[]>>();
  const seatsByType = new Map<string, Awaited<ReturnType<typeof providerSeats>>>();
  for (const date of entry.dates) {
    for (const type of entry.types.get(date.id) ?? []) {
      if (!isNumbered(type)) continue;
      seatsByType.set(
        type.id,
        date.seatMapEventKey
          ? await providerSeats(services, date.seatMapEventKey, seatCache, type.seatMapCategoryKey!)
          : [],
      );
    }
  }
  return { stock, seatsByType };
}
