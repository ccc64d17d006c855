import type { FastifyRequest } from 'fastify';
import { AppError } from '../../domain/errors.js';
import { type EnterpriseScope, loadEnterpriseScope } from '../../entities/enterprise.js';
import type { CustomerContext } from '../plugins/customer-auth.js';

/**
 * Where a buyer session may buy, in one place for every customer route that names a workspace's thing (an event
 * date, a membership plan): a session whose API key pins a workspace buys only there, and a session from an
 * enterprise SSO exchange only in the workspaces that enterprise serves. Anything else is answered as not found,
 * so a session learns nothing about other workspaces. Returns the enterprise scope (null for other sessions) for
 * the rules that depend on it (returnUrl).
 */
export async function assertCustomerMayBuyIn(
  request: FastifyRequest,
  customer: CustomerContext,
  workspaceId: string,
  what: string,
): Promise<EnterpriseScope | null> {
  if (customer.pinnedWorkspaceId && workspaceId !== customer.pinnedWorkspaceId) {
    throw new AppError('NOT_FOUND', `${what} not found`);
  }
  if (!customer.enterpriseId) return null;
  const enterprise = await loadEnterpriseScope(request.em, customer.enterpriseId);
  if (!enterprise.servedWorkspaceIds.includes(workspaceId)) {
    throw new AppError('NOT_FOUND', `${what} not found among what your enterprise sells`, {
      details: { reason: 'workspace_not_served' },
    });
  }
  return enterprise;
}
