/**
 * Venues of a workspace: the list's filters and order, creating and changing one, and soft-deleting one only while
 * no event uses it (an event's venue must stay readable). Routes keep the HTTP side.
 */
import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../../domain/errors.js';
import { isUuid, newId } from '../../entities/ids.js';
import { Event, Venue } from '../../entities/index.js';
import type { IVenue } from '../../entities/venue.js';
import { escapeLike, likeContains } from '../http/text.js';

export interface VenueFields {
  name: string;
  address: string | null;
  city: string | null;
  country: string;
  timezone: string;
  capacity: number | null;
}

/** A change leaves every field it does not name as it is; nullable fields accept null to clear them. */
export type VenueChange = { [K in keyof VenueFields]?: VenueFields[K] | undefined };

export async function findVenue(em: EntityManager, id: string): Promise<IVenue> {
  const venue = isUuid(id) ? await em.findOne(Venue, { id }) : null;
  if (!venue) throw notFound('Venue');
  return venue;
}

/** Newest first; `after` is the last id of the previous page; `q` is part of the name, `city` the whole city, any case. */
export async function listVenues(
  em: EntityManager,
  query: { after: string | undefined; limit: number; q?: string | undefined; city?: string | undefined },
): Promise<IVenue[]> {
  const where: FilterQuery<IVenue> = {
    ...(query.after ? { id: { $lt: query.after } } : {}),
    ...(query.q ? { name: { $ilike: likeContains(query.q) } } : {}),
    ...(query.city ? { city: { $ilike: escapeLike(query.city) } } : {}),
  };
  return em.find(Venue, where, { orderBy: { id: 'desc' }, limit: query.limit });
}

export async function createVenue(em: EntityManager, workspaceId: string, fields: VenueFields): Promise<IVenue> {
  const venue = em.create(Venue, { id: newId(), workspace: workspaceId, ...fields, deletedAt: null });
  await em.flush();
  return venue;
}

export async function updateVenue(em: EntityManager, id: string, change: VenueChange): Promise<IVenue> {
  const venue = await findVenue(em, id);
  if (change.name !== undefined) venue.name = change.name;
  if (change.address !== undefined) venue.address = change.address;
  if (change.city !== undefined) venue.city = change.city;
  if (change.country !== undefined) venue.country = change.country;
  if (change.timezone !== undefined) venue.timezone = change.timezone;
  if (change.capacity !== undefined) venue.capacity = change.capacity;
  await em.flush();
  return venue;
}

/** Soft-deletes a venue no event uses (409 CONFLICT naming how many do otherwise). */
export async function deleteVenue(em: EntityManager, id: string): Promise<IVenue> {
  const venue = await findVenue(em, id);
  const events = await em.count(Event, { venue: venue.id });
  if (events > 0) {
    throw new AppError(
      'CONFLICT',
      `This venue is used by ${events} event(s); move them to another venue (PATCH /events/{id} venueId) first`,
      { details: { reason: 'venue_in_use', events } },
    );
  }
  venue.deletedAt = new Date();
  await em.flush();
  return venue;
}
