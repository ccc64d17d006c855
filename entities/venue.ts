import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties, softDeleteFilter, tenantFilter } from './common.js';
import { Workspace } from './workspace.js';

export const Venue = defineEntity({
  name: 'Venue',
  tableName: 'venues',
  filters: { ...softDeleteFilter, ...tenantFilter },
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade').index(),
    name: p.string().length(160),
    address: p.string().length(300).nullable(),
    city: p.string().length(120).nullable(),
    country: p.string().length(2).default('CO'),
    timezone: p.string().length(64).default('America/Bogota'),
    capacity: p.integer().nullable(),
    deletedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IVenue = InferEntity<typeof Venue>;
