import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { parseSaleReference } from '../../domain/codes.js';
import { AppError } from '../../domain/errors.js';
import { type Role, roleAtLeast } from '../../domain/roles.js';
import { publicOrderView, SALE_STATUSES, TICKET_STATUSES } from '../../domain/sale-state.js';
import { ANY_TENANT } from '../../entities/common.js';
import { isUuid } from '../../entities/ids.js';
import { Sale, SaleItem, Ticket } from '../../entities/index.js';
import type { ISale } from '../../entities/sale.js';
import { minorUnits } from './money.js';

/** The money of a sale, as the contract's Sale and the buyer's CustomerOrder both show it (domain/pricing.ts). */
export const SALE_AMOUNTS = {
  subtotal: minorUnits('Tickets at list price: quantity × unit price', 170000),
  discountAmount: minorUnits('Taken off the subtotal by a discount code or a membership', 17000),
  serviceFee: minorUnits('Service fee the buyer pays', 17000),
  iva: minorUnits('IVA (19 %) on serviceFee', 3230),
  total: minorUnits('What the buyer pays: subtotal − discountAmount + serviceFee + iva', 173230),
};

export const SaleItemSchema = z
  .object({
    id: z.string(),
    ticketTypeId: z.string(),
    ticketTypeName: z.string(),
    quantity: z.number().int(),
    unitPrice: minorUnits('List price per ticket', 85000),
    unitServiceFee: minorUnits('Service fee per ticket the buyer pays, seating surcharge included', 8500),
    unitIva: minorUnits('IVA (19 %) on unitServiceFee', 1615),
    seats: z.array(z.string()).nullable(),
  })
  .meta({ id: 'SaleItem' });

export const TicketSummarySchema = z
  .object({
    id: z.string(),
    code: z.string(),
    status: z.enum(TICKET_STATUSES),
    ticketTypeId: z.string(),
    seatLabel: z.string().nullable(),
    checkedInAt: z.string().nullable(),
  })
  .meta({ id: 'TicketSummary' });

/** The contract's Sale (part 2), plus items when fetched by id. Amounts are integer minor units. */
export const SaleSchema = z
  .object({
    id: z.string(),
    reference: z.string(),
    status: z.enum(SALE_STATUSES),
    channel: z.string(),
    ...SALE_AMOUNTS,
    currency: z.string(),
    buyerName: z.string(),
    buyerEmail: z.string().meta({
      description: 'masked (first letter and domain, `a***@example.com`) when your role is below STAFF (contract 5.4)',
    }),
    buyerPhone: z.string().nullable().meta({ description: 'null when unknown or when your role is below STAFF' }),
    buyerDocumentType: z
      .string()
      .nullable()
      .meta({ description: 'null when unknown or when your role is below STAFF' }),
    buyerDocumentNumber: z
      .string()
      .nullable()
      .meta({ description: 'null when unknown or when your role is below STAFF' }),
    organizationId: z.string().nullable(),
    eventId: z.string(),
    eventDateId: z.string(),
    paymentProvider: z.string().nullable(),
    paymentRef: z.string().nullable(),
    confirmedAt: z.string().nullable(),
    createdAt: z.string(),
    expiresAt: z.string().nullable().meta({ description: 'When the reservation expires; null unless PENDING' }),
    failureReason: z.string().nullable(),
    paymentStatus: z.string().nullable(),
    declineCode: z.string().nullable(),
  })
  .meta({ id: 'Sale' });

export const SaleWithItemsSchema = SaleSchema.extend({ items: z.array(SaleItemSchema) }).meta({ id: 'SaleWithItems' });

export function toSale(sale: ISale) {
  return {
    id: sale.id,
    reference: sale.reference,
    status: sale.status,
    channel: sale.channel,
    subtotal: sale.subtotal,
    discountAmount: sale.discountAmount,
    serviceFee: sale.serviceFee,
    iva: sale.iva,
    total: sale.total,
    currency: sale.currency,
    buyerName: sale.buyerName,
    buyerEmail: sale.buyerEmail,
    buyerPhone: sale.buyerPhone ?? null,
    buyerDocumentType: sale.buyerDocumentType ?? null,
    buyerDocumentNumber: sale.buyerDocumentNumber ?? null,
    organizationId: sale.workspace,
    eventId: sale.event,
    eventDateId: sale.eventDate,
    paymentProvider: sale.paymentProvider ?? null,
    paymentRef: sale.paymentRef ?? null,
    confirmedAt: sale.confirmedAt?.toISOString() ?? null,
    createdAt: sale.createdAt.toISOString(),
    expiresAt: sale.status === 'PENDING' && sale.expiresAt ? sale.expiresAt.toISOString() : null,
    failureReason: sale.failureReason ?? null,
    paymentStatus: sale.paymentStatus ?? null,
    declineCode: sale.declineCode ?? null,
  };
}

/**
 * Buyer contact data is personal data: contract 5.4 gives sale details to STAFF and up, so the same minimum
 * governs the contact fields wherever a sale is shown, including the VIEWER-level list. The fields stay present
 * (the Sale shape requires them): the email, a required string, is masked; the others read null below the minimum.
 */
export const BUYER_CONTACT_MIN_ROLE: Role = 'STAFF';

export const canSeeBuyerContact = (role: Role): boolean => roleAtLeast(role, BUYER_CONTACT_MIN_ROLE);

export type SaleView = z.infer<typeof SaleSchema>;

/** The Sale as a caller of the given workspace role may see it. */
export function toSaleFor(sale: ISale, role: Role): SaleView {
  const view = toSale(sale);
  if (canSeeBuyerContact(role)) return view;
  return {
    ...view,
    buyerEmail: maskedEmail(view.buyerEmail),
    buyerPhone: null,
    buyerDocumentType: null,
    buyerDocumentNumber: null,
  };
}

/** Enough to tell buyers apart in a list, not enough to contact one. */
const maskedEmail = (email: string): string => {
  const at = email.lastIndexOf('@');
  return at > 0 ? `${email[0]}***${email.slice(at)}` : '***';
};

export async function loadItems(em: EntityManager, saleId: string) {
  const items = await em.find(SaleItem, { sale: saleId }, { orderBy: { id: 'asc' } });
  return items.map((item) => ({
    id: item.id,
    ticketTypeId: item.ticketType,
    ticketTypeName: item.ticketTypeName,
    quantity: item.quantity,
    unitPrice: item.unitPrice,
    unitServiceFee: item.unitServiceFee,
    unitIva: item.unitIva,
    seats: item.seats ?? null,
  }));
}

export async function loadTickets(em: EntityManager, saleId: string) {
  const tickets = await em.find(Ticket, { sale: saleId }, { ...ANY_TENANT, orderBy: { ordinal: 'asc' } });
  return tickets.map((ticket) => ({
    id: ticket.id,
    code: ticket.code,
    status: ticket.status,
    ticketTypeId: ticket.ticketType,
    seatLabel: ticket.seatLabel ?? null,
    checkedInAt: ticket.checkedInAt?.toISOString() ?? null,
  }));
}

/** Finds a sale by id or by its reference (`FT-…`, any case), across workspaces; callers check ownership. */
export async function findSaleByIdOrReference(em: EntityManager, idOrReference: string): Promise<ISale | null> {
  if (isUuid(idOrReference)) return em.findOne(Sale, { id: idOrReference }, ANY_TENANT);
  const reference = parseSaleReference(idOrReference);
  return reference ? em.findOne(Sale, { reference }, ANY_TENANT) : null;
}

export function requireOwnedSale(
  sale: ISale | null,
  owner: { buyerId: string; pinnedWorkspaceId: string | null },
): ISale {
  if (
    !sale ||
    sale.buyer !== owner.buyerId ||
    (owner.pinnedWorkspaceId && sale.workspace !== owner.pinnedWorkspaceId)
  ) {
    throw new AppError('NOT_FOUND', 'Order not found');
  }
  return sale;
}

export const PublicOrderStatusSchema = z.enum(['pending', 'paid', 'expired', 'cancelled']);
export const publicStatusOf = (sale: ISale, now = new Date()) =>
  publicOrderView({ status: sale.status, expiresAt: sale.expiresAt ?? null }, now);
