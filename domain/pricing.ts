/**
 * Pricing: the single place that computes money for quotes (public availability) and checkout charges (the sale's
 * subtotal, discountAmount, serviceFee, iva, total, organizerServiceFee). Nothing else multiplies a price: reports
 * and settlements read the amounts stored on each sale, which this module computed.
 *
 * Rules
 * 1. All amounts are integer minor units (see money.ts). The only rounding is `mulDivRoundHalfUp` (round half up).
 *    Fees and IVA are rounded per ticket, never on a sum, so each order fee is an exact multiple of a per-ticket
 *    amount; a discount code's percentage is rounded once, on the order's ticket subtotal; a member discount is
 *    rounded per ticket (rule 8).
 * 2. Fee policy (per workspace, optionally overridden per ticket type, see `resolveFeePolicy`):
 *    - service fee per ticket = round½↑(list price × serviceFeeBps / 10 000) + serviceFeeFixed;
 *    - feeAbsorbedByOrganizer: the buyer pays no service fee; the organizer pays it out of the settlement
 *      (`organizerServiceFee`);
 *    - seatingSurcharge: a flat amount per seat of a numbered ticket type, always paid by the buyer, even when the
 *      organizer absorbs the service fee. It is part of the buyer service fee;
 *    - IVA: 19 % (`IVA_BPS` = 1900) of the buyer service fee (seating surcharge included), rounded half up per ticket.
 * 3. Unit quote (the contract's PublicTicketType): buyerServiceFee = (absorbed ? 0 : service fee) + surcharge;
 *    buyerTotal = price + buyerServiceFee + iva, exactly. A ticket type whose list price is 0 carries no fee,
 *    surcharge or IVA (a free ticket is free), which is what checkout charges for it (rule 5).
 * 4. Order: subtotal = quantity × list price; fees and IVA are per ticket on the list price and scale exactly with
 *    quantity: serviceFee = quantity × unit buyerServiceFee, iva = quantity × unit iva. Without a discount,
 *    total = quantity × unit buyerTotal, so a quote always equals the charge.
 * 5. Discount: applies to the ticket subtotal only, never to fees or IVA, and never exceeds the subtotal.
 *    PERCENT: value 0–100 (at most two decimals), discountAmount = round½↑(subtotal × value / 100).
 *    FIXED: value in minor units per order, discountAmount = min(value, subtotal).
 *    When the discounted subtotal is 0 the order is free: no service fee, no surcharge, no IVA, total 0, free true
 *    (the sale is confirmed without a gateway).
 * 6. total = subtotal − discountAmount + serviceFee + iva ≥ 0.
 * 7. Settlement is not computed here: domain/settlement.ts is the one formula for what an organizer is owed (gateway
 *    costs, the absorbed fee and its IVA), over the amounts these rules stored on each CONFIRMED sale.
 * 8. Member discount (`memberDiscountPercent`, the plan's discountPercent frozen for the member's current period,
 *    0–100 with at most two decimals): per ticket on the list price, discountPerTicket = round½↑(price × percent /
 *    100), never on fees or IVA. Rounding per ticket (not on the subtotal) is what makes the member quote exact:
 *    order discount = quantity × discountPerTicket, so quantity × member buyerTotal (`quoteMemberUnit`) is the
 *    charge. Member buyerTotal = buyerTotal − discountPerTicket, or 0 when the discounted price is 0 (rule 5's free
 *    rule, per ticket).
 * 9. A member discount and a discount code never stack: the order gets whichever takes more off its ticket
 *    subtotal. A tie goes to the member discount (the buyer keeps the code's use), except that a code making the
 *    order free wins a tie (a complimentary code stays the reason a free sale exists). `OrderPrice.appliedDiscount`
 *    says which one was used, so checkout spends a code's use only when the code applied.
 * 10. An order of several items (`priceOrderItems`): each item priced by rules 4–9 on its own, the sale's amounts
 *    are the sums; free only when every item is. Discount codes apply to one-item orders only.
 *
 * Pure: no I/O, no clock. Safe to import from Temporal workflow code.
 */
import {
  addMinor,
  applyBps,
  assertMinorUnits,
  BPS_PER_UNIT,
  type MinorUnits,
  multiplyMinor,
  percentToBps,
  subtractMinor,
} from './money.js';

/** IVA (Colombian VAT) on the service fee: 19 %. */
export const IVA_BPS = 1900;

export interface FeePolicy {
  /** Service fee as basis points of the unit list price (1000 = 10 %), 0–10 000. */
  readonly serviceFeeBps: number;
  /** Fixed service fee per ticket, minor units. */
  readonly serviceFeeFixed: MinorUnits;
  /** The buyer pays no service fee; the organizer pays it from the settlement. */
  readonly feeAbsorbedByOrganizer: boolean;
  /** Flat surcharge per seat of a numbered ticket type, minor units; always paid by the buyer. */
  readonly seatingSurcharge: MinorUnits;
}

/** A policy with no fees at all (complimentary channels, tests). */
export const NO_FEES: FeePolicy = Object.freeze({
  serviceFeeBps: 0,
  serviceFeeFixed: 0,
  feeAbsorbedByOrganizer: false,
  seatingSurcharge: 0,
});

/** Throws a RangeError when a field of the policy is out of range. */
export function assertFeePolicy(policy: FeePolicy): FeePolicy {
  if (!Number.isSafeInteger(policy.serviceFeeBps) || policy.serviceFeeBps < 0 || policy.serviceFeeBps > BPS_PER_UNIT) {
    throw new RangeError(`serviceFeeBps must be an integer between 0 and ${BPS_PER_UNIT}, got ${policy.serviceFeeBps}`);
  }
  assertMinorUnits(policy.serviceFeeFixed, 'serviceFeeFixed');
  assertMinorUnits(policy.seatingSurcharge, 'seatingSurcharge');
  return policy;
}

/** The ticket type's own policy fields, where set, over the workspace default. */
export function resolveFeePolicy(
  workspaceDefault: FeePolicy,
  ticketTypeOverride?: Partial<FeePolicy> | null,
): FeePolicy {
  const merged: FeePolicy = {
    serviceFeeBps: ticketTypeOverride?.serviceFeeBps ?? workspaceDefault.serviceFeeBps,
    serviceFeeFixed: ticketTypeOverride?.serviceFeeFixed ?? workspaceDefault.serviceFeeFixed,
    feeAbsorbedByOrganizer: ticketTypeOverride?.feeAbsorbedByOrganizer ?? workspaceDefault.feeAbsorbedByOrganizer,
    seatingSurcharge: ticketTypeOverride?.seatingSurcharge ?? workspaceDefault.seatingSurcharge,
  };
  return assertFeePolicy(merged);
}

/** Per-ticket amounts, as the public availability shows them (PublicTicketType). */
export interface UnitQuote {
  /** List price. */
  readonly price: MinorUnits;
  /** Fee paid by the buyer, seating surcharge included. */
  readonly buyerServiceFee: MinorUnits;
  /** Part of buyerServiceFee that is the seating surcharge (0 for general admission). */
  readonly seatingSurcharge: MinorUnits;
  /** IVA on buyerServiceFee. */
  readonly iva: MinorUnits;
  /** price + buyerServiceFee + iva: what checkout charges per ticket. */
  readonly buyerTotal: MinorUnits;
  /** Service fee the organizer pays from the settlement (absorbed fee), 0 otherwise. */
  readonly organizerServiceFee: MinorUnits;
}

export interface QuoteUnitInput {
  readonly price: MinorUnits;
  readonly feePolicy: FeePolicy;
  /** True for numbered (seated) ticket types. */
  readonly numbered: boolean;
}

export function quoteUnit({ price, feePolicy, numbered }: QuoteUnitInput): UnitQuote {
  assertMinorUnits(price, 'price');
  assertFeePolicy(feePolicy);
  if (price === 0) {
    return { price: 0, buyerServiceFee: 0, seatingSurcharge: 0, iva: 0, buyerTotal: 0, organizerServiceFee: 0 };
  }
  const serviceFee = addMinor(applyBps(price, feePolicy.serviceFeeBps), feePolicy.serviceFeeFixed);
  const seatingSurcharge = numbered ? feePolicy.seatingSurcharge : 0;
  const buyerServiceFee = addMinor(feePolicy.feeAbsorbedByOrganizer ? 0 : serviceFee, seatingSurcharge);
  const iva = applyBps(buyerServiceFee, IVA_BPS);
  return {
    price,
    buyerServiceFee,
    seatingSurcharge,
    iva,
    buyerTotal: addMinor(price, buyerServiceFee, iva),
    organizerServiceFee: feePolicy.feeAbsorbedByOrganizer ? serviceFee : 0,
  };
}

export type Discount =
  /** value: percentage of the ticket subtotal, 0–100, at most two decimals. */
  | { readonly type: 'PERCENT'; readonly value: number }
  /** value: minor units off the order's ticket subtotal. */
  | { readonly type: 'FIXED'; readonly value: MinorUnits };

/** Amount a discount takes off a ticket subtotal: never more than the subtotal (rule 5). */
export function discountAmountFor(subtotal: MinorUnits, discount: Discount | null | undefined): MinorUnits {
  assertMinorUnits(subtotal, 'subtotal');
  if (!discount) return 0;
  const raw =
    discount.type === 'PERCENT'
      ? applyBps(subtotal, percentToBps(discount.value))
      : assertMinorUnits(discount.value, 'discount value');
  return Math.min(raw, subtotal);
}

/** Rule 8: the member discount of one ticket, rounded half up on its own list price. */
export function memberDiscountPerTicket(price: MinorUnits, discountPercent: number): MinorUnits {
  assertMinorUnits(price, 'price');
  return applyBps(price, percentToBps(discountPercent));
}

/** A member's per-ticket price, as the public availability shows it to an active member (PublicTicketType.member). */
export interface MemberUnitQuote {
  readonly discountPercent: number;
  readonly discountPerTicket: MinorUnits;
  /** What checkout charges a member per ticket when the member discount applies: quantity × this is the total. */
  readonly buyerTotal: MinorUnits;
}

export function quoteMemberUnit(input: QuoteUnitInput & { readonly discountPercent: number }): MemberUnitQuote {
  const unit = quoteUnit(input);
  const discountPerTicket = memberDiscountPerTicket(unit.price, input.discountPercent);
  const free = discountPerTicket === unit.price;
  return {
    discountPercent: input.discountPercent,
    discountPerTicket,
    buyerTotal: free ? 0 : subtractMinor(unit.buyerTotal, discountPerTicket),
  };
}

export interface PriceOrderInput {
  /** List price of one ticket. */
  readonly unitPrice: MinorUnits;
  /** Tickets in the order, ≥ 1 (the contract's per-item limit 1–30 is checked at the API edge). */
  readonly quantity: number;
  readonly feePolicy: FeePolicy;
  readonly numbered: boolean;
  /** A discount code's rule (or a complimentary 100 %). */
  readonly discount?: Discount | null;
  /** The buyer's member discount (rule 8); null or absent for non-members. */
  readonly memberDiscountPercent?: number | null;
}

/** Which discount an order got (rule 9): none, the code's, or the member's. */
export type AppliedDiscount = 'NONE' | 'CODE' | 'MEMBER';

/** An order's amounts, as stored on the sale (subtotal, discountAmount, serviceFee, iva, total). */
export interface OrderPrice {
  readonly quantity: number;
  /** quantity × list price. */
  readonly subtotal: MinorUnits;
  readonly discountAmount: MinorUnits;
  /** Buyer service fee for the order, seating surcharge included; 0 when free. */
  readonly serviceFee: MinorUnits;
  /** Part of serviceFee that is seating surcharge. */
  readonly seatingSurcharge: MinorUnits;
  readonly iva: MinorUnits;
  /** subtotal − discountAmount + serviceFee + iva: the amount to charge. */
  readonly total: MinorUnits;
  /** Absorbed service fee the organizer pays from the settlement; 0 when free. */
  readonly organizerServiceFee: MinorUnits;
  /** True when the discounted subtotal is 0: confirmed without a gateway, total 0. */
  readonly free: boolean;
  /** Which discount discountAmount is (rule 9). */
  readonly appliedDiscount: AppliedDiscount;
  /** The per-ticket quote the order was built from. */
  readonly unit: UnitQuote;
}

/** Rule 9: the code's amount against the member's (null: the order has no such discount). */
function chooseDiscount(
  subtotal: MinorUnits,
  code: MinorUnits | null,
  member: MinorUnits | null,
): { applied: AppliedDiscount; amount: MinorUnits } {
  if (code === null && member === null) return { applied: 'NONE', amount: 0 };
  if (member === null) return { applied: 'CODE', amount: code ?? 0 };
  if (code === null) return { applied: 'MEMBER', amount: member };
  if (code > member || (code === member && code === subtotal)) return { applied: 'CODE', amount: code };
  return { applied: 'MEMBER', amount: member };
}

export function priceOrder({
  unitPrice,
  quantity,
  feePolicy,
  numbered,
  discount,
  memberDiscountPercent,
}: PriceOrderInput): OrderPrice {
  if (!Number.isSafeInteger(quantity) || quantity < 1) {
    throw new RangeError(`quantity must be a positive integer, got ${quantity}`);
  }
  const unit = quoteUnit({ price: unitPrice, feePolicy, numbered });
  const subtotal = multiplyMinor(unit.price, quantity);
  const chosen = chooseDiscount(
    subtotal,
    discount ? discountAmountFor(subtotal, discount) : null,
    memberDiscountPercent === null || memberDiscountPercent === undefined
      ? null
      : multiplyMinor(memberDiscountPerTicket(unit.price, memberDiscountPercent), quantity),
  );
  const discountAmount = chosen.amount;
  const ticketAmount = subtractMinor(subtotal, discountAmount);
  const free = ticketAmount === 0;
  const serviceFee = free ? 0 : multiplyMinor(unit.buyerServiceFee, quantity);
  const iva = free ? 0 : multiplyMinor(unit.iva, quantity);
  return {
    quantity,
    subtotal,
    discountAmount,
    serviceFee,
    seatingSurcharge: free ? 0 : multiplyMinor(unit.seatingSurcharge, quantity),
    iva,
    total: addMinor(ticketAmount, serviceFee, iva),
    organizerServiceFee: free ? 0 : multiplyMinor(unit.organizerServiceFee, quantity),
    free,
    appliedDiscount: chosen.applied,
    unit,
  };
}

/**
 * The policy a ticket type is sold with: the workspace default fee, overridden by the type where it sets one; the
 * type decides whether the organizer absorbs the fee and what a numbered seat adds. Quotes, charges and reports
 * all derive the policy here, so they can never disagree.
 */
export function ticketTypeFeePolicy(
  workspace: { readonly serviceFeeBps: number; readonly serviceFeeFixed: MinorUnits },
  type: {
    readonly serviceFeeBps?: number | null;
    readonly serviceFeeFixed?: MinorUnits | null;
    readonly feeAbsorbedByOrganizer: boolean;
    readonly seatingSurcharge: MinorUnits;
  },
): FeePolicy {
  return resolveFeePolicy(
    {
      serviceFeeBps: workspace.serviceFeeBps,
      serviceFeeFixed: workspace.serviceFeeFixed,
      feeAbsorbedByOrganizer: false,
      seatingSurcharge: 0,
    },
    {
      feeAbsorbedByOrganizer: type.feeAbsorbedByOrganizer,
      seatingSurcharge: type.seatingSurcharge,
      ...(type.serviceFeeBps !== null && type.serviceFeeBps !== undefined ? { serviceFeeBps: type.serviceFeeBps } : {}),
      ...(type.serviceFeeFixed !== null && type.serviceFeeFixed !== undefined
        ? { serviceFeeFixed: type.serviceFeeFixed }
        : {}),
    },
  );
}

/** The amounts of an order of several items (one ticket type each), as stored on its sale. */
export interface ItemsPrice {
  readonly subtotal: MinorUnits;
  readonly discountAmount: MinorUnits;
  readonly serviceFee: MinorUnits;
  readonly iva: MinorUnits;
  readonly total: MinorUnits;
  readonly organizerServiceFee: MinorUnits;
  /** Every item is free: the sale is confirmed without a gateway. */
  readonly free: boolean;
  /** Each item's own price, in the order given. */
  readonly items: readonly OrderPrice[];
}

/**
 * Rule 10: each item is priced on its own by `priceOrder` (fees and IVA per ticket of its type, a member discount
 * per ticket) and the sale's amounts are the sums, so the charge is still Σ quantity × buyerTotal of the quotes. A
 * discount code is a per-order rule (rule 5), so only one-item orders carry one.
 */
export function priceOrderItems(items: readonly PriceOrderInput[]): ItemsPrice {
  if (items.length === 0) throw new RangeError('an order has at least one item');
  if (items.length > 1 && items.some((item) => item.discount)) {
    throw new RangeError('a discount code applies to one-item orders only');
  }
  const priced = items.map((item) => priceOrder(item));
  const sum = (pick: (price: OrderPrice) => MinorUnits): MinorUnits =>
    priced.reduce((total, price) => addMinor(total, pick(price)), 0);
  return {
    subtotal: sum((price) => price.subtotal),
    discountAmount: sum((price) => price.discountAmount),
    serviceFee: sum((price) => price.serviceFee),
    iva: sum((price) => price.iva),
    total: sum((price) => price.total),
    organizerServiceFee: sum((price) => price.organizerServiceFee),
    free: priced.every((price) => price.free),
    items: priced,
  };
}
