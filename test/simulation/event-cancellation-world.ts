/**
 * Gateway A in memory for the event-cancellation simulation (run-event-cancellation-simulation.ts): the real
 * activities call it through the GatewayAPort the worker wires to the HTTP client, so it answers as that wiring does
 * (worker/providers.ts): an outage is the client's retryable ProviderError (503), a refusal its final 4xx turned
 * non-retryable, and a declined refund a 201 whose status is `rejected`, replayed for its idempotency key as the real
 * gateway (and the sandbox, sandbox/gateway-a.ts) keeps every answer it gave.
 *
 * One gateway serves every case of the process; each payment belongs to one case's faults (`CaseFaults`): outage and
 * slow windows, answers lost after the refund was made (the caller's timeout: it asks again under the same key), refunds
 * answered `in_process` first, and refusals for a few payments until the merchant's balance is topped up.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { GatewayAPayment, GatewayAPort, GatewayBPort, MailPort } from '../../activities/ports.js';
import { ProviderError } from '../../integrations/errors.js';

export interface GatewayRefund {
  id: string;
  paymentId: string;
  idempotencyKey: string;
  /** `approved` once the gateway gave the money back; `in_process` until it is asked about again. */
  status: 'approved' | 'in_process';
}

export interface SimulatedPayment {
  id: string;
  reference: string;
  amount: number;
  status: 'approved' | 'rejected' | 'refunded';
  refunds: GatewayRefund[];
}

/** How the gateway refuses a payment's refunds while the merchant's balance is short. */
export type RefusalAnswer = 'error' | 'rejected';

/** One case's faults, drawn from its seed; the story changes them as it goes. */
export class CaseFaults {
  downUntilMs = 0;
  slowUntilMs = 0;
  slowMs = 0;
  /** Probability that a refund is made and its answer lost (the caller times out and asks again). */
  lostAnswers = 0;
  /** Probability that a new refund is answered `in_process` (confirmed when asked about again). */
  inProcessRefunds = 0;
  /** Payments whose refunds are refused, and how; lifted when the merchant's balance is topped up. */
  readonly refusals = new Map<string, RefusalAnswer>();
  /** Refund requests refused (both answers), per payment. */
  readonly refusedAsks = new Map<string, number>();
  /**
   * Refunds asked of a payment that had one already, under another key: the gateway refuses them (nothing remains to
   * refund), but the service never means to ask twice, so each is a finding.
   */
  readonly secondRefundAsks: string[] = [];
  readonly log: string[] = [];

  constructor(readonly random: () => number) {}

  note(line: string): void {
    this.log.push(line);
  }
}

/** An idempotency key without its sale id (refund-<saleId>-r1-a2 → refund-…-r1-a2), for the story. */
const keyOf = (key: string) => key.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/, '…');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the HTTP wiring turns a provider's final 4xx into (worker/providers.ts classify). */
const finalRefusal = (message: string, code: string) => ApplicationFailure.nonRetryable(message, `gateway-a:${code}`);

const unavailable = (message: string) =>
  new ProviderError({ provider: 'gateway-a', status: 503, retryable: true, code: 'unavailable', message });

export class SimulatedGatewayA {
  readonly payments = new Map<string, SimulatedPayment>();
  readonly #faults = new Map<string, CaseFaults>();
  /** Buyers by email, so a preference the checkout opens belongs to the buyer's case. */
  readonly #buyers = new Map<string, CaseFaults>();
  /** Open preferences by sale reference: what the buyer's bank pays. */
  readonly #preferences = new Map<string, { id: string; amount: number; faults: CaseFaults }>();
  readonly #refundKeys = new Map<string, { paymentId: string; refundId: string }>();
  readonly #declinedKeys = new Map<string, { paymentId: string; refundId: string }>();
  #nextId = 1;

  /** A payment approved at the gateway for a case (its faults apply to every call about it). */
  approve(faults: CaseFaults, reference: string, amount: number): SimulatedPayment {
    const payment: SimulatedPayment = {
      id: String(7_000_000_000 + this.#nextId++),
      reference,
      amount,
      status: 'approved',
      refunds: [],
    };
    this.payments.set(payment.id, payment);
    this.#faults.set(payment.id, faults);
    return payment;
  }

  /** A buyer of a case, whose checkout will open a preference (faults apply to every call about it). */
  registerBuyer(email: string, faults: CaseFaults): void {
    this.#buyers.set(email, faults);
  }

  /** The buyer's bank pays the sale's open preference (a PSE transfer settled), approved or rejected. */
  payPreference(reference: string, status: 'approved' | 'rejected'): SimulatedPayment | null {
    const preference = this.#preferences.get(reference);
    if (!preference) return null;
    const payment: SimulatedPayment = {
      id: String(7_000_000_000 + this.#nextId++),
      reference,
      amount: preference.amount,
      status,
      refunds: [],
    };
    this.payments.set(payment.id, payment);
    this.#faults.set(payment.id, preference.faults);
    return payment;
  }

  paymentsOf(reference: string): SimulatedPayment[] {
    return [...this.payments.values()].filter((each) => each.reference === reference);
  }

  async #openPreference(input: { payerEmail: string; reference: string; amount: number }) {
    const faults = this.#buyers.get(input.payerEmail);
    if (!faults) throw finalRefusal(`gateway-a: unknown payer ${input.payerEmail}`, 'bad_request');
    if (Date.now() < faults.downUntilMs) throw unavailable('gateway-a: preference answered 503 (outage)');
    const known = this.#preferences.get(input.reference);
    const preference = known ?? { id: `P${this.#nextId++}`, amount: input.amount, faults };
    this.#preferences.set(input.reference, preference);
    return { preferenceId: preference.id, redirectUrl: `https://gateway-a.simulation.test/pay/${preference.id}` };
  }

  async #find(reference: string): Promise<GatewayAPayment[]> {
    const faults = this.#preferences.get(reference)?.faults;
    if (faults) {
      if (Date.now() < faults.slowUntilMs) await sleep(faults.random() * faults.slowMs);
      if (Date.now() < faults.downUntilMs) throw unavailable(`gateway-a: search of ${reference} answered 503 (outage)`);
    }
    return this.paymentsOf(reference).map((each) => this.#view(each));
  }

  /** A refund made outside the service (the gateway's dashboard, under a key of its own). */
  refundAtDashboard(payment: SimulatedPayment): void {
    payment.refunds.push({
      id: `R${this.#nextId++}`,
      paymentId: payment.id,
      idempotencyKey: `dashboard-${payment.id}`,
      status: 'approved',
    });
    payment.status = 'refunded';
  }

  /** Drops a finished case's payments, preferences and buyers. */
  forget(faults: CaseFaults): void {
    for (const [id, owner] of this.#faults) {
      if (owner !== faults) continue;
      this.#faults.delete(id);
      this.payments.delete(id);
    }
    for (const [reference, preference] of this.#preferences) {
      if (preference.faults === faults) this.#preferences.delete(reference);
    }
    for (const [email, owner] of this.#buyers) if (owner === faults) this.#buyers.delete(email);
  }

  /** The case's faults on one call: an outage answers 503, a slow window lags the answer. */
  async #call(paymentId: string, what: string): Promise<CaseFaults> {
    const faults = this.#faults.get(paymentId);
    if (!faults) throw finalRefusal(`gateway-a: payment ${paymentId} not found`, 'not_found');
    const now = Date.now();
    if (now < faults.slowUntilMs) await sleep(faults.random() * faults.slowMs);
    if (Date.now() < faults.downUntilMs) throw unavailable(`gateway-a: ${what} answered 503 (outage)`);
    return faults;
  }

  #view(payment: SimulatedPayment): GatewayAPayment {
    return {
      id: payment.id,
      status: payment.status,
      statusDetail:
        payment.status === 'refunded' ? 'refunded' : payment.status === 'rejected' ? 'cc_rejected_other' : 'accredited',
      externalReference: payment.reference,
      amount: payment.amount,
      currency: 'COP',
    };
  }

  async getPayment(paymentId: string): Promise<GatewayAPayment> {
    await this.#call(paymentId, `read of ${paymentId}`);
    const payment = this.payments.get(paymentId);
    if (!payment) throw finalRefusal(`gateway-a: payment ${paymentId} not found`, 'not_found');
    return this.#view(payment);
  }

  async refund(input: { paymentId: string; idempotencyKey: string }): Promise<{ refundId: string; status: string }> {
    const faults = await this.#call(input.paymentId, `refund of ${input.paymentId}`);
    const payment = this.payments.get(input.paymentId);
    if (!payment) throw finalRefusal(`gateway-a: payment ${input.paymentId} not found`, 'not_found');
    const seen = this.#refundKeys.get(input.idempotencyKey);
    if (seen) {
      if (seen.paymentId !== payment.id) throw finalRefusal('key already used for another payment', 'conflict');
      const refund = payment.refunds.find((each) => each.id === seen.refundId);
      if (refund) {
        // Asked about again: a refund in process has gone through by now.
        if (refund.status === 'in_process') {
          refund.status = 'approved';
          payment.status = 'refunded';
        }
        return { refundId: refund.id, status: refund.status };
      }
    }
    const declined = this.#declinedKeys.get(input.idempotencyKey);
    if (declined) return { refundId: declined.refundId, status: 'rejected' };
    if (payment.status !== 'approved') {
      throw finalRefusal(`gateway-a: payment in status ${payment.status} cannot be refunded`, '2063');
    }
    // A refund still in process holds the whole amount: nothing remains to refund under another key.
    if (payment.refunds.length > 0) {
      faults.secondRefundAsks.push(`${payment.id} under ${keyOf(input.idempotencyKey)}`);
      throw finalRefusal('gateway-a: Refund amount exceeds the remaining amount', '2075');
    }
    const refusal = faults.refusals.get(payment.id);
    if (refusal) {
      faults.refusedAsks.set(payment.id, (faults.refusedAsks.get(payment.id) ?? 0) + 1);
      faults.note(`refund of ${payment.id} under ${keyOf(input.idempotencyKey)} refused (${refusal})`);
      if (refusal === 'rejected') {
        const refundId = `R${this.#nextId++}`;
        this.#declinedKeys.set(input.idempotencyKey, { paymentId: payment.id, refundId });
        return { refundId, status: 'rejected' };
      }
      throw finalRefusal(
        'gateway-a: The collector does not have enough available balance to refund',
        'insufficient_balance',
      );
    }
    const inProcess = faults.random() < faults.inProcessRefunds;
    const refund: GatewayRefund = {
      id: `R${this.#nextId++}`,
      paymentId: payment.id,
      idempotencyKey: input.idempotencyKey,
      status: inProcess ? 'in_process' : 'approved',
    };
    payment.refunds.push(refund);
    if (!inProcess) payment.status = 'refunded';
    this.#refundKeys.set(input.idempotencyKey, { paymentId: payment.id, refundId: refund.id });
    faults.note(`refund ${refund.id} of ${payment.id} under ${keyOf(input.idempotencyKey)} ${refund.status}`);
    if (faults.random() < faults.lostAnswers) {
      faults.note(`answer of refund ${refund.id} lost`);
      throw new ProviderError({
        provider: 'gateway-a',
        status: null,
        retryable: true,
        code: 'timeout',
        message: `gateway-a: refund of ${payment.id} timed out`,
      });
    }
    return { refundId: refund.id, status: refund.status };
  }

  /** The port the activities are given: preferences of the PENDING sales' checkouts, reads, searches and refunds. */
  port(): GatewayAPort {
    const notInThisStory = (what: string) => async (): Promise<never> => {
      throw new Error(`the event-cancellation simulation does not ${what}`);
    };
    return {
      publicKey: 'simulated',
      chargeCard: notInThisStory('charge cards'),
      createPsePreference: (input) => this.#openPreference(input),
      createCheckoutPreference: (input) => this.#openPreference(input),
      expirePreference: async () => undefined,
      findPaymentsByReference: (reference) => this.#find(reference),
      getPayment: (paymentId) => this.getPayment(paymentId),
      refund: (input) => this.refund(input),
    };
  }
}

/** Gateway B takes no part in these stories: a call to it is a bug of the simulation (or of the code under test). */
export const absentGatewayB: GatewayBPort = {
  apiKey: 'simulated',
  renderMode: 'redirect',
  integritySignature: () => 'simulated',
  paymentStatus: async () => {
    throw new Error('gateway B called in an event-cancellation simulation');
  },
  void: async () => {
    throw new Error('gateway B called in an event-cancellation simulation');
  },
};

/** Mail that keeps what was sent, by recipient. */
export class RecordingMail implements MailPort {
  readonly sent = new Map<string, number>();
  async send(message: { to: string }): Promise<void> {
    this.sent.set(message.to, (this.sent.get(message.to) ?? 0) + 1);
  }
}
