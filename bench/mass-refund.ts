/**
 * Mass-refund benchmark (`npm run bench -- mass-refund`): an event of `--sales` paid sales (20,000 by default) is
 * cancelled through POST /events/{id}/cancel on the bench's own isolated stack (bench/lib/stack.ts), and the
 * cancellation's refunds are timed until the last sale is REFUNDED. Baseline in the same run, on the same sandbox:
 * the raw refund calls alone (`--baseline` payments refunded straight at gateway A, as many at once as the
 * cancellation refunds), so the figure says what the workflow, the database and the worker cost on top of the
 * gateway. `--outage-ms <n>` holds gateway A down that long from the cancel on (the figure then includes the wait).
 *
 * Checked after the run, not assumed: every sale REFUNDED with one REFUND record (the gateway's confirmation; the
 * organizer's request row beside it is not counted) and one `sale.refunded` event, one refund per payment at the
 * gateway, and every run of the cancellation's history far from the limit. The sales are seeded as the checkout
 * confirms them, each paid by a real card payment at the sandbox (bench/lib/cancellation-seed.ts, untimed).
 *
 * `--gateway-limit <n>` has the sandbox's gateway A answer 429 above n requests/s (burst 2n) while the cancellation
 * runs, as the real gateway's cited envelope does (25/s, burst 50); by default n is the budget the worker keeps
 * (GATEWAY_A_REQUESTS_PER_SECOND), 0 leaves the gateway unlimited. The sandbox counts the requests it served and
 * turned away, so the result gives gateway requests/s and the 429s. The baseline runs unlimited: it measures the
 * gateway stand-in, not the envelope.
 *
 * `--pause-reconciler` pauses the reconciler's Schedule for the run: on this bench's data its stranded-payments sweep
 * (activities/reconciler.ts) ran for minutes a run and piled up, taking the database from the refunds.
 *
 * Flags: --sales <n> (20000), --baseline <n> (2000), --outage-ms <n> (0), --pause-reconciler, --name <name>
 * (mass-refund-<date>), --gateway-limit <n> (GATEWAY_A_REQUESTS_PER_SECOND). Environment: BENCH_DATABASE_URL, BENCH_REDIS_URL, BENCH_POOL_MAX (20), KEEP_BENCH_DATABASE=1.
 * Writes bench/results/<name>.json.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadEnv, providerUrls } from '../config/env.js';
import { connectTemporalClient } from '../config/temporal.js';
import { initOrm } from '../entities/orm.js';
import { GatewayAClient } from '../integrations/gateway-a/client.js';
import { createOrganizer } from '../test/support/fixtures.js';
import { healthProbeWorkflowId, RECONCILER_SCHEDULE_ID } from '../workflows/definitions.js';
import { eventCancellationWorkflowId } from '../workflows/event-cancellation-definitions.js';
import { type SeededSale, seedPaidSales } from './lib/cancellation-seed.js';
import { publishEvent } from './lib/fixtures.js';
import { HttpClient } from './lib/http.js';
import { cpuBetween, cpuSnapshot, memoryOf } from './lib/profile.js';
import { BENCH_TASK_QUEUE, ROOT, startBenchStack } from './lib/stack.js';

const PRICE = 80_000;
/** What the cancellation runs at once per page (workflows/event-cancellation.ts DEFAULT_CONCURRENCY). */
const REFUND_LANES = 32;

function parseArgs(argv: string[]) {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('--')) continue;
    const value = argv[i + 1];
    flags.set(arg.slice(2), value === undefined || value.startsWith('--') ? 'true' : value);
  }
  const num = (key: string, fallback: number, min = 1) => {
    const value = Number(flags.get(key) ?? fallback);
    if (!Number.isInteger(value) || value < min) throw new Error(`--${key} must be an integer ≥ ${min}`);
    return value;
  };
  return {
    sales: num('sales', 20_000),
    baseline: num('baseline', 2_000),
    outageMs: num('outage-ms', 0, 0),
    pauseReconciler: flags.get('pause-reconciler') === 'true',
    gatewayLimit: flags.has('gateway-limit') ? num('gateway-limit', 0, 0) : null,
    name: flags.get('name') ?? `mass-refund-${new Date().toISOString().slice(0, 10)}`,
  };
}

const args = parseArgs(process.argv.slice(3));
const POOL_MAX = Number(process.env.BENCH_POOL_MAX ?? 20);
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/ticketing_bench_test';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/15';
const started = Date.now();
const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}`);
const round = (value: number) => Math.round(value * 10) / 10;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function inLanes(count: number, lanes: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(lanes, count) }, async () => {
      while (next < count) {
        const index = next;
        next += 1;
        await work(index);
      }
    }),
  );
}

const stack = await startBenchStack({
  databaseUrl: DATABASE_URL,
  redisUrl: REDIS_URL,
  poolMax: POOL_MAX,
  temporalMode: 'file',
  log,
});
process.once('SIGINT', () => void stack.stop().finally(() => process.exit(130)));
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 8 });
const orm = await initOrm({ databaseUrl: DATABASE_URL, poolMax: 4 });
const { client: temporal, connection } = await connectTemporalClient({
  TEMPORAL_ADDRESS: stack.temporalAddress,
  TEMPORAL_NAMESPACE: 'default',
});
const http = new HttpClient(stack.apiUrl, 8);
const benchEnv = loadEnv({ ...process.env, ...stack.env });
const gatewayA = new GatewayAClient({
  baseUrl: providerUrls(benchEnv).gatewayA,
  accessToken: benchEnv.GATEWAY_A_ACCESS_TOKEN,
});
const pids = {
  api: stack.processes.api.child.pid,
  worker: stack.processes.worker.child.pid,
  temporal: stack.processes.temporal.child.pid,
  sandbox: stack.processes.sandbox.child.pid,
  loadGenerator: process.pid,
};
const query = async <R>(sql: string, params: unknown[]): Promise<R[]> => (await pool.query(sql, params)).rows as R[];

async function setGatewayA(mode: 'down' | 'ok'): Promise<void> {
  const response = await fetch(`${stack.sandboxUrl}/control/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ target: 'gateway-a', mode }),
  });
  if (!response.ok) throw new Error(`gateway-a ${mode} → ${response.status}`);
}

interface SandboxRateLimit {
  requestsPerSecond: number;
  burst: number;
  allowed: number;
  limited: number;
}

/** Sets (n > 0) or lifts (0) the sandbox's request limit on gateway A; returns its counts so far. */
async function limitGatewayA(requestsPerSecond: number): Promise<SandboxRateLimit | null> {
  const response = await fetch(`${stack.sandboxUrl}/control/rate-limits`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(
      requestsPerSecond > 0 ? { gateway: 'gateway-a', requestsPerSecond } : { gateway: 'gateway-a', off: true },
    ),
  });
  if (!response.ok) throw new Error(`rate-limits → ${response.status}`);
  return ((await response.json()) as { data: Record<string, SandboxRateLimit | undefined> }).data['gateway-a'] ?? null;
}

async function gatewayACounts(): Promise<SandboxRateLimit | null> {
  const response = await fetch(`${stack.sandboxUrl}/control/rate-limits`);
  return ((await response.json()) as { data: Record<string, SandboxRateLimit | undefined> }).data['gateway-a'] ?? null;
}

const gatewayLimit = args.gatewayLimit ?? benchEnv.GATEWAY_A_REQUESTS_PER_SECOND;

let exitCode = 0;
const results: Record<string, unknown> = {};
try {
  log('waiting for the worker (workflow bundle)');
  await temporal.workflow.execute('healthProbe', {
    taskQueue: BENCH_TASK_QUEUE,
    workflowId: healthProbeWorkflowId(randomUUID()),
    workflowExecutionTimeout: '120 seconds',
  });
  if (args.pauseReconciler) {
    // The worker creates the Schedule as it starts; wait for it rather than race it.
    for (let tries = 0; ; tries += 1) {
      try {
        await temporal.schedule.getHandle(RECONCILER_SCHEDULE_ID).pause('mass-refund bench: measured without it');
        break;
      } catch (error) {
        if (tries >= 30) throw error;
        await pause(1000);
      }
    }
    log('reconciler Schedule paused');
  }
  const organizer = await createOrganizer(orm.em.fork());
  const headers = { authorization: `Bearer ${organizer.key}` };

  // ------------------------------------------------------------ baseline: the raw refund calls
  log(`baseline: ${args.baseline} payments refunded straight at gateway A, ${REFUND_LANES} at once`);
  const baselineEvent = await publishEvent(http, organizer.key, {
    name: `mass refund baseline ${randomUUID().slice(0, 6)}`,
    capacity: args.baseline,
    price: PRICE,
  });
  const baselineSales = await seedPaidSales({
    query,
    gatewayA,
    event: baselineEvent,
    count: args.baseline,
    price: PRICE,
  });
  const baselineCpu = cpuSnapshot(pids);
  const baselineFrom = Date.now();
  await inLanes(baselineSales.length, REFUND_LANES, async (i) => {
    const sale = baselineSales[i] as SeededSale;
    await gatewayA.refundPayment({ paymentId: sale.paymentId, idempotencyKey: `baseline-${sale.saleId}` });
  });
  const baselineMs = Date.now() - baselineFrom;
  results.baseline = {
    refunds: baselineSales.length,
    lanes: REFUND_LANES,
    durationMs: baselineMs,
    refundsPerSecond: round((baselineSales.length * 1000) / baselineMs),
    cpuCores: cpuBetween(baselineCpu, cpuSnapshot(pids)),
  };
  log(`  ${JSON.stringify(results.baseline)}`);

  // ------------------------------------------------------------ the event cancellation
  log(`seeding ${args.sales} paid sales (untimed)`);
  const seedFrom = Date.now();
  const event = await publishEvent(http, organizer.key, {
    name: `mass refund ${randomUUID().slice(0, 6)}`,
    capacity: args.sales,
    price: PRICE,
  });
  const sales = await seedPaidSales({ query, gatewayA, event, count: args.sales, price: PRICE, lanes: 32 });
  log(`  seeded in ${Date.now() - seedFrom} ms`);

  if (gatewayLimit > 0) await limitGatewayA(gatewayLimit);
  if (args.outageMs > 0) await setGatewayA('down');
  const cpuBefore = cpuSnapshot(pids);
  const from = Date.now();
  const cancelled = await http.request('POST', `/api/v1/events/${event.eventId}/cancel`, {
    headers,
    body: { reason: 'mass refund bench' },
  });
  if (cancelled.status !== 200) throw new Error(`cancel → ${cancelled.status} ${JSON.stringify(cancelled.body)}`);
  log(`cancelled; gateway A ${args.outageMs > 0 ? `down for ${args.outageMs} ms` : 'up'}`);
  if (args.outageMs > 0) {
    await pause(args.outageMs);
    await setGatewayA('ok');
  }
  const backAt = Date.now();
  const timeline: { atMs: number; refunded: number }[] = [];
  for (;;) {
    const [row] = await query<{ refunded: number; live: number }>(
      `select count(*) filter (where status = 'REFUNDED')::int as refunded,
              count(*) filter (where status in ('PENDING', 'CONFIRMED'))::int as live
         from sales where event_id = $1`,
      [event.eventId],
    );
    timeline.push({ atMs: Date.now() - from, refunded: row?.refunded ?? 0 });
    if ((row?.live ?? 1) === 0) break;
    if (timeline.length % 10 === 0) log(`  ${row?.refunded} refunded`);
    await pause(1000);
  }
  const doneAt = Date.now();
  const cpuCores = cpuBetween(cpuBefore, cpuSnapshot(pids));
  const refundingMs = doneAt - backAt;
  // Read before the checks below send their own requests, then lifted so those are not turned away.
  const atGatewayA = gatewayLimit > 0 ? await gatewayACounts() : null;
  if (gatewayLimit > 0) await limitGatewayA(0);

  // ------------------------------------------------------------ checks
  log('checking: one refund record per sale, one refund per payment at the gateway, history sizes');
  // The gateway's confirmation is the REFUND record; the organizer's request row is marked refunded beside it (as in
  // test/faults/event-cancellation-outage.test.ts), so it is not counted.
  // Grouped, not one subquery a sale: the outbox has no index on the payload's sale id.
  const [records] = await query<{ wrong: number }>(
    `with refunds as (
       select a.sale_id, count(*) as n from payment_attempts a join sales s on s.id = a.sale_id
        where s.event_id = $1 and a.kind = 'REFUND' and a.status = 'refunded'
          and a.dedupe_key not like 'refund-request:%' group by a.sale_id),
     notices as (
       select o.payload->>'saleId' as sale_id, count(*) as n from outbox_events o
        where o.type = 'sale.refunded' group by 1)
     select count(*)::int as wrong from sales s
       left join refunds r on r.sale_id = s.id left join notices n on n.sale_id = s.id::text
      where s.event_id = $1 and (s.status <> 'REFUNDED' or coalesce(r.n, 0) <> 1 or coalesce(n.n, 0) <> 1)`,
    [event.eventId],
  );
  let notOnce = 0;
  await inLanes(sales.length, 16, async (i) => {
    const payment = await gatewayA.getPayment((sales[i] as SeededSale).paymentId);
    if (payment.status !== 'refunded' || payment.amountRefunded !== PRICE) notOnce += 1;
  });
  const refundsAtGateway = await (async () => {
    let wrong = 0;
    const sample = sales.filter((_, i) => i % 20 === 0);
    await inLanes(sample.length, 16, async (i) => {
      const response = await fetch(
        `${stack.sandboxUrl}/gateway-a/v1/payments/${(sample[i] as SeededSale).paymentId}/refunds`,
        { headers: { authorization: `Bearer ${benchEnv.GATEWAY_A_ACCESS_TOKEN}` } },
      );
      if (((await response.json()) as unknown[]).length !== 1) wrong += 1;
    });
    return { sampled: sample.length, notExactlyOne: wrong };
  })();
  const runs: { status: string; historyLength: number }[] = [];
  for await (const run of temporal.workflow.list({
    query: `WorkflowId = '${eventCancellationWorkflowId(event.eventId)}'`,
  })) {
    // Visibility gives no history length for a running execution; describe does.
    const described = await temporal.workflow.getHandle(run.workflowId, run.runId).describe();
    runs.push({ status: run.status.name, historyLength: described.historyLength });
  }
  const refunds = args.sales;
  results.cancellation = {
    sales: args.sales,
    outageMs: args.outageMs,
    /** From the cancel (or the gateway's return after an outage) to the last sale REFUNDED. */
    refundingMs,
    refundsPerSecond: round((refunds * 1000) / refundingMs),
    totalMs: doneAt - from,
    /** The sandbox's request limit on gateway A during the cancellation (null: unlimited). */
    gatewayLimit: gatewayLimit > 0 ? gatewayLimit : null,
    /** Requests gateway A served (and answered 429) during the cancellation, when it counted them. */
    gatewayRequests: atGatewayA
      ? {
          served: atGatewayA.allowed,
          limited: atGatewayA.limited,
          perSecond: round(((atGatewayA.allowed + atGatewayA.limited) * 1000) / (doneAt - from)),
          perRefund: round((atGatewayA.allowed + atGatewayA.limited) / refunds),
        }
      : null,
    cpuCores,
    workerPeakMb: memoryOf(pids.worker)?.peakMb ?? null,
    timeline,
    checks: {
      salesNotRefundedOnce: records?.wrong ?? -1,
      paymentsNotRefundedInFull: notOnce,
      refundsAtGateway,
      runs: runs.length,
      maxHistoryLength: Math.max(0, ...runs.map((run) => run.historyLength)),
      runStatuses: runs.map((run) => run.status),
    },
  };
  const ratio = round(
    (results.cancellation as { refundsPerSecond: number }).refundsPerSecond /
      (results.baseline as { refundsPerSecond: number }).refundsPerSecond,
  );
  results.ratioToBaseline = ratio;
  log(
    `cancellation: ${refunds} refunds in ${refundingMs} ms = ${(results.cancellation as { refundsPerSecond: number }).refundsPerSecond}/s (baseline ${(results.baseline as { refundsPerSecond: number }).refundsPerSecond}/s, ratio ${ratio}); checks ${JSON.stringify((results.cancellation as { checks: unknown }).checks)}`,
  );
  log(`cpu cores during the cancellation: ${JSON.stringify(cpuCores)}`);
  log(
    `gateway A (limit ${gatewayLimit > 0 ? `${gatewayLimit}/s` : 'none'}): ${JSON.stringify(results.cancellation && (results.cancellation as { gatewayRequests: unknown }).gatewayRequests)}`,
  );
  const checks = (results.cancellation as { checks: Record<string, unknown> }).checks;
  if (checks.salesNotRefundedOnce !== 0 || checks.paymentsNotRefundedInFull !== 0 || refundsAtGateway.notExactlyOne) {
    exitCode = 1;
    log('✗ a sale was not refunded exactly once');
  }
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryGb: round(totalmem() / 2 ** 30),
    release: release(),
  };
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${args.name}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ name: args.name, at: new Date().toISOString(), machine, args, ...results }, null, 2)}\n`,
  );
  log(`wrote ${file}`);
} catch (error) {
  exitCode = 1;
  console.error(error);
} finally {
  await setGatewayA('ok').catch(() => undefined);
  await limitGatewayA(0).catch(() => undefined);
  await connection.close();
  await orm.close();
  await pool.end();
  await stack.stop();
}
process.exit(exitCode);
