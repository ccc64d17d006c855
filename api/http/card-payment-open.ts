/**
 * Opening a gateway A payment hands the buyer's browser what the card form needs (public key, amount, reference).
 * Nothing about it can move money: a card is charged only through the checkout's `chargeCard` update, and PSE only
 * through `openPse`. So when the sale plainly pays through gateway A, the API answers from the database and records
 * the opened attempt itself, sparing the checkout a workflow task per purchase (issue 14). Every other case (gateway B,
 * whose button lets the buyer pay at the gateway, or a sale that already has a gateway B attempt) goes through the
 * checkout as before, with its refusals.
 */
import type { EntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../domain/errors.js';
import { gatewayAChargesIn, saleGateway } from '../../domain/gateways.js';
import { isCurrencyCode, toMajorUnits } from '../../domain/money.js';
import type { IEvent } from '../../entities/event.js';
import { newId } from '../../entities/ids.js';
import { Event, Workspace } from '../../entities/index.js';
import type { ISale } from '../../entities/sale.js';
import type { IWorkspace } from '../../entities/workspace.js';

export interface GatewayACardConfiguration {
  publicKey: string;
  /** Major units: gateway A's payment brick takes pesos, not cents. */
  amount: number;
  currency: string;
  reference: string;
  payerEmail: string;
}

/**
 * The card form's configuration for a PENDING sale that pays through gateway A, with its OPEN attempt recorded; null
 * when the checkout must decide (the caller then runs the `openPayment` update).
 */
export async function openGatewayACardPayment(
  em: EntityManager,
  sale: ISale,
  publicKey: string,
): Promise<GatewayACardConfiguration | null> {
  if (!isCurrencyCode(sale.currency)) return null;
  if (sale.paymentProvider && sale.paymentProvider !== 'GATEWAY_A') return null;
  // The event (deleted or not) and the workspace decide the gateway: one round trip for both.
  const found = await em.execute<{ event: EntityData<IEvent>; workspace: EntityData<IWorkspace> }[]>(
    'select row_to_json(e) as event, row_to_json(w) as workspace from events e join workspaces w on w.id = ? where e.id = ?',
    [sale.workspace, sale.event],
  );
  const row = found[0];
  if (!row || saleGateway(em.map(Event, row.event), em.map(Workspace, row.workspace)) !== 'GATEWAY_A') return null;
  // Only while no gateway B attempt exists: a sale never pays through two gateways at once.
  const rows = await em.execute<{ id: string }[]>(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, status_detail, amount, dedupe_key, note, created_at)
     select ?, ?, 'GATEWAY_A', 'OPEN', null, 'opened', null, ?, null, null, now()
      where not exists (select 1 from payment_attempts where sale_id = ? and gateway = 'GATEWAY_B')
     returning id`,
    [newId(), sale.id, sale.total, sale.id],
  );
  if (rows.length === 0) return null;
  return {
    publicKey,
    amount: toMajorUnits(sale.total, sale.currency),
    currency: sale.currency,
    reference: sale.reference,
    payerEmail: sale.buyerEmail,
  };
}

/**
 * Refuses a gateway A rail (card form, card charge, PSE) for a sale priced in a currency gateway A's merchant account
 * does not charge in (GATEWAY_A_CURRENCIES): gateway A would charge the amount in its own currency. A sale in an
 * accepted currency costs no query; one in another currency is refused only when it pays through gateway A (gateway B
 * charges its own currencies).
 */
export async function assertGatewayAChargesSale(em: EntityManager, sale: ISale, acceptedCurrencies: string) {
  if (gatewayAChargesIn(sale.currency, acceptedCurrencies)) return;
  if (sale.paymentProvider === 'GATEWAY_B') return;
  const found = await em.execute<{ event: EntityData<IEvent>; workspace: EntityData<IWorkspace> }[]>(
    'select row_to_json(e) as event, row_to_json(w) as workspace from events e join workspaces w on w.id = ? where e.id = ?',
    [sale.workspace, sale.event],
  );
  const row = found[0];
  if (row && saleGateway(em.map(Event, row.event), em.map(Workspace, row.workspace)) !== 'GATEWAY_A') return;
  throw new AppError(
    'PAYMENT_UNAVAILABLE',
    `This sale is priced in ${sale.currency}, which the card and PSE gateway does not charge in`,
    { details: { reason: 'currency_not_supported', currency: sale.currency } },
  );
}
