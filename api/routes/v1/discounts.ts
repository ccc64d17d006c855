import { type FilterQuery, LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, notFound } from '../../../domain/errors.js';
import { invalidField } from '../../../domain/field-errors.js';
import { DISCOUNT_TYPES, type IDiscount } from '../../../entities/discount.js';
import { isUuid, newId } from '../../../entities/ids.js';
import { Discount, Event } from '../../../entities/index.js';
import { dateOrNull, patchedDate } from '../../http/dates.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';

const MAX_FIXED_VALUE = 1_000_000_000_000;

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

function assertValue(type: IDiscount['type'], value: number): void {
  if (type === 'PERCENT') {
    if (value > 100) throw invalidField('body.value', 'a PERCENT discount is more than 0 and at most 100');
    if (Math.round(value * 100) / 100 !== value)
      throw invalidField('body.value', 'a PERCENT discount has at most two decimals');
    return;
  }
  if (!Number.isInteger(value)) throw invalidField('body.value', 'a FIXED discount is whole minor units');
}

function assertWindow(startsAt: Date | null, endsAt: Date | null): void {
  if (startsAt && endsAt && endsAt.getTime() <= startsAt.getTime())
    throw invalidField('body.endsAt', 'must be after startsAt');
}

async function assertEvent(em: EntityManager, eventId: string | null | undefined): Promise<void> {
  if (eventId && !(await em.findOne(Event, { id: eventId }))) {
    throw invalidField('body.eventId', 'no event with this id in your workspace');
  }
}

/**
 * Codes are unique per workspace among discounts that are not deleted. There is no partial unique index for that,
 * so writers of one code serialize on a transaction-scoped advisory lock, then check.
 */
async function claimCode(em: EntityManager, workspaceId: string, code: string, exceptId?: string): Promise<void> {
  await em.execute('select pg_advisory_xact_lock(hashtext(?))', [`discount-code:${workspaceId}:${code}`]);
  const taken = await em.count(Discount, { code, ...(exceptId ? { id: { $ne: exceptId } } : {}) });
  if (taken > 0) {
    throw new AppError('ALREADY_EXISTS', `The discount code ${code} already exists in this workspace`, {
      details: { fields: [{ field: 'body.code', message: 'already exists' }] },
    });
  }
}

async function findDiscount(em: EntityManager, id: string, options: { lock?: boolean } = {}): Promise<IDiscount> {
  const discount = isUuid(id)
    ? await em.findOne(Discount, { id }, options.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {})
    : null;
  if (!discount) throw notFound('Discount');
  return discount;
}

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
      const after = decodeCursor(cursor);
      const where: FilterQuery<IDiscount> = {
        ...(after ? { id: { $lt: after } } : {}),
        ...(event ? { event } : {}),
        ...(active !== undefined ? { active } : {}),
      };
      const rows = await request.em.find(Discount, where, { orderBy: { id: 'desc' }, limit: limit + 1 });
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
      const body = request.body;
      const startsAt = dateOrNull(body.startsAt);
      const endsAt = dateOrNull(body.endsAt);
      assertValue(body.type, body.value);
      assertWindow(startsAt, endsAt);
      const discount = await request.em.transactional(async (tx) => {
        await assertEvent(tx, body.eventId);
        await claimCode(tx, workspace.workspaceId, body.code);
        return tx.create(Discount, {
          id: newId(),
          workspace: workspace.workspaceId,
          code: body.code,
          type: body.type,
          value: body.value,
          event: body.eventId ?? null,
          active: body.active,
          maxUses: body.maxUses ?? null,
          uses: 0,
          startsAt,
          endsAt,
          deletedAt: null,
        });
      });
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
      const body = request.body;
      const discount = await request.em.transactional(async (tx) => {
        // Locked, so checkout cannot count a use between the maxUses check and the update.
        const found = await findDiscount(tx, request.params.id, { lock: true });
        assertValue(body.type ?? found.type, body.value ?? found.value);
        const startsAt = patchedDate(body.startsAt, found.startsAt);
        const endsAt = patchedDate(body.endsAt, found.endsAt);
        assertWindow(startsAt, endsAt);
        if (body.eventId !== undefined) await assertEvent(tx, body.eventId);
        if (body.code !== undefined && body.code !== found.code) {
          await claimCode(tx, workspace.workspaceId, body.code, found.id);
        }
        if (body.maxUses !== undefined && body.maxUses !== null && body.maxUses < found.uses) {
          throw new AppError(
            'CONFLICT',
            `maxUses cannot be ${body.maxUses}: the code was already used ${found.uses} time(s)`,
            { details: { reason: 'max_uses_below_uses', uses: found.uses } },
          );
        }
        if (body.code !== undefined) found.code = body.code;
        if (body.type !== undefined) found.type = body.type;
        if (body.value !== undefined) found.value = body.value;
        if (body.eventId !== undefined) found.event = body.eventId;
        if (body.active !== undefined) found.active = body.active;
        if (body.maxUses !== undefined) found.maxUses = body.maxUses;
        found.startsAt = startsAt;
        found.endsAt = endsAt;
        return found;
      });
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
    async (request) => {
      const discount = await findDiscount(request.em, request.params.id);
      discount.deletedAt = new Date();
      await request.em.flush();
      return { data: toDiscount(discount) };
    },
  );
};
