/**
 * How a gateway A refund answer is read by every path that gives money back (the organizer's refund and an event's
 * cancellation in activities/sales-ops.ts, the checkout's in payments.ts, the membership's in memberships.ts).
 */
import { ApplicationFailure } from '@temporalio/activity';

/**
 * Refund statuses with which gateway A declines a refund it took the request for. Retrying such an answer is
 * pointless (the gateway replays it for the same idempotency key), so it is a refusal: each path counts it like a
 * final 4xx and, after its bounded number, records the refund `refund_refused` for an operator. `in_process` is not
 * among them: that refund may still go through and is asked about again.
 */
const DECLINED_REFUND_STATUSES: ReadonlySet<string> = new Set(['rejected', 'cancelled']);

/** Throws a non-retryable failure when the gateway declined the refund it answered with. */
export function throwIfRefundDeclined(refund: { refundId: string; status: string }): void {
  if (!DECLINED_REFUND_STATUSES.has(refund.status)) return;
  throw ApplicationFailure.nonRetryable(
    `gateway A declined refund ${refund.refundId} (${refund.status})`,
    'RefundDeclined',
  );
}

/** Gateway B void answers that say the money went back. */
const VOIDED_STATUSES: ReadonlySet<string> = new Set(['VOID_APPROVED', 'VOIDED']);
/** Gateway B void answers that may still turn into a void: asked about again, like a void not confirmed yet. */
const VOID_IN_PROGRESS_STATUSES: ReadonlySet<string> = new Set(['PENDING', 'PROCESSING', 'VOID_PENDING']);

/**
 * Throws a non-retryable failure when a gateway B void answer declines the void: anything but voided or in progress
 * (REJECTED, FAILED, VOID_REJECTED, a status this code has never seen). Each path counts it like a final 4xx and parks
 * the refund `refund_refused` after its bounded number, instead of asking again every few minutes without end.
 */
export function throwIfVoidDeclined(voided: { status: string }): void {
  const status = String(voided.status).toUpperCase();
  if (VOIDED_STATUSES.has(status) || VOID_IN_PROGRESS_STATUSES.has(status)) return;
  throw ApplicationFailure.nonRetryable(`gateway B declined the void (${voided.status})`, 'RefundDeclined');
}

/** Returns once a gateway B void answer says voided; one still in progress is a retryable failure, a decline a refusal. */
export function throwUnlessVoided(voided: { status: string }): void {
  throwIfVoidDeclined(voided);
  if (VOIDED_STATUSES.has(String(voided.status).toUpperCase())) return;
  throw ApplicationFailure.retryable(`gateway B has not confirmed the void yet (${voided.status})`);
}

/**
 * The idempotency key of one ask for a sale's refund. The first ask of the organizer's first request keeps the key
 * it always had (`refund-<saleId>`). A gateway replays its stored answer for a key it has seen (gateway A's
 * X-Idempotency-Key), so an answer that refused the refund would refuse every later ask under the same key: each
 * operator retry of a refused refund (`retry`, counted on the refund request row) and each ask after a refusal within
 * one execution (`ask`) gets a key of its own. Retries of one ask (a lost answer, a worker restart) carry the same
 * numbers and so the same key: nothing is refunded twice.
 */
export function refundIdempotencyKey(saleId: string, numbers: { retry?: number; ask?: number } = {}): string {
  const retry = numbers.retry ?? 0;
  const ask = numbers.ask ?? 0;
  return `refund-${saleId}${retry > 0 ? `-r${retry}` : ''}${ask > 0 ? `-a${ask}` : ''}`;
}
