import {
  checkoutHistory,
  describeOutcomes,
  type FaultStack,
  faultLog,
  runScenario,
  startFaultStack,
  unfinishedPurchases,
} from './harness.js';

// Longer than the 30 s start-to-close timeout of the checkout activities: an activity that was running on the killed
// worker is retried only when that timeout ends, and a reservation window shorter than that would expire meanwhile
// (a finding reported with this suite). Non-payers release, so nothing waits for the long window to expire.
const WINDOW_MS = 75_000;
const log = faultLog('worker-kill');
let stack: FaultStack | undefined;

beforeAll(async () => {
  stack = await startFaultStack('worker-kill', { paymentWindowMs: WINDOW_MS });
}, 150_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

test('kill -9 of the worker while buyers reserve and pay: it restarts, every purchase completes, nothing is lost', async () => {
  const current = stack!;
  const result = await runScenario(current, {
    buyers: 30,
    capacity: 24,
    paymentWindowMs: WINDOW_MS,
    inject: () => current.restartWorker('SIGKILL'),
    releaseAll: true,
    log,
  });
  log(`done in ${result.totalMs} ms: ${JSON.stringify(result.report.byStatus)}`);
  expect({ violations: result.report.violations, outcomes: describeOutcomes(result) }).toMatchObject({
    violations: [],
  });
  expect(result.payers.length).toBeGreaterThan(0);
  const unfinished = unfinishedPurchases(result);
  for (const line of unfinished)
    log(`${line}\n${await checkoutHistory(current, (line.split(' ')[1] ?? '').replace(':', ''))}`);
  expect(unfinished).toEqual([]);
}, 300_000);
