import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type Env, providerUrls } from '../../../config/env.js';
import { escapeHtml } from '../../../domain/html.js';
import { isCurrencyCode, toMajorUnits } from '../../../domain/money.js';
import type { ISale } from '../../../entities/sale.js';
import { isGatewayBCurrency } from '../../../integrations/gateway-b/amounts.js';
import {
  GATEWAY_B_BUTTON_LIBRARY,
  type GatewayBButton,
  gatewayBButton,
  sandboxButtonLibrary,
} from '../../../integrations/gateway-b/button.js';
import { gatewayBIntegritySignature } from '../../../integrations/gateway-b/signature.js';
import { askCheckoutToCheckPayment } from '../../http/payment-check.js';
import { publicAccess } from '../../http/route-access.js';
import { publicStatusOf } from '../../http/sale-views.js';
import { hostedPaymentOrder, orderEventName, orderPaymentPageUrl } from '../../services/public-orders.js';
import type { ApiServices } from '../../services.js';

/**
 * The hosted payment page of a storefront order charged through gateway B: the gateway's payment button (Bold-like)
 * has to be mounted by a page of ours, since it is configured in the browser and signed on the server. POST /orders
 * opened the payment through the sale's checkout before handing out this page's address, so the checkout already
 * knows the attempt and asks the gateway about it; the page itself changes nothing and can be reloaded at will.
 */

/** The button script browsers load: configured, the real gateway's when one is configured, else the sandbox's. */
export function buttonScriptUrl(env: Env): string {
  if (env.GATEWAY_B_BUTTON_SCRIPT_URL) return env.GATEWAY_B_BUTTON_SCRIPT_URL;
  return env.GATEWAY_B_BASE_URL ? GATEWAY_B_BUTTON_LIBRARY : sandboxButtonLibrary(providerUrls(env).gatewayB);
}

function formatMoney(total: number, currency: string): string {
  if (!isCurrencyCode(currency)) return `${total} ${currency}`;
  return new Intl.NumberFormat('es-CO', { style: 'currency', currency }).format(toMajorUnits(total, currency));
}

/** The button's tag: every value is public (the integrity signature binds them; the secret key never leaves us). */
function buttonTag(button: GatewayBButton, scriptUrl: string): string {
  const attributes: Array<[string, string]> = [
    ['data-bold-button', 'dark-L'],
    ['data-order-id', button.orderId],
    ['data-currency', button.currency],
    ['data-amount', String(button.amount)],
    ['data-api-key', button.apiKey],
    ['data-integrity-signature', button.integritySignature],
    ['data-redirection-url', button.redirectionUrl],
    ['data-description', button.description],
    ['data-expiration-date', String(button.expirationDate)],
    ['data-render-mode', button.renderMode],
    ['src', scriptUrl],
  ];
  return `<script ${attributes.map(([name, value]) => `${name}="${escapeHtml(value)}"`).join(' ')}></script>`;
}

const STATUS_TEXT = {
  pending: 'Waiting for your payment.',
  paid: 'Payment received. Your tickets were emailed to you.',
  expired: 'This reservation expired before it was paid. Place a new order to buy these tickets.',
  cancelled: 'This order was cancelled.',
} as const;

function page(input: { title: string; sale: ISale; status: keyof typeof STATUS_TEXT; body: string }): string {
  const { sale } = input;
  return (
    `<!doctype html><html lang="es"><head><meta charset="utf-8"><title>${escapeHtml(input.title)}</title>` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem}' +
    'dt{font-weight:600}dd{margin:0 0 .5rem}</style></head><body><main>' +
    `<h1>${escapeHtml(input.title)}</h1>` +
    `<dl><dt>Order</dt><dd id="reference">${escapeHtml(sale.reference)}</dd>` +
    `<dt>Total</dt><dd id="total" data-total="${sale.total}" data-currency="${escapeHtml(sale.currency)}">` +
    `${escapeHtml(formatMoney(sale.total, sale.currency))}</dd></dl>` +
    `<p id="order-status" data-status="${input.status}">${escapeHtml(STATUS_TEXT[input.status])}</p>` +
    `${input.body}</main></body></html>`
  );
}

export const orderPaymentPageRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  app.get(
    '/orders/:id/pay',
    {
      config: publicAccess(),
      schema: {
        tags: ['orders'],
        summary: 'Hosted payment page of an order charged through gateway B (HTML with the gateway B payment button)',
        description:
          'The checkoutUrl of POST /orders for events charged through gateway B. A browser page: while the order is ' +
          "pending it shows gateway B's payment button for the order's exact amount; afterwards the order's status. " +
          'The gateway sends the buyer back here after paying; the status shown is read from the order, never from ' +
          'the return address. Orders that pay at gateway A have no such page (404).',
        params: z.object({ id: z.string().min(1).max(100) }),
        response: {
          200: {
            description: 'The page',
            content: { 'text/html': { schema: z.string().meta({ description: 'HTML document' }) } },
          },
        },
      },
    },
    async (request, reply) => {
      const sale = await hostedPaymentOrder(request.em, request.params.id);
      // Back from the gateway, the buyer looks here first: the checkout asks the gateway now, not at its next pull.
      askCheckoutToCheckPayment(services, request.log, sale);
      const title = (await orderEventName(request.em, sale)) ?? 'Your order';
      const view = publicStatusOf(sale);
      let body = '';
      if (
        view.status === 'pending' &&
        sale.expiresAt &&
        isCurrencyCode(sale.currency) &&
        isGatewayBCurrency(sale.currency)
      ) {
        const env = services.env;
        const button = gatewayBButton({
          reference: sale.reference,
          total: sale.total,
          currency: sale.currency,
          title,
          expiresAtMs: sale.expiresAt.getTime(),
          redirectionUrl: orderPaymentPageUrl(env, sale.id),
          apiKey: env.GATEWAY_B_API_KEY,
          renderMode: env.GATEWAY_B_RENDER_MODE,
          sign: (signed) => gatewayBIntegritySignature({ ...signed, secretKey: env.GATEWAY_B_SECRET_KEY }),
        });
        body =
          `<p>Pay before <time id="expires-at" datetime="${sale.expiresAt.toISOString()}">` +
          `${escapeHtml(sale.expiresAt.toISOString())}</time>.</p>${buttonTag(button, buttonScriptUrl(env))}`;
      }
      return (
        reply
          .type('text/html; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('x-content-type-options', 'nosniff')
          // The gateway's button refuses to work inside a frame; nobody else may frame this page either.
          .header('x-frame-options', 'DENY')
          .header('content-security-policy', "frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
          .send(page({ title, sale, status: view.status, body }))
      );
    },
  );
};
