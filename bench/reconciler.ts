/**
 * Reconciler benchmark (`npm run bench -- reconciler`): seeds its own database with a reports-bench workspace of
 * `--sales` sales (bench/lib/reports-seed.ts) plus what the reconciler reads (bench/lib/reconciler-seed.ts: a
 * notification beside each card charge, refund requests, gateway B widgets, `--stranded` stranded payments, twelve
 * membership payments per subscriber), then times one run of each reconciler sweep.
 *
 * Same-run baseline: the sweeps' queries as they were before they were bounded (one unbounded statement each, copied
 * below), on the schema without the reconciler's indexes (dropped, then created again), and with them (what the
 * indexes alone buy); each with fresh planner statistics and with none (tables filled since their last analyze).
 * Then each sweep's activity as the worker runs it (real database; the
 * gateways, Temporal and Redis stubbed to answer at once, so the figure is the database work), one run, and a full
 * cycle of the stranded-payment walk (runs until its cursor has been over every record), with the rows each run read.
 * Both find the same stranded payments (checked). Each statement's plan top and the indexes it read are recorded.
 *
 * Flags: --sales <n> (30000), --stranded <n> (100), --runs <n> (5, timed runs per figure; the median is reported),
 * --timeout-s <n> (60: an old statement still running after this is cancelled and reported as over it),
 * --name <name> (reconciler-<date>). Environment: BENCH_RECONCILER_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/ticketing_reconciler_bench_test), KEEP_BENCH_DATABASE=1 keeps it.
 */
import type { Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import pg from 'pg';
import type { ActivityDeps } from '../activities/deps.js';
import { createMembershipReconcilerActivities } from '../activities/membership-reconciler.js';
import { createReconcilerActivities } from '../activities/reconciler.js';
import { loadEnv } from '../config/env.js';
import { initOrm } from '../entities/orm.js';
import { dropDatabase, recreateDatabase } from '../scripts/support/database.js';
import { seedReconcilerExtras } from './lib/reconciler-seed.js';
import { seedReportsWorkspace } from './lib/reports-seed.js';
import { machineFacts, median, saveResults } from './lib/results.js';

/** The indexes the bounded sweeps read (entities/sale.ts, payment-attempt.ts, membership-payment.ts). */
const RECONCILER_INDEXES = [
  'sales_payment_ref_index',
  'sales_closed_unpaid_walk_index',
  'sales_paid_due_walk_index',
  'sales_event_to_undo_index',
  'payment_attempts_approved_walk_index',
  'payment_attempts_refund_payment_index',
  'payment_attempts_refund_open_index',
  'payment_attempts_refund_done_index',
  'membership_payments_closed_walk_index',
  'membership_payments_refund_requested_index',
] as const;

const DONE = `('refunded', 'VOIDED', 'VOID_APPROVED', 'FT_REFUNDED_OFFLINE')`;
const APPROVED = `((a.gateway = 'GATEWAY_A' and a.status = 'approved')
  or (a.gateway = 'GATEWAY_B' and a.status in ('APPROVED', 'SALE_APPROVED')))`;

/**
 * The sweeps' statements before they were bounded (activities/reconciler.ts, membership-reconciler.ts and
 * reconciler-listings.ts as of 9f80d88), with the production settings: margin 2 min, batch 200, lookback 48 h,
 * settlement lag 15 min, every workspace.
 */
const OLD_QUERIES: Record<string, string> = {
  'stranded payments': `select a.sale_id, s.reference, s.status as sale_status, a.gateway, a.provider_payment_id,
                min(a.created_at) as first_seen
           from payment_attempts a join sales s on s.id = a.sale_id
          where a.kind in ('CARD', 'NOTIFICATION', 'STATUS_CHECK', 'LATE_PAYMENT') and a.provider_payment_id is not null
            and ${APPROVED}
            and not exists (select 1 from sales p
                             where p.payment_ref = a.provider_payment_id and p.status in ('CONFIRMED', 'REFUNDED'))
            and not exists (select 1 from payment_attempts r
                             where r.kind = 'REFUND' and r.provider_payment_id = a.provider_payment_id
                               and r.status in ${DONE})
            and not exists (select 1 from payment_attempts r
                             where r.kind = 'REFUND' and r.provider_payment_id = a.provider_payment_id
                               and r.status = 'refund_refused')
          group by a.sale_id, s.reference, s.status, a.gateway, a.provider_payment_id
         having min(a.created_at) < now() - interval '2 minutes'
          order by first_seen limit 200`,
  'gateway check (one page)': `select id, reference, status, due_at, gateways from (
         select s.id, s.reference, s.status, s.closed_at as due_at,
                array(select distinct a.gateway from payment_attempts a
                       where a.sale_id = s.id and a.kind in ('OPEN', 'PSE', 'CARD')) as gateways
           from sales s
          where s.status in ('ABANDONED', 'CANCELLED') and s.closed_at > now() - interval '48 hours'
            and exists (select 1 from payment_attempts a where a.sale_id = s.id and a.kind in ('OPEN', 'PSE', 'CARD'))
         union all
         select s.id, s.reference, s.status, greatest(s.expires_at, s.confirmed_at) + interval '15 minutes' as due_at,
                array(select distinct a.gateway from payment_attempts a
                       where a.sale_id = s.id and a.kind in ('OPEN', 'PSE', 'CARD')) as gateways
           from sales s
          where s.status = 'CONFIRMED' and s.confirmed_at > now() - interval '48 hours 15 minutes'
            and exists (select 1 from payment_attempts a where a.sale_id = s.id
                          and a.kind in ('OPEN', 'PSE', 'CARD')
                          and not (a.kind = 'CARD' and a.provider_payment_id is not distinct from s.payment_ref)
                          and not (a.kind = 'OPEN' and a.gateway = 'GATEWAY_A' and a.provider_payment_id is null))
       ) due
        where due.due_at < now() - interval '2 minutes' and due.due_at > now() - interval '48 hours'
          and (due.due_at, due.id) > ('epoch'::timestamptz, '00000000-0000-0000-0000-000000000000'::uuid)
          and (due.due_at, due.id) <= (now(), 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
        order by due.due_at, due.id limit 5000`,
  'overdue refunds': `select r.sale_id, s.reference, s.workspace_id, s.status as sale_status, r.gateway, r.provider_payment_id,
            (array_agg(r.status order by r.created_at desc))[1] as refund_status,
            (array_agg(r.status_detail order by r.created_at))[1] as reason,
            min(r.created_at) as requested_at, max(coalesce(r.amount, s.total)) as amount, s.currency
       from payment_attempts r join sales s on s.id = r.sale_id
      where r.kind = 'REFUND'
        and not exists (select 1 from payment_attempts d
                         where d.kind = 'REFUND' and d.sale_id = r.sale_id
                           and d.provider_payment_id is not distinct from r.provider_payment_id
                           and d.status in ${DONE})
      group by r.sale_id, s.reference, s.workspace_id, s.status, r.gateway, r.provider_payment_id, s.currency
     having min(r.created_at) < now() - interval '1 hour'
      order by requested_at limit 1000`,
  'membership closed requests': `select p.id, p.reference, p.updated_at, s.workspace_id, s.buyer_id
           from membership_payments p join membership_subscriptions s on s.id = p.subscription_id
          where p.status <> 'OPEN' and p.checkout_url is not null and p.updated_at < now() - interval '2 minutes'
            and p.updated_at > now() - interval '48 hours'
          order by p.updated_at desc limit 5000`,
  'membership stuck refunds': `select p.id, p.reference, p.provider_payment_id, s.workspace_id, s.buyer_id
           from membership_payments p join membership_subscriptions s on s.id = p.subscription_id
          where p.status = 'REFUND_REQUESTED' and p.provider_payment_id is not null
            and p.updated_at < now() - interval '1 hour'
          order by p.updated_at limit 200`,
};

function parseArgs(argv: string[]) {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (arg.startsWith('--')) flags.set(arg.slice(2), argv[i + 1] ?? 'true');
  }
  const num = (key: string, fallback: number) => {
    const value = Number(flags.get(key) ?? fallback);
    if (!Number.isInteger(value) || value <= 0) throw new Error(`--${key} must be a positive integer`);
    return value;
  };
  return {
    sales: num('sales', 30_000),
    stranded: num('stranded', 100),
    runs: num('runs', 5),
    timeoutS: num('timeout-s', 60),
    name: flags.get('name') ?? `reconciler-${new Date().toISOString().slice(0, 10)}`,
  };
}

const args = parseArgs(process.argv.slice(3));
const databaseUrl =
  process.env.BENCH_RECONCILER_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/ticketing_reconciler_bench_test';
const started = Date.now();
const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}`);
const round = (ms: number) => Math.round(ms * 10) / 10;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const from = performance.now();
  await work();
  return performance.now() - from;
}

interface Plan {
  executionMs: number;
  top: string;
  indexes: string[];
  seqScans: string[];
}

async function planOf(client: pg.Client, sql: string, params: unknown[] = []): Promise<Plan> {
  const { rows } = await client.query(`explain (analyze, format json) ${sql}`, params);
  const root = rows[0]['QUERY PLAN'][0];
  const indexes = new Set<string>();
  const seqScans = new Set<string>();
  const walk = (node: Record<string, unknown>) => {
    if (typeof node['Index Name'] === 'string') indexes.add(node['Index Name']);
    if (node['Node Type'] === 'Seq Scan') seqScans.add(String(node['Relation Name']));
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  walk(root.Plan);
  return {
    executionMs: round(root['Execution Time']),
    top: String(root.Plan['Node Type']),
    indexes: [...indexes].sort(),
    seqScans: [...seqScans].sort(),
  };
}

const silent: Logger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

log(
  `reconciler bench: seeding ${args.sales.toLocaleString('en')} sales into ${new URL(databaseUrl).pathname.slice(1)}`,
);
await recreateDatabase(databaseUrl);
const orm = await initOrm({ databaseUrl, poolMax: 4 });
await orm.migrator.up();
const client = new pg.Client({ connectionString: databaseUrl });
await client.connect();
const seedStarted = performance.now();
const workspace = await seedReportsWorkspace(client, {
  sales: args.sales,
  events: 20,
  datesPerEvent: 3,
  typesPerDate: 2,
  subscribers: Math.max(100, Math.round(args.sales / 15)),
  seed: 0.42,
});
const seeded = await seedReconcilerExtras(client, { workspaceId: workspace.workspaceId, stranded: args.stranded });
await client.query('analyze');
const { rows: tableRows } = await client.query<{ relname: string; n: string }>(
  `select relname, n_live_tup as n from pg_stat_user_tables
    where relname in ('sales', 'payment_attempts', 'membership_payments') order by relname`,
);
const tables = Object.fromEntries(tableRows.map((row) => [row.relname, Number(row.n)]));
log(`seeded in ${Math.round(performance.now() - seedStarted)} ms: ${JSON.stringify({ ...seeded, tables })}`);

// ------------------------------------------------------------------------------ conditions
const { rows: definitions } = await client.query<{ indexname: string; indexdef: string }>(
  'select indexname, indexdef from pg_indexes where indexname = any($1)',
  [RECONCILER_INDEXES],
);
if (definitions.length !== RECONCILER_INDEXES.length) throw new Error('the reconciler indexes are not all there');
const BENCH_TABLES = ['sales', 'payment_attempts', 'membership_payments', 'membership_subscriptions'];
// Autovacuum stays off these tables, so each condition's statistics are the ones it set.
for (const table of BENCH_TABLES) await client.query(`alter table ${table} set (autovacuum_enabled = false)`);

type Condition = 'analyzed' | 'no statistics';
const CONDITIONS: Condition[] = ['analyzed', 'no statistics'];

/**
 * The reconciler's indexes there or not, and the planner's statistics either fresh (`analyze`) or absent, as for
 * tables filled since their last analyze (a bench or freshly restored database, a burst before autovacuum's turn):
 * pg_statistic rows gone and reltuples -1 ("never analyzed"), which is how the mass-refund bench's stranded-payment
 * statement ran for over 7 minutes.
 */
async function prepare(condition: Condition, indexes: boolean): Promise<void> {
  for (const { indexname, indexdef } of definitions) {
    await client.query(
      indexes ? indexdef.replace(/^CREATE INDEX /, 'CREATE INDEX IF NOT EXISTS ') : `drop index if exists ${indexname}`,
    );
  }
  await client.query('analyze');
  if (condition === 'no statistics') {
    await client.query('delete from pg_statistic where starelid = any($1::regclass[])', [BENCH_TABLES]);
    await client.query('update pg_class set reltuples = -1 where oid = any($1::regclass[])', [BENCH_TABLES]);
  }
}

/** Median of timed runs, or the timeout when the statement did not finish within it (no more runs are tried). */
async function oldStatement(
  sql: string,
): Promise<{ medianMs: number | null; samplesMs: number[]; timedOut: boolean; rows: number | null }> {
  await client.query(`set statement_timeout = ${args.timeoutS * 1000}`);
  try {
    const samples: number[] = [];
    let rows = 0;
    for (let i = 0; i <= args.runs; i += 1) {
      const from = performance.now();
      const result = await client.query(sql);
      rows = result.rows.length;
      if (i > 0) samples.push(round(performance.now() - from));
    }
    return { medianMs: median(samples), samplesMs: samples, timedOut: false, rows };
  } catch (error) {
    if (!String(error).includes('statement timeout')) throw error;
    return { medianMs: null, samplesMs: [], timedOut: true, rows: null };
  } finally {
    await client.query('set statement_timeout = 0');
  }
}

// ------------------------------------------------------------------------------ baseline: old statements
const oldStatements: Record<string, Record<string, unknown>> = {};
for (const condition of CONDITIONS) {
  for (const indexes of [false, true]) {
    await prepare(condition, indexes);
    const label = `${condition}, ${indexes ? 'with' : 'without'} the reconciler indexes`;
    for (const [name, sql] of Object.entries(OLD_QUERIES)) {
      const timing = await oldStatement(sql);
      const entry = oldStatements[name] ?? {};
      entry[label] = timing;
      oldStatements[name] = entry;
      log(
        `old ${name} (${label}): ${timing.timedOut ? `over ${args.timeoutS} s (cancelled)` : `${timing.medianMs} ms, ${timing.rows} rows`}`,
      );
    }
  }
}
await prepare('analyzed', false);
const oldStranded = (await client.query(OLD_QUERIES['stranded payments'] as string)).rows
  .map((row) => String(row.provider_payment_id))
  .sort();
await prepare('analyzed', true);

// ------------------------------------------------------------------------------ the bounded sweeps
let signals = 0;
const handedOver: string[] = [];
const deps = {
  env: loadEnv({}),
  orm,
  redis: {
    set: async () => 'OK',
    mget: async (keys: string[]) => keys.map(() => null),
    del: async () => 0,
    multi: () => ({ hincrby() {}, exec: async () => [] }),
  },
  providers: {
    gatewayA: { findPaymentsByReference: async () => [] },
    gatewayB: { paymentStatus: async () => ({ status: 'NO_TRANSACTION_FOUND' }) },
  },
  temporal: {
    workflow: {
      signalWithStart: async (_type: string, options: { signalArgs: [{ providerPaymentId: string | null }] }) => {
        signals += 1;
        handedOver.push(String(options.signalArgs[0].providerPaymentId));
      },
    },
  },
} as unknown as ActivityDeps;
const sweeps = { ...createReconcilerActivities(deps), ...createMembershipReconcilerActivities(deps) };
const scope = { marginMs: 2 * 60_000, limit: 200, workspaceId: null };
const env = () => new MockActivityEnvironment(undefined, { logger: silent });
const resetCursors = () => client.query('delete from reconciler_cursors');

const sweepRuns: Record<string, () => Promise<unknown>> = {
  'stranded payments': () => env().run(sweeps.resolveStrandedPayments, scope),
  'gateway check': () =>
    env().run(sweeps.checkClosedSalesAtGateway, { ...scope, lookbackMs: 48 * 3_600_000, settlementLagMs: 15 * 60_000 }),
  'overdue refunds': () => env().run(sweeps.reportOverdueRefunds, scope),
  'membership money': () => env().run(sweeps.sweepMembershipMoney, { ...scope, lookbackMs: 48 * 3_600_000 }),
};
const newSweeps: Record<string, Record<string, unknown>> = {};
for (const condition of CONDITIONS) {
  await prepare(condition, true);
  for (const [name, run] of Object.entries(sweepRuns)) {
    const samples: number[] = [];
    for (let i = 0; i <= args.runs; i += 1) {
      // Each run from no cursor: the first run after a deploy reads the most.
      await resetCursors();
      const ms = round(await timed(run));
      if (i > 0) samples.push(ms);
    }
    const entry = newSweeps[name] ?? {};
    entry[condition] = { medianMs: median(samples), samplesMs: samples };
    newSweeps[name] = entry;
    log(`new ${name} (${condition}): ${median(samples)} ms a run`);
  }
}
await prepare('analyzed', true);

// The stranded walk over every record: runs until it wrapped, each run's time and rows; it must find what the old
// statement found (all stranded payments here fit one batch).
await resetCursors();
signals = 0;
handedOver.length = 0;
const cycle: { ms: number; signalled: number }[] = [];
const strandedCursor = async (): Promise<number> => {
  const { rows } = await client.query("select due_at from reconciler_cursors where name = 'stranded-payments:all'");
  return rows[0] ? new Date(rows[0].due_at).getTime() : 0;
};
for (let run = 0, previous = 0; run < 1000; run += 1) {
  const before = signals;
  const ms = await timed(() => env().run(sweeps.resolveStrandedPayments, { ...scope, limit: 10_000 }));
  cycle.push({ ms: round(ms), signalled: signals - before });
  const reached = await strandedCursor();
  if (reached <= previous) break; // went past the newest record and started over from the oldest
  previous = reached;
}
const newStranded = [...new Set(handedOver)].sort();
const sameFound = JSON.stringify(newStranded) === JSON.stringify(oldStranded);
log(
  `stranded walk: ${cycle.length} runs to go over ${seeded.approvedPaymentRecords} records (max ${Math.max(...cycle.map((c) => c.ms))} ms a run); found ${newStranded.length}, old statement ${oldStranded.length}: ${sameFound ? 'same' : 'DIFFERENT'}`,
);

// Plans of the new pages, read straight from the statements the sweeps send (first page, no cursor).
const newPlans: Record<string, Plan> = {};
const captured: { sql: string; params: unknown[] }[] = [];
const capturing = {
  ...deps,
  orm: {
    em: {
      fork: () => ({
        execute: async (sql: string, params: unknown[] = []) => {
          captured.push({ sql, params });
          return orm.em.fork().execute(sql, params);
        },
      }),
    },
  },
} as unknown as ActivityDeps;
const capture = { ...createReconcilerActivities(capturing), ...createMembershipReconcilerActivities(capturing) };
for (const condition of CONDITIONS) {
  await prepare(condition, true);
  await resetCursors();
  for (const [name, run] of Object.entries({
    'stranded payments': () => env().run(capture.resolveStrandedPayments, scope),
    'gateway check': () =>
      env().run(capture.checkClosedSalesAtGateway, {
        ...scope,
        lookbackMs: 48 * 3_600_000,
        settlementLagMs: 15 * 60_000,
      }),
    'overdue refunds': () => env().run(capture.reportOverdueRefunds, scope),
    'membership money': () => env().run(capture.sweepMembershipMoney, { ...scope, lookbackMs: 48 * 3_600_000 }),
  })) {
    captured.length = 0;
    await run();
    const heaviest = captured.filter((c) => !/reconciler_cursors/.test(c.sql));
    let index = 0;
    for (const statement of heaviest.slice(0, 3)) {
      // MikroORM's `?` placeholders as pg's `$n`; dates as ISO text.
      let n = 0;
      const sql = statement.sql.replace(/\?(?!\|)/g, () => `$${++n}`);
      const params = statement.params.map((p) => (p instanceof Date ? p.toISOString() : p));
      newPlans[`${name} #${++index} (${condition})`] = await planOf(client, sql, params);
    }
  }
}
for (const [name, plan] of Object.entries(newPlans))
  log(
    `plan ${name}: ${plan.executionMs} ms, ${plan.top}, indexes ${plan.indexes.join(', ')}; seq scans ${plan.seqScans.join(', ') || 'none'}`,
  );

saveResults(args.name, {
  name: args.name,
  startedAt: new Date(started).toISOString(),
  durationS: Math.round((Date.now() - started) / 1000),
  args,
  machine: machineFacts(),
  seeded: { ...seeded, tables },
  baseline: oldStatements,
  bounded: newSweeps,
  strandedWalk: {
    runs: cycle.length,
    runsMs: cycle.map((c) => c.ms),
    found: newStranded.length,
    oldStatementFound: oldStranded.length,
    sameFound,
  },
  boundedPlans: newPlans,
});

await client.end();
await orm.close(true);
if (process.env.KEEP_BENCH_DATABASE !== '1') await dropDatabase(databaseUrl);
process.exit(sameFound ? 0 : 1);
