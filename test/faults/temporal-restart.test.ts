import {
  checkoutHistory,
  describeOutcomes,
  type FaultStack,
  faultLog,
  runScenario,
  startFaultStack,
  unfinishedPurchases,
  WINDOW_OUTLASTING_A_RESTART_MS,
} from './harness.js';

const log = faultLog('temporal-restart');
let stack: FaultStack | undefined;

// This test runs its own Temporal dev server (its state in a SQLite file), so restarting it touches nothing else.
beforeAll(async () => {
  stack = await startFaultStack('temporal-restart', {
    paymentWindowMs: WINDOW_OUTLASTING_A_RESTART_MS,
    ownTemporal: true,
  });
}, 150_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

test('restarting the Temporal server (state file kept) while buyers reserve and pay: every purchase completes', async () => {
  const current = stack!;
  const result = await runScenario(current, {
    buyers: 30,
    capacity: 24,
    paymentWindowMs: WINDOW_OUTLASTING_A_RESTART_MS,
    releaseAll: true,
    inject: async () => {
      await current.restartTemporal('SIGTERM');
      // The worker and API were not restarted: they reconnect on their own.
      await current.waitForWorker(60_000);
    },
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
