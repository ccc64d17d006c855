/**
 * Settlement: what the organizer is owed for one ended event date, computed from the amounts stored on each
 * CONFIRMED sale at sale time (never from today's fee settings), plus adjustments carried from earlier settlements.
 * This is the only settlement formula: domain/pricing.ts computes what each sale stores, this module what those
 * amounts owe the organizer.
 *
 * Rules (README "Settlements"):
 * - gross = Σ (subtotal − discountAmount): the ticket revenue that belongs to the organizer.
 * - organizerServiceFee = Σ fees the organizer absorbed; organizerIva = Σ per sale round½↑(absorbed fee × 19 %),
 *   because the platform invoices the organizer for the absorbed fee with IVA.
 * - gatewayCosts = Σ per sale round½↑(total × GATEWAY_COSTS[provider]); 0 for a free sale or one without a provider.
 * - costs = organizerServiceFee + organizerIva + gatewayCosts.
 * - collectedByOrganizer = Σ total of sales no gateway took money for (box office, POS): the organizer already holds
 *   that cash, buyer fees and IVA included, so it is deducted instead of paid out again.
 * - each sale's net = its gross − its costs − what the organizer collected for it (signed).
 * - adjustments: signed amounts carried in (a refund after an earlier settlement was sent is −(its settled net)).
 * - netPayable = gross − costs − collectedByOrganizer + adjustmentsTotal = Σ per-sale nets + adjustmentsTotal,
 *   exactly, because every rounding happens per sale.
 * - Buyer service fees and buyer IVA are the platform's revenue: shown for information, never paid out.
 *
 * Reports replicate the per-sale formulas in SQL from the exported constants (GATEWAY_COSTS, IVA_BPS).
 * Pure: no I/O, no clock, no randomness. Safe to import from Temporal workflow code.
 */
import { addMinor, applyBps, assertMinorUnits, type MinorUnits, multiplyMinor, subtractMinor } from './money.js';
import { IVA_BPS } from './pricing.js';

export type SettlementGateway = 'GATEWAY_A' | 'GATEWAY_B';

/** What each gateway charges the platform per payment, in basis points of the amount the buyer paid. */
export const GATEWAY_COSTS: Readonly<Record<SettlementGateway, number>> = Object.freeze({
  GATEWAY_A: 329,
  GATEWAY_B: 299,
});

/** The gateway's cost for one payment: round½↑(total × bps); nothing when no money moved through a gateway. */
export function gatewayCost(total: MinorUnits, provider: SettlementGateway | null): MinorUnits {
  assertMinorUnits(total, 'total');
  if (provider === null || total === 0) return 0;
  return applyBps(total, GATEWAY_COSTS[provider]);
}

/** Money the organizer took itself for a sale: everything the buyer paid when no gateway was involved. */
export function collectedByOrganizerOf(total: MinorUnits, provider: SettlementGateway | null): MinorUnits {
  assertMinorUnits(total, 'total');
  return provider === null ? total : 0;
}

/** IVA the platform invoices the organizer on the service fee it absorbed (19 %, rounded half up per sale). */
export function organizerIvaOf(organizerServiceFee: MinorUnits): MinorUnits {
  return applyBps(organizerServiceFee, IVA_BPS);
}

export interface SettledSaleItem {
  ticketTypeId: string;
  ticketTypeName: string;
  quantity: number;
  /** List price of one ticket as sold. */
  unitPrice: MinorUnits;
}

/** One CONFIRMED sale's stored amounts, as the settlement reads them. */
export interface SettledSale {
  saleId: string;
  quantity: number;
  subtotal: MinorUnits;
  discountAmount: MinorUnits;
  serviceFee: MinorUnits;
  iva: MinorUnits;
  total: MinorUnits;
  organizerServiceFee: MinorUnits;
  paymentProvider: SettlementGateway | null;
  items: SettledSaleItem[];
}

export interface SettlementAdjustmentInput {
  saleId: string;
  /** Signed minor units added to the net (negative for a refund). */
  amount: number;
  reason: string;
}

/** One line of the statement: the units of a ticket type sold at one list price. */
export interface SettlementLine {
  ticketTypeId: string;
  ticketTypeName: string;
  unitPrice: MinorUnits;
  quantity: number;
  /** quantity × unitPrice (before discounts). */
  subtotal: MinorUnits;
}

export interface SettlementSaleNet {
  saleId: string;
  gross: MinorUnits;
  costs: MinorUnits;
  /** What the organizer collected itself (box office). */
  collectedByOrganizer: MinorUnits;
  /** gross − costs − collectedByOrganizer, signed. */
  net: number;
}

export interface SettlementFigures {
  salesCount: number;
  unitsSold: number;
  /** Σ subtotal: list price of every ticket sold. */
  listSubtotal: MinorUnits;
  discounts: MinorUnits;
  /** Σ (subtotal − discountAmount). */
  gross: MinorUnits;
  /** Σ buyer service fees (platform revenue, informational). */
  buyerServiceFees: MinorUnits;
  /** Σ buyer IVA (platform revenue, informational). */
  buyerIva: MinorUnits;
  /** Σ total: what buyers paid. */
  collected: MinorUnits;
  organizerServiceFee: MinorUnits;
  organizerIva: MinorUnits;
  gatewayCosts: MinorUnits;
  /** organizerServiceFee + organizerIva + gatewayCosts. */
  costs: MinorUnits;
  /** Σ total of sales paid without a gateway (box office): cash the organizer already holds. */
  collectedByOrganizer: MinorUnits;
  adjustments: SettlementAdjustmentInput[];
  /** Σ adjustment amounts, signed. */
  adjustmentsTotal: number;
  /** gross − costs − collectedByOrganizer + adjustmentsTotal, signed (negative means the organizer owes). */
  netPayable: number;
  lines: SettlementLine[];
  perSale: SettlementSaleNet[];
}

/** A sale's own gross, costs and net; throws when its stored amounts do not add up. */
export function settledSaleNet(sale: SettledSale): SettlementSaleNet {
  checkSale(sale);
  const gross = subtractMinor(sale.subtotal, sale.discountAmount);
  const costs = addMinor(
    sale.organizerServiceFee,
    organizerIvaOf(sale.organizerServiceFee),
    gatewayCost(sale.total, sale.paymentProvider),
  );
  const collectedByOrganizer = collectedByOrganizerOf(sale.total, sale.paymentProvider);
  return { saleId: sale.saleId, gross, costs, collectedByOrganizer, net: gross - costs - collectedByOrganizer };
}

/**
 * A corrupt row must fail loudly instead of skewing a payout: total = subtotal − discount + fee + iva, the items
 * add up to the sale's quantity and list subtotal, and the discount never exceeds the subtotal.
 */
function checkSale(sale: SettledSale): void {
  const revenue = subtractMinor(sale.subtotal, sale.discountAmount);
  if (addMinor(revenue, sale.serviceFee, sale.iva) !== sale.total) {
    throw new RangeError(
      `sale ${sale.saleId} amounts do not add up: ${sale.subtotal} − ${sale.discountAmount} + ${sale.serviceFee} + ${sale.iva} ≠ ${sale.total}`,
    );
  }
  assertMinorUnits(sale.organizerServiceFee, 'organizerServiceFee');
  let units = 0;
  let listed = 0;
  for (const item of sale.items) {
    units = addMinor(units, item.quantity);
    listed = addMinor(listed, multiplyMinor(item.unitPrice, item.quantity));
  }
  if (units !== sale.quantity || listed !== sale.subtotal) {
    throw new RangeError(
      `sale ${sale.saleId} items do not add up: ${units} units for ${sale.quantity}, ${listed} listed for ${sale.subtotal}`,
    );
  }
}

/** The whole statement for a set of CONFIRMED sales (the caller filters by status) and carried adjustments. */
export function settlementFigures(
  sales: readonly SettledSale[],
  adjustments: readonly SettlementAdjustmentInput[],
): SettlementFigures {
  let unitsSold = 0;
  let listSubtotal = 0;
  let discounts = 0;
  let gross = 0;
  let buyerServiceFees = 0;
  let buyerIva = 0;
  let collected = 0;
  let organizerServiceFee = 0;
  let organizerIva = 0;
  let gatewayCosts = 0;
  let collectedByOrganizer = 0;
  const perSale: SettlementSaleNet[] = [];
  const lines = new Map<string, SettlementLine>();

  for (const sale of sales) {
    const net = settledSaleNet(sale);
    perSale.push(net);
    unitsSold = addMinor(unitsSold, sale.quantity);
    listSubtotal = addMinor(listSubtotal, sale.subtotal);
    discounts = addMinor(discounts, sale.discountAmount);
    gross = addMinor(gross, net.gross);
    buyerServiceFees = addMinor(buyerServiceFees, sale.serviceFee);
    buyerIva = addMinor(buyerIva, sale.iva);
    collected = addMinor(collected, sale.total);
    organizerServiceFee = addMinor(organizerServiceFee, sale.organizerServiceFee);
    organizerIva = addMinor(organizerIva, organizerIvaOf(sale.organizerServiceFee));
    gatewayCosts = addMinor(gatewayCosts, gatewayCost(sale.total, sale.paymentProvider));
    collectedByOrganizer = addMinor(collectedByOrganizer, net.collectedByOrganizer);
    for (const item of sale.items) {
      const key = `${item.ticketTypeId}:${item.unitPrice}`;
      const line = lines.get(key) ?? {
        ticketTypeId: item.ticketTypeId,
        ticketTypeName: item.ticketTypeName,
        unitPrice: item.unitPrice,
        quantity: 0,
        subtotal: 0,
      };
      line.quantity = addMinor(line.quantity, item.quantity);
      line.subtotal = addMinor(line.subtotal, multiplyMinor(item.unitPrice, item.quantity));
      lines.set(key, line);
    }
  }

  let adjustmentsTotal = 0;
  for (const adjustment of adjustments) {
    if (!Number.isSafeInteger(adjustment.amount)) {
      throw new RangeError(`adjustment for sale ${adjustment.saleId} is not an integer amount`);
    }
    adjustmentsTotal += adjustment.amount;
  }
  if (!Number.isSafeInteger(adjustmentsTotal)) throw new RangeError('adjustments total is not a safe integer');

  const costs = addMinor(organizerServiceFee, organizerIva, gatewayCosts);
  const sortedLines = [...lines.values()].sort(
    (a, b) =>
      a.ticketTypeName.localeCompare(b.ticketTypeName, 'en') ||
      a.ticketTypeId.localeCompare(b.ticketTypeId, 'en') ||
      a.unitPrice - b.unitPrice,
  );
  return {
    salesCount: perSale.length,
    unitsSold,
    listSubtotal,
    discounts,
    gross,
    buyerServiceFees,
    buyerIva,
    collected,
    organizerServiceFee,
    organizerIva,
    gatewayCosts,
    costs,
    collectedByOrganizer,
    adjustments: adjustments.map((each) => ({ ...each })),
    adjustmentsTotal,
    netPayable: gross - costs - collectedByOrganizer + adjustmentsTotal,
    lines: sortedLines,
    perSale,
  };
}

// ---------------------------------------------------------------- payout allocations

/** How a payout is split over the workspace's bank accounts (whole percents summing to 100). */
export interface PayoutAllocation {
  bankAccountId: string;
  percentage: number;
}

/** A workspace's active payout account and its default share. */
export interface PayoutShare {
  id: string;
  defaultPercentage: number;
}

/** The accounts' own default shares, the allocations of a settlement approved without any. */
export const defaultAllocations = (accounts: readonly PayoutShare[]): PayoutAllocation[] =>
  accounts
    .filter((account) => account.defaultPercentage > 0)
    .map((account) => ({
      bankAccountId: account.id,
      percentage: account.defaultPercentage,
    }));

/**
 * Why `allocations` cannot pay out this workspace's settlement, or null when they can: each names one of its active
 * payout accounts once, with a whole percent from 1 to 100, and together they sum to exactly 100.
 */
export function allocationProblem(
  allocations: readonly PayoutAllocation[],
  accounts: readonly PayoutShare[],
): string | null {
  if (accounts.length === 0) return 'no_payout_accounts';
  if (allocations.length === 0) return 'no_allocations';
  const known = new Set(accounts.map((account) => account.id));
  const seen = new Set<string>();
  let sum = 0;
  for (const allocation of allocations) {
    if (!Number.isInteger(allocation.percentage) || allocation.percentage < 1 || allocation.percentage > 100) {
      return 'percentage_not_whole_1_to_100';
    }
    if (!known.has(allocation.bankAccountId)) return 'unknown_payout_account';
    if (seen.has(allocation.bankAccountId)) return 'duplicate_payout_account';
    seen.add(allocation.bankAccountId);
    sum += allocation.percentage;
  }
  return sum === 100 ? null : 'percentages_do_not_sum_to_100';
}
