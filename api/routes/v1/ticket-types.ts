import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type FeePolicy, quoteUnit, ticketTypeFeePolicy } from '../../../domain/pricing.js';
import { isUuid } from '../../../entities/ids.js';
import type { StockLevels } from '../../../entities/stock.js';
import type { ITicketType } from '../../../entities/ticket-type.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { MAX_UNIT_AMOUNT, minorUnits } from '../../http/money.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import {
  createTicketType,
  deleteTicketType,
  findTicketType,
  listTicketTypes,
  ticketTypeFigures,
  updateTicketType,
} from '../../services/ticket-types.js';

const MAX_CAPACITY = 1_000_000;

export const TicketTypeSchema = z
  .object({
    id: z.string(),
    eventId: z.string(),
    eventDateId: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    price: minorUnits('List price per ticket', 85000),
    currency: z.string().meta({ description: "The workspace's currency" }),
    capacity: z.number().int(),
    maxPerOrder: z.number().int(),
    membersOnly: z.boolean(),
    presaleStartsAt: z.string().nullable(),
    presaleEndsAt: z.string().nullable(),
    numbered: z.boolean().meta({ description: 'True when seatMapCategoryKey is set: the type sells exact seats' }),
    seatMapCategoryKey: z.string().nullable(),
    feeAbsorbedByOrganizer: z.boolean(),
    serviceFeeBps: z.number().int().nullable().meta({ description: 'Override of the workspace fee; null inherits' }),
    serviceFeeFixed: minorUnits('Fixed part of the service fee per ticket, overriding the workspace fee', 2000)
      .nullable()
      .meta({ description: 'Override of the workspace fee; null inherits' }),
    seatingSurcharge: minorUnits('Flat per-seat surcharge of numbered types; 0 for general admission', 5000),
    sortOrder: z.number().int(),
    sold: z.number().int().meta({ description: 'Units held by CONFIRMED sales' }),
    reserved: z.number().int().meta({ description: 'Units held by PENDING sales' }),
    available: z.number().int().meta({ description: 'capacity − sold − reserved' }),
    buyerServiceFee: minorUnits('Fee the buyer pays per ticket, seating surcharge included', 8500),
    iva: minorUnits('IVA (19 %) on buyerServiceFee', 1615),
    buyerTotal: minorUnits('price + buyerServiceFee + iva: what checkout charges', 95115),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'TicketType' });

const Amount = (description: string, example: number) => minorUnits(description, example).min(0).max(MAX_UNIT_AMOUNT);

const TicketTypeFields = z.object({
  name: z.string().trim().min(1).max(160),
  description: z.string().max(5000).nullable(),
  price: Amount('List price per ticket, in the workspace currency', 85000),
  capacity: z.number().int().min(0).max(MAX_CAPACITY),
  maxPerOrder: z.number().int().min(1).max(30),
  membersOnly: z.boolean(),
  presaleStartsAt: IsoDateTimeSchema.nullable(),
  presaleEndsAt: IsoDateTimeSchema.nullable(),
  seatMapCategoryKey: z.string().trim().min(1).max(120).nullable(),
  feeAbsorbedByOrganizer: z.boolean(),
  serviceFeeBps: z.number().int().min(0).max(10_000).nullable(),
  serviceFeeFixed: Amount('Fixed service fee per ticket, overriding the workspace fee; null inherits', 2000).nullable(),
  seatingSurcharge: Amount('Flat per-seat surcharge of numbered types', 5000),
  sortOrder: z.number().int().min(-1_000_000).max(1_000_000),
});

const CreateTicketTypeBody = TicketTypeFields.extend({
  eventId: z.string().refine(isUuid, 'must be a UUID'),
  eventDateId: z.string().refine(isUuid, 'must be a UUID').meta({ description: 'A date of eventId' }),
  description: TicketTypeFields.shape.description.optional(),
  maxPerOrder: TicketTypeFields.shape.maxPerOrder.default(10),
  membersOnly: TicketTypeFields.shape.membersOnly.default(false),
  presaleStartsAt: TicketTypeFields.shape.presaleStartsAt.optional(),
  presaleEndsAt: TicketTypeFields.shape.presaleEndsAt.optional(),
  seatMapCategoryKey: TicketTypeFields.shape.seatMapCategoryKey.optional(),
  feeAbsorbedByOrganizer: TicketTypeFields.shape.feeAbsorbedByOrganizer.default(false),
  serviceFeeBps: TicketTypeFields.shape.serviceFeeBps.optional(),
  serviceFeeFixed: TicketTypeFields.shape.serviceFeeFixed.optional(),
  seatingSurcharge: TicketTypeFields.shape.seatingSurcharge.default(0),
  sortOrder: TicketTypeFields.shape.sortOrder.default(0),
});

/** PATCH is partial; a ticket type stays on its event and date. */
const UpdateTicketTypeBody = TicketTypeFields.partial();

const ListTicketTypesQuery = PageQuerySchema.extend({
  event: z.string().refine(isUuid, 'must be a UUID').optional().meta({ description: 'Event id' }),
  eventDate: z.string().refine(isUuid, 'must be a UUID').optional().meta({ description: 'Event date id' }),
});

function toTicketType(type: ITicketType, stock: StockLevels | undefined, workspaceDefault: FeePolicy) {
  const numbered = type.seatMapCategoryKey != null;
  const quote = quoteUnit({
    price: type.price,
    numbered,
    feePolicy: ticketTypeFeePolicy(workspaceDefault, type),
  });
  return {
    id: type.id,
    eventId: type.event,
    eventDateId: type.eventDate,
    name: type.name,
    description: type.description ?? null,
    price: type.price,
    currency: type.currency,
    capacity: type.capacity,
    maxPerOrder: type.maxPerOrder,
    membersOnly: type.membersOnly,
    presaleStartsAt: isoOrNull(type.presaleStartsAt),
    presaleEndsAt: isoOrNull(type.presaleEndsAt),
    numbered,
    seatMapCategoryKey: type.seatMapCategoryKey ?? null,
    feeAbsorbedByOrganizer: type.feeAbsorbedByOrganizer,
    serviceFeeBps: type.serviceFeeBps ?? null,
    serviceFeeFixed: type.serviceFeeFixed ?? null,
    seatingSurcharge: type.seatingSurcharge,
    sortOrder: type.sortOrder,
    sold: stock?.sold ?? 0,
    reserved: stock?.reserved ?? 0,
    available: stock?.available ?? 0,
    buyerServiceFee: quote.buyerServiceFee,
    iva: quote.iva,
    buyerTotal: quote.buyerTotal,
    createdAt: type.createdAt.toISOString(),
    updatedAt: type.updatedAt.toISOString(),
  };
}

/** One ticket type as the API shows it: stock figures and the buyer quote read fresh. */
async function present(em: EntityManager, workspaceId: string, type: ITicketType) {
  const { levels, policy } = await ticketTypeFigures(em, workspaceId, [type.id]);
  return toTicketType(type, levels.get(type.id), policy);
}

export const ticketTypeRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/ticket-types',
    {
      config: organizer('VIEWER', 'events'),
      schema: {
        tags: ['ticket-types'],
        summary: 'List ticket types, newest first, with stock figures and the buyer quote',
        querystring: ListTicketTypesQuery,
        response: { 200: listOf(TicketTypeSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const { limit, cursor, event, eventDate } = request.query;
      const rows = await listTicketTypes(request.em, { after: decodeCursor(cursor), limit, event, eventDate });
      const { items, page } = toPage(rows, limit);
      const { levels, policy } = await ticketTypeFigures(
        request.em,
        workspace.workspaceId,
        items.map((type) => type.id),
      );
      return {
        data: items.map((type) => toTicketType(type, levels.get(type.id), policy)),
        page,
        ...(request.warnings.length ? { warnings: request.warnings } : {}),
      };
    },
  );

  app.post(
    '/ticket-types',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['ticket-types'],
        summary: 'Create a ticket type and its stock',
        body: CreateTicketTypeBody,
        response: { 201: dataOf(TicketTypeSchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const body = request.body;
      const created = await createTicketType(request.em, workspace.workspaceId, body);
      return reply.status(201).send({ data: await present(request.em, workspace.workspaceId, created) });
    },
  );

  app.get(
    '/ticket-types/:id',
    {
      config: organizer('VIEWER', 'events'),
      schema: {
        tags: ['ticket-types'],
        summary: 'Get a ticket type with stock figures and the buyer quote',
        params: IdParamSchema,
        response: { 200: dataOf(TicketTypeSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const type = await findTicketType(request.em, request.params.id);
      return { data: await present(request.em, workspace.workspaceId, type) };
    },
  );

  app.patch(
    '/ticket-types/:id',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['ticket-types'],
        summary: 'Update a ticket type (partial)',
        description:
          'Changing capacity adjusts the stock under lock; shrinking below what is sold or reserved is refused with 409.',
        params: IdParamSchema,
        body: UpdateTicketTypeBody,
        response: { 200: dataOf(TicketTypeSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const updated = await updateTicketType(request.em, request.params.id, request.body);
      return { data: await present(request.em, workspace.workspaceId, updated) };
    },
  );

  app.delete(
    '/ticket-types/:id',
    {
      config: organizer('ADMIN', 'events'),
      schema: {
        tags: ['ticket-types'],
        summary: 'Soft-delete a ticket type that no sale holds units of',
        description:
          '409 INVALID_STATE (details.reason ticket_type_has_sales, details.sales) while PENDING or CONFIRMED sales ' +
          'hold its units, as DELETE /events answers; lower the capacity to stop its sales instead. A deleted type ' +
          'that still has such sales (deleted before this rule) stays in /reports/inventory.',
        params: IdParamSchema,
        response: { 200: dataOf(TicketTypeSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const type = await deleteTicketType(request.em, request.params.id);
      request.log.info({ ticketTypeId: type.id }, 'ticket type deleted');
      return { data: await present(request.em, workspace.workspaceId, type) };
    },
  );
};
