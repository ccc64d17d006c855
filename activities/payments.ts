import type { EntityData } from '@mikro-orm/core';
import { ApplicationFailure } from '@temporalio/activity';
import { cardChargeKey, cardTokenDigest } from '../domain/card-charge-key.js';
import { gatewayAChargesIn, saleGateway, workspaceGateway } from '../domain/gateways.js';
import { isCurrencyCode, toMajorUnits } from '../domain/money.js';
import { gatewayAVerdict, outcomeOfStatus, type PaymentVerdict, type SaleMoney } from '../domain/payment-verdict.js';
import type { IEvent } from '../entities/event.js';
import { Event, Sale, Workspace } from '../entities/index.js';
import type { ISale } from '../entities/sale.js';
import type { IWorkspace } from '../entities/workspace.js';
import { fromGatewayBAmount, isGatewayBCurrency } from '../integrations/gateway-b/amounts.js';
import { gatewayBButton } from '../integrations/gateway-b/button.js';
import {
  type CardChargeRequest,
  cardChargeAttempt,
  type Gateway,
  type GatewayAPageMethods,
  type PaymentConfiguration,
  type PaymentNotification,
} from '../workflows/definitions.js';
import type { ActivityDeps } from './deps.js';
import { throwIfRefundDeclined, throwIfVoidDeclined } from './gateway-refunds.js';
import { recordPaymentAttempt } from './payment-attempts.js';
import type { GatewayBTransaction } from './ports.js';

export type { PaymentVerdict } from '../domain/payment-verdict.js';

const notFound = (gateway: Gateway): PaymentVerdict => ({
  gateway,
  outcome: 'unknown',
  providerPaymentId: null,
  rawStatus: 'not_found',
  statusDetail: null,
  mismatch: false,
  foreign: false,
});

/** The gateway reports its own unit (cents for USD), so the sale's minor units are compared after converting back. */
function gatewayBAmountDiffers(amount: number, reportedCurrency: string | null, sale: SaleMoney): boolean {
  const currency = reportedCurrency ?? sale.currency;
  return currency !== sale.currency || fromGatewayBAmount(amount, currency) !== sale.total;
}

function gatewayBVerdict(transaction: GatewayBTransaction, sale: SaleMoney): PaymentVerdict {
  return {
    gateway: 'GATEWAY_B',
    outcome: outcomeOfStatus('GATEWAY_B', transaction.status),
    providerPaymentId: transaction.transactionId,
    rawStatus: transaction.status,
    statusDetail: null,
    mismatch: transaction.amount !== null && gatewayBAmountDiffers(transaction.amount, transaction.currency, sale),
    foreign: false,
  };
}

export function createPaymentActivities(deps: ActivityDeps) {
  const { gatewayA, gatewayB } = deps.providers;
  const origin = deps.env.PUBLIC_ORIGIN.replace(/\/$/, '');
  const notificationUrl = `${(deps.env.GATEWAY_NOTIFICATION_ORIGIN ?? origin).replace(/\/$/, '')}/api/v1/webhooks/gateway-a`;
  const returnUrlFor = (saleId: string) => `${origin}/api/v1/customer/orders/${saleId}/payment/return`;
  /** The storefront's hosted payment page of an order (api/routes/public/order-payment-page.ts). */
  const paymentPageFor = (saleId: string) => `${origin}/api/public/orders/${saleId}/pay`;

  /**
   * The sale with its event (deleted or not) and workspace, in one round trip: every payment step reads all three,
   * and a card purchase makes four such steps.
   */
  async function loadSale(saleId: string) {
    const em = deps.orm.em.fork();
    const rows = await em.execute<
      { sale: EntityData<ISale>; event: EntityData<IEvent>; workspace: EntityData<IWorkspace> }[]
    >(
      `select row_to_json(s) as sale, row_to_json(e) as event, row_to_json(w) as workspace
         from sales s join events e on e.id = s.event_id join workspaces w on w.id = s.workspace_id
        where s.id = ?`,
      [saleId],
    );
    const row = rows[0];
    if (!row) throw new Error(`sale ${saleId} not found`);
    const sale = em.map(Sale, row.sale);
    const event = em.map(Event, row.event);
    const workspace = em.map(Workspace, row.workspace);
    if (!isCurrencyCode(sale.currency)) throw ApplicationFailure.nonRetryable(`unsupported currency ${sale.currency}`);
    return { sale, event, workspace, currency: sale.currency };
  }

  return {
    /** Which gateway this sale pays through and whether the event allows it; no I/O to a gateway. */
    async choosePaymentRail(
      saleId: string,
    ): Promise<{ gateway: Gateway; gatewayBOnly: boolean; eligibleForB: boolean }> {
      const { event, workspace } = await loadSale(saleId);
      const eligibleForB = workspaceGateway(workspace) === 'GATEWAY_B';
      return {
        gateway: saleGateway(event, workspace),
        gatewayBOnly: event.gatewayBOnly,
        eligibleForB,
      };
    },

    /** The payment configuration the buyer's browser mounts; amounts are re-read from the sale on every call. */
    async buildPaymentConfiguration(input: {
      saleId: string;
      gateway: Gateway;
      expiresAtMs: number;
    }): Promise<PaymentConfiguration> {
      const { sale, event, currency } = await loadSale(input.saleId);
      if (input.gateway === 'GATEWAY_A') {
        return {
          gateway: 'GATEWAY_A',
          publicKey: gatewayA.publicKey,
          amount: toMajorUnits(sale.total, currency),
          currency,
          reference: sale.reference,
          payerEmail: sale.buyerEmail,
        };
      }
      if (!isGatewayBCurrency(currency)) {
        throw ApplicationFailure.nonRetryable(`gateway B does not charge ${currency}; sale ${sale.reference}`);
      }
      const button = gatewayBButton({
        reference: sale.reference,
        total: sale.total,
        currency,
        title: event.name,
        expiresAtMs: input.expiresAtMs,
        // A storefront order comes back to its hosted payment page, which shows the order's status.
        redirectionUrl: sale.origin === 'PUBLIC' ? paymentPageFor(sale.id) : (sale.returnUrl ?? returnUrlFor(sale.id)),
        apiKey: gatewayB.apiKey,
        renderMode: gatewayB.renderMode,
        sign: (signed) => gatewayB.integritySignature(signed),
      });
      return { gateway: 'GATEWAY_B', ...button };
    },

    /**
     * Charges a gateway A card token. The idempotency key ties the charge to this sale and token, so a retried
     * activity can never charge twice. With `recordAttempt`, the gateway's answer is also written to the sale's
     * payment history (the CARD attempt), which the checkout otherwise records in a step of its own; a retried charge
     * finds it written (same dedupe key). With `recordBeforeCharging` (the local charge, LOCAL_CHARGE_RECORDED_FIRST) a
     * CARD attempt `charging` is written before the gateway is called: the workflow task running this charge can be
     * lost with its update, and the sale must still read as opened (money may exist at the gateway). The answer's
     * own record replaces it when this activity writes that record.
     */
    async chargeCard(input: {
      saleId: string;
      request: CardChargeRequest;
      recordAttempt?: boolean;
      recordBeforeCharging?: boolean;
    }) {
      const { sale, event, currency } = await loadSale(input.saleId);
      // Gateway A charges in its account's currency, not the sale's: never charge a sale in money it is not priced in.
      // The API refuses such a rail before the checkout is asked; this is the last line before money moves.
      if (!gatewayAChargesIn(currency, deps.env.GATEWAY_A_CURRENCIES)) {
        throw ApplicationFailure.nonRetryable(
          `gateway A does not charge ${currency}; sale ${sale.reference}`,
          'gateway-a:currency_not_supported',
        );
      }
      const requestKey = cardChargeKey(sale.id, input.request.cardToken);
      const chargingKey = `card-charging:${sale.id}-${cardTokenDigest(input.request.cardToken)}`;
      if (input.recordBeforeCharging) {
        await recordPaymentAttempt(deps.orm.em.fork(), {
          saleId: sale.id,
          gateway: 'GATEWAY_A',
          kind: 'CARD',
          providerPaymentId: null,
          status: 'charging',
          statusDetail: null,
          amount: sale.total,
          dedupeKey: chargingKey,
          requestKey,
          note: 'a card charge sent to the gateway; its answer is recorded apart',
        });
      }
      const payment = await gatewayA.chargeCard({
        idempotencyKey: requestKey,
        cardToken: input.request.cardToken,
        paymentMethodId: input.request.paymentMethodId,
        installments: input.request.installments,
        amount: sale.total,
        currency,
        description: `${event.name} · ${sale.reference}`.slice(0, 100),
        reference: sale.reference,
        payerEmail: sale.buyerEmail,
        notificationUrl,
      });
      if (input.recordAttempt) {
        await deps.orm.em.fork().transactional(async (tx) => {
          await recordPaymentAttempt(tx, cardChargeAttempt(sale.id, payment, requestKey));
          // The answer's record says as much as the charging one did (an opened CARD attempt) and more: one row a charge.
          if (input.recordBeforeCharging) {
            await tx.execute('delete from payment_attempts where dedupe_key = ?', [chargingKey]);
          }
        });
      }
      // The charge's answer is the gateway's own record of the payment, read server to server: the checkout can judge
      // it as is, without asking the gateway again.
      return { ...payment, verdict: gatewayAVerdict(payment, sale) };
    },

    /**
     * A gateway A checkout preference the buyer's browser is sent to: restricted to PSE (the customer PSE rail), or
     * card or PSE at the gateway's page (storefront orders). Kept under its first name: the activity type is part
     * of every checkout history that opened a PSE payment.
     */
    async openPsePayment(input: {
      saleId: string;
      expiresAtMs: number;
      methods?: GatewayAPageMethods;
    }): Promise<{ preferenceId: string; redirectUrl: string }> {
      const { sale, event, currency } = await loadSale(input.saleId);
      const cardOrPse = input.methods === 'card_or_pse';
      const preference = {
        // Per kind: a PSE-only preference must never be answered with the card one, nor the reverse.
        idempotencyKey: `${cardOrPse ? 'checkout' : 'pse'}-${sale.id}`,
        amount: sale.total,
        currency,
        title: `${event.name} · ${sale.reference}`.slice(0, 100),
        reference: sale.reference,
        payerEmail: sale.buyerEmail,
        notificationUrl,
        returnUrl: returnUrlFor(sale.id),
        expiresAt: new Date(input.expiresAtMs),
      };
      return cardOrPse ? gatewayA.createCheckoutPreference(preference) : gatewayA.createPsePreference(preference);
    },

    /**
     * Re-reads a payment from the gateway's API. A notification only says "look again"; what counts is the
     * gateway's own record, and only when it names this sale with its exact amount and currency.
     */
    async readPayment(input: { saleId: string; notification: PaymentNotification }): Promise<PaymentVerdict> {
      const { sale } = await loadSale(input.saleId);
      if (input.notification.gateway === 'GATEWAY_A') {
        const candidates = input.notification.providerPaymentId
          ? [await gatewayA.getPayment(input.notification.providerPaymentId)]
          : await gatewayA.findPaymentsByReference(sale.reference);
        const payment = candidates.find((p) => p.status === 'approved') ?? candidates[candidates.length - 1] ?? null;
        return payment ? gatewayAVerdict(payment, sale) : notFound('GATEWAY_A');
      }
      return gatewayBVerdict(await gatewayB.paymentStatus(sale.reference), sale);
    },

    /**
     * Pull reconciliation: every payment the gateway holds for the sale's reference (gateway A: payment search by
     * external reference; gateway B: the payment status of the order), each judged like a notification would be.
     */
    async findSalePayments(input: { saleId: string; gateway: Gateway }): Promise<PaymentVerdict[]> {
      const { sale } = await loadSale(input.saleId);
      if (input.gateway === 'GATEWAY_A') {
        const payments = await gatewayA.findPaymentsByReference(sale.reference);
        return payments.map((payment) => gatewayAVerdict(payment, sale));
      }
      const transaction = await gatewayB.paymentStatus(sale.reference);
      return transaction.status === 'NO_TRANSACTION_FOUND' ? [] : [gatewayBVerdict(transaction, sale)];
    },

    /**
     * Gateway B's SALE_APPROVED for the charge that already paid the sale. Only a repeat is a re-notification (how
     * gateway B reports a refund) and flags the sale FT_SALE_APPROVED_POST_CONFIRM for the organizer: the first one
     * can arrive after asking the gateway confirmed the sale, and is then just late news of that same payment. A
     * repeat is an earlier approved notification of this transaction under another event id (`noticeKey` is this
     * one's attempt dedupe key, already recorded, so a redelivery of the same event is no repeat either).
     */
    async flagGatewayBRenotification(input: {
      saleId: string;
      providerPaymentId: string;
      noticeKey: string;
    }): Promise<{ flagged: boolean }> {
      const rows = await deps.orm.em.fork().execute<{ id: string }[]>(
        `update sales set payment_status = 'FT_SALE_APPROVED_POST_CONFIRM', updated_at = now()
          where id = ? and exists (
            select 1 from payment_attempts a
             where a.sale_id = sales.id and a.gateway = 'GATEWAY_B' and a.kind = 'NOTIFICATION'
               and a.provider_payment_id = ? and a.status in ('APPROVED', 'SALE_APPROVED')
               and a.dedupe_key is distinct from ?)
          returning id`,
        [input.saleId, input.providerPaymentId, input.noticeKey],
      );
      return { flagged: rows.length > 0 };
    },

    /** Returns an approved payment to the buyer. Idempotent per payment: the gateway sees the same key on retries. */
    async refundPayment(input: {
      saleId: string;
      gateway: Gateway;
      providerPaymentId: string | null;
      reason: string;
      /** Refusals this refund met before this ask (0 or absent: the first key); each later ask has a key of its own. */
      ask?: number;
    }) {
      const { sale } = await loadSale(input.saleId);
      // The gateway replays a refused answer for a key it has seen: an ask after a refusal uses a new one.
      const askSuffix = input.ask ? `-a${input.ask}` : '';
      if (input.gateway === 'GATEWAY_A') {
        if (!input.providerPaymentId) throw ApplicationFailure.nonRetryable('gateway A refund needs the payment id');
        const refund = await gatewayA.refund({
          paymentId: input.providerPaymentId,
          idempotencyKey: `refund-${sale.id}-${input.providerPaymentId}${askSuffix}`,
        });
        throwIfRefundDeclined(refund);
        return { status: refund.status, refundId: refund.refundId };
      }
      const voided = await gatewayB.void({
        orderId: sale.reference,
        transactionId: input.providerPaymentId,
        // Per transaction: a second charge's void must not be answered with the first one's.
        idempotencyKey: `void-${sale.id}-${input.providerPaymentId ?? 'order'}${askSuffix}`,
      });
      // A declined void is a refusal the checkout counts and parks, not a "not yet" it asks about forever.
      throwIfVoidDeclined(voided);
      return { status: voided.status, refundId: null };
    },
  };
}

export type PaymentActivities = ReturnType<typeof createPaymentActivities>;
