/**
 * Event cancellation: the organizer's POST /events/{id}/cancel. The event stops selling at once (the API flips its
 * status in the same request); this workflow then undoes every sale of the event.
 *
 * pass: find the sales still PENDING or CONFIRMED ─▶ for each, start (or join) its own workflow
 *         PENDING ─────────────────────▶ cancellation/<saleId> (through the checkout, open payment acknowledged)
 *         CONFIRMED through a gateway ─▶ refund/<saleId> (tickets used at the door included; buyer notified;
 *                                        `sale.refunded` webhook from the refund itself)
 *         complimentary / box office ──▶ cancellation/<saleId>
 *       ─▶ record progress on the event ─▶ wait (2 s doubling to 1 min) ─▶ next pass, until none is left
 * DONE is recorded then; after `finalSweepDelayMs` it looks once more: a payment in flight at cancel time may
 * confirm a sale later.
 *
 * Never twice: the per-sale workflow ids are the ones the organizer's own cancel and refund use, and each of those
 * workflows re-reads the sale, so a sale already refunded is not refunded again whoever asked first. A sale whose
 * undo ends in a refusal (a gateway that refuses the refund for good) is recorded as a failure for the organizer and
 * not retried in a loop. Every step is an activity retried without a cap, so a crash anywhere resumes where it was.
 */
import { proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { EventCancellationActivities } from '../activities/event-cancellation.js';
import type { EventCancellationProgress } from '../entities/event.js';
import {
  type EventCancellationInput,
  type EventCancellationResult,
  eventCancellationProgressQuery,
  type SaleToUndo,
} from './event-cancellation-definitions.js';

const steps = proxyActivities<EventCancellationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

const DEFAULT_PASS_INTERVAL_MS = 2_000;
const MAX_PASS_INTERVAL_MS = 60_000;
const DEFAULT_FINAL_SWEEP_DELAY_MS = 60 * 60 * 1000;

type Failure = EventCancellationProgress['failures'][number];

export async function eventCancellation(input: EventCancellationInput): Promise<EventCancellationResult> {
  const startedAt = new Date(workflowInfo().startTime).toISOString();
  /** `<saleId>:<action>` this execution started, so a finished one reports its outcome instead of starting again. */
  const started = new Set<string>();
  const failures = new Map<string, Failure>();
  let passes = 0;
  let inFlight = 0;
  setHandler(eventCancellationProgressQuery, () => ({ passes, inFlight, failures: failures.size }));

  /** Passes until no sale is left to undo; true when there was any. */
  const undoRemainingSales = async (): Promise<boolean> => {
    let interval = input.passIntervalMs ?? DEFAULT_PASS_INTERVAL_MS;
    for (let pass = 0; ; pass += 1) {
      passes += 1;
      const batch = await steps.findSalesToUndo({ eventId: input.eventId, skip: [...failures.keys()] });
      inFlight = batch.length;
      if (batch.length === 0) return pass > 0;
      await undoEach(batch);
      await recordProgress(false);
      await sleep(interval, { summary: 'look for sales still to undo' });
      interval = Math.min(interval * 2, MAX_PASS_INTERVAL_MS);
    }
  };

  const undoEach = async (batch: SaleToUndo[]): Promise<void> => {
    for (const sale of batch) {
      const key = `${sale.saleId}:${sale.action}`;
      const state = await steps.undoSale({
        saleId: sale.saleId,
        action: sale.action,
        reason: input.reason,
        startedBefore: started.has(key),
      });
      started.add(key);
      if (state.state === 'failed') {
        failures.set(sale.saleId, {
          saleId: sale.saleId,
          reference: sale.reference,
          code: state.code,
          message: state.message,
        });
      }
    }
  };

  const recordProgress = (finished: boolean) =>
    steps.recordEventCancellationProgress({
      eventId: input.eventId,
      startedAt,
      finished,
      failures: [...failures.values()],
    });

  await recordProgress(false);
  await undoRemainingSales();
  let final = await recordProgress(true);
  await sleep(input.finalSweepDelayMs ?? DEFAULT_FINAL_SWEEP_DELAY_MS, { summary: 'final sweep for late sales' });
  if (await undoRemainingSales()) final = await recordProgress(true);
  return { cancelled: final.cancelled, refunded: final.refunded, failures: failures.size };
}
