/**
 * The organizer's sale list filters (api/services/sales.ts) as a query, without the stack: a buyer search matches
 * email only for roles that may see it (a VIEWER could otherwise probe the addresses its rows hide), and an event or
 * date that is not an id matches nothing instead of failing.
 */
import { saleFilter } from '../../api/services/sales.js';

const NO_ID = '00000000-0000-0000-0000-000000000000';

describe('sale list filters', () => {
  test('a buyer search matches name and email from STAFF up, the name only for a VIEWER', () => {
    expect(saleFilter({ buyer: 'ana' }, 'STAFF')).toEqual({
      $or: [{ buyerName: { $ilike: '%ana%' } }, { buyerEmail: { $ilike: '%ana%' } }],
    });
    expect(saleFilter({ buyer: 'ana' }, 'VIEWER')).toEqual({ $or: [{ buyerName: { $ilike: '%ana%' } }] });
  });

  test('an event or date that is not an id matches nothing; the window bounds createdAt inclusively', () => {
    expect(saleFilter({ event: 'rock-fest', eventDate: 'friday' }, 'ADMIN')).toEqual({
      event: NO_ID,
      eventDate: NO_ID,
    });
    expect(saleFilter({ from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z' }, 'ADMIN')).toEqual({
      createdAt: { $gte: new Date('2026-01-01T00:00:00Z'), $lte: new Date('2026-02-01T00:00:00Z') },
    });
    expect(saleFilter({}, 'ADMIN')).toEqual({});
  });
});
