import type { FastifyRequest } from 'fastify';
import { claimTurn, waitingRoomOf } from '../services/waiting-room.js';
import type { ApiServices } from '../services.js';
import { requireRedis } from './limits.js';

/**
 * Places an order of a date through its waiting room (api/services/waiting-room.ts). On a date without a room the
 * order goes on as always (`reserve(false)`: load shedding protects those). On a queued date the presented turn is
 * claimed first, so a turn is used once: two orders with one turn cannot both pass. Without an admitted turn the
 * order still goes to the checkout with `queueTurnAdmitted` false, which answers QUEUE_REQUIRED before any hold, as
 * before. A reservation that fails gives the turn back (within its window); one that succeeds marks it used and
 * counts its latency in the admission controller's health.
 *
 * Under overload, a request with a turn token was let in unshed (api/plugins/load-shedding.ts); it is refused here
 * with the same 503 unless its turn is admitted, before anything is held.
 */
export async function reserveWithTurn<T extends { saleId: string }>(
  request: FastifyRequest,
  services: ApiServices,
  order: {
    date: { id: string; virtualQueue: boolean };
    queueToken: string | null;
    /** The sale a keyed request makes (its retry may present the turn that sale already used); null otherwise. */
    saleId: string | null;
    units: number;
  },
  reserve: (queueTurnAdmitted: boolean) => Promise<T>,
): Promise<T> {
  const unadmitted = (): Promise<T> => {
    if (request.deferredShed) throw request.deferredShed();
    return reserve(false);
  };
  if (!order.date.virtualQueue) return unadmitted();
  const claim = await requireRedis('The waiting room', () =>
    claimTurn(waitingRoomOf(services), order.date.id, order.queueToken, order.saleId),
  );
  if (!claim.admitted) return unadmitted();
  const started = performance.now();
  let sale: T;
  try {
    sale = await reserve(true);
  } catch (error) {
    await claim.release().catch((failure) => request.log.warn({ err: failure }, 'waiting-room turn not given back'));
    throw error;
  }
  request.server.waitingRoomLatencies.record(performance.now() - started);
  // Should Redis miss this, the claim lapses at the end of its window and the slot frees itself.
  await claim.used(sale.saleId, order.units).catch((failure) => {
    request.log.warn({ err: failure }, 'waiting-room turn not marked used');
  });
  return sale;
}
