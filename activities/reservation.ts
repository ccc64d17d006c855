/**
 * The reservation transaction: every rule of contract 4.2 (and 4.18 for each item) checked under the transaction that
 * takes the stock, told as named steps. The order of the steps is part of the contract's behaviour: when an order
 * breaks several rules, the first refusal in this order is the one the buyer sees.
 */
import { randomBytes } from 'node:crypto';
import type { EntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { SALE_REFERENCE_RANDOM_BYTES, saleReferenceFromBytes } from '../domain/codes.js';
import {
  type Discount as DiscountRule,
  type ItemsPrice,
  priceOrderItems,
  ticketTypeFeePolicy,
} from '../domain/pricing.js';
import { ANY_TENANT } from '../entities/common.js';
import type { IEvent } from '../entities/event.js';
import type { IEventDate } from '../entities/event-date.js';
import { newId } from '../entities/ids.js';
import { Discount, Event, EventDate, Sale, SaleItem, TicketType, Workspace } from '../entities/index.js';
import { activeMembership } from '../entities/membership-queries.js';
import { type ISale, seatLabelsOf } from '../entities/sale.js';
import { firstSoldOutType, takeStockInOrder } from '../entities/stock.js';
import type { ITicketType } from '../entities/ticket-type.js';
import type { IWorkspace } from '../entities/workspace.js';
import {
  type ReserveItem,
  type ReserveRejection,
  type ReserveRequest,
  reserveItemsOf,
} from '../workflows/definitions.js';
import { recordConfirmation } from './tickets.js';

/** A refusal of the order: thrown out of the transaction (rolling it back) and answered to the workflow as is. */
export class Rejected extends Error {
  constructor(readonly rejection: ReserveRejection) {
    super(rejection.message);
  }
}

export const reject = (
  code: ReserveRejection['code'],
  reason: string,
  message: string,
  details?: Record<string, unknown>,
): never => {
  throw new Rejected({ ok: false, code, reason, message, ...(details ? { details } : {}) });
};

type Membership = Awaited<ReturnType<typeof activeMembership>>;
/** What the order is about, read once: its date, event, workspace and each item with its ticket type. */
interface Order {
  date: IEventDate;
  event: IEvent;
  workspace: IWorkspace;
  lines: { item: ReserveItem; type: ITicketType }[];
  currency: string;
}

const numbered = (type: { seatMapCategoryKey?: string | null }): boolean => (type.seatMapCategoryKey ?? null) !== null;

async function newReference(em: EntityManager): Promise<string> {
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const reference = saleReferenceFromBytes(randomBytes(SALE_REFERENCE_RANDOM_BYTES));
    const taken = await em.execute<{ one: number }[]>('select 1 as one from sales where reference = ?', [reference]);
    if (taken.length === 0) return reference;
  }
  throw new Error('could not draw a free sale reference');
}

/**
 * The order's date, its event and workspace, and the ticket types it names for that date, read once per reservation
 * in one round trip: the seat-map step before the transaction and the transaction's own checks share it (a null date
 * or a missing type is refused by readOrder). The event is read deleted or not: the on-sale rule says why it is
 * refused.
 */
export interface OrderCatalog {
  date: IEventDate | null;
  event: IEvent | null;
  workspace: IWorkspace | null;
  types: ITicketType[];
  /** The sale of the id `readOrderCatalog` was given, when it exists already (a retried reservation). */
  existing: ISale | null;
}

export async function readOrderCatalog(
  em: EntityManager,
  request: ReserveRequest,
  saleId: string | null = null,
): Promise<OrderCatalog> {
  const ids = reserveItemsOf(request).map((item) => item.ticketTypeId);
  const rows = await em.execute<
    {
      date: EntityData<IEventDate> | null;
      event: EntityData<IEvent> | null;
      workspace: EntityData<IWorkspace> | null;
      types: EntityData<ITicketType>[] | null;
      existing: EntityData<ISale> | null;
    }[]
  >(
    `select row_to_json(d) as date, row_to_json(e) as event, row_to_json(w) as workspace,
            (select json_agg(row_to_json(t)) from ticket_types t
              where t.event_date_id = d.id and t.id in (?) and t.deleted_at is null) as types,
            (select row_to_json(s) from sales s where s.id = ?) as existing
       from (select 1) as one
       left join event_dates d on d.id = ? and d.deleted_at is null
       left join events e on e.id = d.event_id
       left join workspaces w on w.id = d.workspace_id`,
    [ids.length > 0 ? ids : [null], saleId, request.eventDateId],
  );
  const row = rows[0];
  return {
    date: row?.date ? em.map(EventDate, row.date) : null,
    event: row?.event ? em.map(Event, row.event) : null,
    workspace: row?.workspace ? em.map(Workspace, row.workspace) : null,
    types: (row?.types ?? []).map((type) => em.map(TicketType, type)),
    existing: row?.existing ? em.map(Sale, row.existing) : null,
  };
}

/** The order's date and ticket types exist (for this workspace), each type once, all in one currency. */
function readOrder(request: ReserveRequest, catalog: OrderCatalog): Order {
  const items = reserveItemsOf(request);
  const { date } = catalog;
  if (!date || (request.pinnedWorkspaceId && date.workspace !== request.pinnedWorkspaceId)) {
    return reject('NOT_FOUND', 'not_found', 'Event date not found');
  }
  if (new Set(items.map((item) => item.ticketTypeId)).size !== items.length) {
    reject('VALIDATION_FAILED', 'duplicate_ticket_type', 'Each ticket type appears at most once per order');
  }
  if (items.length > 1 && (request.discountCode || request.complimentary)) {
    // A code's amount is a per-order rule (domain/pricing.ts rule 10); only one-item orders carry one.
    reject('VALIDATION_FAILED', 'discount_single_item', 'Discount codes apply to one-item orders only');
  }
  const found = catalog.types;
  const typeById = new Map(found.map((type) => [type.id, type]));
  const lines = items.map((item) => {
    const type = typeById.get(item.ticketTypeId);
    if (!type) {
      return reject('NOT_FOUND', 'not_found', 'Ticket type not found for this event date', {
        ticketTypeId: item.ticketTypeId,
      });
    }
    return { item, type };
  });
  const currency = lines[0]!.type.currency;
  if (lines.some((line) => line.type.currency !== currency)) {
    reject('MIXED_CURRENCY', 'mixed_currency', 'All tickets of one order must be sold in the same currency');
  }
  const { event, workspace } = catalog;
  if (!event || !workspace) throw new Error(`the event or workspace of date ${date.id} is missing`);
  return { date, event, workspace, lines, currency };
}

/** The event is published and sold here, and the date has not started. */
function assertOnSale({ event, date }: Order, now: Date): void {
  if (event.deletedAt || event.status !== 'PUBLISHED' || date.cancelledAt) {
    reject('NOT_AVAILABLE', 'not_published', 'This event is not on sale');
  }
  if (date.startsAt <= now) reject('NOT_AVAILABLE', 'date_past', 'This date has already started');
  if (event.salesMode === 'EXTERNAL') {
    reject('EXTERNAL_SALE', 'external_sale', 'This event sells elsewhere', { url: event.externalSalesUrl });
  }
}

/** The buyer's active membership in the workspace; organizer sales set their own price, so it only counts for buyers. */
async function buyerMembership(tx: EntityManager, order: Order, request: ReserveRequest, now: Date) {
  return request.buyerId && request.origin !== 'ORGANIZER'
    ? await activeMembership(tx, order.workspace.id, request.buyerId, now)
    : null;
}

/** Buyers' orders (not organizer sales confirmed at once): the sales and presale windows, members-only types. */
function assertOpenToThisBuyer({ date, lines }: Order, request: ReserveRequest, membership: Membership, now: Date) {
  if ((date.salesStartAt && date.salesStartAt > now) || (date.salesEndAt && date.salesEndAt <= now)) {
    reject('SALE_CLOSED', 'sales_window_closed', 'Sales for this date are not open', {
      salesStartAt: date.salesStartAt?.toISOString() ?? null,
      salesEndAt: date.salesEndAt?.toISOString() ?? null,
    });
  }
  for (const { type } of lines) {
    if ((type.presaleStartsAt && type.presaleStartsAt > now) || (type.presaleEndsAt && type.presaleEndsAt <= now)) {
      reject('SALE_CLOSED', 'presale_closed', 'This ticket type sells only during its presale window', {
        ticketTypeId: type.id,
      });
    }
    if (type.membersOnly) {
      if (request.origin === 'PUBLIC')
        reject('MEMBERS_ONLY', 'members_only', 'Members-only tickets are sold to signed-in members only', {
          ticketTypeId: type.id,
        });
      if (!membership?.benefits.membersOnlyAccess) {
        reject('MEMBERS_ONLY', 'members_only', 'This ticket type is for members; join a membership plan first', {
          ticketTypeId: type.id,
        });
      }
    }
  }
}

function assertQuantities({ lines }: Order): void {
  for (const { item, type } of lines) {
    if (item.quantity > type.maxPerOrder) {
      reject('ORDER_REJECTED', 'max_per_order', `At most ${type.maxPerOrder} tickets of this type per order`, {
        maxPerOrder: type.maxPerOrder,
        ticketTypeId: type.id,
      });
    }
  }
}

/**
 * The seats were checked (and, for public orders, held) at the provider before this transaction; here they are
 * checked against the other live sales of the date under a lock, so no seat is ever sold twice.
 */
async function assertSeatsFree(tx: EntityManager, { date, lines }: Order): Promise<void> {
  if (!lines.some(({ type }) => numbered(type))) return;
  const labels = lines.flatMap(({ item, type }) => (numbered(type) ? (item.seats ?? []) : []));
  await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`seats:${date.id}`]);
  const live = await tx.execute<{ seats: string[] | string | null }[]>(
    `select i.seats from sale_items i join sales s on s.id = i.sale_id
      where s.event_date_id = ? and s.status in ('PENDING', 'CONFIRMED') and i.seats is not null`,
    [date.id],
  );
  const taken = new Set(live.flatMap((row) => seatLabelsOf(row.seats)));
  const clash = labels.filter((label) => taken.has(label));
  if (clash.length > 0) {
    reject('SEAT_NOT_AVAILABLE', 'seat_taken', 'A seat is already sold or reserved', { seats: clash });
  }
}

function assertQueueTurn({ date }: Order, request: ReserveRequest): void {
  if (date.virtualQueue && request.origin !== 'ORGANIZER' && !request.queueTurnAdmitted) {
    reject('QUEUE_REQUIRED', 'queue_turn_required', 'This date sells through a waiting room; join the queue first', {
      eventDateId: date.id,
    });
  }
}

/** One unpaid purchase per buyer and date, and at most maxPerOrder tickets of a type per buyer (contract 4.2). */
async function assertBuyerLimits(tx: EntityManager, { date, lines }: Order, buyerId: string, now: Date): Promise<void> {
  // Lock this buyer's rows for the date so two tabs cannot both pass the limit check. The reads come in the next
  // statement: one that took the lock itself would read with the snapshot it took before waiting for it.
  await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`buyer:${buyerId}:${date.id}`]);
  const [held] = await tx.execute<
    { pending: { id: string; reference: string } | null; units: Record<string, number> }[]
  >(
    `select (select json_build_object('id', s.id, 'reference', s.reference) from sales s
              where s.buyer_id = ? and s.event_date_id = ? and s.status = 'PENDING' and s.expires_at > ?
              order by s.expires_at desc limit 1) as pending,
            (select coalesce(json_object_agg(held.ticket_type_id, held.units), '{}') from (
               select i.ticket_type_id, sum(i.quantity) as units from sale_items i join sales s on s.id = i.sale_id
                where s.buyer_id = ? and s.event_date_id = ? and s.status in ('PENDING', 'CONFIRMED')
                  and i.ticket_type_id in (?)
                group by i.ticket_type_id) held) as units`,
    [buyerId, date.id, now, buyerId, date.id, lines.map(({ type }) => type.id)],
  );
  if (held?.pending) {
    reject(
      'ORDER_REJECTED',
      'pending_sale_in_progress',
      'You have an unpaid purchase for this date; reopen its payment instead',
      {
        pendingSaleId: held.pending.id,
        pendingReference: held.pending.reference,
      },
    );
  }
  for (const { item, type } of lines) {
    const already = Number(held?.units[type.id] ?? 0);
    if (already + item.quantity > type.maxPerOrder) {
      reject('ORDER_REJECTED', 'per_buyer_limit', `A buyer may hold at most ${type.maxPerOrder} tickets of this type`, {
        alreadyHeld: already,
        maxPerBuyer: type.maxPerOrder,
        ticketTypeId: type.id,
      });
    }
  }
}

interface RequestedDiscount {
  rule: DiscountRule;
  /** The code the buyer typed, whose use is spent only if it prices the order. */
  codeId: string | null;
}

/** A complimentary sale is a 100 % discount; a typed code must be active, in its window, for this event, not used up. */
async function requestedDiscount(
  tx: EntityManager,
  { workspace, event }: Order,
  request: ReserveRequest,
  now: Date,
): Promise<RequestedDiscount | null> {
  if (request.complimentary) return { rule: { type: 'PERCENT', value: 100 }, codeId: null };
  if (!request.discountCode) return null;
  const typed = request.discountCode.trim().toUpperCase();
  const found = await tx.findOne(Discount, { workspace: workspace.id, code: typed, active: true }, ANY_TENANT);
  const valid =
    found &&
    (found.event === null || found.event === event.id) &&
    (!found.startsAt || found.startsAt <= now) &&
    (!found.endsAt || found.endsAt > now);
  if (!found || !valid)
    return reject('ORDER_REJECTED', 'invalid_discount_code', 'This discount code is not valid for this event');
  // A code the buyer typed is refused when used up even if their member discount would win: they asked for it.
  if (found.maxUses != null && found.uses >= found.maxUses) {
    reject('ORDER_REJECTED', 'discount_exhausted', 'This discount code has been used up');
  }
  return { rule: { type: found.type, value: found.value }, codeId: found.id };
}

/** One pricing engine prices every item and decides between the member discount and a code (domain/pricing.ts). */
function priceOrder(
  { workspace, lines }: Order,
  request: ReserveRequest,
  discount: RequestedDiscount | null,
  membership: Membership,
): ItemsPrice {
  const memberPercent = request.complimentary ? 0 : (membership?.benefits.discountPercent ?? 0);
  return priceOrderItems(
    lines.map(({ item, type }) => {
      const policy = ticketTypeFeePolicy(workspace, type);
      return {
        unitPrice: type.price,
        quantity: item.quantity,
        feePolicy:
          request.origin === 'ORGANIZER'
            ? { ...policy, serviceFeeBps: 0, serviceFeeFixed: 0, seatingSurcharge: 0 }
            : policy,
        numbered: numbered(type),
        ...(discount ? { discount: discount.rule } : {}),
        ...(memberPercent > 0 ? { memberDiscountPercent: memberPercent } : {}),
      };
    }),
  );
}

/** The use is spent only by the order the code priced; the conditional update settles a race for the last use. */
async function spendCodeUse(
  tx: EntityManager,
  discount: RequestedDiscount | null,
  price: ItemsPrice,
): Promise<string | null> {
  if (!discount?.codeId || price.items[0]?.appliedDiscount !== 'CODE') return null;
  const used = await tx.execute<{ id: string }[]>(
    'update discounts set uses = uses + 1 where id = ? and (max_uses is null or uses < max_uses) returning id',
    [discount.codeId],
  );
  if (used.length === 0) reject('ORDER_REJECTED', 'discount_exhausted', 'This discount code has been used up');
  return discount.codeId;
}

/** The sale and its items as priced: PENDING until paid, or CONFIRMED at once when free or sold by the organizer. */
async function writeSale(
  tx: EntityManager,
  saleId: string,
  order: Order,
  request: ReserveRequest,
  price: ItemsPrice,
  discountId: string | null,
  now: Date,
): Promise<ISale> {
  const { date, event, workspace, lines, currency } = order;
  const confirmedNow = price.free || request.confirmImmediately;
  const windowMs = request.paymentWindowMs ?? date.paymentWindowMinutes * 60_000;
  const sale = tx.create(Sale, {
    id: saleId,
    workspace: workspace.id,
    reference: await newReference(tx),
    status: confirmedNow ? 'CONFIRMED' : 'PENDING',
    channel: request.channel,
    origin: request.origin,
    event: event.id,
    eventDate: date.id,
    buyer: request.buyerId,
    buyerName: request.buyer.name,
    buyerEmail: request.buyerEmail,
    buyerPhone: request.buyer.phone,
    buyerDocumentType: request.buyer.idType,
    buyerDocumentNumber: request.buyer.idNumber,
    buyerNitDigit: request.buyer.nitDigit,
    subtotal: price.subtotal,
    discountAmount: price.discountAmount,
    serviceFee: price.serviceFee,
    iva: price.iva,
    total: price.total,
    organizerServiceFee: price.organizerServiceFee,
    currency,
    discount: discountId,
    paymentProvider: null,
    paymentRef: null,
    paymentStatus: confirmedNow
      ? request.complimentary
        ? 'FT_COMPLIMENTARY'
        : price.free
          ? 'FT_FREE'
          : 'FT_OFFLINE'
      : null,
    declineCode: null,
    failureReason: null,
    returnUrl: request.returnUrl,
    holdToken: request.holdToken,
    expiresAt: new Date(now.getTime() + windowMs),
    confirmedAt: confirmedNow ? now : null,
    closedAt: null,
  });
  lines.forEach(({ item, type }, index) => {
    const unit = price.items[index]!.unit;
    tx.create(SaleItem, {
      id: newId(),
      sale: sale.id,
      ticketType: type.id,
      ticketTypeName: type.name,
      quantity: item.quantity,
      unitPrice: type.price,
      unitServiceFee: unit.buyerServiceFee,
      unitIva: unit.iva,
      seats: item.seats,
    });
  });
  await tx.flush();
  return sale;
}

const stockRequestsOf = ({ lines }: Order) =>
  lines.map(({ item, type }) => ({ ticketTypeId: type.id, quantity: item.quantity }));

const rejectSoldOut = (ticketTypeId: string): never =>
  reject('ORDER_REJECTED', 'sold_out', 'Not enough tickets of this type are left', { ticketTypeId });

/** Every item's stock in this one transaction, in a fixed order: one short item rolls all of it back. */
async function takeOrderStock(tx: EntityManager, saleId: string, order: Order): Promise<void> {
  const short = await takeStockInOrder(tx, saleId, stockRequestsOf(order));
  if (short) rejectSoldOut(short.soldOut);
}

/**
 * Every rule of contract 4.2 that comes before the stock, in order, then the priced sale written (PENDING, or
 * CONFIRMED when free or sold by the organizer) with its code use spent: all a reservation does but take the stock.
 */
async function writeCheckedSale(
  tx: EntityManager,
  saleId: string,
  request: ReserveRequest,
  now: Date,
  catalog: OrderCatalog,
): Promise<{ sale: ISale; order: Order }> {
  const order = readOrder(request, catalog);
  assertOnSale(order, now);
  const membership = await buyerMembership(tx, order, request, now);
  if (!request.confirmImmediately) assertOpenToThisBuyer(order, request, membership, now);
  assertQuantities(order);
  await assertSeatsFree(tx, order);
  assertQueueTurn(order, request);
  if (request.buyerId && !request.confirmImmediately) await assertBuyerLimits(tx, order, request.buyerId, now);
  const discount = await requestedDiscount(tx, order, request, now);
  const price = priceOrder(order, request, discount, membership);
  const discountId = await spendCodeUse(tx, discount, price);
  const sale = await writeSale(tx, saleId, order, request, price, discountId, now);
  return { sale, order };
}

/** Every rule of contract 4.2 (and 4.18 for each item) checked under the same transaction that takes the stock. */
export async function reserveInTransaction(
  tx: EntityManager,
  saleId: string,
  request: ReserveRequest,
  now: Date,
  catalog: OrderCatalog,
): Promise<ISale> {
  const { sale, order } = await writeCheckedSale(tx, saleId, request, now, catalog);
  await takeOrderStock(tx, sale.id, order);
  if (sale.status === 'CONFIRMED') await recordConfirmation(tx, sale.id, request);
  return sale;
}

/** Thrown to roll back a transaction that was only run to learn its answer. */
class DryRun extends Error {}

/**
 * Whether the reservation would refuse the order as sold out now, keeping nothing: every rule 4.2 ranks before the
 * stock runs as in reserveInTransaction, sale write included (so a refusal ranked first, data the database refuses
 * among them, is not answered as sold_out), in a transaction that is always rolled back. The stock is then read as
 * committed, without locking a row: a type short of units, none of them held by a reservation whose deadline has
 * passed (which the reservation would take back), is sold out. The answer is the one a reservation committed at this
 * instant would give; null when the order would be accepted or refused otherwise (the checkout answers those).
 */
export async function soldOutWithoutCommit(
  em: EntityManager,
  request: ReserveRequest,
): Promise<ReserveRejection | null> {
  const catalog = await readOrderCatalog(em, request);
  try {
    await em.transactional(async (tx) => {
      const { order } = await writeCheckedSale(tx, newId(), request, new Date(), catalog);
      const short = await firstSoldOutType(tx, stockRequestsOf(order));
      if (short) rejectSoldOut(short);
      throw new DryRun();
    });
  } catch (error) {
    if (error instanceof Rejected && error.rejection.reason === 'sold_out') return error.rejection;
    if (error instanceof Rejected || error instanceof DryRun) return null;
    throw error;
  }
  return null;
}
