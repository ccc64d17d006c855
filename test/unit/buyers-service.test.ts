/**
 * A buyer's profile change (api/services/buyers.ts), without the stack: a field left out keeps its value, a null
 * phone clears it.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { updateBuyerProfile } from '../../api/services/buyers.js';
import type { IBuyer } from '../../entities/buyer.js';

const emWith = (buyer: IBuyer) =>
  ({ findOneOrFail: async () => buyer, flush: async () => undefined }) as unknown as EntityManager;

const buyerOf = () => ({ id: 'buyer-1', email: 'ana@example.com', name: 'Ana', phone: '+57 300' }) as IBuyer;

describe("a buyer's profile change", () => {
  test('a field left out keeps its value; a null phone clears it', async () => {
    expect(await updateBuyerProfile(emWith(buyerOf()), 'buyer-1', { name: 'Ana María' })).toMatchObject({
      name: 'Ana María',
      phone: '+57 300',
    });
    expect(await updateBuyerProfile(emWith(buyerOf()), 'buyer-1', { phone: null })).toMatchObject({
      name: 'Ana',
      phone: null,
    });
  });
});
