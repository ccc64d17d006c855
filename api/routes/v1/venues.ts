import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { IVenue } from '../../../entities/venue.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import { createVenue, deleteVenue, findVenue, listVenues, updateVenue } from '../../services/venues.js';

/** True for a time zone of the IANA database (`America/Bogota`, `UTC`); offsets such as `+05:00` are not zones. */
export const isIanaTimeZone = (value: string): boolean => {
  if (!/^[A-Za-z]+(?:\/[A-Za-z0-9_+-]+)*$/.test(value)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
};

/** An IANA zone, stored in its canonical spelling (`america/bogota` → `America/Bogota`). */
export const TimeZoneSchema = z
  .string()
  .max(64)
  .refine(isIanaTimeZone, 'must be an IANA time zone such as America/Bogota')
  .transform((value) => new Intl.DateTimeFormat('en-US', { timeZone: value }).resolvedOptions().timeZone)
  .meta({ description: 'IANA time zone, e.g. America/Bogota', example: 'America/Bogota' });

export const VenueSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    address: z.string().nullable(),
    city: z.string().nullable(),
    country: z.string().meta({ description: 'ISO 3166-1 alpha-2 code' }),
    timezone: z.string(),
    capacity: z.number().int().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Venue' });

const VenueFields = z.object({
  name: z.string().trim().min(1).max(160),
  address: z.string().trim().max(300).nullable(),
  city: z.string().trim().max(120).nullable(),
  country: z
    .string()
    .regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 code such as CO')
    .transform((value) => value.toUpperCase()),
  timezone: TimeZoneSchema,
  capacity: z.number().int().min(1).max(10_000_000).nullable(),
});

const CreateVenueBody = VenueFields.extend({
  address: VenueFields.shape.address.optional(),
  city: VenueFields.shape.city.optional(),
  country: VenueFields.shape.country.default('CO'),
  timezone: TimeZoneSchema.default('America/Bogota'),
  capacity: VenueFields.shape.capacity.optional(),
});

/** PATCH is partial: only the fields sent change; nullable fields accept null to clear them. */
const UpdateVenueBody = VenueFields.partial();

const ListVenuesQuery = PageQuerySchema.extend({
  q: z.string().trim().min(1).max(100).optional().meta({ description: 'Part of the venue name' }),
  city: z.string().trim().min(1).max(120).optional(),
});

const toVenue = (venue: IVenue) => ({
  id: venue.id,
  name: venue.name,
  address: venue.address ?? null,
  city: venue.city ?? null,
  country: venue.country,
  timezone: venue.timezone,
  capacity: venue.capacity ?? null,
  createdAt: venue.createdAt.toISOString(),
  updatedAt: venue.updatedAt.toISOString(),
});

export const venueRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/venues',
    {
      config: organizer('VIEWER', 'venues'),
      schema: {
        tags: ['venues'],
        summary: 'List venues, newest first',
        querystring: ListVenuesQuery,
        response: { 200: listOf(VenueSchema) },
      },
    },
    async (request) => {
      const { limit, cursor, q, city } = request.query;
      const rows = await listVenues(request.em, { after: decodeCursor(cursor), limit: limit + 1, q, city });
      const { items, page } = toPage(rows, limit);
      return { data: items.map(toVenue), page, ...(request.warnings.length ? { warnings: request.warnings } : {}) };
    },
  );

  app.post(
    '/venues',
    {
      config: organizer('ADMIN', 'venues'),
      schema: {
        tags: ['venues'],
        summary: 'Create a venue',
        body: CreateVenueBody,
        response: { 201: dataOf(VenueSchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const body = request.body;
      const venue = await createVenue(request.em, workspace.workspaceId, {
        name: body.name,
        address: body.address ?? null,
        city: body.city ?? null,
        country: body.country,
        timezone: body.timezone,
        capacity: body.capacity ?? null,
      });
      return reply.status(201).send({ data: toVenue(venue) });
    },
  );

  app.get(
    '/venues/:id',
    {
      config: organizer('VIEWER', 'venues'),
      schema: {
        tags: ['venues'],
        summary: 'Get a venue',
        params: IdParamSchema,
        response: { 200: dataOf(VenueSchema) },
      },
    },
    async (request) => ({ data: toVenue(await findVenue(request.em, request.params.id)) }),
  );

  app.patch(
    '/venues/:id',
    {
      config: organizer('ADMIN', 'venues'),
      schema: {
        tags: ['venues'],
        summary: 'Update a venue (partial)',
        params: IdParamSchema,
        body: UpdateVenueBody,
        response: { 200: dataOf(VenueSchema) },
      },
    },
    async (request) => ({ data: toVenue(await updateVenue(request.em, request.params.id, request.body)) }),
  );

  app.delete(
    '/venues/:id',
    {
      config: organizer('ADMIN', 'venues'),
      schema: {
        tags: ['venues'],
        summary: 'Soft-delete a venue that no event uses',
        params: IdParamSchema,
        response: { 200: dataOf(VenueSchema) },
      },
    },
    async (request) => ({ data: toVenue(await deleteVenue(request.em, request.params.id)) }),
  );
};
