/**
 * Numbered seats at the seat-map provider: the hold a purchase session or a public order takes, its extension to
 * the reservation's window, the booking on confirmation and the release when the sale ends unpaid. The sale row
 * (its item's `seats`, its `holdToken`) says which seats a sale owns; the provider says who holds them now.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { ANY_TENANT } from '../entities/common.js';
import { EventDate, Sale, SaleItem } from '../entities/index.js';
import type { ActivityDeps } from './deps.js';
import type { SeatMapSeat } from './ports.js';

/** A status change the provider refused (seat held by another token, booked, unknown): not worth retrying. */
export function isSeatRefusal(error: unknown): boolean {
  return error instanceof ApplicationFailure && typeof error.type === 'string' && error.type.startsWith('seatmap:');
}

export interface SaleSeats {
  eventKey: string;
  labels: string[];
  holdToken: string | null;
}

export async function seatsOfSale(deps: ActivityDeps, saleId: string): Promise<SaleSeats | null> {
  const em = deps.orm.em.fork();
  const sale = await em.findOne(Sale, { id: saleId }, ANY_TENANT);
  if (!sale) return null;
  const items = await em.find(SaleItem, { sale: saleId });
  const labels = items.flatMap((item) => item.seats ?? []);
  if (labels.length === 0) return null;
  const date = await em.findOne(EventDate, { id: sale.eventDate }, ANY_TENANT);
  if (!date?.seatMapEventKey) return null;
  return { eventKey: date.seatMapEventKey, labels, holdToken: sale.holdToken ?? null };
}

export function seatMap(deps: ActivityDeps) {
  const port = deps.providers.seatMap;
  if (!port) throw ApplicationFailure.nonRetryable('the seat-map provider is not configured');
  return port;
}

/**
 * Puts back on sale the seats of a sale that was paid and then cancelled or refunded: the seats booked under its
 * order id and any still held by its token. Reads the provider first, so a repeat (an activity retry) frees nothing
 * that another buyer has taken since.
 */
export async function freeSeatsOfClosedSale(deps: ActivityDeps, saleId: string): Promise<number> {
  const seats = await seatsOfSale(deps, saleId);
  if (!seats) return 0;
  const port = seatMap(deps);
  const statuses: SeatMapSeat[] = await port.objectStatuses(seats.eventKey, seats.labels);
  const ours = statuses
    .filter(
      (seat) =>
        (seat.status === 'booked' && seat.orderId === saleId) ||
        (seat.status === 'reservedByToken' && seats.holdToken !== null && seat.holdToken === seats.holdToken),
    )
    .map((seat) => seat.label);
  if (ours.length === 0) return 0;
  try {
    await port.release({ eventKey: seats.eventKey, labels: ours });
  } catch (error) {
    if (!isSeatRefusal(error)) throw error;
  }
  return ours.length;
}

/** Minutes from now until `untilMs`, rounded up, plus a minute of margin so a last-second payment still books. */
export const minutesUntil = (untilMs: number, nowMs: number): number =>
  Math.max(1, Math.ceil((untilMs - nowMs) / 60_000) + 1);

export function createSeatActivities(deps: ActivityDeps) {
  return {
    /** A hold token for a purchase session (the map clock). */
    async createSessionHoldToken(input: {
      expiresInMinutes: number;
    }): Promise<{ holdToken: string; expiresAtMs: number }> {
      return seatMap(deps).createHoldToken(input.expiresInMinutes);
    },

    /** Expires a token now, freeing its seats; an already expired or unknown token is fine. */
    async expireHoldToken(input: { holdToken: string }): Promise<void> {
      const port = seatMap(deps);
      if (!(await port.getHoldToken(input.holdToken))) return;
      try {
        await port.updateHoldTokenExpiry(input.holdToken, 0);
      } catch (error) {
        if (!isSeatRefusal(error)) throw error;
      }
    },

    /**
     * Books the sale's seats (orderId = sale id, so a repeat is a no-op). `ok: false` when the provider refuses:
     * the hold was lost and another buyer holds or bought a seat, so the sale must not be confirmed.
     */
    async bookSaleSeats(input: { saleId: string }): Promise<{ ok: boolean; reason: string | null }> {
      const seats = await seatsOfSale(deps, input.saleId);
      if (!seats) return { ok: true, reason: null };
      const port = seatMap(deps);
      const live = seats.holdToken ? await port.getHoldToken(seats.holdToken) : null;
      try {
        await port.book({
          eventKey: seats.eventKey,
          labels: seats.labels,
          holdToken: live ? seats.holdToken : null,
          orderId: input.saleId,
        });
        return { ok: true, reason: null };
      } catch (error) {
        if (isSeatRefusal(error)) return { ok: false, reason: (error as Error).message };
        throw error;
      }
    },

    /** Puts back on sale the seats booked for a sale whose late payment could not be confirmed after all. */
    async releaseBookedSeats(input: { saleId: string }): Promise<{ released: number }> {
      return { released: await freeSeatsOfClosedSale(deps, input.saleId) };
    },

    /** Frees the seats of a sale that ended unpaid: the seats it holds, and its hold token when the sale owns it. */
    async releaseSaleSeats(input: { saleId: string }): Promise<void> {
      const seats = await seatsOfSale(deps, input.saleId);
      if (!seats?.holdToken) return;
      const port = seatMap(deps);
      const statuses: SeatMapSeat[] = await port.objectStatuses(seats.eventKey, seats.labels);
      const ours = statuses
        .filter((seat) => seat.status === 'reservedByToken' && seat.holdToken === seats.holdToken)
        .map((seat) => seat.label);
      if (ours.length > 0) {
        try {
          await port.release({ eventKey: seats.eventKey, labels: ours, holdToken: seats.holdToken });
        } catch (error) {
          if (!isSeatRefusal(error)) throw error;
        }
      }
      // The token was the order's (extended to its window); nothing else may use it now.
      if (await port.getHoldToken(seats.holdToken)) {
        try {
          await port.updateHoldTokenExpiry(seats.holdToken, 0);
        } catch (error) {
          if (!isSeatRefusal(error)) throw error;
        }
      }
    },
  };
}

export type SeatActivities = ReturnType<typeof createSeatActivities>;
