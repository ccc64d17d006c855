/**
 * Money is never stranded, proven by simulation: thousands of random checkout stories (see run-simulation.ts) on the
 * real workflow code with a seeded fault model of the gateway, the database and the seat map. The runner is a child
 * process (Temporal's native worker must not share jest's module registry) with its own local Temporal server.
 * SIM_CASES and SIM_SEED widen or replay the exploration: `SIM_SEED=<seed> SIM_CASES=1 npm test -- test/simulation`.
 */
import { describeFailures, simulate } from './simulate.js';

// 400 here and 300 starved (test/faults/starved-worker.test.ts) keep the whole run under 15 minutes on the 2-core box.
const CASES = Number(process.env.SIM_CASES ?? 400);

describe('checkout simulation: every approved payment ends as one CONFIRMED sale or a confirmed refund', () => {
  test(`${CASES} random stories of payments, faults, releases, cancels, refunds and restarts keep every invariant`, async () => {
    const { summary, stderr } = await simulate(['--cases', String(CASES)]);
    if (!summary) throw new Error(`the simulation did not report:\n${stderr.slice(-4000)}`);
    process.stdout.write(`checkout simulation: ${summary.cases} cases explored in ${summary.seconds}s\n`);
    const failing = describeFailures(summary);
    if (failing.length > 0) process.stdout.write('histories of the failing cases: .dev/simulation-failures/\n');
    expect(failing).toEqual([]);
    expect(summary.cases).toBe(CASES);
  }, 900_000);
});
