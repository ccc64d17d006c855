/**
 * Storefront order rules that hold without the stack (api/services/public-orders.ts): which ticket types one order
 * may hold, refused in the contract's order, and that an order whose payment does not open gives its stock back.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { openOrderPayment, orderedTypes } from '../../api/services/public-orders.js';
import type { ApiServices } from '../../api/services.js';
import type { ITicketType } from '../../entities/ticket-type.js';
import { appErrorOf } from '../support/app-errors.js';

const id = (n: number) => `0190a0b0-0000-7000-8000-00000000000${n}`;

const typeOf = (n: number, overrides: Partial<ITicketType> = {}) =>
  ({
    id: id(n),
    workspace: 'workspace-1',
    event: 'event-1',
    eventDate: 'date-1',
    currency: 'COP',
    seatMapCategoryKey: null,
    ...overrides,
  }) as ITicketType;

/** Finds the given ticket types by id; nothing else is read. */
const emWith = (...types: ITicketType[]) =>
  ({
    find: async (_entity: unknown, where: { id: { $in: string[] } }) =>
      types.filter((type) => where.id.$in.includes(type.id)),
  }) as unknown as EntityManager;

const items = (...ns: number[]) => ns.map((n) => ({ ticketTypeId: id(n) }));

describe('which ticket types one storefront order may hold', () => {
  test('unknown types are 404 naming every missing id', async () => {
    const error = await appErrorOf(orderedTypes(emWith(typeOf(1)), items(1, 2, 3)));
    expect(error.code).toBe('NOT_FOUND');
    expect(error.details).toEqual({ ticketTypeIds: [id(2), id(3)] });
    expect((await appErrorOf(orderedTypes(emWith(), [{ ticketTypeId: 'not-a-uuid' }]))).code).toBe('NOT_FOUND');
  });

  test('several organizers are 409 MULTIPLE_ORGS, before several currencies or dates', async () => {
    const em = emWith(typeOf(1), typeOf(2, { workspace: 'workspace-2', currency: 'USD', eventDate: 'date-2' }));
    expect((await appErrorOf(orderedTypes(em, items(1, 2)))).code).toBe('MULTIPLE_ORGS');
  });

  test('several currencies are 409 MIXED_CURRENCY naming them, before several dates', async () => {
    const error = await appErrorOf(
      orderedTypes(emWith(typeOf(1), typeOf(2, { currency: 'USD', eventDate: 'date-2' })), items(1, 2)),
    );
    expect(error.code).toBe('MIXED_CURRENCY');
    expect(error.details).toEqual({ currencies: ['COP', 'USD'] });
  });

  test('several dates are 422 on body.items naming the dates', async () => {
    const error = await appErrorOf(orderedTypes(emWith(typeOf(1), typeOf(2, { eventDate: 'date-2' })), items(1, 2)));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toMatchObject({ eventDateIds: ['date-1', 'date-2'], fields: [{ field: 'body.items' }] });
  });

  test('numbered types, or seats, sell in one-item orders only; a valid order answers its first type', async () => {
    const numbered = emWith(typeOf(1), typeOf(2, { seatMapCategoryKey: 'floor' }));
    expect((await appErrorOf(orderedTypes(numbered, items(1, 2)))).code).toBe('VALIDATION_FAILED');
    const seats = [{ ticketTypeId: id(1), seats: ['A-1'] }, { ticketTypeId: id(2) }];
    expect((await appErrorOf(orderedTypes(emWith(typeOf(1), typeOf(2)), seats))).code).toBe('VALIDATION_FAILED');
    expect((await orderedTypes(numbered, items(2))).id).toBe(id(2));
    expect((await orderedTypes(emWith(typeOf(1), typeOf(2)), items(2, 1))).id).toBe(id(2));
  });
});

describe("opening a storefront order's payment", () => {
  const saleId = id(9);

  /** A checkout that answers each update by name, and records which it was asked. */
  const checkoutAnswering = (answers: Record<string, () => unknown>) => {
    const asked: string[] = [];
    const services = {
      env: { PUBLIC_ORIGIN: 'https://tickets.example.com/' },
      temporal: {
        workflow: {
          getHandle: () => ({
            executeUpdate: async (update: { name: string }) => {
              asked.push(update.name);
              const answer = answers[update.name];
              if (!answer) throw new Error(`unexpected update ${update.name}`);
              return answer();
            },
          }),
        },
      },
    } as unknown as ApiServices;
    return { services, asked };
  };

  test('gateway A answers its checkout page and releases nothing', async () => {
    const { services, asked } = checkoutAnswering({
      openPse: () => ({ ok: true, redirectUrl: 'https://gateway-a.example/pay/1' }),
    });
    expect(await openOrderPayment(services, { saleId }, 'GATEWAY_A')).toBe('https://gateway-a.example/pay/1');
    expect(asked).toEqual(['openPse']);
  });

  test("gateway B answers the order's hosted payment page", async () => {
    const { services } = checkoutAnswering({
      openPayment: () => ({ ok: true, configuration: { gateway: 'GATEWAY_B' } }),
    });
    expect(await openOrderPayment(services, { saleId }, 'GATEWAY_B')).toBe(
      `https://tickets.example.com/api/public/orders/${saleId}/pay`,
    );
  });

  test('a refused payment is 409 PAYMENT_UNAVAILABLE and the stock is released at once', async () => {
    const { services, asked } = checkoutAnswering({
      openPse: () => ({ ok: false, message: 'no rail', reason: 'gateway_disabled' }),
      release: () => ({ ok: true }),
    });
    const error = await appErrorOf(openOrderPayment(services, { saleId }, 'GATEWAY_A'));
    expect(error.code).toBe('PAYMENT_UNAVAILABLE');
    expect(error.details).toEqual({ reason: 'gateway_disabled' });
    expect(asked).toEqual(['openPse', 'release']);
  });

  test('a failed update is PROVIDER_UNAVAILABLE and the stock is released at once', async () => {
    const { services, asked } = checkoutAnswering({
      openPse: () => {
        throw new WorkflowUpdateFailedError('update failed', undefined);
      },
      release: () => ({ ok: true }),
    });
    expect((await appErrorOf(openOrderPayment(services, { saleId }, 'GATEWAY_A'))).code).toBe('PROVIDER_UNAVAILABLE');
    expect(asked).toEqual(['openPse', 'release']);
  });
});
