import { z } from 'zod';
import { ProviderError } from '../errors.js';
import { field, JsonHttp } from '../http.js';
import { nullableString } from '../schemas.js';

/**
 * Gateway B client (Bold-style payment button). The charge itself happens in the buyer's browser; the server
 * only reads a payment's live status (payment-voucher API), voids approved charges and, as a fallback when a
 * webhook went missing, reads the notifications sent for a reference.
 *
 * Authentication is the identity key in `Authorization: x-api-key <key>` (literal scheme). The gateway serves the
 * voucher API and the integrations API from different hosts in production (`https://payments.api.bold.co` and
 * `https://integrations.api.bold.co`); the sandbox serves both under `<sandbox>/gateway-b`.
 */

export type GatewayBPaymentStatus =
  | 'APPROVED'
  | 'REJECTED'
  | 'FAILED'
  | 'PENDING'
  | 'PROCESSING'
  | 'VOIDED'
  | 'NO_TRANSACTION_FOUND';

export interface GatewayBTransaction {
  orderId: string;
  status: GatewayBPaymentStatus;
  transactionId: string | null;
  /** The gateway's own integer (its unit per currency, see amounts.ts), null when no transaction exists. */
  amount: number | null;
  currency: string | null;
  paymentMethod: string | null;
  transactionDate: string | null;
}

export type GatewayBEventType = 'SALE_APPROVED' | 'SALE_REJECTED' | 'VOID_APPROVED' | 'VOID_REJECTED';

/** The webhook body the gateway POSTs (CloudEvents-like envelope). */
export interface GatewayBWebhookEvent {
  id: string;
  type: GatewayBEventType;
  /** The gateway's transaction id. */
  subject: string;
  source: string;
  specVersion: string;
  /** Emission time, POSIX nanoseconds (as the gateway sends it; may exceed double precision). */
  time: number;
  paymentId: string;
  merchantId: string | null;
  createdAt: string | null;
  /** The gateway's own integer (its unit per currency, see amounts.ts). */
  amount: number;
  currency: string | null;
  /** The order id the button was configured with: our sale reference. */
  reference: string | null;
  payerEmail: string | null;
  paymentMethod: string | null;
}

export interface GatewayBVoidResult {
  transactionId: string;
  /** `VOID_APPROVED`, `VOID_PENDING` or `VOID_REJECTED`. */
  status: string;
}

export interface GatewayBClientOptions {
  /** Payment-voucher API base, e.g. `https://payments.api.bold.co` or `http://127.0.0.1:4010/gateway-b`. */
  baseUrl: string;
  /** Integrations API base (voids, webhook fallback); defaults to `baseUrl`. */
  integrationsBaseUrl?: string;
  /** Identity key (public; the same one the button uses). */
  apiKey: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const STATUSES: ReadonlySet<string> = new Set<GatewayBPaymentStatus>([
  'APPROVED',
  'REJECTED',
  'FAILED',
  'PENDING',
  'PROCESSING',
  'VOIDED',
  'NO_TRANSACTION_FOUND',
]);

const VoucherSchema = z.object({
  payment_status: z.string(),
  transaction_id: nullableString,
  reference_id: nullableString,
  amount: z.object({ total: z.number(), currency: nullableString }).nullish(),
  payment_method: nullableString,
  transaction_date: nullableString,
});

const VoidSchema = z.object({
  payload: z.object({ transaction_id: z.string(), status: z.string() }),
});

const EventSchema = z.object({
  id: z.string(),
  type: z.enum(['SALE_APPROVED', 'SALE_REJECTED', 'VOID_APPROVED', 'VOID_REJECTED']),
  subject: z.string(),
  source: z.string(),
  spec_version: z.string(),
  time: z.number(),
  data: z.object({
    payment_id: z.string(),
    merchant_id: nullableString,
    created_at: nullableString,
    amount: z.object({ total: z.number(), currency: nullableString }),
    metadata: z.object({ reference: nullableString }).nullish(),
    payer_email: nullableString,
    payment_method: nullableString,
  }),
});

const NotificationsSchema = z.object({ notifications: z.array(EventSchema) });

/** Gateway B errors look like `{ errors: [{ code, message }] }` (sometimes beside a `payload`). */
function describeGatewayBError(body: unknown): { code: string | null; message: string | null } {
  const errors = field(body, 'errors');
  const first = Array.isArray(errors) ? (errors[0] as unknown) : undefined;
  const code = field(first, 'code');
  const message = field(first, 'message') ?? field(body, 'message');
  return {
    code: typeof code === 'string' ? code : null,
    message: typeof message === 'string' ? message : null,
  };
}

/** Parses a webhook body already verified with `verifyGatewayBWebhook`. Throws a ProviderError when malformed. */
export function parseGatewayBWebhook(rawBody: string | Buffer): GatewayBWebhookEvent {
  let json: unknown;
  try {
    json = JSON.parse(typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8'));
  } catch (error) {
    throw new ProviderError({
      provider: 'gateway-b',
      status: null,
      retryable: false,
      code: 'INVALID_WEBHOOK',
      message: 'gateway-b: webhook body is not JSON',
      cause: error,
    });
  }
  const parsed = EventSchema.safeParse(json);
  if (!parsed.success) {
    throw new ProviderError({
      provider: 'gateway-b',
      status: null,
      retryable: false,
      code: 'INVALID_WEBHOOK',
      message: `gateway-b: webhook body has an unexpected shape: ${parsed.error.issues[0]?.message ?? ''}`,
    });
  }
  return toEvent(parsed.data);
}

function toEvent(event: z.output<typeof EventSchema>): GatewayBWebhookEvent {
  return {
    id: event.id,
    type: event.type,
    subject: event.subject,
    source: event.source,
    specVersion: event.spec_version,
    time: event.time,
    paymentId: event.data.payment_id,
    merchantId: event.data.merchant_id,
    createdAt: event.data.created_at,
    amount: event.data.amount.total,
    currency: event.data.amount.currency,
    reference: event.data.metadata?.reference ?? null,
    payerEmail: event.data.payer_email,
    paymentMethod: event.data.payment_method,
  };
}

export class GatewayBClient {
  readonly #voucher: JsonHttp;
  readonly #integrations: JsonHttp;

  constructor(options: GatewayBClientOptions) {
    const common = {
      provider: 'gateway-b' as const,
      timeoutMs: options.timeoutMs ?? 10_000,
      headers: { authorization: `x-api-key ${options.apiKey}` },
      describeError: describeGatewayBError,
      fetch: options.fetch,
    };
    this.#voucher = new JsonHttp({ ...common, baseUrl: options.baseUrl });
    this.#integrations = new JsonHttp({ ...common, baseUrl: options.integrationsBaseUrl ?? options.baseUrl });
  }

  /** The live status of the charge for an order id (our sale reference). */
  async paymentStatus(orderId: string): Promise<GatewayBTransaction> {
    const { data } = await this.#voucher.request({
      method: 'GET',
      path: `/v2/payment-voucher/${encodeURIComponent(orderId)}`,
      schema: VoucherSchema,
    });
    if (!STATUSES.has(data.payment_status)) {
      throw new ProviderError({
        provider: 'gateway-b',
        status: null,
        retryable: false,
        code: 'UNKNOWN_STATUS',
        message: `gateway-b: order ${orderId} has unknown payment status ${data.payment_status}`,
      });
    }
    return {
      orderId,
      status: data.payment_status as GatewayBPaymentStatus,
      transactionId: data.transaction_id,
      amount: data.amount?.total ?? null,
      currency: data.amount?.currency ?? null,
      paymentMethod: data.payment_method,
      transactionDate: data.transaction_date,
    };
  }

  /**
   * Voids (refunds) an approved charge. The gateway confirms with a VOID_APPROVED webhook. Without a
   * transaction id the order's current transaction is looked up first.
   */
  async voidPayment(input: {
    orderId: string;
    transactionId?: string | null;
    idempotencyKey: string;
  }): Promise<GatewayBVoidResult> {
    let transactionId = input.transactionId ?? null;
    if (!transactionId) {
      const current = await this.paymentStatus(input.orderId);
      transactionId = current.transactionId;
      if (!transactionId) {
        throw new ProviderError({
          provider: 'gateway-b',
          status: 404,
          retryable: false,
          code: 'NO_TRANSACTION_FOUND',
          message: `gateway-b: order ${input.orderId} has no transaction to void`,
        });
      }
    }
    const { data } = await this.#integrations.request({
      method: 'POST',
      path: `/online/payments/${encodeURIComponent(transactionId)}/void`,
      headers: { 'idempotency-key': input.idempotencyKey },
      body: { reason: 'refund' },
      schema: VoidSchema,
    });
    return { transactionId: data.payload.transaction_id, status: data.payload.status };
  }

  /** Webhook fallback: the notifications sent for a reference (order id), newest first, at most 10. */
  async notificationsForReference(reference: string): Promise<GatewayBWebhookEvent[]> {
    const { data } = await this.#integrations.request({
      method: 'GET',
      path: `/payments/webhook/notifications/${encodeURIComponent(reference)}`,
      query: { is_external_reference: 'true' },
      schema: NotificationsSchema,
    });
    return data.notifications.map(toEvent);
  }
}
