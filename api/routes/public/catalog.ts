import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound } from '../../../domain/errors.js';
import { SALES_MODES } from '../../../entities/event.js';
import { activeMembership } from '../../../entities/membership-queries.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { decodeCursor, encodeCursor, PageQuerySchema } from '../../http/pagination.js';
import { publicAccess } from '../../http/route-access.js';
import { isoOrNull } from '../../http/schemas.js';
import { presentedSessionToken, resolveBuyerSession } from '../../plugins/customer-auth.js';
import {
  type CatalogEntry,
  cheapestOpenPrice,
  isNumbered,
  listCatalogEvents,
  loadCatalog,
  memberQuoteOf,
  publishedEvent,
  quoteOf,
  salesStatus,
  sellableDates,
  stockOf,
} from '../../services/catalog.js';
import type { ApiServices } from '../../services.js';

/** Catalog pages may be cached briefly by browsers and CDNs; availability never (contract 4.18). */
const CATALOG_CACHE_CONTROL = 'public, max-age=30';
const AVAILABILITY_CACHE_CONTROL = 'no-store';

// ---------------------------------------------------------------------------------------------------------------
// Schemas (they generate the public OpenAPI document)

const PublicVenueSchema = z.object({ name: z.string(), city: z.string().nullable() }).meta({ id: 'PublicVenue' });

const PublicNextDateSchema = z
  .object({ id: z.string(), startsAt: z.string(), endsAt: z.string().nullable(), timezone: z.string() })
  .meta({ id: 'PublicNextDate' });

export const PublicEventSummarySchema = z
  .object({
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    imageUrl: z.string().nullable(),
    venue: PublicVenueSchema.nullable(),
    nextDate: PublicNextDateSchema.nullable().meta({
      description: 'Earliest upcoming date whose sales have not ended; null when none is left',
    }),
    priceFrom: minorUnits(
      'Lowest buyerTotal (price + buyer fee + IVA) among the ticket types of those dates open to every buyer ' +
        '(members-only types excluded); null when there is none',
      95115,
    ).nullable(),
    currency: z.string(),
    salesMode: z.enum(SALES_MODES).meta({ description: 'EXTERNAL events are listed here but sold elsewhere' }),
    externalSalesUrl: z.string().nullable().meta({ description: 'Where an EXTERNAL event is sold' }),
  })
  .meta({ id: 'PublicEventSummary' });

const PublicEventDateSchema = z
  .object({
    id: z.string(),
    label: z.string().nullable(),
    startsAt: z.string(),
    endsAt: z.string().nullable(),
    timezone: z.string(),
    venueName: z.string().nullable(),
    city: z.string().nullable(),
    salesStartAt: z.string().nullable(),
    salesEndAt: z.string().nullable(),
    salesStatus: z.enum(['OPEN', 'UPCOMING', 'ENDED']).meta({ description: 'Where now falls in the sales window' }),
  })
  .meta({ id: 'PublicEventDate' });

export const PublicEventSchema = PublicEventSummarySchema.extend({
  dates: z.array(PublicEventDateSchema).meta({ description: 'Upcoming dates, earliest first' }),
}).meta({ id: 'PublicEvent' });

const PublicSeatSchema = z
  .object({
    label: z.string().meta({ description: 'Exact seat label, to send in POST /orders items[].seats' }),
    categoryKey: z.string().nullable(),
    categoryLabel: z.string().nullable(),
    status: z.string(),
  })
  .meta({ id: 'PublicSeat' });

const PublicMemberQuoteSchema = z
  .object({
    discountPercent: z.number().meta({ description: "The member's plan discount for the current period, 0–100" }),
    discountPerTicket: minorUnits(
      'Taken off the list price of each ticket (rounded half up per ticket); never off fees or IVA',
      8500,
    ),
    buyerTotal: minorUnits(
      'Final price per unit for this member: price − discountPerTicket + buyerServiceFee + iva (0 when the ' +
        'discounted price is 0). Checkout charges quantity × this, unless a discount code takes more off the order ' +
        '(member and code discounts never stack; the larger one applies)',
      86615,
    ),
  })
  .meta({ id: 'PublicMemberQuote' });

export const PublicTicketTypeSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    price: minorUnits('Base (list) price', 85000),
    buyerServiceFee: minorUnits(
      'Fee paid by the buyer, seating surcharge included; 0 when the organizer absorbs the fee and the type is not numbered',
      8500,
    ),
    seatingSurcharge: minorUnits(
      'Flat per-seat surcharge of numbered types; already included in buyerServiceFee and buyerTotal',
      0,
    ),
    iva: minorUnits('VAT (19 %) on buyerServiceFee', 1615),
    buyerTotal: minorUnits(
      'Final price per unit = price + buyerServiceFee + iva; what checkout charges, so quote this',
      95115,
    ),
    seatsioCategoryKey: z.string().nullable().meta({ description: 'Non-null means the type is numbered' }),
    availableSeats: z
      .array(PublicSeatSchema)
      .optional()
      .meta({ description: 'Numbered types only: seats that can be ordered' }),
    currency: z.string(),
    maxPerOrder: z.number().int(),
    available: z.number().int().meta({ description: 'Capacity minus sold minus reserved; never negative' }),
    soldOut: z.boolean(),
    member: PublicMemberQuoteSchema.optional().meta({
      description:
        'Only when the request carries the buyer session (X-Customer-Session or the buyer-session cookie) of an ' +
        "active member of the event's organizer, and the member may buy this type: the member price. Addition to " +
        'the contract; absent for everyone else.',
    }),
  })
  .meta({
    id: 'PublicTicketType',
    description:
      'Members-only ticket types are listed so buyers see them, but POST /orders rejects them with MEMBERS_ONLY.',
  });

const PublicAvailabilityDateSchema = z
  .object({
    id: z.string(),
    label: z.string().nullable(),
    startsAt: z.string(),
    endsAt: z.string().nullable(),
    timezone: z.string(),
    venueName: z.string().nullable(),
    city: z.string().nullable(),
    ticketTypes: z.array(PublicTicketTypeSchema),
  })
  .meta({ id: 'PublicAvailabilityDate' });

export const PublicAvailabilitySchema = z
  .object({
    slug: z.string(),
    dates: z.array(PublicAvailabilityDateSchema).meta({ description: 'Only upcoming dates are listed' }),
  })
  .meta({ id: 'PublicAvailability' });

const SlugParamSchema = z.object({ slug: z.string().min(1).max(120) });

// ---------------------------------------------------------------------------------------------------------------
// Reading the catalog

/**
 * The membership of the buyer whose session the request carries, in the event's workspace. The availability is
 * anonymous: a missing, unknown or expired session only means no member prices, never an error.
 */
async function requestMembership(request: FastifyRequest, workspaceId: string, now: Date) {
  const token = presentedSessionToken(request);
  const buyer = token ? await resolveBuyerSession(request, token) : null;
  return buyer ? activeMembership(request.em, workspaceId, buyer.buyerId, now) : null;
}

function toSummary(entry: CatalogEntry, now: Date): z.infer<typeof PublicEventSummarySchema> {
  const { event, workspace, venue } = entry;
  const next = sellableDates(entry, now)[0];
  const cheapest = cheapestOpenPrice(entry, now);
  return {
    id: event.id,
    slug: event.slug,
    name: event.name,
    description: event.description ?? null,
    imageUrl: event.imageUrl ?? null,
    venue: venue ? { name: venue.name, city: venue.city ?? null } : null,
    nextDate: next
      ? { id: next.id, startsAt: next.startsAt.toISOString(), endsAt: isoOrNull(next.endsAt), timezone: next.timezone }
      : null,
    priceFrom: cheapest?.buyerTotal ?? null,
    currency: cheapest?.currency ?? workspace.currency,
    salesMode: event.salesMode,
    externalSalesUrl: event.externalSalesUrl ?? null,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Routes

export const publicCatalogRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.get(
    '/events',
    {
      config: publicAccess(),
      schema: {
        tags: ['catalog'],
        summary: 'Public catalog: published events with an upcoming date still on sale or about to go on sale',
        description:
          'Newest events first; the cursor is a keyset position, so paging is stable while events are added. ' +
          'Cacheable for 30 seconds.',
        querystring: PageQuerySchema,
        response: { 200: listOf(PublicEventSummarySchema) },
      },
    },
    async (request, reply) => {
      const now = new Date();
      const {
        events,
        hasMore,
        lastId: last,
      } = await listCatalogEvents(
        request.em,
        { after: decodeCursor(request.query.cursor), limit: request.query.limit },
        now,
      );
      const catalog = await loadCatalog(request.em, events, now);
      reply.header('Cache-Control', CATALOG_CACHE_CONTROL);
      return {
        data: events.flatMap((event) => {
          const entry = catalog.get(event.id);
          return entry ? [toSummary(entry, now)] : [];
        }),
        page: { nextCursor: hasMore && last ? encodeCursor(last) : null, hasMore },
      };
    },
  );

  app.get(
    '/events/:slug',
    {
      config: publicAccess(),
      schema: {
        tags: ['catalog'],
        summary: 'A published event with its upcoming dates',
        description: 'Draft, cancelled and deleted events are 404. Cacheable for 30 seconds.',
        params: SlugParamSchema,
        response: { 200: dataOf(PublicEventSchema) },
      },
    },
    async (request, reply) => {
      const now = new Date();
      const event = await publishedEvent(request.em, request.params.slug);
      const entry = (await loadCatalog(request.em, [event], now)).get(event.id);
      if (!entry) throw notFound('Event');
      reply.header('Cache-Control', CATALOG_CACHE_CONTROL);
      return {
        data: {
          ...toSummary(entry, now),
          dates: entry.dates.map((date) => ({
            id: date.id,
            label: date.label ?? null,
            startsAt: date.startsAt.toISOString(),
            endsAt: isoOrNull(date.endsAt),
            timezone: date.timezone,
            venueName: entry.venue?.name ?? null,
            city: entry.venue?.city ?? null,
            salesStartAt: isoOrNull(date.salesStartAt),
            salesEndAt: isoOrNull(date.salesEndAt),
            salesStatus: salesStatus(date, now),
          })),
        },
      };
    },
  );

  app.get(
    '/events/:slug/availability',
    {
      config: publicAccess(),
      schema: {
        tags: ['catalog'],
        summary: 'Prices and stock of every ticket type of the upcoming dates of a published event',
        description:
          'Stock and seats change: never cached (Cache-Control: no-store); read it right before creating an order. ' +
          'buyerTotal is what checkout charges per unit. Members-only ticket types are listed, but POST /orders ' +
          'rejects them (MEMBERS_ONLY). With the buyer session of an active member of the organizer, each type the ' +
          'member may buy also carries `member`, the member price POST /customer/orders charges.',
        params: SlugParamSchema,
        response: { 200: dataOf(PublicAvailabilitySchema) },
      },
    },
    async (request, reply) => {
      const now = new Date();
      const event = await publishedEvent(request.em, request.params.slug);
      const entry = (await loadCatalog(request.em, [event], now)).get(event.id);
      if (!entry) throw notFound('Event');
      const membership = await requestMembership(request, entry.workspace.id, now);
      const { stock, seatsByType } = await stockOf(services, request.em, entry);
      reply.header('Cache-Control', AVAILABILITY_CACHE_CONTROL);
      return {
        data: {
          slug: event.slug,
          dates: entry.dates.map((date) => ({
            id: date.id,
            label: date.label ?? null,
            startsAt: date.startsAt.toISOString(),
            endsAt: isoOrNull(date.endsAt),
            timezone: date.timezone,
            venueName: entry.venue?.name ?? null,
            city: entry.venue?.city ?? null,
            ticketTypes: (entry.types.get(date.id) ?? []).map((type) => {
              const quote = quoteOf(entry.workspace, type);
              const member = memberQuoteOf(entry.workspace, type, membership);
              const available = stock.get(type.id) ?? 0;
              return {
                id: type.id,
                name: type.name,
                description: type.description ?? null,
                price: quote.price,
                buyerServiceFee: quote.buyerServiceFee,
                seatingSurcharge: quote.seatingSurcharge,
                iva: quote.iva,
                buyerTotal: quote.buyerTotal,
                seatsioCategoryKey: type.seatMapCategoryKey ?? null,
                // Numbered types list the free seats of their category; empty while the date has no seat map.
                ...(isNumbered(type) ? { availableSeats: seatsByType.get(type.id) ?? [] } : {}),
                currency: type.currency,
                maxPerOrder: type.maxPerOrder,
                available,
                soldOut: available === 0,
                ...(member ? { member } : {}),
              };
            }),
          })),
        },
      };
    },
  );
};
