/**
 * The checkout's world in memory, with faults: a gateway that loses answers, goes down and refunds late, a database
 * that fails transiently, a seat map that can lose a hold to another buyer. The simulation's worker runs the real
 * checkout workflow against these activities; each case's world is chosen by the sale id, and every fault is drawn
 * from the case's seeded generator, so a failing seed replays the same story.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { SaleSnapshot } from '../../activities/checkout.js';
import type { PaymentVerdict } from '../../activities/payments.js';
import type { Gateway, PaymentNotification, ReserveRequest, ReserveResult } from '../../workflows/definitions.js';

/** mulberry32: small, fast and good enough to draw faults and interleavings from a seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export type PaymentState = 'approved' | 'rejected' | 'pending' | 'refunded';

export interface WorldPayment {
  id: string;
  gateway: Gateway;
  reference: string;
  amount: number;
  currency: string;
  status: PaymentState;
  /** Refund calls that must still fail before the gateway shows the payment refunded (a slow refund). */
  refundLag: number;
}

export interface WorldSale {
  id: string;
  reference: string;
  status: 'PENDING' | 'CONFIRMED' | 'ABANDONED' | 'CANCELLED' | 'REFUNDED';
  quantity: number;
  total: number;
  currency: string;
  expiresAtMs: number;
  paymentRef: string | null;
  seated: boolean;
  /** Units this sale holds out of stock. */
  held: number;
  seats: 'free' | 'held' | 'booked';
  /** Ticket emails sent by the checkout's activity, plus one when owed to the ticket mailer (it sends each once). */
  emails: number;
  emailQueued: boolean;
}

export interface FaultRates {
  /** Probability that one gateway call fails for good (all retries spent). */
  gateway: number;
  /** Probability that a card charge happens at the gateway but its answer is lost. */
  lostChargeAnswer: number;
  /** Probability that a database step fails once (retried by the local activity). */
  database: number;
  /** Probability that a refund needs a few more calls before the gateway shows it refunded. */
  slowRefund: number;
  /**
   * Probability that preparing a payment (its configuration, a slow database) takes up to 0.9 s, as long as a whole
   * payment window of the simulation: the buyer pays on a payment opened just before, or after, the deadline.
   */
  slowOpen: number;
}

export class World {
  readonly capacity: number;
  available: number;
  sale: WorldSale | null = null;
  readonly payments = new Map<string, WorldPayment>();
  readonly attemptKeys = new Set<string>();
  /** Payments with a REFUND attempt recorded: the database's guard against confirming with them. */
  readonly refundsRecorded = new Set<string>();
  refundCalls = 0;
  gatewayDownUntilMs = 0;
  /** Every database step fails until then (an outage), besides the random faults. */
  databaseDownUntilMs = 0;
  /** The gateway refuses every refund for good (the merchant's balance cannot cover them) while true. */
  refusingRefunds = false;
  /** Refunds the checkout recorded `refund_refused` and parked, not yet retried by the simulated operator. */
  parkedRefunds = 0;
  seatsLostToAnotherBuyer = false;
  readonly log: string[] = [];
  /** How the local card charges (LOCAL_CARD_CHARGE) of this case went; the runner sums them over the cases. */
  readonly localCharges = { answered: 0, failed: 0, timedOut: 0 };
  taskQueueCharges = 0;
  /** The gateway's idempotency: a charge key (sale and card token) already used answers its payment again. */
  readonly #chargesByKey = new Map<string, WorldPayment>();
  #nextPayment = 1;

  constructor(
    readonly seed: number,
    readonly gateway: Gateway,
    readonly seated: boolean,
    readonly random: () => number,
    readonly faults: FaultRates,
    capacity: number,
    /** The longest a slow open takes. */
    private readonly slowOpenMaxMs = 900,
  ) {
    this.capacity = capacity;
    this.available = capacity;
  }

  note(line: string): void {
    this.log.push(line);
  }

  // ------------------------------------------------------------------------------ the outside world's moves

  /** The buyer pays at the gateway (bank settles a PSE transfer, button approved, card charged). */
  pay(outcome: PaymentState, amountOff = 0): WorldPayment | null {
    if (!this.sale) return null;
    const payment: WorldPayment = {
      id: `${this.gateway === 'GATEWAY_A' ? 'pa' : 'tb'}-${this.seed}-${this.#nextPayment++}`,
      gateway: this.gateway,
      reference: this.sale.reference,
      amount: this.sale.total + amountOff,
      currency: this.sale.currency,
      status: outcome,
      refundLag: this.random() < this.faults.slowRefund ? 1 + Math.floor(this.random() * 3) : 0,
    };
    this.payments.set(payment.id, payment);
    this.note(`pay ${payment.id} ${outcome}${amountOff ? ` off by ${amountOff}` : ''}`);
    return payment;
  }

  /**
   * A payment left pending at the gateway (a CONT card, a PSE transfer) is settled by the bank: approved, possibly
   * after another payment confirmed the sale. Null when none is pending.
   */
  settlePending(): WorldPayment | null {
    const payment = [...this.payments.values()].find((candidate) => candidate.status === 'pending');
    if (!payment) return null;
    payment.status = 'approved';
    this.note(`pending ${payment.id} approved`);
    return payment;
  }

  /** The checkout recorded a refund the gateway kept refusing as `refund_refused` and parked it. */
  recordRefundRefused(providerPaymentId: string | null): { recorded: boolean } {
    this.#databaseStep('refund refused');
    this.parkedRefunds += 1;
    this.note(`refund of ${providerPaymentId} refused and parked`);
    return { recorded: true };
  }

  /** An open's record committed by a workflow task that was then lost: only the database knows of it. */
  openInLostTask(): void {
    if (!this.sale) return;
    this.attemptKeys.add('opened:OPEN');
    this.note('an open recorded by a lost workflow task');
  }

  /**
   * A workflow task decided to give back late money, recorded the refund and was lost before it completed or asked
   * the gateway: the database says the payment is being given back, and nobody is giving it back yet.
   */
  refundInLostTask(): void {
    const sale = this.sale;
    if (sale?.status !== 'ABANDONED' && sale?.status !== 'CANCELLED') return;
    const payment = [...this.payments.values()].find(
      (candidate) => candidate.status === 'approved' && candidate.id !== sale.paymentRef,
    );
    if (!payment || this.refundsRecorded.has(payment.id)) return;
    this.refundsRecorded.add(payment.id);
    this.attemptKeys.add(`late-refund:${payment.id}`);
    this.note(`refund of ${payment.id} recorded by a lost workflow task`);
  }

  /** The organizer's refund workflow gave the sale's money back (its own story, outside the checkout). */
  refundSaleOutside(): boolean {
    const sale = this.sale;
    if (sale?.status !== 'CONFIRMED' || !sale.paymentRef) return false;
    const payment = this.payments.get(sale.paymentRef);
    if (payment) payment.status = 'refunded';
    sale.status = 'REFUNDED';
    this.available += sale.held;
    sale.held = 0;
    if (sale.seats === 'booked') sale.seats = 'free';
    this.note(`organizer refunded ${sale.paymentRef}`);
    return true;
  }

  // ------------------------------------------------------------------------------ fault helpers

  #gatewayCall(what: string): void {
    if (Date.now() < this.gatewayDownUntilMs || this.random() < this.faults.gateway) {
      this.note(`gateway fault on ${what}`);
      throw ApplicationFailure.nonRetryable(`gateway unavailable (${what})`, 'simulated:gateway_down');
    }
  }

  #databaseStep(what: string): void {
    if (Date.now() < this.databaseDownUntilMs || this.random() < this.faults.database) {
      this.note(`database fault on ${what}`);
      throw new Error(`database connection lost (${what})`);
    }
  }

  #verdict(payment: WorldPayment): PaymentVerdict {
    const sale = this.sale;
    return {
      gateway: payment.gateway,
      outcome: payment.status,
      providerPaymentId: payment.id,
      rawStatus: payment.status,
      statusDetail: null,
      mismatch: !!sale && (payment.amount !== sale.total || payment.currency !== sale.currency),
      foreign: !sale || payment.reference !== sale.reference,
    };
  }

  #refundRecorded(paymentRef: string | null): boolean {
    return paymentRef !== null && this.refundsRecorded.has(paymentRef);
  }

  // ------------------------------------------------------------------------------ activities

  /** How long preparing a payment takes: usually nothing, sometimes long enough to cross the deadline. */
  openDelayMs(): number {
    if (this.random() >= this.faults.slowOpen) return 0;
    const delayMs = Math.floor(this.random() * this.slowOpenMaxMs);
    this.note(`slow open (${delayMs} ms)`);
    return delayMs;
  }

  reserveSale(saleId: string, request: ReserveRequest): ReserveResult {
    this.#databaseStep('reserve');
    if (!this.sale) {
      if (this.available < request.quantity) {
        return { ok: false, code: 'ORDER_REJECTED', reason: 'sold_out', message: 'Sold out' };
      }
      this.available -= request.quantity;
      this.sale = {
        id: saleId,
        reference: `FT${String(this.seed).padStart(10, '0')}`,
        status: 'PENDING',
        quantity: request.quantity,
        total: 50_000 * request.quantity,
        currency: 'COP',
        expiresAtMs: Date.now() + (request.paymentWindowMs ?? 1000),
        paymentRef: null,
        seated: this.seated,
        held: request.quantity,
        seats: this.seated ? 'held' : 'free',
        emails: 0,
        emailQueued: false,
      };
    }
    return this.#reserved();
  }

  #reserved(): ReserveResult & { ok: true } {
    const sale = this.sale!;
    return {
      ok: true,
      saleId: sale.id,
      reference: sale.reference,
      workspaceId: 'simulated-workspace',
      eventDateId: 'simulated-date',
      status: sale.status,
      free: false,
      total: sale.total,
      currency: sale.currency,
      expiresAtMs: sale.status === 'PENDING' ? sale.expiresAtMs : null,
      seated: sale.seated,
      paymentRef: sale.paymentRef,
    };
  }

  readSaleSnapshot(): SaleSnapshot | null {
    this.#databaseStep('snapshot');
    if (!this.sale) return null;
    return {
      ...this.#reserved(),
      seated: this.sale.seated,
      gateway: this.gateway,
      attemptOpened: [...this.attemptKeys].some((key) => key.startsWith('opened:')),
    };
  }

  confirmSale(paymentRef: string | null, queueTicketEmail: boolean) {
    this.#databaseStep('confirm');
    const sale = this.sale!;
    if (this.#refundRecorded(paymentRef)) {
      return { confirmed: false, status: sale.status, paymentRef: sale.paymentRef, paymentRefunded: true };
    }
    if (sale.status === 'PENDING') {
      sale.status = 'CONFIRMED';
      sale.paymentRef = paymentRef;
      if (queueTicketEmail) this.#queueTicketEmail(sale);
      this.note(`confirmed by ${paymentRef}`);
    }
    return { confirmed: sale.status === 'CONFIRMED', status: sale.status, paymentRef: sale.paymentRef };
  }

  closeUnpaidSale(to: 'ABANDONED' | 'CANCELLED') {
    this.#databaseStep('close');
    const sale = this.sale;
    if (!sale) return { closed: false, status: null, unitsReturned: 0 };
    if (sale.status !== 'PENDING') return { closed: false, status: sale.status, unitsReturned: 0 };
    sale.status = to;
    const units = sale.held;
    this.available += units;
    sale.held = 0;
    this.note(`closed ${to}`);
    return { closed: true, status: to, unitsReturned: units };
  }

  /** The queue holds one row per sale (a second insert is a no-op) and the mailer sends each row once. */
  #queueTicketEmail(sale: WorldSale): void {
    if (sale.emailQueued) return;
    sale.emailQueued = true;
    sale.emails += 1;
  }

  confirmLatePayment(paymentRef: string | null, queueTicketEmail: boolean) {
    this.#databaseStep('late');
    const sale = this.sale!;
    if (this.#refundRecorded(paymentRef)) return { outcome: 'payment_refunded' as const, status: sale.status };
    if (sale.status === 'CONFIRMED') {
      return { outcome: 'already_confirmed' as const, status: sale.status, paymentRef: sale.paymentRef };
    }
    if (sale.status !== 'ABANDONED' || this.available < sale.quantity) {
      return { outcome: 'needs_refund' as const, status: sale.status };
    }
    this.available -= sale.quantity;
    sale.held = sale.quantity;
    sale.status = 'CONFIRMED';
    sale.paymentRef = paymentRef;
    if (queueTicketEmail) this.#queueTicketEmail(sale);
    this.note(`late confirmed by ${paymentRef}`);
    return { outcome: 'confirmed' as const, status: 'CONFIRMED' as const };
  }

  recordAttempt(kind: string, dedupeKey: string | null, providerPaymentId: string | null): { duplicate: boolean } {
    this.#databaseStep('attempt');
    if (kind === 'REFUND' && providerPaymentId) this.refundsRecorded.add(providerPaymentId);
    if (kind === 'OPEN' || kind === 'PSE' || kind === 'CARD') this.attemptKeys.add(`opened:${kind}`);
    if (dedupeKey === null) return { duplicate: false };
    const duplicate = this.attemptKeys.has(dedupeKey);
    this.attemptKeys.add(dedupeKey);
    return { duplicate };
  }

  /**
   * A card charge; `token` is `<holder>#<n>`: the holder (APRO, OTHE, CONT, MISM) chooses the outcome and the whole
   * token is the idempotency key, as activities/payments.ts derives it from the sale and the token: the same key
   * answers the same payment, never a second charge.
   */
  chargeCard(token: string) {
    const lost = this.random() < this.faults.lostChargeAnswer;
    if (!lost) this.#gatewayCall('charge');
    const holder = token.split('#')[0];
    const outcome: PaymentState =
      holder === 'APRO' || holder === 'MISM' ? 'approved' : holder === 'CONT' ? 'pending' : 'rejected';
    const earlier = this.#chargesByKey.get(token);
    const payment = earlier ?? this.pay(outcome, holder === 'MISM' ? 1000 : 0)!;
    if (earlier) this.note(`charge key ${token} answered ${payment.id} again`);
    else this.#chargesByKey.set(token, payment);
    if (lost) {
      this.note(`charge ${payment.id} answer lost`);
      throw ApplicationFailure.nonRetryable('the charge answer was lost', 'simulated:lost_answer');
    }
    return {
      id: payment.id,
      status: payment.status,
      statusDetail: payment.status === 'rejected' ? 'cc_rejected_other_reason' : null,
      amount: payment.amount,
    };
  }

  /**
   * The same charge run as a local activity bounded by `boundMs`: sometimes the connection fails before the gateway
   * (retried, then the task-queue activity charges), sometimes the gateway charges and the answer never comes back
   * within the bound (the task-queue activity then asks with the same key and gets the same payment). With
   * `recordBeforeCharging` the CARD attempt is recorded first, as the activity does (LOCAL_CHARGE_RECORDED_FIRST).
   */
  async chargeCardLocally(token: string, boundMs: number, recordBeforeCharging = false) {
    // As activities/payments.ts: the charge is recorded as leaving before the gateway is called.
    if (recordBeforeCharging) this.recordAttempt('CARD', `card-charging:${token}`, null);
    const draw = this.random();
    if (draw < 0.15) {
      this.localCharges.failed += 1;
      this.note('local charge failed before reaching the gateway');
      throw new Error('connection reset before the gateway answered (local charge)');
    }
    const payment = this.chargeCard(token);
    if (draw < 0.3) {
      this.localCharges.timedOut += 1;
      this.note(`local charge ${payment.id} made, its answer later than the bound`);
      await new Promise((resolve) => setTimeout(resolve, boundMs + 200));
    } else {
      this.localCharges.answered += 1;
    }
    return payment;
  }

  openPsePayment() {
    this.#gatewayCall('pse');
    return { preferenceId: `pref-${this.seed}`, redirectUrl: `https://gateway.invalid/pse/${this.seed}` };
  }

  readPayment(notification: PaymentNotification): PaymentVerdict {
    this.#gatewayCall('read');
    const named = notification.providerPaymentId ? this.payments.get(notification.providerPaymentId) : undefined;
    if (named) return this.#verdict(named);
    const found = this.findSalePayments();
    return (
      found.find((verdict) => verdict.outcome === 'approved') ??
      found.at(-1) ?? {
        gateway: this.gateway,
        outcome: 'unknown',
        providerPaymentId: null,
        rawStatus: 'not_found',
        statusDetail: null,
        mismatch: false,
        foreign: false,
      }
    );
  }

  findSalePayments(): PaymentVerdict[] {
    this.#gatewayCall('search');
    return [...this.payments.values()].map((payment) => this.#verdict(payment));
  }

  refundPayment(paymentRef: string | null): { status: string; refundId: string | null } {
    this.#gatewayCall('refund');
    this.refundCalls += 1;
    const payment = paymentRef ? this.payments.get(paymentRef) : undefined;
    if (!payment) throw ApplicationFailure.nonRetryable('unknown payment', 'simulated:unknown_payment');
    if (this.refusingRefunds && payment.status === 'approved') {
      throw ApplicationFailure.nonRetryable('insufficient balance to refund', 'simulated:insufficient_balance');
    }
    if (payment.refundLag > 0) {
      payment.refundLag -= 1;
      return { status: 'in_process', refundId: null };
    }
    if (payment.status === 'approved') this.note(`refunded ${payment.id}`);
    payment.status = 'refunded';
    return { status: 'approved', refundId: `rf-${payment.id}` };
  }

  bookSaleSeats(): { ok: boolean; reason: string | null } {
    const sale = this.sale!;
    if (!sale.seated) return { ok: true, reason: null };
    if (this.seatsLostToAnotherBuyer && sale.seats !== 'booked') return { ok: false, reason: 'seat taken' };
    sale.seats = 'booked';
    return { ok: true, reason: null };
  }

  releaseSaleSeats(): void {
    const sale = this.sale;
    if (sale?.seated && sale.seats === 'held') sale.seats = 'free';
  }

  releaseBookedSeats(): { released: number } {
    const sale = this.sale;
    if (sale?.seated && sale.seats === 'booked' && sale.status !== 'CONFIRMED') {
      sale.seats = 'free';
      return { released: sale.quantity };
    }
    return { released: 0 };
  }

  emailTickets(): { sent: number } {
    const sale = this.sale;
    if (sale?.status !== 'CONFIRMED' || sale.emails > 0) return { sent: 0 };
    sale.emails += 1;
    return { sent: sale.quantity };
  }

  // ------------------------------------------------------------------------------ invariants

  /** What must hold once every execution of the case has finished; each broken rule is one line. */
  violations(): string[] {
    const broken: string[] = [];
    const sale = this.sale;
    for (const payment of this.payments.values()) {
      if (payment.status !== 'approved') continue;
      const paidTheSale = sale?.status === 'CONFIRMED' && sale.paymentRef === payment.id;
      if (!paidTheSale)
        broken.push(`approved payment ${payment.id} is neither the payment of a CONFIRMED sale nor refunded`);
    }
    if (sale?.status === 'CONFIRMED') {
      const paidWith = sale.paymentRef ? this.payments.get(sale.paymentRef) : undefined;
      if (paidWith?.status !== 'approved')
        broken.push(`CONFIRMED sale paid by ${sale.paymentRef}, which is ${paidWith?.status ?? 'unknown'}`);
    }
    if (sale?.status === 'PENDING') broken.push('the sale is still PENDING after every execution finished');
    const held = sale && (sale.status === 'CONFIRMED' || sale.status === 'PENDING') ? sale.quantity : 0;
    if ((sale?.held ?? 0) !== held) broken.push(`the sale holds ${sale?.held} units in status ${sale?.status}`);
    if (this.available + held !== this.capacity) {
      broken.push(`stock not conserved: available ${this.available} + held ${held} ≠ capacity ${this.capacity}`);
    }
    if (sale?.seated) {
      const expected = sale.status === 'CONFIRMED' ? 'booked' : 'free';
      if (sale.seats !== expected) broken.push(`seats are ${sale.seats} for a ${sale.status} sale`);
    }
    if (sale && sale.emails > 1) broken.push(`tickets emailed ${sale.emails} times`);
    if (sale?.status === 'CONFIRMED' && sale.emails !== 1) broken.push('a CONFIRMED sale never emailed its tickets');
    return broken;
  }
}
