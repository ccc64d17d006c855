import { p } from '@mikro-orm/core';

/** Columns every table shares: a time-ordered UUID (so keyset paging by id follows creation order) and timestamps in UTC. */
export const baseProperties = {
  id: p.string().columnType('uuid').primary(),
  createdAt: p
    .datetime()
    .columnType('timestamptz')
    .onCreate(() => new Date()),
  updatedAt: p
    .datetime()
    .columnType('timestamptz')
    .onCreate(() => new Date())
    .onUpdate(() => new Date()),
};

/** Soft delete is one mechanism: a default filter hides deleted rows; `filters: { notDeleted: false }` shows them. */
export const softDeleteFilter = {
  notDeleted: { name: 'notDeleted', cond: { deletedAt: null }, default: true },
};

/**
 * On by default and fail-closed: a query on a tenant-owned entity without the workspace parameter throws instead of
 * reading every tenant's rows. Organizer requests set the parameter from the authenticated workspace
 * (`em.setFilterParams('tenant', { workspaceId })`); code that crosses tenants on purpose (storefront, workers)
 * says so per query with `filters: { tenant: false }`.
 */
export const tenantFilter = {
  tenant: {
    name: 'tenant',
    cond: (args: Record<string, unknown>) => ({ workspace: args.workspaceId }),
    default: true,
  },
};

/** Query options of a read that crosses tenants on purpose (see tenantFilter); deleted rows stay hidden. */
export const ANY_TENANT = { filters: { tenant: false } } as const;
