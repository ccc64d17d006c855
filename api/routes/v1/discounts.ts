import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DISCOUNT_TYPES, type IDiscount } from '../../../entities/discount.js';
import { isUuid } from '../../../entities/ids.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { MAX_ORDER_SUBTOTAL } from '../../http/money.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import { createDiscount, deleteDiscount, listDiscounts, updateDiscount } from '../../services/discounts.js';

/** No order's ticket subtotal is larger (api/http/money.ts), and the value column (numeric 12,2) holds it. */
const MAX_FIXED_VALUE = MAX_ORDER_SUBTOTAL;

/** The contract's Discount (part 2), field for field. */
export const DiscountSchema = z
  .object({
    id: z.string(),
    code: z.string().meta({ description: 'Upper-case; buyers may type it in any case' }),
    type: z.enum(DISCOUNT_TYPES),
    value: z.number().meta({ description: 'PERCENT: 1–100; FIXED: minor units off the order' }),
    eventId: z.string().nullable().meta({ description: 'null: valid for every event of the workspace' }),
    active: z.boolean(),
    maxUses: z.number().int().nullable(),
    uses: z.number().int(),
    startsAt: z.string().nullable(),
    endsAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'Discount' });

const DiscountFields = z.object({
  code: z
    .string()
    .trim()
    .min(2)
    .max(40)
    .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, dashes and underscores')
    .transform((code) => code.toUpperCase()),
  type: z.enum(DISCOUNT_TYPES),
  value: z.number().positive().max(MAX_FIXED_VALUE).meta({
    description: 'PERCENT: more than 0 up to 100, at most two decimals (12.5); FIXED: whole minor units, ≥ 1',
  }),
  eventId: z.string().refine(isUuid, 'must be a UUID').nullable(),
  active: z.boolean(),
  maxUses: z.number().int().min(1).max(100_000_000).nullable(),
  startsAt: IsoDateTimeSchema.nullable(),
  endsAt: IsoDateTimeSchema.nullable().meta({ description: 'After startsAt' }),
});

const CreateDiscountBody = DiscountFields.extend({
  eventId: DiscountFields.shape.eventId.optional(),
  active: DiscountFields.shape.active.default(true),
  maxUses: DiscountFields.shape.maxUses.optional(),
  startsAt: DiscountFields.shape.startsAt.optional(),
  endsAt: DiscountFields.shape.endsAt.optional(),
});

const UpdateDiscountBody = DiscountFields.partial();

const BooleanQuery = z.enum(['true', 'false']).transform((value) => value === 'true');

const ListDiscountsQuery = PageQuerySchema.extend({
  event: z.string().refine(isUuid, 'must be a UUID').optional().meta({ description: 'Event id' }),
  active: BooleanQuery.optional(),
});

const toDiscount = (discount: IDiscount) => ({
  id: discount.id,
  code: discount.code,
  type: discount.type,
  value: discount.value,
  eventId: discount.event ?? null,
  active: discount.active,
  maxUses: discount.maxUses ?? null,
  uses: discount.uses,
  startsAt: isoOrNull(discount.startsAt),
  endsAt: isoOrNull(discount.endsAt),
  createdAt: discount.createdAt.toISOString(),
});

export const discountRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/discounts',
    {
      config: organizer('ADMIN', 'discounts'),
      schema: {
        tags: ['discounts'],
        summary: 'List discount codes, newest first',
        querystring: ListDiscountsQuery,
        response: { 200: listOf(DiscountSchema) },
      },
    },
    async (request) => {
      const { limit, cursor, event, active } = request.query;
      const rows = await listDiscounts(request.em, { after: decodeCursor(cursor), limit: limit + 1, event, active });
      const { items, page } = toPage(rows, limit);
      return { data: items.map(toDiscount), page, ...(request.warnings.length ? { warnings: request.warnings } : {}) };
    },
  );

  app.post(
    '/discounts',
    {
      config: organizer('ADMIN', 'discounts'),
      schema: {
        tags: ['discounts'],
        summary: 'Create a discount code',
        body: CreateDiscountBody,
        response: { 201: dataOf(DiscountSchema) },
      },
    },
    async (request, reply) => {
      const workspace = activeWorkspace(request);
      const discount = await createDiscount(request.em, workspace.workspaceId, request.body);
      return reply.status(201).send({ data: toDiscount(discount) });
    },
  );

  app.patch(
    '/discounts/:id',
    {
      config: organizer('ADMIN', 'discounts'),
      schema: {
        tags: ['discounts'],
        summary: 'Update a discount code (partial)',
        params: IdParamSchema,
        body: UpdateDiscountBody,
        response: { 200: dataOf(DiscountSchema) },
      },
    },
    async (request) => {
      const workspace = activeWorkspace(request);
      const discount = await updateDiscount(request.em, workspace.workspaceId, request.params.id, request.body);
      return { data: toDiscount(discount) };
    },
  );

  app.delete(
    '/discounts/:id',
    {
      config: organizer('ADMIN', 'discounts'),
      schema: {
        tags: ['discounts'],
        summary: 'Soft-delete a discount code; its code can then be reused',
        params: IdParamSchema,
        response: { 200: dataOf(DiscountSchema) },
      },
    },
    async (request) => ({ data: toDiscount(await deleteDiscount(request.em, request.params.id)) }),
  );
};
