import { z } from 'zod';

/** Path ids are UUIDs; anything else cannot name a row, so it is a 404 rather than a database error. */
export const IdParamSchema = z.object({ id: z.string().min(1).max(200) });

export const IsoDateTimeSchema = z.iso.datetime({ offset: true });

export const isoOrNull = (value: Date | null | undefined): string | null => (value ? value.toISOString() : null);
