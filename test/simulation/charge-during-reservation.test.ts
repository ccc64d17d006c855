/**
 * A card charge that reaches the checkout while the order's reservation is still being made is early, not late: it is
 * refused as retryable (503 SERVICE_UNAVAILABLE, reason reservation_in_progress), and the same charge sent once the
 * reservation is made confirms the sale. It was refused for good as "not pending", and the buyer's reservation then
 * expired unpaid (the worker-kill fault test, on a loaded box). run-charge-during-reservation.ts plays the story.
 */
import { runReportingScript } from './simulate.js';

interface StoryOutcome {
  early: { refused?: { type: string; reason: string | null; retryable: boolean }; answered?: unknown };
  afterReservation: { answered?: { ok: boolean; saleStatus: string; paymentStatus: string } };
  saleStatus: string | null;
  violations: string[];
}

test('a charge sent while the reservation is still being made is refused as retryable, and the retry pays', async () => {
  const { report, stderr } = await runReportingScript<StoryOutcome>('test/simulation/run-charge-during-reservation.ts');
  if (!report) throw new Error(`the story did not report:\n${stderr.slice(-4000)}`);
  expect(report.early).toEqual({
    refused: { type: 'SERVICE_UNAVAILABLE', reason: 'reservation_in_progress', retryable: true },
  });
  expect(report.afterReservation.answered).toMatchObject({
    ok: true,
    paymentStatus: 'approved',
    saleStatus: 'CONFIRMED',
  });
  expect(report.violations).toEqual([]);
}, 120_000);
