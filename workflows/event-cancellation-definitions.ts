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
}

/** What to do with one sale of a cancelled event, chosen from its status now. */
export type SaleUndoAction = 'cancel' | 'refund';

export interface SaleToUndo {
  saleId: string;
  reference: string;
  action: SaleUndoAction;
}

/** Where one sale's undo stands after `undoSale`. */
export type SaleUndoState =
  | { state: 'started' | 'running' | 'done' }
  | { state: 'failed'; code: string; message: string };

export interface EventCancellationResult {
  cancelled: number;
  refunded: number;
  failures: number;
}

export const eventCancellationProgressQuery = defineQuery<{ passes: number; inFlight: number; failures: number }>(
  'progress',
);
