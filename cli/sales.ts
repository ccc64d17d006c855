/**
 * `ticketing sales list` and `ticketing sales export`: GET /api/v1/sales (contract 4.7), every page.
 *
 * The export reads the sales list rather than a report export: the contract's exports are attendees, buyers,
 * subscribers and the reconciliation (one row per ticket, per buyer, per member, or a sale's money against its
 * gateway payments), none of them the sales themselves, and they stop at 5000 rows and need ADMIN. The list has the
 * Sale fields, the same filters, no row ceiling, and VIEWER may read it (contract 5.4).
 */
import { z } from 'zod';
import { SALE_STATUSES } from '../domain/sale-state.js';
import type { ApiClient, Query } from './api-client.js';
import { UsageError } from './errors.js';
import { type Column, formatInstant, formatMoney } from './output.js';

const nullableText = z.string().nullable().optional();

/** The fields the client reads; anything else the Sale carries passes through to JSON output untouched. */
export const SaleRowSchema = z.looseObject({
  id: z.string(),
  reference: z.string(),
  status: z.string(),
  channel: z.string(),
  subtotal: z.number().int(),
  discountAmount: z.number().int(),
  serviceFee: z.number().int(),
  iva: z.number().int(),
  total: z.number().int(),
  currency: z.string(),
  buyerName: z.string(),
  buyerEmail: z.string(),
  buyerPhone: nullableText,
  eventId: nullableText,
  eventDateId: nullableText,
  paymentProvider: nullableText,
  paymentRef: nullableText,
  paymentStatus: nullableText,
  confirmedAt: nullableText,
  createdAt: z.string(),
});
export type SaleRow = z.infer<typeof SaleRowSchema>;

const Day = z.iso.date();
const Instant = z.iso.datetime({ offset: true });

/**
 * `--from` / `--to` as the user types them: a calendar day (read in UTC, `--to` including its whole day) or an
 * ISO 8601 instant with its offset, which the API's `from`/`to` take as is.
 */
function instantOf(bound: 'from' | 'to', value: string): string {
  if (Day.safeParse(value).success) return bound === 'from' ? `${value}T00:00:00.000Z` : `${value}T23:59:59.999Z`;
  if (Instant.safeParse(value).success) return value;
  throw new UsageError(`--${bound} must be a day (2026-11-01) or an ISO 8601 time with offset (2026-11-01T08:00:00Z)`);
}

export const SalesFilterOptions = z.object({
  status: z.enum(SALE_STATUSES).optional(),
  event: z.string().trim().min(1).max(100).optional(),
  from: z.string().optional(),
  to: z.string().optional(),
  limit: z.coerce.number().int().positive().optional(),
});
export type SalesFilterOptions = z.infer<typeof SalesFilterOptions>;

export interface SalesQuery {
  query: Query;
  limit: number | undefined;
}

export function salesQuery(options: SalesFilterOptions): SalesQuery {
  const from = options.from === undefined ? undefined : instantOf('from', options.from);
  const to = options.to === undefined ? undefined : instantOf('to', options.to);
  if (from && to && Date.parse(from) > Date.parse(to)) throw new UsageError('--from is after --to');
  return { query: { status: options.status, event: options.event, from, to }, limit: options.limit };
}

export function salePages(client: ApiClient, { query, limit }: SalesQuery): AsyncGenerator<SaleRow[]> {
  return client.pages('/sales', query, SaleRowSchema, { limit });
}

export const SALE_COLUMNS: ReadonlyArray<Column<SaleRow>> = [
  { header: 'REFERENCE', value: (sale) => sale.reference },
  { header: 'STATUS', value: (sale) => sale.status },
  { header: 'CHANNEL', value: (sale) => sale.channel },
  { header: 'TOTAL', value: (sale) => formatMoney(sale.total, sale.currency), alignRight: true },
  { header: 'BUYER', value: (sale) => sale.buyerName },
  { header: 'EMAIL', value: (sale) => sale.buyerEmail },
  { header: 'CREATED (UTC)', value: (sale) => formatInstant(sale.createdAt) },
];

/** CSV columns, in order; amounts stay integers in minor units, as the API and the report exports give them. */
export const SALE_EXPORT_COLUMNS = [
  'id',
  'reference',
  'status',
  'channel',
  'subtotal',
  'discountAmount',
  'serviceFee',
  'iva',
  'total',
  'currency',
  'buyerName',
  'buyerEmail',
  'buyerPhone',
  'eventId',
  'eventDateId',
  'paymentProvider',
  'paymentRef',
  'paymentStatus',
  'confirmedAt',
  'createdAt',
] as const satisfies ReadonlyArray<keyof SaleRow>;
