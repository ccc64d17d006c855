import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { SandboxSecrets } from './config.js';
import { DEFAULT_REFUND_REFUSAL_REASON, RefundRefusals } from './faults.js';
import type { DeliveryRecord, Notifier } from './notifier.js';
import { alphanumericId, bogotaTime, escapeHtml, issuesText, sameSecret, sendPage, withQuery } from './support.js';

/**
 * Gateway B stand-in, imitating Bold's payment button and its server-side APIs under `/gateway-b`:
 *
 *   GET  /v2/payment-voucher/{orderId}                 live status of an order's charge
 *   POST /online/payments/{transactionId}/void         void (refund) an approved charge → VOID_APPROVED webhook
 *   GET  /payments/webhook/notifications/{id}          webhook fallback (`?is_external_reference=true` for order ids)
 *
 * All take `Authorization: x-api-key <identity key>`. The charge itself happens in the buyer's browser, on pages
 * that take no credential:
 *
 *   GET  /library/boldPaymentButton.js   the button script: turns `<script data-bold-button data-…>` into a form
 *                                        that posts the button's data-* attributes to the hosted checkout
 *   POST /checkout                       the hosted checkout page (HTML) for those attributes
 *   POST /checkout/pay                   the buyer's decision on that page: the charge, its webhook, then a 302 to
 *                                        the button's redirection URL (`bold-order-id`, `bold-tx-status`)
 *
 * A control call (`POST /control/gateway-b/pay`) can play the buyer instead. Both check the integrity signature
 * `sha256(orderId + amount + currency + secretKey)` and the link's expiry (epoch nanoseconds) before charging.
 * Webhooks are signed `x-bold-signature: hex(HMAC-SHA256(secretKey, base64(rawBody)))`.
 */

type TransactionStatus = 'APPROVED' | 'REJECTED' | 'PROCESSING' | 'VOIDED';
type EventType = 'SALE_APPROVED' | 'SALE_REJECTED' | 'VOID_APPROVED' | 'VOID_REJECTED';

interface Transaction {
  transactionId: string;
  orderId: string;
  amount: number;
  currency: string;
  status: TransactionStatus;
  createdAt: Date;
  updatedAt: Date;
  payerEmail: string;
  paymentMethod: string;
  description: string | null;
  approvalNumber: string | null;
  redirectionUrl: string | null;
}

const PAYMENT_METHODS = ['CARD_WEB', 'PSE', 'NEQUI', 'BOTON_BANCOLOMBIA'] as const;

export const PayInput = z.object({
  orderId: z.string().min(1).max(60),
  amount: z.coerce.number().int().min(0),
  currency: z.enum(['COP', 'USD']),
  integritySignature: z.string(),
  outcome: z.enum(['approved', 'rejected', 'pending']).default('approved'),
  /** Epoch nanoseconds, as the button's data-expiration-date (number or digit string). */
  expirationDate: z.union([z.number().nonnegative(), z.string().regex(/^\d+$/)]).optional(),
  apiKey: z.string().optional(),
  payerEmail: z.email().optional(),
  description: z.string().max(100).optional(),
  redirectionUrl: z.url().optional(),
  paymentMethod: z.enum(PAYMENT_METHODS).default('CARD_WEB'),
  /** false: the gateway records the payment but its webhook has not gone out yet (late or lost delivery). */
  deliverWebhook: z.boolean().default(true),
});
export type PayInput = z.input<typeof PayInput>;

export type PayResult =
  | {
      ok: true;
      transactionId: string;
      orderId: string;
      status: TransactionStatus;
      redirectUrl: string | null;
      webhook: DeliveryRecord | null;
    }
  | { ok: false; status: number; code: string; message: string };

/** Form fields stand for absent values with ''; absent they are. */
const formValue = <S extends z.ZodType>(schema: S) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

/** What the button script posts to the hosted checkout: the button's data-* attributes, named without `data-`. */
const ButtonForm = z.object({
  'order-id': z.string().min(1).max(60),
  amount: z.string().regex(/^\d+$/, 'amount must be an integer'),
  currency: z.string().min(1).max(3),
  'integrity-signature': z.string().max(64),
  'api-key': formValue(z.string().max(200)),
  'expiration-date': formValue(z.string().regex(/^\d+$/, 'expiration-date must be epoch nanoseconds')),
  'redirection-url': formValue(z.string().max(2048)),
  description: formValue(z.string().max(100)),
});
type ButtonForm = z.output<typeof ButtonForm>;

const CheckoutDecision = ButtonForm.extend({
  decision: z.enum(['approve', 'reject', 'pending']),
  'payment-method': formValue(z.enum(PAYMENT_METHODS)),
  email: formValue(z.email()),
});

const DECISION_OUTCOMES = { approve: 'approved', reject: 'rejected', pending: 'pending' } as const;

export interface GatewayBOptions {
  secrets: SandboxSecrets['gatewayB'];
  notifier: Notifier;
  webhookUrl: string | null;
}

export class GatewayBSandbox {
  readonly #options: GatewayBOptions;
  readonly #transactions: Transaction[] = [];
  readonly #voidKeys = new Map<string, string>();
  /** Voids declined with a `rejected` answer, by idempotency key (the transaction id): that answer is replayed for it. */
  readonly #declinedVoidKeys = new Map<string, string>();
  readonly #events: Array<{ transactionId: string; orderId: string; event: Record<string, unknown> }> = [];
  #webhookUrl: string | null;
  /** Voids this gateway refuses (the control API's refund-refusal mode). */
  readonly refundRefusals = new RefundRefusals();

  constructor(options: GatewayBOptions) {
    this.#options = options;
    this.#webhookUrl = options.webhookUrl;
  }

  get webhookUrl(): string | null {
    return this.#webhookUrl;
  }

  setWebhookUrl(url: string | null): void {
    this.#webhookUrl = url;
  }

  register(app: FastifyInstance): void {
    app.register(
      async (api) => {
        api.addHook('onRequest', async (request, reply) => {
          const header = request.headers.authorization;
          const match = typeof header === 'string' ? /^x-api-key\s+(.+)$/i.exec(header.trim()) : null;
          if (match && sameSecret(match[1], this.#options.secrets.apiKey)) return;
          await reply.code(401).send({ payload: null, errors: [{ code: 'UNAUTHORIZED', message: 'Invalid API key' }] });
          return reply;
        });
        api.get<{ Params: { orderId: string } }>('/v2/payment-voucher/:orderId', async (request, reply) =>
          reply.send(this.#voucher(request.params.orderId)),
        );
        api.post<{ Params: { transactionId: string } }>(
          '/online/payments/:transactionId/void',
          async (request, reply) => this.#void(request, reply),
        );
        api.get<{ Params: { id: string }; Querystring: { is_external_reference?: string } }>(
          '/payments/webhook/notifications/:id',
          async (request, reply) => {
            const byReference = request.query.is_external_reference === 'true';
            const notifications = this.#events
              .filter((e) => (byReference ? e.orderId === request.params.id : e.transactionId === request.params.id))
              .slice(-10)
              .reverse()
              .map((e) => e.event);
            return reply.send({ notifications });
          },
        );
      },
      { prefix: '/gateway-b' },
    );

    // Opened by the buyer's browser, as the real button's script and checkout are: no credentials.
    app.register(
      async (browser) => {
        browser.get('/library/boldPaymentButton.js', async (_request, reply) =>
          reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(BUTTON_SCRIPT),
        );
        browser.post('/checkout', async (request, reply) => this.#checkoutPage(request, reply));
        browser.post('/checkout/pay', async (request, reply) => this.#checkoutDecision(request, reply));
      },
      { prefix: '/gateway-b' },
    );
  }

  // ---- control operations -------------------------------------------------------------------------------------

  /** The buyer completes the button: signature and expiry are checked, then the webhook is sent. */
  async pay(raw: unknown): Promise<PayResult> {
    const parsed = PayInput.safeParse(raw);
    if (!parsed.success) {
      return {
        ok: false,
        status: 400,
        code: 'VALIDATION_FAILED',
        message: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
      };
    }
    const input = parsed.data;
    const refused = this.#refusal(input);
    if (refused) return refused;

    const now = new Date();
    const status: TransactionStatus =
      input.outcome === 'approved' ? 'APPROVED' : input.outcome === 'rejected' ? 'REJECTED' : 'PROCESSING';
    const transaction: Transaction = {
      transactionId: `CN${alphanumericId(11)}`,
      orderId: input.orderId,
      amount: input.amount,
      currency: input.currency,
      status,
      createdAt: now,
      updatedAt: now,
      payerEmail: input.payerEmail ?? 'buyer@sandbox.test',
      paymentMethod: input.paymentMethod,
      description: input.description ?? null,
      approvalNumber: status === 'APPROVED' ? alphanumericId(6) : null,
      redirectionUrl: input.redirectionUrl ?? null,
    };
    this.#transactions.push(transaction);
    const webhook =
      status === 'PROCESSING' || !input.deliverWebhook
        ? null
        : await this.#sendEvent(transaction, status === 'APPROVED' ? 'SALE_APPROVED' : 'SALE_REJECTED');
    return {
      ok: true,
      transactionId: transaction.transactionId,
      orderId: transaction.orderId,
      status: transaction.status,
      redirectUrl: this.#redirectUrl(transaction),
      webhook,
    };
  }

  /** Resolves an order's PROCESSING charge (the bank answered late). */
  async settle(
    orderId: string,
    outcome: 'approved' | 'rejected',
  ): Promise<
    { ok: true; transactionId: string; status: TransactionStatus; webhook: DeliveryRecord | null } | { ok: false }
  > {
    const transaction = this.#forOrder(orderId).find((t) => t.status === 'PROCESSING');
    if (!transaction) return { ok: false };
    transaction.status = outcome === 'approved' ? 'APPROVED' : 'REJECTED';
    transaction.updatedAt = new Date();
    if (outcome === 'approved') transaction.approvalNumber = alphanumericId(6);
    const webhook = await this.#sendEvent(transaction, outcome === 'approved' ? 'SALE_APPROVED' : 'SALE_REJECTED');
    return { ok: true, transactionId: transaction.transactionId, status: transaction.status, webhook };
  }

  /** Sends SALE_APPROVED again for an order's approved charge (how the gateway reports a refund). */
  async renotify(
    orderId: string,
  ): Promise<{ ok: true; transactionId: string; webhook: DeliveryRecord | null } | { ok: false }> {
    const transaction = this.#forOrder(orderId).find((t) => t.status === 'APPROVED' || t.status === 'VOIDED');
    if (!transaction) return { ok: false };
    const webhook = await this.#sendEvent(transaction, 'SALE_APPROVED');
    return { ok: true, transactionId: transaction.transactionId, webhook };
  }

  reset(): void {
    this.#transactions.length = 0;
    this.#events.length = 0;
    this.#voidKeys.clear();
    this.#declinedVoidKeys.clear();
    this.#webhookUrl = this.#options.webhookUrl;
    this.refundRefusals.clear();
  }

  /** Why the gateway would not charge this button now (bad key, bad signature, expired, already paid); null if it would. */
  #refusal(input: z.output<typeof PayInput>): Extract<PayResult, { ok: false }> | null {
    const secrets = this.#options.secrets;
    if (input.apiKey !== undefined && !sameSecret(input.apiKey, secrets.apiKey)) {
      return {
        ok: false,
        status: 401,
        code: 'INVALID_API_KEY',
        message: 'The button was configured with an unknown identity key',
      };
    }
    const expected = createHash('sha256')
      .update(`${input.orderId}${input.amount}${input.currency}${secrets.secretKey}`, 'utf8')
      .digest();
    const given = /^[0-9a-f]{64}$/i.test(input.integritySignature)
      ? Buffer.from(input.integritySignature, 'hex')
      : null;
    if (!given || !timingSafeEqual(given, expected)) {
      return {
        ok: false,
        status: 422,
        code: 'INTEGRITY_SIGNATURE_MISMATCH',
        message: 'The integrity signature does not match order id, amount and currency',
      };
    }
    if (input.expirationDate !== undefined) {
      const expiresNs = BigInt(
        typeof input.expirationDate === 'number' ? Math.trunc(input.expirationDate) : input.expirationDate,
      );
      if (expiresNs <= BigInt(Date.now()) * 1_000_000n) {
        return { ok: false, status: 422, code: 'PAYMENT_LINK_EXPIRED', message: 'The payment button has expired' };
      }
    }
    const previous = this.#forOrder(input.orderId);
    if (previous.some((t) => t.status === 'APPROVED' || t.status === 'VOIDED')) {
      return { ok: false, status: 409, code: 'ORDER_ALREADY_PAID', message: 'This order id was already paid' };
    }
    if (previous.some((t) => t.status === 'PROCESSING')) {
      return {
        ok: false,
        status: 409,
        code: 'PAYMENT_IN_PROGRESS',
        message: 'A payment for this order id is in process',
      };
    }
    return null;
  }

  // ---- the buyer's browser ------------------------------------------------------------------------------------

  /** The hosted checkout the button opens: the order, and the buyer's choice of outcome. */
  #checkoutPage(request: FastifyRequest, reply: FastifyReply) {
    const form = ButtonForm.safeParse(request.body ?? {});
    if (!form.success) return sendPage(reply, 400, 'Bold checkout', errorNote(issuesText(form.error)));
    const refused = this.#buttonRefusal(form.data);
    if (refused) return sendPage(reply, refused.status, 'Bold checkout', errorNote(refused.message, refused.code));
    const button = form.data;
    const hidden = Object.entries(button)
      .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
      .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
      .join('');
    const methods = PAYMENT_METHODS.map((method) => `<option value="${method}">${method}</option>`).join('');
    return sendPage(
      reply,
      200,
      'Bold checkout',
      `<p class="sandbox">Sandbox checkout. No real money moves.</p>
<dl>
  <dt>Order</dt><dd id="order-id">${escapeHtml(button['order-id'])}</dd>
  <dt>Description</dt><dd id="description">${escapeHtml(button.description ?? '')}</dd>
  <dt>Total</dt><dd id="amount" data-amount="${escapeHtml(button.amount)}" data-currency="${escapeHtml(button.currency)}">${escapeHtml(`${button.amount} ${button.currency}`)}</dd>
</dl>
<form id="checkout-form" method="post" action="/gateway-b/checkout/pay">${hidden}
  <label for="payment-method">Payment method</label>
  <select id="payment-method" name="payment-method">${methods}</select>
  <label for="email">Email</label>
  <input id="email" name="email" type="email" value="">
  <div class="actions">
    <button id="approve" type="submit" name="decision" value="approve">Pay</button>
    <button id="reject" type="submit" name="decision" value="reject">Decline</button>
    <button id="pending" type="submit" name="decision" value="pending">Leave in process</button>
  </div>
</form>`,
    );
  }

  /** The buyer's decision: the same charge as the control call, then back to the merchant's redirection URL. */
  async #checkoutDecision(request: FastifyRequest, reply: FastifyReply) {
    const form = CheckoutDecision.safeParse(request.body ?? {});
    if (!form.success) return sendPage(reply, 400, 'Bold checkout', errorNote(issuesText(form.error)));
    const decision = form.data;
    const result = await this.pay({
      ...payInputOf(decision),
      outcome: DECISION_OUTCOMES[decision.decision],
      ...(decision['payment-method'] ? { paymentMethod: decision['payment-method'] } : {}),
      ...(decision.email ? { payerEmail: decision.email } : {}),
    });
    if (!result.ok) return sendPage(reply, result.status, 'Bold checkout', errorNote(result.message, result.code));
    if (result.redirectUrl) return reply.redirect(result.redirectUrl, 302);
    return sendPage(
      reply,
      200,
      'Bold checkout',
      `<p id="result" data-status="${escapeHtml(result.status)}">Transaction ${escapeHtml(result.transactionId)}: ${escapeHtml(result.status)}.</p>`,
    );
  }

  /** The refusal the charge would meet, checked before the buyer is shown the page. */
  #buttonRefusal(button: ButtonForm): Extract<PayResult, { ok: false }> | null {
    const parsed = PayInput.safeParse(payInputOf(button));
    if (!parsed.success) {
      return { ok: false, status: 400, code: 'VALIDATION_FAILED', message: issuesText(parsed.error) };
    }
    return this.#refusal(parsed.data);
  }

  // ---- provider endpoints -------------------------------------------------------------------------------------

  #voucher(orderId: string): Record<string, unknown> {
    const transactions = this.#forOrder(orderId);
    const current = transactions.find((t) => t.status === 'APPROVED' || t.status === 'VOIDED') ?? transactions[0];
    if (!current) {
      return {
        payment_status: 'NO_TRANSACTION_FOUND',
        transaction_id: null,
        reference_id: orderId,
        amount: null,
        payment_method: null,
        transaction_date: null,
      };
    }
    return {
      payment_status: current.status,
      transaction_id: current.transactionId,
      reference_id: current.orderId,
      amount: { currency: current.currency, total: current.amount, taxes: [], tip: 0 },
      payment_method: current.paymentMethod,
      description: current.description,
      payer_email: current.payerEmail,
      transaction_date: bogotaTime(current.createdAt),
      approval_number: current.approvalNumber,
    };
  }

  async #void(request: FastifyRequest<{ Params: { transactionId: string } }>, reply: FastifyReply) {
    const key = request.headers['idempotency-key'];
    const idempotencyKey = typeof key === 'string' && key !== '' ? key : null;
    const seen = idempotencyKey ? this.#voidKeys.get(idempotencyKey) : undefined;
    if (seen !== undefined && seen !== request.params.transactionId) {
      return reply.code(409).send({
        payload: null,
        errors: [{ code: 'IDEMPOTENCY_KEY_REUSED', message: 'Key already used for another transaction' }],
      });
    }
    const transaction = this.#transactions.find((t) => t.transactionId === request.params.transactionId);
    if (!transaction) {
      return reply
        .code(404)
        .send({ payload: null, errors: [{ code: 'TRANSACTION_NOT_FOUND', message: 'Unknown transaction' }] });
    }
    if (idempotencyKey && this.#declinedVoidKeys.get(idempotencyKey) === transaction.transactionId) {
      return reply.send({ payload: { transaction_id: transaction.transactionId, status: 'REJECTED' }, errors: [] });
    }
    if (transaction.status === 'VOIDED') {
      return reply.send({
        payload: { transaction_id: transaction.transactionId, status: 'VOID_APPROVED' },
        errors: [],
      });
    }
    if (transaction.status !== 'APPROVED') {
      return reply.code(409).send({
        payload: null,
        errors: [{ code: 'TRANSACTION_NOT_VOIDABLE', message: `A ${transaction.status} transaction cannot be voided` }],
      });
    }
    const rule = this.refundRefusals.ruleFor('gateway-b', {
      reference: transaction.orderId,
      providerPaymentId: transaction.transactionId,
    });
    const refused = rule ? (rule.reason ?? DEFAULT_REFUND_REFUSAL_REASON) : null;
    if (rule?.answer === 'rejected') {
      // The void request taken and declined in its answer (200, status REJECTED), not as an error: the charge stays
      // APPROVED, and the answer is kept under the key and replayed for it.
      if (idempotencyKey) this.#declinedVoidKeys.set(idempotencyKey, transaction.transactionId);
      void this.#sendEvent(transaction, 'VOID_REJECTED');
      return reply.send({ payload: { transaction_id: transaction.transactionId, status: 'REJECTED' }, errors: [] });
    }
    if (refused) {
      // A void the gateway will not carry out (the merchant's balance cannot cover it): a final answer, with the
      // VOID_REJECTED webhook it sends for it; the charge stays APPROVED and the key unused.
      void this.#sendEvent(transaction, 'VOID_REJECTED');
      return reply.code(422).send({ payload: null, errors: [{ code: 'VOID_REJECTED', message: refused }] });
    }
    transaction.status = 'VOIDED';
    transaction.updatedAt = new Date();
    if (idempotencyKey) this.#voidKeys.set(idempotencyKey, transaction.transactionId);
    void this.#sendEvent(transaction, 'VOID_APPROVED');
    return reply.send({ payload: { transaction_id: transaction.transactionId, status: 'VOID_APPROVED' }, errors: [] });
  }

  // ---- webhooks -----------------------------------------------------------------------------------------------

  async #sendEvent(transaction: Transaction, type: EventType): Promise<DeliveryRecord | null> {
    const event: Record<string, unknown> = {
      id: randomUUID(),
      type,
      subject: transaction.transactionId,
      source: '/payments',
      spec_version: '1.0',
      time: Date.now() * 1_000_000,
      data: {
        payment_id: transaction.transactionId,
        merchant_id: this.#options.secrets.merchantId,
        created_at: bogotaTime(transaction.createdAt),
        amount: { currency: transaction.currency, total: transaction.amount, taxes: [], tip: 0 },
        user_id: `sandbox-${transaction.transactionId.toLowerCase()}`,
        metadata: { reference: transaction.orderId },
        bold_code: 'B000',
        payer_email: transaction.payerEmail,
        payment_method: transaction.paymentMethod,
        ...(transaction.paymentMethod === 'CARD_WEB'
          ? {
              card: {
                brand: 'VISA',
                cardholder_name: 'SANDBOX BUYER',
                masked_pan: '411111****1111',
                installments: 1,
                card_type: 'CREDIT',
              },
            }
          : {}),
        approval_number: transaction.approvalNumber,
        integration: 'BUTTON',
      },
      datacontenttype: 'application/json',
    };
    this.#events.push({ transactionId: transaction.transactionId, orderId: transaction.orderId, event });
    const url = this.#webhookUrl;
    if (!url) return null;
    const body = JSON.stringify(event);
    const signature = createHmac('sha256', this.#options.secrets.secretKey)
      .update(Buffer.from(body, 'utf8').toString('base64'), 'utf8')
      .digest('hex');
    return this.#options.notifier.send({
      gateway: 'gateway-b',
      reference: transaction.orderId,
      kind: type,
      url,
      body,
      headers: () => ({ 'content-type': 'application/json', 'x-bold-signature': signature }),
    });
  }

  #redirectUrl(transaction: Transaction): string | null {
    if (!transaction.redirectionUrl) return null;
    return withQuery(transaction.redirectionUrl, {
      'bold-order-id': transaction.orderId,
      'bold-tx-status': transaction.status === 'PROCESSING' ? 'pending' : transaction.status.toLowerCase(),
    });
  }

  /** Newest first. */
  #forOrder(orderId: string): Transaction[] {
    return this.#transactions.filter((t) => t.orderId === orderId).reverse();
  }
}

/** The control call's input from the button's attributes. */
function payInputOf(button: ButtonForm): PayInput {
  return {
    orderId: button['order-id'],
    amount: button.amount,
    currency: button.currency as PayInput['currency'],
    integritySignature: button['integrity-signature'],
    ...(button['api-key'] !== undefined ? { apiKey: button['api-key'] } : {}),
    ...(button['expiration-date'] !== undefined ? { expirationDate: button['expiration-date'] } : {}),
    ...(button['redirection-url'] !== undefined ? { redirectionUrl: button['redirection-url'] } : {}),
    ...(button.description !== undefined ? { description: button.description } : {}),
  };
}

function errorNote(message: string, code?: string): string {
  return `<p id="error" role="alert"${code ? ` data-code="${escapeHtml(code)}"` : ''}>${escapeHtml(message)}</p>`;
}

/**
 * The sandbox's button script. Like the gateway's, it reads the data-* attributes of its own <script> tag; instead
 * of the gateway's widget it renders a plain form that posts them to this sandbox's hosted checkout.
 */
const BUTTON_SCRIPT = `(function () {
  var fields = ['order-id', 'amount', 'currency', 'api-key', 'integrity-signature', 'expiration-date',
    'redirection-url', 'description'];
  var scripts = document.querySelectorAll('script[data-bold-button]');
  for (var i = 0; i < scripts.length; i++) {
    var script = scripts[i];
    if (script.getAttribute('data-sandbox-mounted')) continue;
    script.setAttribute('data-sandbox-mounted', 'true');
    var form = document.createElement('form');
    form.method = 'post';
    form.action = new URL('../checkout', script.src).toString();
    for (var j = 0; j < fields.length; j++) {
      var value = script.getAttribute('data-' + fields[j]);
      if (value === null) continue;
      var input = document.createElement('input');
      input.type = 'hidden';
      input.name = fields[j];
      input.value = value;
      form.appendChild(input);
    }
    var button = document.createElement('button');
    button.type = 'submit';
    button.textContent = 'Pagar con Bold (sandbox)';
    form.appendChild(button);
    script.parentNode.insertBefore(form, script.nextSibling);
  }
})();
`;
