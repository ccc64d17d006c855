/**
 * Event cancellation: the organizer's POST /events/{id}/cancel. The event stops selling at once (the API flips its
 * status in the same request); this workflow then undoes every sale of the event, a page at a time.
 *
 * page: the next sales after the cursor (by id) still PENDING or CONFIRMED ─▶ one heartbeating activity undoes them,
 *       a bounded number at once:
 *         CONFIRMED through a gateway ─▶ refunded at the gateway (idempotency key refund-<saleId>), recorded, buyer
 *                                        emailed; a refusal goes to refund/<saleId>, which parks it as refund_refused
 *         PENDING ────────────────────▶ cancellation/<saleId> (through the checkout, open payment acknowledged)
 *         complimentary / box office ─▶ cancellation/<saleId>
 *       ─▶ progress on the event, the memo and the query ─▶ next page, until the end of the event's sales
 * gateway down (every refund of a chunk unavailable) ─▶ wait (2 s doubling to 1 min) and go on from the cursor
 * end of a pass with sales left (gateway unavailable for some, per-sale workflows still running) ─▶ wait, new pass
 * end of a pass with none left ─▶ DONE recorded; after `finalSweepDelayMs` one more pass: a payment in flight at
 * cancel time may confirm a sale later.
 *
 * History stays small whatever the event's size or the outage's length: each page is one activity (a few events,
 * not a few per sale), and the run continues as new with its cursor and counts long before the history limit.
 * Never twice: the gateway refund carries the idempotency key the organizer's own refund uses and is skipped when the
 * gateway already reports the payment refunded; a sale is refunded once whoever asks. A refund refused for good is
 * counted as refused and left to the operator, never retried in a loop.
 */
import {
  continueAsNew,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { EventCancellationActivities } from '../activities/event-cancellation.js';
import {
  type EventCancellationCarry,
  type EventCancellationCounts,
  type EventCancellationFailure,
  type EventCancellationInput,
  type EventCancellationResult,
  eventCancellationProgressQuery,
} from './event-cancellation-definitions.js';
import { onProviderQueue } from './local-steps.js';

/**
 * A page's activity retries without a cap (money must go back); it heartbeats after every sale and resumes from its
 * last heartbeat's cursor, so a worker crash repeats at most the sales then in flight (each idempotent).
 */
const PAGE_OF_REFUNDS = {
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
} as const;
const pages = proxyActivities<EventCancellationActivities>(PAGE_OF_REFUNDS);
/** The pages' gateway refunds run on the provider queue: a mass refund never holds the slots checkouts need. */
const refundPages = onProviderQueue<EventCancellationActivities>(PAGE_OF_REFUNDS);

const DEFAULT_PASS_INTERVAL_MS = 2_000;
const MAX_PASS_INTERVAL_MS = 60_000;
const DEFAULT_FINAL_SWEEP_DELAY_MS = 60 * 60 * 1000;
const DEFAULT_PAGE_SIZE = 400;
/**
 * Refunds at once. Measured on the shared 2-core box (1,000 sales, bench/mass-refund.ts): 13.5/s at 16, 21/s at 32,
 * 16.4/s at 64; past 32 the refunds queue on the ticket type's stock rows (each refund locks its shard to give the
 * stock back) and on the worker's database pool.
 */
const DEFAULT_CONCURRENCY = 32;
const DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS = 2_000;
/** Failures kept in the workflow's state (and shown on the event); the refused refunds are counted from the database. */
const MAX_FAILURES_KEPT = 200;

export async function eventCancellation(input: EventCancellationInput): Promise<EventCancellationResult> {
  const firstWaitMs = input.passIntervalMs ?? DEFAULT_PASS_INTERVAL_MS;
  const carry: EventCancellationCarry = input.carried ?? {
    startedAt: new Date(workflowInfo().startTime).toISOString(),
    cursor: null,
    passes: 1,
    leftInPass: 0,
    undoneInPass: 0,
    waitMs: firstWaitMs,
    stage: 'undoing',
    failures: [],
  };
  let counts: EventCancellationCounts | undefined;
  let shown = '';
  setHandler(eventCancellationProgressQuery, () => ({
    passes: carry.passes,
    inFlight: carry.leftInPass,
    failures: carry.failures.length + (counts?.refused ?? 0),
    stage: carry.stage,
    ...(counts ? { counts } : {}),
  }));

  /** The Temporal UI shows the counts (memo, current details) without a query; the memo only changes with them. */
  const showProgress = () => {
    if (!counts) return;
    const summary = JSON.stringify({ stage: carry.stage, ...counts, failures: carry.failures.length });
    setCurrentDetails(
      `**${carry.stage}**, pass ${carry.passes}: ${counts.refunded} refunded, ${counts.cancelled} cancelled, ` +
        `${counts.confirmed} still paid, ${counts.pending} pending, ${counts.refused} refused by the gateway`,
    );
    if (summary === shown) return;
    shown = summary;
    upsertMemo({ cancellation: JSON.parse(summary) as Record<string, unknown> });
  };

  const keepFailures = (found: EventCancellationFailure[]) => {
    for (const failure of found) {
      if (carry.failures.length >= MAX_FAILURES_KEPT) return;
      if (!carry.failures.some((known) => known.saleId === failure.saleId)) carry.failures.push(failure);
    }
  };

  const startNextPass = () => {
    carry.passes += 1;
    carry.cursor = null;
    carry.leftInPass = 0;
    carry.undoneInPass = 0;
  };

  const recordDone = () =>
    pages.recordEventCancellationProgress({
      eventId: input.eventId,
      startedAt: carry.startedAt,
      finished: true,
      failures: carry.failures,
    });

  for (;;) {
    await continueAsNewWhenHistoryGrows(input, carry);
    const page = await refundPages.undoNextSales({
      eventId: input.eventId,
      reason: input.reason,
      cursor: carry.cursor,
      pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE,
      concurrency: input.concurrency ?? DEFAULT_CONCURRENCY,
      startedAt: carry.startedAt,
      failures: carry.failures,
    });
    counts = page.progress;
    carry.undoneInPass += page.undone;
    carry.leftInPass += page.left;
    keepFailures(page.failures);
    showProgress();

    if (page.gatewayUnavailable) {
      carry.cursor = page.cursor;
      await sleep(carry.waitMs, { summary: 'gateway unavailable: wait, then refund from the cursor on' });
      carry.waitMs = Math.min(carry.waitMs * 2, MAX_PASS_INTERVAL_MS);
      continue;
    }
    if (page.cursor !== null) {
      carry.cursor = page.cursor;
      carry.waitMs = firstWaitMs;
      continue;
    }
    // The pass reached the end of the event's sales.
    if (carry.leftInPass > 0) {
      const wait = carry.undoneInPass > 0 ? firstWaitMs : carry.waitMs;
      if (carry.undoneInPass === 0) carry.waitMs = Math.min(carry.waitMs * 2, MAX_PASS_INTERVAL_MS);
      startNextPass();
      await sleep(wait, { summary: 'look again at sales still being undone' });
      continue;
    }
    const done = await recordDone();
    if (carry.stage === 'final_sweep') {
      return {
        cancelled: done.cancelled,
        refunded: done.refunded,
        failures: carry.failures.length + (done.refused ?? 0),
      };
    }
    carry.stage = 'final_sweep';
    carry.waitMs = firstWaitMs;
    startNextPass();
    showProgress();
    await sleep(input.finalSweepDelayMs ?? DEFAULT_FINAL_SWEEP_DELAY_MS, { summary: 'final sweep for late sales' });
  }
}

async function continueAsNewWhenHistoryGrows(
  input: EventCancellationInput,
  carry: EventCancellationCarry,
): Promise<void> {
  const info = workflowInfo();
  const limit = input.continueAsNewAfterEvents ?? DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS;
  if (!info.continueAsNewSuggested && info.historyLength < limit) return;
  await continueAsNew<typeof eventCancellation>({ ...input, carried: carry });
}
