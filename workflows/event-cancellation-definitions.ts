/** Names and payloads of the event-cancellation workflow, shared by the API, its activities and the workflow. */
import { defineQuery } from '@temporalio/workflow';

export const eventCancellationWorkflowId = (eventId: string): string => `event-cancellation/${eventId}`;

export interface EventCancellationInput {
  eventId: string;
  workspaceId: string;
  /** Kept as each sale's failureReason and in the refund record. */
  reason: string;
  /** First wait between passes while sales are still being undone, doubling up to one minute. Default 2 s. */
  passIntervalMs?: number;
  /**
   * After the last sale is undone, the workflow looks once more after this long: a payment that was in flight when
   * the event was cancelled can still confirm a sale, which must then be refunded too. Default one hour.
   */
  finalSweepDelayMs?: number;
  /** Sales read per page (one activity call). Default 400. */
  pageSize?: number;
  /** Refunds in flight at the gateway at once within a page. Default 32. */
  concurrency?: number;
  /**
   * The run continues as new once its history holds this many events (or when the server suggests it), so a
   * cancellation that waits out a long outage never nears the history limit. Default 2,000.
   */
  continueAsNewAfterEvents?: number;
  /** Where the previous run stopped; absent on the first run. */
  carried?: EventCancellationCarry;
}

/** What one run hands the next when it continues as new. */
export interface EventCancellationCarry {
  startedAt: string;
  /** Id of the last sale of the current pass that was dealt with; null at the start of a pass. */
  cursor: string | null;
  passes: number;
  /** Sales of the current pass left for a later pass (the gateway was unavailable, a per-sale workflow still runs). */
  leftInPass: number;
  /** Sales undone in the current pass (a pass that undid nothing waits longer before the next). */
  undoneInPass: number;
  waitMs: number;
  stage: 'undoing' | 'final_sweep';
  /** Undos that ended in a failure the organizer must handle by hand (not refund refusals: the database has those). */
  failures: EventCancellationFailure[];
}

export interface EventCancellationFailure {
  saleId: string;
  reference: string;
  code: string;
  message: string;
}

/** What to do with one sale of a cancelled event, chosen from its status now. */
export type SaleUndoAction = 'cancel' | 'refund';

/** One page of the batched cancellation: what `undoNextSales` did with the next sales after the cursor. */
export interface UndoPageResult {
  /** The last sale dealt with; null when the pass reached the end of the event's sales. */
  cursor: string | null;
  /** Refunded or cancelled by this page. */
  undone: number;
  /** Left for a later pass: the gateway was unavailable, or a per-sale workflow (cancel, refund) still runs. */
  left: number;
  /** The gateway failed every refund of a chunk: the page stopped at the cursor and the pass waits before going on. */
  gatewayUnavailable: boolean;
  /** Undos that ended in a failure this page found (a per-sale workflow that ended refused). */
  failures: EventCancellationFailure[];
  /** Counts by status after the page, written on the event too. */
  progress: EventCancellationCounts;
}

export interface EventCancellationCounts {
  pending: number;
  confirmed: number;
  cancelled: number;
  refunded: number;
  abandoned: number;
  /** CONFIRMED sales whose refund the gateway refused for good since the cancellation: an operator retries them. */
  refused: number;
}

export interface EventCancellationResult {
  cancelled: number;
  refunded: number;
  failures: number;
}

export interface EventCancellationProgressView {
  passes: number;
  inFlight: number;
  failures: number;
  /** Present on batched executions. */
  stage?: EventCancellationCarry['stage'];
  counts?: EventCancellationCounts;
}

export const eventCancellationProgressQuery = defineQuery<EventCancellationProgressView>('progress');
