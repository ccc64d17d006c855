/**
 * Settlements (contract 4.9, ADMIN): the payout statements of ended event dates, from the moment they are sent to the
 * organizer. DRAFT and REVIEW are internal and never exist here: an internal settlement is a 404 and an internal
 * status filter a 422. Files are served from the bytes stored beside the settlement: its statement PDF and the
 * bank transfer proofs, each only through an exact match on that settlement's own rows.
 */
import { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound } from '../../../domain/errors.js';
import { type ISettlement, VISIBLE_SETTLEMENT_STATUSES } from '../../../entities/settlement.js';
import { PROOF_CONTENT_TYPES, PROOF_FILE_NAME_PATTERN } from '../../../workflows/settlement-definitions.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { minorUnits } from '../../http/money.js';
import { PageQuerySchema } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, isoOrNull } from '../../http/schemas.js';
import { findVisible, listSettlements, settlementNames, storedFile } from '../../services/settlements.js';

/** A stored file sent back byte for byte (a stream), documented per media type it can have. */
const fileResponse = (description: string, mediaTypes: readonly string[]) => ({
  description,
  content: Object.fromEntries(
    mediaTypes.map((mediaType) => [mediaType, { schema: z.unknown().meta({ contentMediaType: mediaType }) }]),
  ),
});

export const SettlementSchema = z
  .object({
    id: z.string(),
    reference: z.string(),
    label: z.string(),
    status: z.enum(VISIBLE_SETTLEMENT_STATUSES),
    amount: minorUnits('Net payable; negative means the organizer owes', 1447655),
    grossAmount: minorUnits(
      'Ticket revenue (list price minus discounts) the amount is computed from',
      1530000,
    ).nullable(),
    unitsSold: z.number().int().nullable(),
    currency: z.string(),
    notes: z.string().nullable(),
    rejectionReason: z.string().nullable(),
    event: z.object({ id: z.string(), name: z.string() }).nullable(),
    eventDate: z.object({ id: z.string(), startsAt: z.string() }).nullable(),
    hasDocument: z.boolean(),
    paymentProofs: z.array(z.object({ fileName: z.string() })),
    allocations: z.array(z.object({ bankAccountId: z.string(), percentage: z.number().int() })),
    requestedAt: z.string().nullable(),
    paidAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'Settlement' });
type SettlementView = z.infer<typeof SettlementSchema>;

const SettlementsQuery = PageQuerySchema.extend({
  cursor: PageQuerySchema.shape.cursor.meta({
    description: 'The id of the last row of the previous page (page.nextCursor hands it out)',
  }),
  event: z.string().max(100).optional(),
  status: z.enum(VISIBLE_SETTLEMENT_STATUSES).optional(),
});

const ProofParams = IdParamSchema.extend({ fileName: z.string().max(300) });

/** Settlements as the organizer sees them, with their event, date and file names. */
async function toViews(em: EntityManager, rows: ISettlement[]): Promise<SettlementView[]> {
  if (rows.length === 0) return [];
  const { files, events, dates } = await settlementNames(em, rows);
  return rows.map((row) => {
    const own = files.filter((file) => file.settlement_id === row.id);
    const event = events.find((each) => each.id === row.event);
    const date = dates.find((each) => each.id === row.eventDate);
    return {
      id: row.id,
      reference: row.reference,
      label: row.label,
      status: row.status as SettlementView['status'],
      amount: row.amount,
      grossAmount: row.grossAmount ?? null,
      unitsSold: row.unitsSold ?? null,
      currency: row.currency,
      notes: row.notes ?? null,
      rejectionReason: row.rejectionReason ?? null,
      event: event ? { id: event.id, name: event.name } : null,
      eventDate: date ? { id: date.id, startsAt: new Date(date.starts_at).toISOString() } : null,
      hasDocument: own.some((file) => file.kind === 'DOCUMENT'),
      paymentProofs: own.filter((file) => file.kind === 'PROOF').map((file) => ({ fileName: file.file_name })),
      allocations: row.allocations.map((each) => ({ bankAccountId: each.bankAccountId, percentage: each.percentage })),
      requestedAt: isoOrNull(row.requestedAt),
      paidAt: isoOrNull(row.paidAt),
      createdAt: row.createdAt.toISOString(),
    };
  });
}

export const settlementRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/settlements',
    {
      config: organizer('ADMIN', 'settlements'),
      schema: {
        tags: ['settlements'],
        summary: 'List settlements sent to the organizer, newest first (contract 4.9)',
        querystring: SettlementsQuery,
        response: { 200: listOf(SettlementSchema) },
      },
    },
    async (request) => {
      const { items, page } = await listSettlements(request.em, request.query);
      return {
        data: await toViews(request.em, items),
        page,
        ...(request.warnings.length ? { warnings: request.warnings } : {}),
      };
    },
  );

  app.get(
    '/settlements/:id',
    {
      config: organizer('ADMIN', 'settlements'),
      schema: {
        tags: ['settlements'],
        summary: 'One settlement (only SENT, AWAITING_PAYMENT and PAID exist for the organizer)',
        params: IdParamSchema,
        response: { 200: dataOf(SettlementSchema) },
      },
    },
    async (request) => {
      const row = await findVisible(request.em, request.params.id);
      const [view] = await toViews(request.em, [row]);
      return { data: view as SettlementView };
    },
  );

  app.get(
    '/settlements/:id/document',
    {
      config: organizer('ADMIN', 'settlements'),
      schema: {
        tags: ['settlements'],
        summary: 'The settlement statement (application/pdf)',
        params: IdParamSchema,
        response: { 200: fileResponse('The statement, as an attachment', ['application/pdf']) },
      },
    },
    async (request, reply) => {
      const row = await findVisible(request.em, request.params.id);
      const file = await storedFile(request.em, row.id, 'DOCUMENT');
      if (!file) throw notFound('Settlement document');
      return reply
        .type('application/pdf')
        .header('content-disposition', `attachment; filename="${file.file_name}"`)
        .header('content-length', String(file.content.length))
        .header('x-content-type-options', 'nosniff')
        .send(Readable.from([file.content]));
    },
  );

  app.get(
    '/settlements/:id/proofs/:fileName',
    {
      config: organizer('ADMIN', 'settlements'),
      schema: {
        tags: ['settlements'],
        summary: 'A bank transfer proof of this settlement, by its exact file name',
        params: ProofParams,
        response: { 200: fileResponse('The proof as uploaded, as an attachment', PROOF_CONTENT_TYPES) },
      },
    },
    async (request, reply) => {
      const row = await findVisible(request.em, request.params.id);
      const { fileName } = request.params;
      // Only a plain name can be a proof's name; anything with a path meaning is not looked up at all.
      if (!PROOF_FILE_NAME_PATTERN.test(fileName) || fileName.includes('..')) throw notFound('Proof');
      const file = await storedFile(request.em, row.id, 'PROOF', fileName);
      if (!file) throw notFound('Proof');
      return reply
        .type(file.content_type)
        .header('content-disposition', `attachment; filename="${file.file_name}"`)
        .header('content-length', String(file.content.length))
        .header('x-content-type-options', 'nosniff')
        .send(Readable.from([file.content]));
    },
  );
};
