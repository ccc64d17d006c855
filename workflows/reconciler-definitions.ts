/**
 * The reconciler's settings and counts beyond the ones `workflows/definitions.ts` has always had (kept there so runs
 * and callers of before still fit): the gateway sweep's settlement lag for confirmed sales, and what a run reports
 * rather than fixes (overdue refunds, unapplied settlement adjustments).
 */
import { DEFAULT_RECONCILER_INPUT, type ReconcilerCounts, type ReconcilerInput } from './definitions.js';

export interface ReconcilerSettings extends ReconcilerInput {
  /**
   * A CONFIRMED sale with another payment opened beside the one that paid is asked about at its gateway once its
   * payment window ended this long ago: what a gateway still settles after the window (a PSE transfer the bank
   * confirms late) has settled by then. A payment still pending is asked about again later.
   */
  settlementLagMs: number;
}

export const DEFAULT_RECONCILER_SETTINGS: ReconcilerSettings = {
  ...DEFAULT_RECONCILER_INPUT,
  settlementLagMs: 15 * 60_000,
};

export interface ReconcilerRunCounts extends ReconcilerCounts {
  /** Paid sales (CONFIRMED, REFUNDED) with another payment opened, asked about at their gateway (found: lateMoneyFound). */
  confirmedSalesChecked: number;
  /** Refunds asked for over an hour ago and not confirmed by their gateway: an operator's to look at. */
  refundsOverdue: number;
  /** Refunds after a sent settlement that no later settlement of the workspace carries yet. */
  adjustmentsUnapplied: number;
}
