import {
  checkoutHistory,
  describeOutcomes,
  type FaultStack,
  faultLog,
  runScenario,
  startFaultStack,
  unfinishedPurchases,
} from './harness.js';

// Long enough for every payer to finish through the fault, short enough that the non-payers' reservations expire
// soon after (the scenario waits for those expiries). Payers finish within ~6 s of the API's return, but its restart
// alone took 16–28 s when the four side-by-side fault files shared a slow 2-core box (2026-11-26), and a payer whose
// window lapses while the API is down cannot pay at all: 18 s failed there, old code and new alike.
const WINDOW_MS = 45_000;
const log = faultLog('api-kill');
let stack: FaultStack | undefined;

beforeAll(async () => {
  stack = await startFaultStack('api-kill', { paymentWindowMs: WINDOW_MS });
}, 150_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

test('kill -9 of the API while buyers reserve and pay: clients retry against the restarted API, every purchase completes', async () => {
  const current = stack!;
  const result = await runScenario(current, {
    buyers: 30,
    capacity: 24,
    paymentWindowMs: WINDOW_MS,
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
