import {
  checkoutHistory,
  describeOutcomes,
  ensureRedis,
  type FaultStack,
  faultEnv,
  faultLog,
  REDIS_START,
  REDIS_STOP,
  redisRunId,
  runScenario,
  shell,
  startFaultStack,
  unfinishedPurchases,
} from './harness.js';

// Long enough for every payer to finish through the fault (they do within ~6 s), short enough that the non-payers'
// reservations expire soon after: the scenario waits for those expiries.
const WINDOW_MS = 18_000;
const log = faultLog('redis-restart');
let stack: FaultStack | undefined;
const redisUrl = () => faultEnv().REDIS_URL ?? '';

beforeAll(async () => {
  stack = await startFaultStack('redis-restart', { paymentWindowMs: WINDOW_MS });
}, 150_000);
// Whatever happened, Redis is up and answering before anything else runs.
afterAll(async () => {
  await ensureRedis(redisUrl());
  await stack?.stop();
}, 60_000);

test('restarting Redis while buyers reserve and pay: every purchase completes, nothing is lost or oversold', async () => {
  const current = stack!;
  const runBefore = await redisRunId(redisUrl());
  const result = await runScenario(current, {
    buyers: 30,
    capacity: 24,
    paymentWindowMs: WINDOW_MS,
    inject: async () => {
      log(await shell(REDIS_STOP).catch((error: Error) => `stop: ${error.message}`));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      log(await shell(REDIS_START).catch((error: Error) => `start: ${error.message}`));
      await ensureRedis(redisUrl());
    },
    log,
  });
  log(`done in ${result.totalMs} ms: ${JSON.stringify(result.report.byStatus)}`);
  expect(await redisRunId(redisUrl())).not.toBe(runBefore);
  expect({ violations: result.report.violations, outcomes: describeOutcomes(result) }).toMatchObject({
    violations: [],
  });
  expect(result.payers.length).toBeGreaterThan(0);
  const unfinished = unfinishedPurchases(result);
  for (const line of unfinished)
    log(`${line}\n${await checkoutHistory(current, (line.split(' ')[1] ?? '').replace(':', ''))}`);
  expect(unfinished).toEqual([]);
}, 300_000);
