/**
 * Discount codes of a workspace: what a value means per type, the validity window, the event a code is tied to, one
 * live code per workspace, and maxUses never below the uses already counted. Routes keep the HTTP side.
 */
import { type FilterQuery, LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../../domain/errors.js';
import { invalidField } from '../../domain/field-errors.js';
import type { IDiscount } from '../../entities/discount.js';
import { isUuid, newId } from '../../entities/ids.js';
import { Discount, Event } from '../../entities/index.js';
import { dateOrNull, patchedDate } from '../http/dates.js';

export interface DiscountFields {
  code: string;
  type: IDiscount['type'];
  value: number;
  eventId: string | null;
  active: boolean;
  maxUses: number | null;
  /** ISO date-times as sent; null or absent: no bound. */
  startsAt: string | null;
  endsAt: string | null;
}

export type NewDiscount = Pick<DiscountFields, 'code' | 'type' | 'value' | 'active'> & {
  [K in 'eventId' | 'maxUses' | 'startsAt' | 'endsAt']?: DiscountFields[K] | undefined;
};

/** A change leaves every field it does not name as it is; nullable fields accept null to clear them. */
export type DiscountChange = { [K in keyof DiscountFields]?: DiscountFields[K] | undefined };

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

/** Newest first; `after` is the last id of the previous page. */
export async function listDiscounts(
  em: EntityManager,
  query: { after: string | undefined; limit: number; event?: string | undefined; active?: boolean | undefined },
): Promise<IDiscount[]> {
  const where: FilterQuery<IDiscount> = {
    ...(query.after ? { id: { $lt: query.after } } : {}),
    ...(query.event ? { event: query.event } : {}),
    ...(query.active !== undefined ? { active: query.active } : {}),
  };
  return em.find(Discount, where, { orderBy: { id: 'desc' }, limit: query.limit });
}

export async function createDiscount(em: EntityManager, workspaceId: string, input: NewDiscount): Promise<IDiscount> {
  const startsAt = dateOrNull(input.startsAt);
  const endsAt = dateOrNull(input.endsAt);
  assertValue(input.type, input.value);
  assertWindow(startsAt, endsAt);
  return em.transactional(async (tx) => {
    await assertEvent(tx, input.eventId);
    await claimCode(tx, workspaceId, input.code);
    return tx.create(Discount, {
      id: newId(),
      workspace: workspaceId,
      code: input.code,
      type: input.type,
      value: input.value,
      event: input.eventId ?? null,
      active: input.active,
      maxUses: input.maxUses ?? null,
      uses: 0,
      startsAt,
      endsAt,
      deletedAt: null,
    });
  });
}

export async function updateDiscount(
  em: EntityManager,
  workspaceId: string,
  id: string,
  change: DiscountChange,
): Promise<IDiscount> {
  return em.transactional(async (tx) => {
    // Locked, so checkout cannot count a use between the maxUses check and the update.
    const found = await findDiscount(tx, id, { lock: true });
    assertValue(change.type ?? found.type, change.value ?? found.value);
    const startsAt = patchedDate(change.startsAt, found.startsAt);
    const endsAt = patchedDate(change.endsAt, found.endsAt);
    assertWindow(startsAt, endsAt);
    if (change.eventId !== undefined) await assertEvent(tx, change.eventId);
    if (change.code !== undefined && change.code !== found.code) {
      await claimCode(tx, workspaceId, change.code, found.id);
    }
    if (change.maxUses !== undefined && change.maxUses !== null && change.maxUses < found.uses) {
      throw new AppError(
        'CONFLICT',
        `maxUses cannot be ${change.maxUses}: the code was already used ${found.uses} time(s)`,
        {
          details: { reason: 'max_uses_below_uses', uses: found.uses },
        },
      );
    }
    if (change.code !== undefined) found.code = change.code;
    if (change.type !== undefined) found.type = change.type;
    if (change.value !== undefined) found.value = change.value;
    if (change.eventId !== undefined) found.event = change.eventId;
    if (change.active !== undefined) found.active = change.active;
    if (change.maxUses !== undefined) found.maxUses = change.maxUses;
    found.startsAt = startsAt;
    found.endsAt = endsAt;
    return found;
  });
}

/** Soft-deletes a discount; its code is free again for a new one. */
export async function deleteDiscount(em: EntityManager, id: string): Promise<IDiscount> {
  const discount = await findDiscount(em, id);
  discount.deletedAt = new Date();
  await em.flush();
  return discount;
}
