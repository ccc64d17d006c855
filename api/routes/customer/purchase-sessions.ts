import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { PurchaseSessionView } from '../../../workflows/definitions.js';
import { assertCustomerMayBuyIn } from '../../http/customer-scope.js';
import { dataOf } from '../../http/envelope.js';
import { enforceRateLimit } from '../../http/limits.js';
import { customerAccess } from '../../http/route-access.js';
import { currentCustomer } from '../../plugins/customer-auth.js';
import {
  findOwnedSession,
  openPurchaseSession,
  releasePurchaseSession,
  sessionDate,
} from '../../services/purchase-sessions.js';
import type { ApiServices } from '../../services.js';

const PurchaseSessionSchema = z
  .object({
    id: z.string(),
    state: z.enum(['ACTIVE', 'ORDERED', 'RELEASED', 'EXPIRED', 'SUPERSEDED']),
    eventDateId: z.string(),
    holdToken: z.string().meta({ description: 'Seat-map hold token: hold seats with it, then send it as holdToken' }),
    expiresAt: z.string().meta({ description: 'When the map clock runs out (the hold token expires)' }),
  })
  .meta({ id: 'PurchaseSession' });

const toSession = (view: PurchaseSessionView) => ({
  id: view.id,
  state: view.state,
  eventDateId: view.eventDateId,
  holdToken: view.holdToken,
  expiresAt: new Date(view.expiresAtMs).toISOString(),
});

/** The header `X-Purchase-Session`, if sent. */
export function presentedPurchaseSession(headers: Record<string, unknown>): string | null {
  const raw = headers['x-purchase-session'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

/**
 * Contract 3 / 5.7: one live purchase session per buyer (a buyer is one account across workspaces); the buyer's
 * execution owns the live session's hold token and timer.
 */
export const customerPurchaseSessionRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (
  app,
  { services },
) => {
  app.post(
    '/customer/purchase-sessions',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: "Open a purchase session (seat-map hold token); supersedes the buyer's previous session",
        body: z.object({ eventDateId: z.string().min(1).max(100) }),
        response: { 201: dataOf(PurchaseSessionSchema) },
      },
    },
    async (request, reply) => {
      const customer = currentCustomer(request);
      const date = await sessionDate(request.em, request.body.eventDateId);
      await assertCustomerMayBuyIn(request, customer, date.workspace, 'Event date');
      await enforceRateLimit(request, 'purchaseSessionOpen', customer.buyerId);
      const view = await openPurchaseSession(services, customer.buyerId, date);
      return reply.status(201).send({ data: toSession(view) });
    },
  );

  app.get(
    '/customer/purchase-sessions/:id',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'State, hold token and clock of a purchase session',
        params: z.object({ id: z.string().min(1).max(100) }),
        response: { 200: dataOf(PurchaseSessionSchema) },
      },
    },
    async (request) => {
      const { view } = await findOwnedSession(services, request.params.id, currentCustomer(request).buyerId);
      return { data: toSession(view) };
    },
  );

  app.post(
    '/customer/purchase-sessions/:id/release',
    {
      config: customerAccess(),
      schema: {
        tags: ['customer'],
        summary: 'Release a purchase session: its hold token expires and its seats are free again',
        params: z.object({ id: z.string().min(1).max(100) }),
        response: { 200: dataOf(PurchaseSessionSchema) },
      },
    },
    async (request) => {
      const session = await releasePurchaseSession(services, request.params.id, currentCustomer(request).buyerId);
      return { data: toSession(session) };
    },
  );
};
