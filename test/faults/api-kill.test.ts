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

const log = faultLog('api-kill');
let stack: FaultStack | undefined;

beforeAll(async () => {
  stack = await startFaultStack('api-kill', { paymentWindowMs: WINDOW_OUTLASTING_A_RESTART_MS });
}, 150_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

test('kill -9 of the API while buyers reserve and pay: clients retry against the restarted API, every purchase completes', async () => {
  const current = stack!;
  const result = await runScenario(current, {
    buyers: 30,
    capacity: 24,
    paymentWindowMs: WINDOW_OUTLASTING_A_RESTART_MS,
    releaseAll: true,
    inject: () => current.restartApi('SIGKILL'),
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
