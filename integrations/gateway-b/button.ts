import type { CurrencyCode } from '../../domain/money.js';
import { toGatewayBAmount } from './amounts.js';

/**
 * The configuration of gateway B's payment button (Bold-style) for one sale. Built in one place, so the
 * configuration the customer API returns and the hosted payment page the storefront renders charge the same
 * amount under the same signature. Pure: the secret key stays with the caller's `sign`.
 */
export interface GatewayBButton {
  /** The merchant's order id: the sale reference, which the webhook and the voucher API name again. */
  orderId: string;
  /** The integer the button charges, in gateway B's unit (whole pesos for COP, cents for USD; see amounts.ts). */
  amount: number;
  currency: string;
  /** Public identity key; safe in a browser. */
  apiKey: string;
  integritySignature: string;
  renderMode: string;
  redirectionUrl: string;
  description: string;
  /** Epoch nanoseconds, as the gateway expects. */
  expirationDate: number;
}

export interface GatewayBButtonInput {
  reference: string;
  /** Minor units of `currency`. */
  total: number;
  currency: CurrencyCode;
  title: string;
  expiresAtMs: number;
  redirectionUrl: string;
  apiKey: string;
  renderMode: string;
  /** `hex(sha256(orderId + amount + currency + secretKey))`, computed where the secret key lives. */
  sign: (input: { orderId: string; amount: number; currency: string }) => string;
}

export function gatewayBButton(input: GatewayBButtonInput): GatewayBButton {
  const amount = toGatewayBAmount(input.total, input.currency);
  return {
    orderId: input.reference,
    amount,
    currency: input.currency,
    apiKey: input.apiKey,
    integritySignature: input.sign({ orderId: input.reference, amount, currency: input.currency }),
    renderMode: input.renderMode,
    redirectionUrl: input.redirectionUrl,
    description: `${input.title} · ${input.reference}`.slice(0, 100),
    // ms × 10⁶ has at most 13 significant digits, so the number prints exactly.
    expirationDate: input.expiresAtMs * 1_000_000,
  };
}

/** Where Bold serves the script that turns `<script data-bold-button …>` into its payment button. */
export const GATEWAY_B_BUTTON_LIBRARY = 'https://checkout.bold.co/library/boldPaymentButton.js';

/** The sandbox's stand-in for that script, under its gateway B base URL (`<sandbox>/gateway-b`). */
export const sandboxButtonLibrary = (gatewayBBaseUrl: string): string =>
  `${gatewayBBaseUrl.replace(/\/$/, '')}/library/boldPaymentButton.js`;
