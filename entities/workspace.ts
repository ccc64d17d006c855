import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties } from './common.js';

export const WORKSPACE_PLANS = ['STANDARD', 'LEGEND'] as const;

export const Workspace = defineEntity({
  name: 'Workspace',
  tableName: 'workspaces',
  properties: {
    ...baseProperties,
    name: p.string().length(120),
    /**
     * A label shown in GET /me, never an address (requests name workspaces by id), so it is not unique across the
     * service: a global uniqueness check would tell anyone which workspace names exist and let them squat others'.
     */
    slug: p.string().length(80).index(),
    currency: p.string().length(3).default('COP'),
    /** Default fee policy of the workspace (domain/pricing.ts); ticket types may override it. */
    serviceFeeBps: p.integer().default(1000),
    serviceFeeFixed: p.integer().default(0),
    /** Gateway B is offered only to LEGEND workspaces that operators allowlisted (contract 4.3). */
    plan: p.enum(WORKSPACE_PLANS).default('STANDARD'),
    gatewayBAllowlisted: p.boolean().default(false),
    /** Buyers must hold a single live purchase session to order (contract 4.2, X-Purchase-Session). */
    requiresPurchaseSession: p.boolean().default(false),
  },
});
export type IWorkspace = InferEntity<typeof Workspace>;
