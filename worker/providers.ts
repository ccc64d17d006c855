import { ApplicationFailure } from '@temporalio/activity';
import type { GatewayAPort, GatewayBPort, MailPort, Providers, SeatMapPort } from '../activities/ports.js';
import { type Env, providerUrls } from '../config/env.js';
import { isCurrencyCode } from '../domain/money.js';
import { isProviderError } from '../integrations/errors.js';
import { GatewayAClient } from '../integrations/gateway-a/client.js';
import { GatewayBClient } from '../integrations/gateway-b/client.js';
import { gatewayBIntegritySignature } from '../integrations/gateway-b/signature.js';
import { MailClient, type MailClientOptions } from '../integrations/mail/client.js';
import { SeatMapClient } from '../integrations/seatmap/client.js';

/**
 * A provider's refusal that no retry can change (bad token, unknown payment) ends the activity at once; network
 * failures and 5xx answers stay retryable so Temporal retries them with backoff.
 */
async function classify<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isProviderError(error) && !error.retryable) {
      throw ApplicationFailure.nonRetryable(
        error.message,
        `${error.provider}:${error.code ?? error.status ?? 'error'}`,
      );
    }
    throw error;
  }
}

function currencyOf(code: string) {
  if (!isCurrencyCode(code)) throw ApplicationFailure.nonRetryable(`unsupported currency ${code}`);
  return code;
}

/**
 * The SMTP transport SMTP_TLS asks for: plain (the sandbox, a relay on a private network), STARTTLS required (the
 * send fails rather than fall back to clear text when the server does not offer it), or implicit TLS; with the login
 * when SMTP_USER is set (config/env.ts refuses a login without TLS).
 */
export function mailClientOptions(
  env: Pick<
    Env,
    'SMTP_HOST' | 'SMTP_PORT' | 'MAIL_FROM' | 'SMTP_TLS' | 'SMTP_USER' | 'SMTP_PASSWORD' | 'SMTP_TLS_CA_CERT'
  >,
): MailClientOptions {
  return {
    host: env.SMTP_HOST,
    port: env.SMTP_PORT,
    from: env.MAIL_FROM,
    secure: env.SMTP_TLS === 'implicit',
    ignoreTls: env.SMTP_TLS === 'none',
    requireTls: env.SMTP_TLS === 'starttls',
    ...(env.SMTP_TLS_CA_CERT ? { tlsCa: env.SMTP_TLS_CA_CERT } : {}),
    ...(env.SMTP_USER !== undefined && env.SMTP_PASSWORD !== undefined
      ? { auth: { user: env.SMTP_USER, pass: env.SMTP_PASSWORD } }
      : {}),
  };
}

/** Wires the integration clients to the shapes the activities use (activities/ports.ts). */
export function createProviders(env: Env): Providers & { close(): void } {
  const urls = providerUrls(env);
  const a = new GatewayAClient({
    baseUrl: urls.gatewayA,
    accessToken: env.GATEWAY_A_ACCESS_TOKEN,
    publicKey: env.GATEWAY_A_PUBLIC_KEY,
  });
  const b = new GatewayBClient({ baseUrl: urls.gatewayB, apiKey: env.GATEWAY_B_API_KEY });
  const mailClient = new MailClient(mailClientOptions(env));
  const seats = new SeatMapClient({ baseUrl: urls.seatMap, secretKey: env.SEATMAP_SECRET_KEY });

  const gatewayA: GatewayAPort = {
    publicKey: env.GATEWAY_A_PUBLIC_KEY,
    chargeCard: (input) =>
      classify(() =>
        a.createPayment({
          idempotencyKey: input.idempotencyKey,
          cardToken: input.cardToken,
          amount: input.amount,
          currency: currencyOf(input.currency),
          description: input.description,
          installments: input.installments,
          paymentMethodId: input.paymentMethodId,
          payerEmail: input.payerEmail,
          externalReference: input.reference,
          notificationUrl: input.notificationUrl,
        }),
      ),
    createPsePreference: (input) =>
      classify(async () => {
        const preference = await a.createPsePreference({
          idempotencyKey: input.idempotencyKey,
          title: input.title,
          amount: input.amount,
          currency: currencyOf(input.currency),
          reference: input.reference,
          payerEmail: input.payerEmail,
          notificationUrl: input.notificationUrl,
          returnUrl: input.returnUrl,
          expiresAt: input.expiresAt,
        });
        return { preferenceId: preference.id, redirectUrl: preference.redirectUrl };
      }),
    createCheckoutPreference: (input) =>
      classify(async () => {
        const preference = await a.createCheckoutPreference({ ...input, currency: currencyOf(input.currency) });
        return { preferenceId: preference.id, redirectUrl: preference.redirectUrl };
      }),
    expirePreference: (preferenceId) => classify(() => a.expirePreference(preferenceId)),
    getPayment: (paymentId) => classify(() => a.getPayment(paymentId)),
    findPaymentsByReference: (reference) => classify(() => a.searchPaymentsByReference(reference)),
    refund: (input) =>
      classify(async () => {
        const refund = await a.refundPayment({ paymentId: input.paymentId, idempotencyKey: input.idempotencyKey });
        return { refundId: refund.id, status: refund.status };
      }),
  };

  const gatewayB: GatewayBPort = {
    apiKey: env.GATEWAY_B_API_KEY,
    renderMode: env.GATEWAY_B_RENDER_MODE,
    integritySignature: (input) => gatewayBIntegritySignature({ ...input, secretKey: env.GATEWAY_B_SECRET_KEY }),
    paymentStatus: (orderId) => classify(() => b.paymentStatus(orderId)),
    void: (input) =>
      classify(async () => {
        const result = await b.voidPayment({
          orderId: input.orderId,
          transactionId: input.transactionId,
          idempotencyKey: input.idempotencyKey,
        });
        return { status: result.status };
      }),
  };

  const mail: MailPort = { send: (message) => classify(() => mailClient.send(message)) };

  const seatMap: SeatMapPort = {
    hold: (input) => classify(async () => void (await seats.hold(input))),
    release: (input) => classify(async () => void (await seats.release(input))),
    book: (input) => classify(async () => void (await seats.book(input))),
    createHoldToken: (minutes) =>
      classify(async () => {
        const token = await seats.createHoldToken(minutes);
        return { holdToken: token.holdToken, expiresAtMs: Date.parse(token.expiresAt) };
      }),
    getHoldToken: (holdToken) =>
      classify(async () => {
        const token = await seats.getHoldToken(holdToken);
        return token ? { holdToken: token.holdToken, expiresAtMs: Date.parse(token.expiresAt) } : null;
      }),
    updateHoldTokenExpiry: (holdToken, minutes) =>
      classify(async () => {
        const token = await seats.updateHoldTokenExpiry(holdToken, minutes);
        return { expiresAtMs: Date.parse(token.expiresAt) };
      }),
    objectStatuses: (eventKey, labels) => classify(() => seats.objectStatuses(eventKey, labels)),
  };

  return { gatewayA, gatewayB, mail, seatMap, close: () => mailClient.close() };
}
