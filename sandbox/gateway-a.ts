import { createHmac, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { SandboxSecrets } from './config.js';
import { DEFAULT_REFUND_REFUSAL_REASON, RefundRefusals } from './faults.js';
import type { DeliveryRecord, Notifier } from './notifier.js';
import { escapeHtml, hexId, issuesText, sameSecret, sendPage, withQuery } from './support.js';

/**
 * Gateway A stand-in, imitating Mercado Pago's REST API under `/gateway-a`:
 *
 *   POST /v1/card_tokens                 tokenize a test card (`?public_key=` or Bearer)
 *   POST /v1/payments                    charge a card token (X-Idempotency-Key required)
 *   GET  /v1/payments/{id}               read a payment
 *   PUT  /v1/payments/{id}               cancel a pending payment (`{ status: "cancelled" }`)
 *   GET  /v1/payments/search             by external_reference (and status), newest first by default
 *   POST /v1/payments/{id}/refunds       full or partial refund (X-Idempotency-Key required)
 *   GET  /v1/payments/{id}/refunds
 *   POST /checkout/preferences           checkout preference → init_point (the PSE bank page below)
 *   GET  /checkout/preferences/{id}
 *   GET|POST /pse/checkout/{preferenceId}  the bank page a browser uses (plain HTML form)
 *
 * The cardholder name of a test card picks the outcome, like the gateway's test cards (first word, any case):
 * APRO approved, OTHE/CALL/FUND/SECU/EXPI/FORM rejected with their status_detail, CONT pending (in_process).
 * Every status change POSTs a signed notification to the payment's notification_url.
 */

export type SettleOutcome = 'approved' | 'rejected' | 'cancelled';
type PaymentStatus = 'pending' | 'in_process' | 'approved' | 'rejected' | 'cancelled' | 'refunded';

interface CardToken {
  id: string;
  firstSix: string;
  lastFour: string;
  cardholderName: string;
  identification: { type: string; number: string } | null;
  expirationMonth: number;
  expirationYear: number;
  createdAt: Date;
  dueAt: Date;
  usedBy: number | null;
}

interface Refund {
  id: number;
  paymentId: number;
  amount: number;
  createdAt: Date;
}

interface Payment {
  id: number;
  status: PaymentStatus;
  statusDetail: string;
  createdAt: Date;
  approvedAt: Date | null;
  updatedAt: Date;
  amount: number;
  refunded: number;
  currency: string;
  description: string | null;
  externalReference: string | null;
  notificationUrl: string | null;
  payerEmail: string | null;
  paymentMethodId: string;
  paymentTypeId: 'credit_card' | 'debit_card' | 'bank_transfer';
  installments: number;
  card: {
    firstSix: string;
    lastFour: string;
    cardholderName: string;
    expirationMonth: number;
    expirationYear: number;
  } | null;
  financialInstitution: string | null;
  preferenceId: string | null;
  metadata: Record<string, unknown>;
  refunds: Refund[];
}

interface Preference {
  id: string;
  createdAt: Date;
  items: Array<{ id: string | null; title: string; quantity: number; unitPrice: number; currency: string }>;
  payerEmail: string | null;
  backUrls: { success?: string; pending?: string; failure?: string };
  autoReturn: string | null;
  notificationUrl: string | null;
  externalReference: string | null;
  paymentMethods: unknown;
  expires: boolean;
  expirationDateFrom: Date | null;
  expirationDateTo: Date | null;
}

/** Test-card outcomes keyed by the first word of the cardholder name. */
const CARD_OUTCOMES: Record<string, { status: PaymentStatus; detail: string }> = {
  APRO: { status: 'approved', detail: 'accredited' },
  OTHE: { status: 'rejected', detail: 'cc_rejected_other_reason' },
  CALL: { status: 'rejected', detail: 'cc_rejected_call_for_authorize' },
  FUND: { status: 'rejected', detail: 'cc_rejected_insufficient_amount' },
  SECU: { status: 'rejected', detail: 'cc_rejected_bad_filled_security_code' },
  EXPI: { status: 'rejected', detail: 'cc_rejected_bad_filled_date' },
  FORM: { status: 'rejected', detail: 'cc_rejected_bad_filled_other' },
  CONT: { status: 'in_process', detail: 'pending_contingency' },
};

export const PSE_BANKS: ReadonlyArray<{ code: string; name: string }> = [
  { code: '1007', name: 'BANCOLOMBIA' },
  { code: '1051', name: 'BANCO DAVIVIENDA' },
  { code: '1001', name: 'BANCO DE BOGOTA' },
  { code: '1507', name: 'NEQUI' },
  { code: '1040', name: 'BANCO AGRARIO' },
];

const COLLECTOR_ID = 4010001;
const CLIENT_ID = '4010000000000000';

const money = z
  .number()
  .positive()
  .refine((value) => Math.abs(value * 100 - Math.round(value * 100)) < 1e-6, { message: 'at most two decimals' });

const CardTokenBody = z.object({
  card_number: z.string().regex(/^\d{13,19}$/, 'card_number must have 13 to 19 digits'),
  security_code: z.string().regex(/^\d{3,4}$/, 'security_code must have 3 or 4 digits'),
  expiration_month: z.coerce.number().int().min(1).max(12),
  expiration_year: z.coerce.number().int().min(0).max(9999),
  cardholder: z.object({
    name: z.string().trim().min(1),
    identification: z.object({ type: z.string(), number: z.string() }).optional(),
  }),
});

const PaymentBody = z.object({
  transaction_amount: money,
  token: z.string().min(1),
  description: z.string().max(600).optional(),
  installments: z.number().int().min(1).max(48).default(1),
  payment_method_id: z.string().optional(),
  issuer_id: z.union([z.string(), z.number()]).optional(),
  payer: z.object({
    email: z.email(),
    identification: z.object({ type: z.string(), number: z.string() }).optional(),
  }),
  external_reference: z.string().max(256).optional(),
  notification_url: z.url().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  statement_descriptor: z.string().optional(),
});

const RefundBody = z.object({ amount: money.optional() }).default({});

const PreferenceExpiryBody = z.object({
  expires: z.boolean().optional(),
  expiration_date_from: z.iso.datetime({ offset: true }).optional(),
  expiration_date_to: z.iso.datetime({ offset: true }).optional(),
});
const PreferenceBody = z.object({
  items: z
    .array(
      z.object({
        id: z.string().optional(),
        title: z.string().min(1),
        quantity: z.number().int().min(1),
        unit_price: money,
        currency_id: z.string().optional(),
      }),
    )
    .min(1),
  payer: z.object({ email: z.email().optional() }).optional(),
  back_urls: z
    .object({ success: z.url().optional(), pending: z.url().optional(), failure: z.url().optional() })
    .optional(),
  auto_return: z.enum(['approved', 'all']).optional(),
  notification_url: z.url().optional(),
  external_reference: z.string().max(256).optional(),
  payment_methods: z.unknown().optional(),
  expires: z.boolean().optional(),
  expiration_date_from: z.iso.datetime({ offset: true }).optional(),
  expiration_date_to: z.iso.datetime({ offset: true }).optional(),
  statement_descriptor: z.string().optional(),
});

const PseForm = z.object({
  decision: z.enum(['confirm', 'reject', 'card']),
  /** A general (card and PSE) preference's page also takes a test card; its name picks the outcome, as tokens do. */
  cardholder_name: z.string().max(120).optional(),
  bank: z.string().optional(),
  entity_type: z.string().optional(),
  email: z.string().optional(),
});

/** Gateway error body: `{ message, error, status, cause: [{ code, description, data }] }`. */
function gatewayError(reply: FastifyReply, status: number, error: string, message: string, code?: string | number) {
  return reply.code(status).send({
    message,
    error,
    status,
    cause: code === undefined ? [] : [{ code, description: message, data: null }],
  });
}

/** Gateway-style local time (the sandbox account is Colombian: UTC−5). */
function gatewayDate(date: Date | null): string | null {
  if (!date) return null;
  return `${new Date(date.getTime() - 5 * 3_600_000).toISOString().slice(0, 23)}-05:00`;
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

function paymentMethodFor(firstSix: string): string {
  if (firstSix.startsWith('4')) return 'visa';
  if (firstSix.startsWith('34') || firstSix.startsWith('37')) return 'amex';
  if (firstSix.startsWith('36') || firstSix.startsWith('30')) return 'diners';
  return 'master';
}

export interface GatewayAOptions {
  secrets: SandboxSecrets['gatewayA'];
  notifier: Notifier;
  /** Absolute origin browsers reach the sandbox at (for init_point links). */
  publicUrl: () => string;
}

export class GatewayASandbox {
  readonly #options: GatewayAOptions;
  readonly #tokens = new Map<string, CardToken>();
  readonly #payments = new Map<number, Payment>();
  readonly #paymentKeys = new Map<string, number>();
  readonly #refundKeys = new Map<string, { paymentId: number; refundId: number }>();
  /**
   * Refund answers that declined the refund (status `rejected`), by idempotency key: replayed for the same key as
   * Mercado Pago replays any answer it gave for an X-Idempotency-Key, so only a new key asks again.
   */
  readonly #declinedRefundKeys = new Map<string, { paymentId: number; answer: Record<string, unknown> }>();
  readonly #preferences = new Map<string, Preference>();
  readonly #preferenceKeys = new Map<string, string>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #autoSettle: { outcome: 'approved' | 'rejected'; delayMs: number } | null = null;
  #nextPaymentId = 1_300_000_001;
  #nextRefundId = 1_500_000_001;
  #nextNotificationId = 120_000_000_001;
  /** Refunds this gateway refuses (the control API's refund-refusal mode). */
  readonly refundRefusals = new RefundRefusals();

  constructor(options: GatewayAOptions) {
    this.#options = options;
  }

  register(app: FastifyInstance): void {
    app.register(
      async (api) => {
        api.addHook('onRequest', async (request, reply) => {
          if (this.#authorized(request)) return;
          await gatewayError(reply, 401, 'unauthorized', 'invalid access token');
          return reply;
        });
        api.post('/v1/card_tokens', async (request, reply) => this.#createCardToken(request, reply));
        api.post('/v1/payments', async (request, reply) => this.#createPayment(request, reply));
        api.get('/v1/payments/search', async (request, reply) => this.#search(request, reply));
        api.get<{ Params: { id: string } }>('/v1/payments/:id', async (request, reply) => {
          const payment = this.#payment(request.params.id);
          if (!payment) return gatewayError(reply, 404, 'not_found', 'Payment not found', 2000);
          return reply.send(this.#paymentJson(payment));
        });
        api.put<{ Params: { id: string } }>('/v1/payments/:id', async (request, reply) =>
          this.#updatePayment(request, reply),
        );
        api.post<{ Params: { id: string } }>('/v1/payments/:id/refunds', async (request, reply) =>
          this.#refund(request, reply),
        );
        api.get<{ Params: { id: string } }>('/v1/payments/:id/refunds', async (request, reply) => {
          const payment = this.#payment(request.params.id);
          if (!payment) return gatewayError(reply, 404, 'not_found', 'Payment not found', 2000);
          return reply.send(payment.refunds.map((refund) => this.#refundJson(refund)));
        });
        api.post('/checkout/preferences', async (request, reply) => this.#createPreference(request, reply));
        api.get<{ Params: { id: string } }>('/checkout/preferences/:id', async (request, reply) => {
          const preference = this.#preferences.get(request.params.id);
          if (!preference) return gatewayError(reply, 404, 'not_found', 'Preference not found');
          return reply.send(this.#preferenceJson(preference));
        });
        api.put<{ Params: { id: string } }>('/checkout/preferences/:id', async (request, reply) =>
          this.#updatePreference(request, reply),
        );
      },
      { prefix: '/gateway-a' },
    );

    // The bank page is opened by the buyer's browser: no credentials.
    app.register(
      async (bank) => {
        bank.get<{ Params: { id: string } }>('/pse/checkout/:id', async (request, reply) =>
          this.#bankPage(request, reply),
        );
        bank.post<{ Params: { id: string } }>('/pse/checkout/:id', async (request, reply) =>
          this.#bankDecision(request, reply),
        );
      },
      { prefix: '/gateway-a' },
    );
  }

  // ---- control operations -------------------------------------------------------------------------------------

  /** The bank settles the pending PSE transfer of a sale reference. Null when there is none. */
  async settlePse(
    reference: string,
    outcome: 'approved' | 'rejected',
  ): Promise<{ payment: Record<string, unknown>; notification: DeliveryRecord | null } | null> {
    const payment = [...this.#payments.values()]
      .filter(
        (p) =>
          p.externalReference === reference &&
          p.paymentTypeId === 'bank_transfer' &&
          (p.status === 'pending' || p.status === 'in_process'),
      )
      .sort((a, b) => b.id - a.id)[0];
    if (!payment) return null;
    const notification = await this.#settle(payment, outcome);
    return { payment: this.#paymentJson(payment), notification };
  }

  /** Resolves any pending payment (a CONT card, a PSE transfer) by id. */
  async settlePayment(
    id: string,
    outcome: SettleOutcome,
  ): Promise<
    | { ok: true; payment: Record<string, unknown>; notification: DeliveryRecord | null }
    | { ok: false; reason: 'not_found' | 'not_pending' }
  > {
    const payment = this.#payment(id);
    if (!payment) return { ok: false, reason: 'not_found' };
    if (payment.status !== 'pending' && payment.status !== 'in_process') return { ok: false, reason: 'not_pending' };
    const notification = await this.#settle(payment, outcome);
    return { ok: true, payment: this.#paymentJson(payment), notification };
  }

  setAutoSettle(setting: { outcome: 'approved' | 'rejected'; delayMs: number } | null): void {
    this.#autoSettle = setting;
  }

  get autoSettle(): { outcome: 'approved' | 'rejected'; delayMs: number } | null {
    return this.#autoSettle;
  }

  reset(): void {
    this.#clearTimers();
    this.#tokens.clear();
    this.#payments.clear();
    this.#paymentKeys.clear();
    this.#refundKeys.clear();
    this.#declinedRefundKeys.clear();
    this.#preferences.clear();
    this.#preferenceKeys.clear();
    this.#autoSettle = null;
    this.refundRefusals.clear();
  }

  close(): void {
    this.#clearTimers();
  }

  // ---- card tokens and payments ---------------------------------------------------------------------------------

  #authorized(request: FastifyRequest): boolean {
    const header = request.headers.authorization;
    const bearer = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
    if (bearer !== undefined) return sameSecret(bearer, this.#options.secrets.accessToken);
    const url = new URL(request.url, 'http://sandbox');
    if (request.method === 'POST' && url.pathname.endsWith('/v1/card_tokens')) {
      return sameSecret(url.searchParams.get('public_key') ?? undefined, this.#options.secrets.publicKey);
    }
    // The bank pages are registered outside this scope; everything here needs a credential.
    return false;
  }

  #createCardToken(request: FastifyRequest, reply: FastifyReply) {
    const parsed = CardTokenBody.safeParse(request.body);
    if (!parsed.success) return gatewayError(reply, 400, 'bad_request', issuesText(parsed.error), 'E301');
    const body = parsed.data;
    if (!luhn(body.card_number)) return gatewayError(reply, 400, 'bad_request', 'Invalid card_number', 'E301');
    const year = body.expiration_year < 100 ? 2000 + body.expiration_year : body.expiration_year;
    const now = new Date();
    if (
      year < now.getUTCFullYear() ||
      (year === now.getUTCFullYear() && body.expiration_month < now.getUTCMonth() + 1)
    ) {
      return gatewayError(reply, 400, 'bad_request', 'Invalid expiration_year', 326);
    }
    const token: CardToken = {
      id: hexId(16),
      firstSix: body.card_number.slice(0, 6),
      lastFour: body.card_number.slice(-4),
      cardholderName: body.cardholder.name,
      identification: body.cardholder.identification ?? null,
      expirationMonth: body.expiration_month,
      expirationYear: year,
      createdAt: now,
      dueAt: new Date(now.getTime() + 7 * 24 * 3_600_000),
      usedBy: null,
    };
    this.#tokens.set(token.id, token);
    return reply.code(201).send({
      id: token.id,
      public_key: this.#options.secrets.publicKey,
      first_six_digits: token.firstSix,
      last_four_digits: token.lastFour,
      expiration_month: token.expirationMonth,
      expiration_year: token.expirationYear,
      cardholder: { name: token.cardholderName, identification: token.identification ?? { type: null, number: null } },
      status: 'active',
      date_created: gatewayDate(token.createdAt),
      date_last_updated: gatewayDate(token.createdAt),
      date_due: gatewayDate(token.dueAt),
      luhn_validation: true,
      live_mode: false,
      require_esc: false,
      card_number_length: body.card_number.length,
      security_code_length: body.security_code.length,
    });
  }

  #createPayment(request: FastifyRequest, reply: FastifyReply) {
    const key = header(request, 'x-idempotency-key');
    if (!key) return gatewayError(reply, 400, 'bad_request', 'Header X-Idempotency-Key is required', 'idempotency_key');
    const existingId = this.#paymentKeys.get(key);
    if (existingId !== undefined) {
      const existing = this.#payments.get(existingId);
      if (existing) return reply.code(201).send(this.#paymentJson(existing));
    }

    const parsed = PaymentBody.safeParse(request.body);
    if (!parsed.success) return gatewayError(reply, 400, 'bad_request', issuesText(parsed.error), 'invalid_parameter');
    const body = parsed.data;
    const token = this.#tokens.get(body.token);
    if (!token) return gatewayError(reply, 400, 'bad_request', 'Card Token not found', 2006);
    if (token.usedBy !== null || token.dueAt.getTime() < Date.now()) {
      return gatewayError(reply, 400, 'bad_request', 'Invalid card_token_id', 3003);
    }

    const outcome =
      CARD_OUTCOMES[token.cardholderName.trim().split(/\s+/)[0]?.toUpperCase() ?? ''] ?? CARD_OUTCOMES.APRO;
    const now = new Date();
    const payment: Payment = {
      id: this.#nextPaymentId++,
      status: outcome?.status ?? 'approved',
      statusDetail: outcome?.detail ?? 'accredited',
      createdAt: now,
      approvedAt: outcome?.status === 'approved' ? now : null,
      updatedAt: now,
      amount: body.transaction_amount,
      refunded: 0,
      currency: this.#options.secrets.currency,
      description: body.description ?? null,
      externalReference: body.external_reference ?? null,
      notificationUrl: body.notification_url ?? null,
      payerEmail: body.payer.email,
      paymentMethodId: body.payment_method_id ?? paymentMethodFor(token.firstSix),
      paymentTypeId: 'credit_card',
      installments: body.installments,
      card: {
        firstSix: token.firstSix,
        lastFour: token.lastFour,
        cardholderName: token.cardholderName,
        expirationMonth: token.expirationMonth,
        expirationYear: token.expirationYear,
      },
      financialInstitution: null,
      preferenceId: null,
      metadata: body.metadata ?? {},
      refunds: [],
    };
    token.usedBy = payment.id;
    this.#payments.set(payment.id, payment);
    this.#paymentKeys.set(key, payment.id);
    void this.#notify(payment, 'payment.created');
    return reply.code(201).send(this.#paymentJson(payment));
  }

  #search(request: FastifyRequest, reply: FastifyReply) {
    const query = z
      .object({
        external_reference: z.string().optional(),
        status: z.string().optional(),
        id: z.string().optional(),
        sort: z.enum(['date_created', 'date_approved', 'date_last_updated', 'id']).default('date_created'),
        criteria: z.enum(['asc', 'desc']).default('desc'),
        limit: z.coerce.number().int().min(1).max(1000).default(30),
        offset: z.coerce.number().int().min(0).default(0),
      })
      .safeParse(request.query);
    if (!query.success) return gatewayError(reply, 400, 'bad_request', issuesText(query.error));
    const q = query.data;
    const sortValue = (p: Payment): number =>
      q.sort === 'date_approved'
        ? (p.approvedAt?.getTime() ?? 0)
        : q.sort === 'date_last_updated'
          ? p.updatedAt.getTime()
          : p.id;
    const matches = [...this.#payments.values()]
      .filter(
        (p) =>
          (q.external_reference === undefined || p.externalReference === q.external_reference) &&
          (q.status === undefined || p.status === q.status) &&
          (q.id === undefined || String(p.id) === q.id),
      )
      .sort((a, b) => (q.criteria === 'asc' ? sortValue(a) - sortValue(b) : sortValue(b) - sortValue(a)));
    return reply.send({
      paging: { total: matches.length, limit: q.limit, offset: q.offset },
      results: matches.slice(q.offset, q.offset + q.limit).map((p) => this.#paymentJson(p)),
    });
  }

  async #updatePayment(request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) {
    const payment = this.#payment(request.params.id);
    if (!payment) return gatewayError(reply, 404, 'not_found', 'Payment not found', 2000);
    const parsed = z.object({ status: z.literal('cancelled') }).safeParse(request.body);
    if (!parsed.success) return gatewayError(reply, 400, 'bad_request', 'Only { "status": "cancelled" } is supported');
    if (payment.status === 'cancelled') return reply.send(this.#paymentJson(payment));
    if (payment.status !== 'pending' && payment.status !== 'in_process') {
      return gatewayError(reply, 400, 'bad_request', `Payment in status ${payment.status} cannot be cancelled`, 2063);
    }
    this.#transition(payment, 'cancelled', 'by_collector');
    return reply.send(this.#paymentJson(payment));
  }

  #refund(request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) {
    const payment = this.#payment(request.params.id);
    if (!payment) return gatewayError(reply, 404, 'not_found', 'Payment not found', 2000);
    const key = header(request, 'x-idempotency-key');
    if (!key) return gatewayError(reply, 400, 'bad_request', 'Header X-Idempotency-Key is required', 'idempotency_key');
    const seen = this.#refundKeys.get(key);
    if (seen) {
      if (seen.paymentId !== payment.id) {
        return gatewayError(reply, 409, 'conflict', 'X-Idempotency-Key already used for another payment');
      }
      const refund = payment.refunds.find((r) => r.id === seen.refundId);
      if (refund) return reply.code(201).send(this.#refundJson(refund));
    }
    const declined = this.#declinedRefundKeys.get(key);
    if (declined) {
      if (declined.paymentId !== payment.id) {
        return gatewayError(reply, 409, 'conflict', 'X-Idempotency-Key already used for another payment');
      }
      return reply.code(201).send(declined.answer);
    }
    const parsed = RefundBody.safeParse(request.body ?? {});
    if (!parsed.success) return gatewayError(reply, 400, 'bad_request', issuesText(parsed.error));
    if (payment.status !== 'approved') {
      return gatewayError(reply, 400, 'bad_request', `Payment in status ${payment.status} cannot be refunded`, 2063);
    }
    const refusal = this.refundRefusals.ruleFor('gateway-a', {
      reference: payment.externalReference,
      providerPaymentId: String(payment.id),
    });
    if (refusal) {
      const refused = refusal.reason ?? DEFAULT_REFUND_REFUSAL_REASON;
      if (refusal.answer === 'rejected') {
        // The request taken, the refund declined at once: status `rejected`, nothing given back, nothing kept.
        const declined: Refund = {
          id: this.#nextRefundId++,
          paymentId: payment.id,
          amount: parsed.data.amount ?? round2(payment.amount - payment.refunded),
          createdAt: new Date(),
        };
        const answer = { ...this.#refundJson(declined), status: 'rejected', reason: refused };
        // Kept under the key, as the real gateway keeps every answer: the same key is declined again even once the
        // refusal is lifted; only a new key is asked afresh.
        this.#declinedRefundKeys.set(key, { paymentId: payment.id, answer });
        return reply.code(201).send(answer);
      }
      // Mercado Pago's refusal for a collector whose available balance cannot cover the refund: a final 400, and
      // nothing recorded under the idempotency key, so the same key works once the balance is back.
      return gatewayError(reply, 400, 'bad_request', refused, 'insufficient_balance');
    }
    const remaining = round2(payment.amount - payment.refunded);
    const amount = parsed.data.amount ?? remaining;
    if (amount > remaining + 1e-9) {
      return gatewayError(reply, 400, 'bad_request', 'Refund amount exceeds the remaining amount', 2075);
    }
    const refund: Refund = { id: this.#nextRefundId++, paymentId: payment.id, amount, createdAt: new Date() };
    payment.refunds.push(refund);
    payment.refunded = round2(payment.refunded + amount);
    this.#refundKeys.set(key, { paymentId: payment.id, refundId: refund.id });
    if (payment.refunded >= payment.amount - 1e-9) this.#transition(payment, 'refunded', 'refunded');
    else this.#transition(payment, 'approved', 'partially_refunded');
    return reply.code(201).send(this.#refundJson(refund));
  }

  // ---- preferences and the PSE bank page ----------------------------------------------------------------------

  #createPreference(request: FastifyRequest, reply: FastifyReply) {
    const key = header(request, 'x-idempotency-key');
    const known = key ? this.#preferenceKeys.get(key) : undefined;
    const existing = known ? this.#preferences.get(known) : undefined;
    if (existing) return reply.code(201).send(this.#preferenceJson(existing));

    const parsed = PreferenceBody.safeParse(request.body);
    if (!parsed.success) return gatewayError(reply, 400, 'bad_request', issuesText(parsed.error), 'invalid_parameter');
    const body = parsed.data;
    const preference: Preference = {
      id: `${COLLECTOR_ID}-${randomUUID()}`,
      createdAt: new Date(),
      items: body.items.map((item) => ({
        id: item.id ?? null,
        title: item.title,
        quantity: item.quantity,
        unitPrice: item.unit_price,
        currency: item.currency_id ?? this.#options.secrets.currency,
      })),
      payerEmail: body.payer?.email ?? null,
      backUrls: body.back_urls ?? {},
      autoReturn: body.auto_return ?? null,
      notificationUrl: body.notification_url ?? null,
      externalReference: body.external_reference ?? null,
      paymentMethods: body.payment_methods ?? null,
      expires: body.expires ?? false,
      expirationDateFrom: body.expiration_date_from ? new Date(body.expiration_date_from) : null,
      expirationDateTo: body.expiration_date_to ? new Date(body.expiration_date_to) : null,
    };
    this.#preferences.set(preference.id, preference);
    if (key) this.#preferenceKeys.set(key, preference.id);
    return reply.code(201).send(this.#preferenceJson(preference));
  }

  /**
   * Updates a preference's expiry, as Mercado Pago's PUT /checkout/preferences/{id} does: a merchant closes a link it
   * no longer wants paid (`expires: true, expiration_date_to: now`). Payments already started on it are not touched.
   */
  #updatePreference(request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) {
    const preference = this.#preferences.get(request.params.id);
    if (!preference) return gatewayError(reply, 404, 'not_found', 'Preference not found');
    const parsed = PreferenceExpiryBody.safeParse(request.body);
    if (!parsed.success) return gatewayError(reply, 400, 'bad_request', parsed.error.issues[0]?.message ?? 'invalid');
    const body = parsed.data;
    if (body.expires !== undefined) preference.expires = body.expires;
    if (body.expiration_date_from !== undefined) preference.expirationDateFrom = new Date(body.expiration_date_from);
    if (body.expiration_date_to !== undefined) preference.expirationDateTo = new Date(body.expiration_date_to);
    return reply.send(this.#preferenceJson(preference));
  }

  #bankPage(request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) {
    const preference = this.#preferences.get(request.params.id);
    if (!preference)
      return sendPage(reply, 404, 'Pago no encontrado', '<p id="not-found">This checkout does not exist.</p>');
    if (this.#expired(preference)) {
      return sendPage(
        reply,
        410,
        'Pago vencido',
        '<p id="expired">This checkout has expired. Start the purchase again.</p>',
      );
    }
    return sendPage(reply, 200, 'PSE · Pagos Seguros en Línea', this.#bankForm(preference, null));
  }

  #bankDecision(request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) {
    const preference = this.#preferences.get(request.params.id);
    if (!preference)
      return sendPage(reply, 404, 'Pago no encontrado', '<p id="not-found">This checkout does not exist.</p>');
    if (this.#expired(preference)) {
      return sendPage(
        reply,
        410,
        'Pago vencido',
        '<p id="expired">This checkout has expired. Start the purchase again.</p>',
      );
    }
    const parsed = PseForm.safeParse(request.body);
    if (!parsed.success) {
      return sendPage(reply, 400, 'PSE · Pagos Seguros en Línea', this.#bankForm(preference, 'Choose what to do.'));
    }
    const form = parsed.data;
    if (form.decision === 'card') return this.#payByCardOnPage(reply, preference, form.cardholder_name ?? 'APRO');
    const bank = PSE_BANKS.find((b) => b.code === form.bank);
    if (form.decision === 'confirm' && !bank) {
      return sendPage(reply, 400, 'PSE · Pagos Seguros en Línea', this.#bankForm(preference, 'Select your bank.'));
    }

    const now = new Date();
    const payment: Payment = {
      id: this.#nextPaymentId++,
      status: form.decision === 'confirm' ? 'pending' : 'rejected',
      statusDetail: form.decision === 'confirm' ? 'pending_waiting_transfer' : 'rejected_by_bank',
      createdAt: now,
      approvedAt: null,
      updatedAt: now,
      amount: round2(preference.items.reduce((sum, item) => sum + item.unitPrice * item.quantity, 0)),
      refunded: 0,
      currency: preference.items[0]?.currency ?? this.#options.secrets.currency,
      description: preference.items[0]?.title ?? null,
      externalReference: preference.externalReference,
      notificationUrl: preference.notificationUrl,
      payerEmail: preference.payerEmail ?? (form.email || null),
      paymentMethodId: 'pse',
      paymentTypeId: 'bank_transfer',
      installments: 1,
      card: null,
      financialInstitution: bank?.code ?? null,
      preferenceId: preference.id,
      metadata: {},
      refunds: [],
    };
    this.#payments.set(payment.id, payment);
    // Deliveries are not awaited: the browser is redirected at once, whatever the merchant's endpoint does.
    // `#settle` changes the status synchronously, so an immediate auto-settle is reflected in the redirect.
    void this.#notify(payment, 'payment.created');

    const auto = this.#autoSettle;
    if (payment.status === 'pending' && auto) {
      if (auto.delayMs <= 0) void this.#settle(payment, auto.outcome);
      else {
        const timer = setTimeout(() => {
          this.#timers.delete(timer);
          if (payment.status === 'pending') void this.#settle(payment, auto.outcome);
        }, auto.delayMs);
        timer.unref();
        this.#timers.add(timer);
      }
    }
    return this.#returnToMerchant(reply, preference, payment);
  }

  /** A test card paid on the checkout page of a preference that accepts cards (never on a PSE-only one). */
  #payByCardOnPage(reply: FastifyReply, preference: Preference, cardholderName: string) {
    if (!acceptsCards(preference)) {
      return sendPage(
        reply,
        400,
        'PSE · Pagos Seguros en Línea',
        this.#bankForm(preference, 'Cards are not accepted.'),
      );
    }
    const outcome = CARD_OUTCOMES[cardholderName.trim().split(/\s+/)[0]?.toUpperCase() ?? ''] ?? CARD_OUTCOMES.APRO!;
    const now = new Date();
    const payment: Payment = {
      id: this.#nextPaymentId++,
      status: outcome.status,
      statusDetail: outcome.detail,
      createdAt: now,
      approvedAt: outcome.status === 'approved' ? now : null,
      updatedAt: now,
      amount: round2(preference.items.reduce((sum, item) => sum + item.unitPrice * item.quantity, 0)),
      refunded: 0,
      currency: preference.items[0]?.currency ?? this.#options.secrets.currency,
      description: preference.items[0]?.title ?? null,
      externalReference: preference.externalReference,
      notificationUrl: preference.notificationUrl,
      payerEmail: preference.payerEmail,
      paymentMethodId: 'visa',
      paymentTypeId: 'credit_card',
      installments: 1,
      card: { firstSix: '450995', lastFour: '3704', cardholderName, expirationMonth: 11, expirationYear: 2030 },
      financialInstitution: null,
      preferenceId: preference.id,
      metadata: {},
      refunds: [],
    };
    this.#payments.set(payment.id, payment);
    void this.#notify(payment, 'payment.created');
    return this.#returnToMerchant(reply, preference, payment);
  }

  #returnToMerchant(reply: FastifyReply, preference: Preference, payment: Payment) {
    const target =
      payment.status === 'approved'
        ? preference.backUrls.success
        : payment.status === 'pending' || payment.status === 'in_process'
          ? preference.backUrls.pending
          : preference.backUrls.failure;
    if (!target) {
      return sendPage(
        reply,
        200,
        'Resultado del pago',
        `<p id="result" data-status="${escapeHtml(payment.status)}">Payment ${payment.id}: ${escapeHtml(payment.status)}.</p>`,
      );
    }
    return reply.redirect(
      withQuery(target, {
        collection_id: String(payment.id),
        collection_status: payment.status,
        payment_id: String(payment.id),
        status: payment.status,
        external_reference: payment.externalReference ?? 'null',
        payment_type: payment.paymentTypeId,
        merchant_order_id: String(payment.id + 7_000_000_000),
        preference_id: preference.id,
        site_id: 'MCO',
        processing_mode: 'aggregator',
        merchant_account_id: 'null',
      }),
      302,
    );
  }

  #bankForm(preference: Preference, problem: string | null): string {
    const total = preference.items.reduce((sum, item) => sum + item.unitPrice * item.quantity, 0);
    const currency = preference.items[0]?.currency ?? this.#options.secrets.currency;
    let amount: string;
    try {
      amount = new Intl.NumberFormat('es-CO', { style: 'currency', currency }).format(total);
    } catch {
      amount = `${total} ${currency}`;
    }
    const banks = PSE_BANKS.map((b) => `<option value="${b.code}">${escapeHtml(b.name)}</option>`).join('');
    return `
<p class="sandbox">Sandbox bank page. No real money moves.</p>
<dl>
  <dt>Description</dt><dd id="description">${escapeHtml(preference.items[0]?.title ?? '')}</dd>
  <dt>Reference</dt><dd id="reference">${escapeHtml(preference.externalReference ?? '')}</dd>
  <dt>Total</dt><dd id="amount" data-amount="${total}" data-currency="${escapeHtml(currency)}">${escapeHtml(amount)}</dd>
</dl>
${problem ? `<p id="error" role="alert">${escapeHtml(problem)}</p>` : ''}
<form id="pse-form" method="post" action="/gateway-a/pse/checkout/${encodeURIComponent(preference.id)}">
  <label for="bank">Bank</label>
  <select id="bank" name="bank"><option value="">Select your bank</option>${banks}</select>
  <label for="entity_type">Person type</label>
  <select id="entity_type" name="entity_type"><option value="individual">Individual</option><option value="association">Company</option></select>
  <label for="email">Email</label>
  <input id="email" name="email" type="email" value="${escapeHtml(preference.payerEmail ?? '')}">
  <div class="actions">
    <button id="confirm" type="submit" name="decision" value="confirm">Pay</button>
    <button id="reject" type="submit" name="decision" value="reject">Cancel payment</button>
  </div>
</form>${
      acceptsCards(preference)
        ? `
<form id="card-form" method="post" action="/gateway-a/pse/checkout/${encodeURIComponent(preference.id)}">
  <label for="cardholder_name">Cardholder name (test cards: APRO approves, FUND declines)</label>
  <input id="cardholder_name" name="cardholder_name" value="APRO">
  <button id="pay-card" type="submit" name="decision" value="card">Pay by card</button>
</form>`
        : ''
    }`;
  }

  #expired(preference: Preference): boolean {
    const now = Date.now();
    if (!preference.expires) return false;
    if (preference.expirationDateTo && preference.expirationDateTo.getTime() < now) return true;
    if (preference.expirationDateFrom && preference.expirationDateFrom.getTime() > now) return true;
    return false;
  }

  // ---- state changes and notifications --------------------------------------------------------------------------

  async #settle(payment: Payment, outcome: SettleOutcome): Promise<DeliveryRecord | null> {
    if (outcome === 'approved') this.#transitionSilently(payment, 'approved', 'accredited');
    else if (outcome === 'rejected') {
      this.#transitionSilently(
        payment,
        'rejected',
        payment.paymentTypeId === 'bank_transfer' ? 'rejected_by_bank' : 'cc_rejected_other_reason',
      );
    } else this.#transitionSilently(payment, 'cancelled', 'expired');
    return this.#notify(payment, 'payment.updated');
  }

  #transition(payment: Payment, status: PaymentStatus, detail: string): void {
    this.#transitionSilently(payment, status, detail);
    void this.#notify(payment, 'payment.updated');
  }

  #transitionSilently(payment: Payment, status: PaymentStatus, detail: string): void {
    const now = new Date();
    payment.status = status;
    payment.statusDetail = detail;
    payment.updatedAt = now;
    if (status === 'approved' && !payment.approvedAt) payment.approvedAt = now;
  }

  /** POSTs the gateway's notification: the body names the payment only; the receiver must re-read it. */
  async #notify(payment: Payment, action: 'payment.created' | 'payment.updated'): Promise<DeliveryRecord | null> {
    if (!payment.notificationUrl) return null;
    const dataId = String(payment.id);
    const body = JSON.stringify({
      action,
      api_version: 'v1',
      data: { id: dataId },
      date_created: gatewayDate(new Date()),
      id: this.#nextNotificationId++,
      live_mode: false,
      type: 'payment',
      user_id: String(COLLECTOR_ID),
    });
    const secret = this.#options.secrets.webhookSecret;
    return this.#options.notifier.send({
      gateway: 'gateway-a',
      reference: payment.externalReference,
      kind: action,
      url: withQuery(payment.notificationUrl, { 'data.id': dataId, type: 'payment' }),
      body,
      headers: () => {
        const requestId = randomUUID();
        const ts = String(Date.now());
        const v1 = createHmac('sha256', secret).update(`id:${dataId};request-id:${requestId};ts:${ts};`).digest('hex');
        return {
          'content-type': 'application/json',
          'user-agent': 'Sandbox GatewayA WebHook v1.0 payment',
          'x-request-id': requestId,
          'x-signature': `ts=${ts},v1=${v1}`,
        };
      },
    });
  }

  // ---- representations ---------------------------------------------------------------------------------------

  #payment(id: string): Payment | undefined {
    return /^\d+$/.test(id) ? this.#payments.get(Number(id)) : undefined;
  }

  #paymentJson(p: Payment): Record<string, unknown> {
    return {
      id: p.id,
      date_created: gatewayDate(p.createdAt),
      date_approved: gatewayDate(p.approvedAt),
      date_last_updated: gatewayDate(p.updatedAt),
      date_of_expiration: null,
      money_release_date: gatewayDate(p.approvedAt),
      operation_type: 'regular_payment',
      issuer_id: p.card ? '1' : null,
      payment_method_id: p.paymentMethodId,
      payment_type_id: p.paymentTypeId,
      status: p.status,
      status_detail: p.statusDetail,
      currency_id: p.currency,
      description: p.description,
      live_mode: false,
      collector_id: COLLECTOR_ID,
      payer: { id: null, type: 'guest', email: p.payerEmail },
      metadata: p.metadata,
      additional_info: {},
      external_reference: p.externalReference,
      transaction_amount: p.amount,
      transaction_amount_refunded: p.refunded,
      coupon_amount: 0,
      installments: p.installments,
      transaction_details: {
        net_received_amount: p.status === 'approved' ? p.amount : 0,
        total_paid_amount: p.amount,
        overpaid_amount: 0,
        installment_amount: round2(p.amount / p.installments),
        financial_institution: p.financialInstitution,
        external_resource_url: p.preferenceId
          ? `${this.#options.publicUrl()}/gateway-a/pse/checkout/${encodeURIComponent(p.preferenceId)}`
          : null,
        payment_method_reference_id: null,
      },
      fee_details: [],
      captured: true,
      binary_mode: false,
      card: p.card
        ? {
            first_six_digits: p.card.firstSix,
            last_four_digits: p.card.lastFour,
            expiration_month: p.card.expirationMonth,
            expiration_year: p.card.expirationYear,
            cardholder: { name: p.card.cardholderName },
          }
        : {},
      notification_url: p.notificationUrl,
      refunds: p.refunds.map((refund) => this.#refundJson(refund)),
      processing_mode: 'aggregator',
    };
  }

  #refundJson(refund: Refund): Record<string, unknown> {
    return {
      id: refund.id,
      payment_id: refund.paymentId,
      amount: refund.amount,
      metadata: {},
      source: { id: String(COLLECTOR_ID), name: 'sandbox', type: 'collector' },
      date_created: gatewayDate(refund.createdAt),
      unique_sequence_number: null,
      refund_mode: 'standard',
      adjustment_amount: 0,
      status: 'approved',
      reason: null,
      labels: [],
      amount_refunded_to_payer: refund.amount,
    };
  }

  #preferenceJson(p: Preference): Record<string, unknown> {
    const initPoint = `${this.#options.publicUrl()}/gateway-a/pse/checkout/${encodeURIComponent(p.id)}`;
    return {
      id: p.id,
      init_point: initPoint,
      sandbox_init_point: initPoint,
      date_created: gatewayDate(p.createdAt),
      collector_id: COLLECTOR_ID,
      client_id: CLIENT_ID,
      operation_type: 'regular_payment',
      site_id: 'MCO',
      items: p.items.map((item) => ({
        id: item.id,
        title: item.title,
        quantity: item.quantity,
        unit_price: item.unitPrice,
        currency_id: item.currency,
      })),
      payer: { email: p.payerEmail },
      back_urls: p.backUrls,
      auto_return: p.autoReturn,
      notification_url: p.notificationUrl,
      external_reference: p.externalReference,
      payment_methods: p.paymentMethods,
      expires: p.expires,
      expiration_date_from: gatewayDate(p.expirationDateFrom),
      expiration_date_to: gatewayDate(p.expirationDateTo),
    };
  }

  #clearTimers(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

const round2 = (value: number): number => Math.round(value * 100) / 100;

/** Whether a preference's payment methods leave cards in (a PSE-only preference excludes credit_card). */
function acceptsCards(preference: Preference): boolean {
  const excluded = (preference.paymentMethods as { excluded_payment_types?: Array<{ id?: unknown }> } | null)
    ?.excluded_payment_types;
  return !(excluded ?? []).some((type) => type?.id === 'credit_card');
}
