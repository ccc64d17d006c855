/**
 * An event's cancellation refunds every paid sale exactly once, proven by simulation: random events (card sales, some
 * checked in or refunded at the gateway's dashboard already, complimentary and box-office sales, sales refunded or
 * cancelled before, PENDING sales in real checkouts whose bank pays while notifications are lost, late or doubled)
 * cancelled through the real workflows and activities on a scratch database, against a seeded
 * in-memory gateway A that goes down, lags, loses refund answers, answers refunds in process and refuses some until the
 * merchant's balance is topped up or an operator retries them; the organizer posts the cancel again, the running
 * execution is terminated, workers keep almost no cache or restart (see run-event-cancellation-simulation.ts). The runner is
 * a child process (Temporal's native worker must not share jest's module registry) with its own local Temporal
 * server and database. SIM_CASES and SIM_SEED widen or replay the exploration:
 * `SIM_SEED=<seed> SIM_CASES=1 npm test -- test/simulation/event-cancellation-simulation.test.ts`.
 */
import { describeFailures, runReportingScript, type SimulationSummary } from './simulate.js';

// 200 cases took 365 s on the 2-core box with other sessions' suites beside it (0.75 cases/s at load 8 to 13; most
// cases take seconds, one whose refund is parked refused waits out the refund workflow's four refusal intervals,
// 75 s, first). Explored once beyond that: 898 cases without PENDING sales, seeds 1001 to 1898, none failed (1,047 s,
// 2026-11-29); with PENDING sales, seeds 1 to 70 (379 s) and 2001 to 2646 (1,029 s at 24 at once), none failed.
const CASES = Number(process.env.SIM_CASES ?? 200);

describe('event cancellation simulation: every approved payment ends refunded exactly once, or refused and counted', () => {
  test(`${CASES} random cancellations with outages, lost answers, refusals, re-posts, terminations and restarts keep every invariant`, async () => {
    const { report: summary, stderr } = await runReportingScript<SimulationSummary>(
      'test/simulation/run-event-cancellation-simulation.ts',
      ['--cases', String(CASES)],
    );
    if (!summary) throw new Error(`the event-cancellation simulation did not report:\n${stderr.slice(-4000)}`);
    process.stdout.write(`event-cancellation simulation: ${summary.cases} cases explored in ${summary.seconds}s\n`);
    expect(describeFailures(summary)).toEqual([]);
    expect(summary.cases).toBe(CASES);
  }, 900_000);
});
