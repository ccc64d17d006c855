/**
 * Model-based property test of the sale state machine (domain/sale-state.ts) driving a simple inventory: random
 * interleavings of reservations, payment notifications (approved, rejected, duplicated), organizer cancels, buyer
 * releases, expiries, refunds and late payments never oversell, never leave a sale both refunded and confirmed,
 * issue tickets only for CONFIRMED sales, conserve stock and settle every approved payment as the payment of a
 * CONFIRMED sale or a refund.
 *
 * `Shop` is the system under test: every status change goes through `transition()`, and the inventory, ticket and
 * payment effects hang off the transition the state machine accepted, as the checkout workflow's activities do
 * (reserve takes stock; expiry, release and cancel give it back; a late payment re-takes it or is refunded). The
 * `Ledger` is an independent model that only counts units by whether a sale holds stock; both must agree after
 * every step, and the invariants are checked on the shop after every step.
 */
import fc from 'fast-check';
import { type SaleEvent, type SaleStatus, transition } from '../../domain/sale-state.js';

interface Payment {
  id: number;
  saleId: number;
  approved: boolean;
  refunded: boolean;
}

interface SaleRecord {
  id: number;
  quantity: number;
  status: SaleStatus;
  held: number;
  validTickets: number;
  /** The payment that confirmed the sale (while CONFIRMED). */
  paidBy: number | null;
  /** Every status the sale went through, in order. */
  history: SaleStatus[];
}

const HOLDS = (status: SaleStatus) => status === 'PENDING' || status === 'CONFIRMED';

/** The system under test: state machine + inventory + tickets + payments. */
class Shop {
  available: number;
  readonly sales: SaleRecord[] = [];
  readonly payments: Payment[] = [];
  constructor(readonly capacity: number) {
    this.available = capacity;
  }

  /** Applies a status event through the state machine; returns whether it was accepted and changed the status. */
  private move(sale: SaleRecord, event: SaleEvent): boolean {
    const result = transition(sale.status, event);
    if (!result.ok) return false;
    if (result.changed) {
      sale.status = result.to;
      sale.history.push(result.to);
    }
    return result.changed;
  }

  private giveBack(sale: SaleRecord): void {
    this.available += sale.held;
    sale.held = 0;
    sale.validTickets = 0;
  }

  private take(sale: SaleRecord): boolean {
    if (this.available < sale.quantity) return false;
    this.available -= sale.quantity;
    sale.held = sale.quantity;
    return true;
  }

  private refund(payment: Payment): void {
    payment.refunded = true;
  }

  reserve(quantity: number): SaleRecord | null {
    const check = transition(null, { type: 'reserve' });
    if (!check.ok || this.available < quantity) return null;
    const sale: SaleRecord = {
      id: this.sales.length,
      quantity,
      status: check.to,
      held: 0,
      validTickets: 0,
      paidBy: null,
      history: [check.to],
    };
    this.take(sale);
    this.sales.push(sale);
    return sale;
  }

  /** A gateway notification. `replayOf` re-delivers an earlier payment's notification (duplicate webhook). */
  notify(sale: SaleRecord, outcome: 'approved' | 'rejected', replayOf: Payment | null): void {
    const payment: Payment = replayOf ?? {
      id: this.payments.length,
      saleId: sale.id,
      approved: outcome === 'approved',
      refunded: false,
    };
    if (!replayOf) this.payments.push(payment);
    if (!payment.approved) {
      if (sale.status === 'PENDING') this.move(sale, { type: 'payment_rejected' });
      return;
    }
    if (payment.refunded) return;
    switch (sale.status) {
      case 'PENDING':
        this.move(sale, { type: 'payment_approved' });
        sale.paidBy = payment.id;
        sale.validTickets = sale.quantity;
        return;
      case 'CONFIRMED':
        // The same payment again changes nothing; a second, different payment for a paid sale is money we must
        // give back (two tabs, or a card charge racing a PSE transfer).
        this.move(sale, { type: 'payment_approved' });
        if (sale.paidBy !== payment.id) this.refund(payment);
        return;
      case 'ABANDONED':
        // Late payment: confirm when the stock can be taken again, otherwise refund.
        if (this.take(sale)) {
          this.move(sale, { type: 'late_payment_confirmed' });
          sale.paidBy = payment.id;
          sale.validTickets = sale.quantity;
        } else {
          this.move(sale, { type: 'late_payment_refunded' });
          this.refund(payment);
        }
        return;
      case 'CANCELLED':
      case 'REFUNDED':
        this.move(sale, { type: 'late_payment_refunded' });
        this.refund(payment);
        return;
    }
  }

  expire(sale: SaleRecord): void {
    if (this.move(sale, { type: 'expire' })) this.giveBack(sale);
  }

  release(sale: SaleRecord): void {
    if (this.move(sale, { type: 'release' })) this.giveBack(sale);
  }

  cancel(sale: SaleRecord, ticketsCheckedIn: boolean): void {
    const wasConfirmed = sale.status === 'CONFIRMED';
    const cancel = { type: 'cancel', ticketsCheckedIn, livePayment: 'not_applicable', acknowledgeOpenPayment: false };
    if (this.move(sale, cancel as SaleEvent)) {
      this.giveBack(sale);
      if (wasConfirmed) this.refundPaymentOf(sale);
    }
  }

  refundSale(sale: SaleRecord): void {
    if (this.move(sale, { type: 'refund' })) {
      this.giveBack(sale);
      this.refundPaymentOf(sale);
    }
  }

  private refundPaymentOf(sale: SaleRecord): void {
    const payment = this.payments.find((p) => p.id === sale.paidBy);
    if (payment) this.refund(payment);
    sale.paidBy = null;
  }
}

/** Independent model: units are either available or held by a sale that is PENDING or CONFIRMED. */
class Ledger {
  readonly holding = new Map<number, number>();
  constructor(readonly capacity: number) {}
  get available(): number {
    return this.capacity - [...this.holding.values()].reduce((sum, n) => sum + n, 0);
  }
  sync(sale: SaleRecord): void {
    if (HOLDS(sale.status)) this.holding.set(sale.id, sale.quantity);
    else this.holding.delete(sale.id);
  }
}

function assertInvariants(shop: Shop, ledger: Ledger): void {
  // No oversell, and stock is conserved: available + held by live sales = capacity.
  expect(shop.available).toBeGreaterThanOrEqual(0);
  const held = shop.sales.reduce((sum, sale) => sum + sale.held, 0);
  expect(shop.available + held).toBe(shop.capacity);
  const sold = shop.sales.filter((s) => s.status === 'CONFIRMED').reduce((sum, s) => sum + s.quantity, 0);
  expect(sold).toBeLessThanOrEqual(shop.capacity);
  // The independent ledger agrees.
  expect(shop.available).toBe(ledger.available);
  for (const sale of shop.sales) {
    // Allocations follow status; tickets only for CONFIRMED, one per unit.
    expect(sale.held).toBe(HOLDS(sale.status) ? sale.quantity : 0);
    expect(sale.validTickets).toBe(sale.status === 'CONFIRMED' ? sale.quantity : 0);
    // Never both refunded and confirmed: a CONFIRMED sale is paid by an approved payment that was not refunded.
    if (sale.status === 'CONFIRMED') {
      const paidBy = shop.payments.find((p) => p.id === sale.paidBy);
      expect(paidBy?.approved).toBe(true);
      expect(paidBy?.refunded).toBe(false);
    }
    // REFUNDED is final; nothing ever returns to PENDING.
    const refundedAt = sale.history.indexOf('REFUNDED');
    if (refundedAt >= 0) expect(sale.history.slice(refundedAt).every((s) => s === 'REFUNDED')).toBe(true);
    expect(sale.history.lastIndexOf('PENDING')).toBeLessThanOrEqual(0);
  }
  // Every approved payment is the payment of a CONFIRMED sale or refunded — never both, never neither.
  for (const payment of shop.payments.filter((p) => p.approved)) {
    const sale = shop.sales[payment.saleId]!;
    const confirms = sale.status === 'CONFIRMED' && sale.paidBy === payment.id;
    expect(confirms !== payment.refunded).toBe(true);
  }
}

interface World {
  shop: Shop;
  ledger: Ledger;
}

type Pick = number;
const pickSale = (world: World, pick: Pick): SaleRecord | undefined =>
  world.shop.sales.length === 0 ? undefined : world.shop.sales[pick % world.shop.sales.length];

/** Each command acts on the world, then the invariants must hold. */
const command = (name: string, act: (world: World) => void): fc.Command<Ledger, Shop> => ({
  check: () => true,
  run(ledger, shop) {
    act({ shop, ledger });
    for (const sale of shop.sales) ledger.sync(sale);
    assertInvariants(shop, ledger);
  },
  toString: () => name,
});

const commands = [
  fc
    .integer({ min: 1, max: 3 })
    .map((quantity) => command(`reserve(${quantity})`, ({ shop }) => void shop.reserve(quantity))),
  fc.tuple(fc.nat(), fc.constantFrom('approved' as const, 'rejected' as const)).map(([pick, outcome]) =>
    command(`notify(${pick}, ${outcome})`, (world) => {
      const sale = pickSale(world, pick);
      if (sale) world.shop.notify(sale, outcome, null);
    }),
  ),
  fc.nat().map((pick) =>
    command(`duplicate(${pick})`, (world) => {
      const payments = world.shop.payments;
      const payment = payments.length === 0 ? undefined : payments[pick % payments.length];
      if (payment)
        world.shop.notify(world.shop.sales[payment.saleId]!, payment.approved ? 'approved' : 'rejected', payment);
    }),
  ),
  fc.nat().map((pick) =>
    command(`expire(${pick})`, (world) => {
      const sale = pickSale(world, pick);
      if (sale) world.shop.expire(sale);
    }),
  ),
  fc.nat().map((pick) =>
    command(`release(${pick})`, (world) => {
      const sale = pickSale(world, pick);
      if (sale) world.shop.release(sale);
    }),
  ),
  fc.tuple(fc.nat(), fc.boolean()).map(([pick, checkedIn]) =>
    command(`cancel(${pick}, checkedIn=${checkedIn})`, (world) => {
      const sale = pickSale(world, pick);
      if (sale) world.shop.cancel(sale, checkedIn);
    }),
  ),
  fc.nat().map((pick) =>
    command(`refund(${pick})`, (world) => {
      const sale = pickSale(world, pick);
      if (sale) world.shop.refundSale(sale);
    }),
  ),
];

describe('sale state machine + inventory model (fast-check)', () => {
  test('random interleavings keep stock conserved, never oversell, and settle every approved payment', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.commands(commands, { maxCommands: 60 }), (capacity, cmds) => {
        fc.modelRun(() => ({ model: new Ledger(capacity), real: new Shop(capacity) }), cmds);
      }),
      { numRuns: 300 },
    );
  });

  test('a late payment after expiry confirms when stock is back, and is refunded (the sale stays ABANDONED) when the stock was sold meanwhile', () => {
    const shop = new Shop(1);
    const first = shop.reserve(1)!;
    shop.expire(first);
    const second = shop.reserve(1)!;
    shop.notify(second, 'approved', null);
    shop.notify(first, 'approved', null);
    expect(first.status).toBe('ABANDONED');
    expect(second.status).toBe('CONFIRMED');
    expect(shop.payments.map((p) => p.refunded)).toEqual([false, true]);

    const roomy = new Shop(2);
    const late = roomy.reserve(1)!;
    roomy.expire(late);
    roomy.notify(late, 'approved', null);
    expect(late.status).toBe('CONFIRMED');
    expect(roomy.available).toBe(1);
  });

  test('a second, different approved payment for a confirmed sale is refunded; a duplicate of the first is not', () => {
    const shop = new Shop(3);
    const sale = shop.reserve(2)!;
    shop.notify(sale, 'approved', null);
    shop.notify(sale, 'approved', shop.payments[0]!);
    expect(shop.payments[0]?.refunded).toBe(false);
    shop.notify(sale, 'approved', null);
    expect(shop.payments[1]?.refunded).toBe(true);
    expect(sale.status).toBe('CONFIRMED');
  });
});
