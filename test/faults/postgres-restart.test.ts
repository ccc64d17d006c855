import {
  checkoutHistory,
  describeOutcomes,
  ensurePostgres,
  type FaultStack,
  faultEnv,
  faultLog,
  PG_RESTART,
  postgresStartedAt,
  runScenario,
  shell,
  startFaultStack,
  unfinishedPurchases,
} from './harness.js';

const WINDOW_MS = 30_000;
const log = faultLog('postgres-restart');
let stack: FaultStack | undefined;
const databaseUrl = () => faultEnv().DATABASE_URL ?? '';

beforeAll(async () => {
  stack = await startFaultStack('postgres-restart', { paymentWindowMs: WINDOW_MS });
}, 150_000);
// Whatever happened, PostgreSQL is up and answering before anything else runs.
afterAll(async () => {
  await ensurePostgres(databaseUrl());
  await stack?.stop();
}, 90_000);

test('restarting PostgreSQL while buyers reserve and pay: activities and clients retry, every purchase completes', async () => {
  const current = stack!;
  const startedBefore = await postgresStartedAt(databaseUrl());
  const result = await runScenario(current, {
    buyers: 30,
    capacity: 24,
    paymentWindowMs: WINDOW_MS,
    inject: async () => {
      log(await shell(PG_RESTART));
      await ensurePostgres(databaseUrl());
    },
    log,
  });
  log(`done in ${result.totalMs} ms: ${JSON.stringify(result.report.byStatus)}`);
  expect(await postgresStartedAt(databaseUrl())).not.toBe(startedBefore);
  expect({ violations: result.report.violations, outcomes: describeOutcomes(result) }).toMatchObject({
    violations: [],
  });
  expect(result.payers.length).toBeGreaterThan(0);
  const unfinished = unfinishedPurchases(result);
  for (const line of unfinished)
    log(`${line}\n${await checkoutHistory(current, (line.split(' ')[1] ?? '').replace(':', ''))}`);
  expect(unfinished).toEqual([]);
}, 300_000);
