import { z } from 'zod';
import {
  type CurrencyCode,
  fromMajorUnits,
  isCurrencyCode,
  type MinorUnits,
  toMajorUnits,
} from '../../domain/money.js';
import { ProviderError } from '../errors.js';
import { field, JsonHttp } from '../http.js';
import { nullableString } from '../schemas.js';

/**
 * Gateway A client (Mercado Pago-style REST API): card tokens, card payments, PSE checkout preferences, payment
 * reads and refunds. Configured by base URL (`https://api.mercadopago.com` in production, `<sandbox>/gateway-a`
 * locally) and an access token sent as `Authorization: Bearer`.
 *
 * Amounts cross this boundary in integer minor units with their currency; the gateway's `transaction_amount`
 * (major units) is converted here and nowhere else.
 */

export type GatewayAPaymentStatus =
  | 'pending'
  | 'approved'
  | 'authorized'
  | 'in_process'
  | 'in_mediation'
  | 'rejected'
  | 'cancelled'
  | 'refunded'
  | 'charged_back';

export interface GatewayAPayment {
  id: string;
  status: GatewayAPaymentStatus;
  /** e.g. `accredited`, `cc_rejected_insufficient_amount`, `pending_contingency`, `pending_waiting_transfer`. */
  statusDetail: string | null;
  externalReference: string | null;
  /** Charged amount in minor units of `currency`. */
  amount: MinorUnits;
  /** Refunded so far, minor units. */
  amountRefunded: MinorUnits;
  currency: CurrencyCode;
  paymentMethodId: string | null;
  /** `credit_card`, `debit_card`, `bank_transfer` (PSE), … */
  paymentTypeId: string | null;
  payerEmail: string | null;
  notificationUrl: string | null;
  /** PSE bank code when the payment is a bank transfer. */
  financialInstitution: string | null;
  dateCreated: string;
  dateApproved: string | null;
  dateLastUpdated: string | null;
}

export interface GatewayACardToken {
  id: string;
  firstSixDigits: string;
  lastFourDigits: string;
  cardholderName: string;
  expirationMonth: number;
  expirationYear: number;
  status: string;
}

export interface GatewayARefund {
  id: string;
  paymentId: string;
  status: string;
  /** The gateway reports refunds in major units and without a currency; the payment carries the currency. */
  amountMajor: number;
  dateCreated: string;
}

export interface GatewayAPreference {
  id: string;
  /** Where the buyer's browser must be sent (top-level redirect, never an iframe). */
  redirectUrl: string;
}

export interface GatewayAClientOptions {
  /** e.g. `https://api.mercadopago.com` or `http://127.0.0.1:4010/gateway-a`. */
  baseUrl: string;
  accessToken: string;
  /** Public key for card tokenization (what the payment brick uses in a browser). Without it, the access token. */
  publicKey?: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface CreateCardTokenInput {
  cardNumber: string;
  securityCode: string;
  expirationMonth: number;
  expirationYear: number;
  /** On test cards the name picks the outcome: APRO, OTHE, FUND, SECU, CONT, CALL, EXPI, FORM. */
  cardholderName: string;
  identification?: { type: string; number: string };
}

export interface CreatePaymentInput {
  /** Same key → same payment, never a second charge. Derive it from the sale and attempt. */
  idempotencyKey: string;
  cardToken: string;
  amount: MinorUnits;
  currency: CurrencyCode;
  description: string;
  installments?: number;
  paymentMethodId?: string | null;
  issuerId?: string | null;
  payerEmail: string;
  externalReference: string;
  notificationUrl: string;
  metadata?: Record<string, string | number | boolean>;
  statementDescriptor?: string;
}

export interface CreatePsePreferenceInput {
  /** Optional: same key → same preference. */
  idempotencyKey?: string;
  title: string;
  amount: MinorUnits;
  currency: CurrencyCode;
  reference: string;
  payerEmail: string;
  notificationUrl: string;
  /** Where the bank sends the browser back; used for success, pending and failure unless `backUrls` overrides. */
  returnUrl: string;
  backUrls?: { success?: string; pending?: string; failure?: string };
  /** After this instant the checkout refuses new payments. */
  expiresAt?: Date;
}

export interface RefundPaymentInput {
  paymentId: string;
  /** Same key → same refund, never a second one. */
  idempotencyKey: string;
  /** Partial refund; omitted = the whole remaining amount. */
  partial?: { amount: MinorUnits; currency: CurrencyCode };
}

const PaymentSchema = z.object({
  id: z.union([z.number(), z.string()]).transform(String),
  status: z.string(),
  status_detail: nullableString,
  external_reference: nullableString,
  transaction_amount: z.number(),
  transaction_amount_refunded: z.number().nullish(),
  currency_id: z.string(),
  payment_method_id: nullableString,
  payment_type_id: nullableString,
  notification_url: nullableString,
  date_created: z.string(),
  date_approved: nullableString,
  date_last_updated: nullableString,
  payer: z.object({ email: nullableString }).nullish(),
  transaction_details: z.object({ financial_institution: nullableString }).nullish(),
});
type RawPayment = z.output<typeof PaymentSchema>;

const SearchSchema = z.object({
  paging: z.object({ total: z.number(), limit: z.number(), offset: z.number() }).optional(),
  results: z.array(PaymentSchema),
});

const CardTokenSchema = z.object({
  id: z.string(),
  first_six_digits: z.string(),
  last_four_digits: z.string(),
  expiration_month: z.number(),
  expiration_year: z.number(),
  status: z.string(),
  cardholder: z.object({ name: z.string() }),
});

const RefundSchema = z.object({
  id: z.union([z.number(), z.string()]).transform(String),
  payment_id: z.union([z.number(), z.string()]).transform(String),
  amount: z.number(),
  status: z.string(),
  date_created: z.string(),
});

const PreferenceSchema = z.object({ id: z.string(), init_point: z.string() });

const PAYMENT_STATUSES: ReadonlySet<string> = new Set<GatewayAPaymentStatus>([
  'pending',
  'approved',
  'authorized',
  'in_process',
  'in_mediation',
  'rejected',
  'cancelled',
  'refunded',
  'charged_back',
]);

/** Gateway A errors look like `{ message, error, status, cause: [{ code, description }] }`. */
function describeGatewayAError(body: unknown): { code: string | null; message: string | null } {
  const cause = field(body, 'cause');
  const first = Array.isArray(cause) ? (cause[0] as unknown) : undefined;
  const causeCode = field(first, 'code');
  const error = field(body, 'error');
  const message = field(body, 'message');
  return {
    code: causeCode !== undefined ? String(causeCode) : typeof error === 'string' ? error : null,
    message: typeof message === 'string' ? message : null,
  };
}

export class GatewayAClient {
  readonly #http: JsonHttp;
  readonly #tokenHttp: JsonHttp;
  readonly #publicKey: string | undefined;

  constructor(options: GatewayAClientOptions) {
    const common = {
      provider: 'gateway-a' as const,
      baseUrl: options.baseUrl,
      timeoutMs: options.timeoutMs ?? 10_000,
      describeError: describeGatewayAError,
      fetch: options.fetch,
    };
    this.#http = new JsonHttp({ ...common, headers: { authorization: `Bearer ${options.accessToken}` } });
    this.#publicKey = options.publicKey;
    this.#tokenHttp = options.publicKey ? new JsonHttp({ ...common, headers: {} }) : this.#http;
  }

  /** Tokenizes a card the way the payment brick does in a browser (tests and demos only; never log the input). */
  async createCardToken(input: CreateCardTokenInput): Promise<GatewayACardToken> {
    const { data } = await this.#tokenHttp.request({
      method: 'POST',
      path: '/v1/card_tokens',
      query: this.#publicKey ? { public_key: this.#publicKey } : {},
      body: {
        card_number: input.cardNumber.replace(/\s+/g, ''),
        security_code: input.securityCode,
        expiration_month: input.expirationMonth,
        expiration_year: input.expirationYear,
        cardholder: {
          name: input.cardholderName,
          ...(input.identification ? { identification: input.identification } : {}),
        },
      },
      schema: CardTokenSchema,
    });
    return {
      id: data.id,
      firstSixDigits: data.first_six_digits,
      lastFourDigits: data.last_four_digits,
      cardholderName: data.cardholder.name,
      expirationMonth: data.expiration_month,
      expirationYear: data.expiration_year,
      status: data.status,
    };
  }

  async createPayment(input: CreatePaymentInput): Promise<GatewayAPayment> {
    const { data } = await this.#http.request({
      method: 'POST',
      path: '/v1/payments',
      headers: { 'x-idempotency-key': input.idempotencyKey },
      body: {
        transaction_amount: toMajorUnits(input.amount, input.currency),
        token: input.cardToken,
        description: input.description,
        installments: input.installments ?? 1,
        ...(input.paymentMethodId ? { payment_method_id: input.paymentMethodId } : {}),
        ...(input.issuerId ? { issuer_id: input.issuerId } : {}),
        payer: { email: input.payerEmail },
        external_reference: input.externalReference,
        notification_url: input.notificationUrl,
        ...(input.metadata ? { metadata: input.metadata } : {}),
        ...(input.statementDescriptor ? { statement_descriptor: input.statementDescriptor } : {}),
      },
      schema: PaymentSchema,
    });
    return toPayment(data);
  }

  /** A checkout preference restricted to PSE; send the buyer's browser to `redirectUrl`. */
  async createPsePreference(input: CreatePsePreferenceInput): Promise<GatewayAPreference> {
    return this.#createPreference(input, {
      default_payment_method_id: 'pse',
      excluded_payment_types: [
        { id: 'credit_card' },
        { id: 'debit_card' },
        { id: 'prepaid_card' },
        { id: 'ticket' },
        { id: 'atm' },
      ],
      installments: 1,
    });
  }

  /**
   * A general checkout preference paid by card or PSE at the gateway's own page (memberships: the buyer gets one
   * link and chooses there). Cash vouchers and ATM are excluded: they settle days later, after the link expired.
   */
  async createCheckoutPreference(input: CreatePsePreferenceInput): Promise<GatewayAPreference> {
    return this.#createPreference(input, {
      excluded_payment_types: [{ id: 'ticket' }, { id: 'atm' }],
      installments: 1,
    });
  }

  async #createPreference(
    input: CreatePsePreferenceInput,
    paymentMethods: Record<string, unknown>,
  ): Promise<GatewayAPreference> {
    const { data } = await this.#http.request({
      method: 'POST',
      path: '/checkout/preferences',
      headers: input.idempotencyKey ? { 'x-idempotency-key': input.idempotencyKey } : {},
      body: {
        items: [
          {
            id: input.reference,
            title: input.title,
            quantity: 1,
            unit_price: toMajorUnits(input.amount, input.currency),
            currency_id: input.currency,
          },
        ],
        payer: { email: input.payerEmail },
        external_reference: input.reference,
        notification_url: input.notificationUrl,
        back_urls: {
          success: input.backUrls?.success ?? input.returnUrl,
          pending: input.backUrls?.pending ?? input.returnUrl,
          failure: input.backUrls?.failure ?? input.returnUrl,
        },
        auto_return: 'all',
        payment_methods: paymentMethods,
        ...(input.expiresAt ? { expires: true, expiration_date_to: input.expiresAt.toISOString() } : {}),
      },
      schema: PreferenceSchema,
    });
    return { id: data.id, redirectUrl: data.init_point };
  }

  /**
   * Closes a preference's link now (PUT with `expiration_date_to` = now): nobody can start a payment on it any more.
   * A payment already started on it (a PSE transfer at the bank) still settles and must still be looked for.
   */
  async expirePreference(preferenceId: string, now: Date = new Date()): Promise<void> {
    await this.#http.request({
      method: 'PUT',
      path: `/checkout/preferences/${encodeURIComponent(preferenceId)}`,
      body: { expires: true, expiration_date_to: now.toISOString() },
      schema: PreferenceSchema,
    });
  }

  async getPayment(paymentId: string): Promise<GatewayAPayment> {
    const { data } = await this.#http.request({
      method: 'GET',
      path: `/v1/payments/${encodeURIComponent(paymentId)}`,
      schema: PaymentSchema,
    });
    return toPayment(data);
  }

  /** Every payment made for a sale reference, newest first. */
  async searchPaymentsByReference(reference: string): Promise<GatewayAPayment[]> {
    const { data } = await this.#http.request({
      method: 'GET',
      path: '/v1/payments/search',
      query: { external_reference: reference, sort: 'date_created', criteria: 'desc', limit: 100 },
      schema: SearchSchema,
    });
    return data.results.map(toPayment);
  }

  async refundPayment(input: RefundPaymentInput): Promise<GatewayARefund> {
    const { data } = await this.#http.request({
      method: 'POST',
      path: `/v1/payments/${encodeURIComponent(input.paymentId)}/refunds`,
      headers: { 'x-idempotency-key': input.idempotencyKey },
      body: input.partial ? { amount: toMajorUnits(input.partial.amount, input.partial.currency) } : {},
      schema: RefundSchema,
    });
    return {
      id: data.id,
      paymentId: data.payment_id,
      status: data.status,
      amountMajor: data.amount,
      dateCreated: data.date_created,
    };
  }

  /** Cancels a payment that is still pending or in process (e.g. an unpaid PSE transfer). */
  async cancelPayment(paymentId: string): Promise<GatewayAPayment> {
    const { data } = await this.#http.request({
      method: 'PUT',
      path: `/v1/payments/${encodeURIComponent(paymentId)}`,
      body: { status: 'cancelled' },
      schema: PaymentSchema,
    });
    return toPayment(data);
  }
}

function toPayment(raw: RawPayment): GatewayAPayment {
  if (!isCurrencyCode(raw.currency_id)) {
    throw new ProviderError({
      provider: 'gateway-a',
      status: null,
      retryable: false,
      code: 'UNSUPPORTED_CURRENCY',
      message: `gateway-a: payment ${raw.id} is in unsupported currency ${raw.currency_id}`,
    });
  }
  if (!PAYMENT_STATUSES.has(raw.status)) {
    throw new ProviderError({
      provider: 'gateway-a',
      status: null,
      retryable: false,
      code: 'UNKNOWN_STATUS',
      message: `gateway-a: payment ${raw.id} has unknown status ${raw.status}`,
    });
  }
  const currency = raw.currency_id;
  const minor = (major: number, label: string): MinorUnits => {
    try {
      return fromMajorUnits(major, currency);
    } catch (error) {
      throw new ProviderError({
        provider: 'gateway-a',
        status: null,
        retryable: false,
        code: 'INVALID_AMOUNT',
        message: `gateway-a: payment ${raw.id} has an invalid ${label} ${major} ${currency}`,
        cause: error,
      });
    }
  };
  return {
    id: raw.id,
    status: raw.status as GatewayAPaymentStatus,
    statusDetail: raw.status_detail,
    externalReference: raw.external_reference,
    amount: minor(raw.transaction_amount, 'transaction_amount'),
    amountRefunded: minor(raw.transaction_amount_refunded ?? 0, 'transaction_amount_refunded'),
    currency,
    paymentMethodId: raw.payment_method_id,
    paymentTypeId: raw.payment_type_id,
    payerEmail: raw.payer?.email ?? null,
    notificationUrl: raw.notification_url,
    financialInstitution: raw.transaction_details?.financial_institution ?? null,
    dateCreated: raw.date_created,
    dateApproved: raw.date_approved,
    dateLastUpdated: raw.date_last_updated,
  };
}
