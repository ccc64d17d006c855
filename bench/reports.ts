/**
 * Reports benchmark (`npm run bench -- reports`): seeds its own database with 100,000 sales in one workspace (plus
 * 20,000 in another, so tenant scoping is real work), then times each report exactly as the API runs it (the
 * functions of api/reports/) and records its query plan. Baseline measured in the same run: the same reports after
 * dropping the indexes the reports added, so each index has to earn its place. Budget: every report under 300 ms.
 *
 * Flags: --sales <n> (100000), --runs <n> (15), --name <name> (reports-<date>), --only <text> (reports whose name
 * contains it; the JSON is then not written). Environment: BENCH_REPORTS_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/ticketing_reports_bench_test), KEEP_BENCH_DATABASE=1 keeps it, and then a
 * later run with the same --sales reuses it instead of seeding again (migrations still run).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';
import { attendeesSource, buyersSource, prepareExport, subscribersSource } from '../api/reports/exports.js';
import type { Scope } from '../api/reports/filters.js';
import { financials } from '../api/reports/financials.js';
import { byEvent, inventory, run, summary, timeseries } from '../api/reports/queries.js';
import { reconciliation, reconciliationSource } from '../api/reports/reconciliation.js';
import { sql } from '../api/reports/sql.js';
import { initOrm } from '../entities/orm.js';
import { dropDatabase, recreateDatabase } from '../scripts/support/database.js';
import { type SeededWorkspace, seedReportsWorkspace } from './lib/reports-seed.js';
import { machineFacts, saveResults } from './lib/results.js';

/** The indexes the reports rely on, as declared in the entities (names as MikroORM generates them). */
export const REPORT_INDEXES = [
  'create index if not exists sales_workspace_id_status_created_at_index on sales (workspace_id, status, created_at)',
  'create index if not exists sales_workspace_id_event_id_created_at_index on sales (workspace_id, event_id, created_at)',
  'create index if not exists tickets_workspace_id_id_index on tickets (workspace_id, id)',
  'create index if not exists tickets_workspace_id_event_id_id_index on tickets (workspace_id, event_id, id)',
  'create index if not exists tickets_workspace_id_event_date_id_id_index on tickets (workspace_id, event_date_id, id)',
  'create index if not exists event_dates_workspace_id_starts_at_index on event_dates (workspace_id, starts_at)',
] as const;

const indexName = (statement: string): string => /exists (\S+) on/.exec(statement)?.[1] ?? '';

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
    sales: num('sales', 100_000),
    runs: num('runs', 15),
    name: flags.get('name') ?? `reports-${new Date().toISOString().slice(0, 10)}`,
    only: flags.get('only'),
  };
}

interface Timing {
  p50: number;
  p95: number;
  max: number;
  runs: number;
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;

async function time(runs: number, work: () => Promise<unknown>): Promise<Timing> {
  await work(); // warm the plan and the buffer cache, as a dashboard that is open all day would be
  const samples: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const started = performance.now();
    await work();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    p50: round(percentile(samples, 50)),
    p95: round(percentile(samples, 95)),
    max: round(samples.at(-1) ?? 0),
    runs,
  };
}

async function drain(em: EntityManager, source: Parameters<typeof prepareExport>[1]): Promise<number> {
  const prepared = await prepareExport(em, source, 'csv', []);
  let bytes = 0;
  for await (const chunk of prepared.body) bytes += Buffer.byteLength(chunk as string);
  return bytes;
}

const args = parseArgs(process.argv.slice(3));
const databaseUrl =
  process.env.BENCH_REPORTS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/ticketing_reports_bench_test';

const keep = process.env.KEEP_BENCH_DATABASE === '1';

/** The main workspace of a database kept by an earlier run with the same seed size, if there is one. */
async function seededEarlier(): Promise<SeededWorkspace | null> {
  const probe = new pg.Client({ connectionString: databaseUrl });
  try {
    await probe.connect();
  } catch {
    return null; // no such database yet
  }
  try {
    const { rows } = await probe.query<{ workspace_id: string; sales: string }>(
      `select workspace_id, count(*) as sales from sales group by workspace_id order by count(*) desc`,
    );
    const [first, second] = rows;
    if (
      rows.length !== 2 ||
      Number(first?.sales) !== args.sales ||
      Number(second?.sales) !== Math.round(args.sales / 5)
    )
      return null;
    const { rows: dates } = await probe.query<{ event_id: string; id: string }>(
      `select d.event_id, d.id from event_dates d where d.workspace_id = $1 order by d.starts_at desc limit 1`,
      [first?.workspace_id],
    );
    const [date] = dates;
    if (!first || !date) return null;
    return { workspaceId: first.workspace_id, eventId: date.event_id, eventDateId: date.id };
  } catch {
    return null; // not a reports bench database (or an older schema)
  } finally {
    await probe.end();
  }
}

const reused = keep ? await seededEarlier() : null;
if (!reused) {
  console.log(
    `reports bench: seeding ${args.sales.toLocaleString('en')} sales into ${new URL(databaseUrl).pathname.slice(1)}`,
  );
  await recreateDatabase(databaseUrl);
} else console.log(`reports bench: reusing the seeded ${new URL(databaseUrl).pathname.slice(1)}`);
const orm = await initOrm({ databaseUrl, poolMax: 4 });
await orm.migrator.up();
const client = new pg.Client({ connectionString: databaseUrl });
await client.connect();
const seedStarted = performance.now();
const main =
  reused ??
  (await seedReportsWorkspace(client, {
    sales: args.sales,
    events: 20,
    datesPerEvent: 5,
    typesPerDate: 3,
    subscribers: 3000,
    seed: 0.42,
  }));
if (!reused)
  await seedReportsWorkspace(client, {
    sales: Math.round(args.sales / 5),
    events: 5,
    datesPerEvent: 2,
    typesPerDate: 2,
    subscribers: 500,
    seed: 0.17,
  });
const seedMs = reused ? null : Math.round(performance.now() - seedStarted);

const em = orm.em.fork() as EntityManager;
const scope: Scope = { workspaceId: main.workspaceId, timeZone: 'America/Bogota' };
const today = new Date().toISOString().slice(0, 10);
const ninetyDaysAgo = new Date(Date.now() - 90 * 86_400_000).toISOString().slice(0, 10);
const lastQuarter = { from: ninetyDaysAgo, to: today };

/** Each report as the API runs it, with a typical dashboard filter. */
const reports: Record<string, () => Promise<unknown>> = {
  'summary (whole year)': () => summary(em, scope, {}),
  'summary (last 90 days)': () => summary(em, scope, lastQuarter),
  'summary (one event)': () => summary(em, scope, { event: main.eventId }),
  'by-event (last 90 days)': () => byEvent(em, scope, lastQuarter),
  'timeseries (day, last 90 days)': () => timeseries(em, scope, lastQuarter, 'day'),
  'timeseries (month, whole year)': () =>
    timeseries(
      em,
      scope,
      { from: new Date(Date.now() - 365 * 86_400_000).toISOString().slice(0, 10), to: today },
      'month',
    ),
  inventory: () => inventory(em, scope, {}),
  'financials (all dates)': () => financials(em, scope, {}),
  'reconciliation page (last 90 days)': () => reconciliation(em, scope, lastQuarter, { limit: 21 }),
  'reconciliation page (mismatches, whole year)': () => reconciliation(em, scope, { mismatch: true }, { limit: 21 }),
  'export attendees (one date, CSV)': () => drain(em, attendeesSource(scope, { eventDate: main.eventDateId })),
  'export attendees (5000 of all, CSV)': () => drain(em, attendeesSource(scope, {})),
  'export buyers (last 90 days, CSV)': () => drain(em, buyersSource(scope, { ...lastQuarter, status: 'CONFIRMED' })),
  'export subscribers (CSV)': () => drain(em, subscribersSource(scope)),
  'export reconciliation (last 90 days, CSV)': () => drain(em, reconciliationSource(scope, lastQuarter)),
};

/** The plan's top node and the indexes it reads, for the statement the summary runs (the heaviest aggregate). */
async function planOf(): Promise<{ indexes: string[]; executionMs: number }> {
  const where = sql`s.workspace_id = ${scope.workspaceId} and s.status = 'CONFIRMED'
    and s.created_at >= (${ninetyDaysAgo}::date)::timestamp at time zone ${scope.timeZone}`;
  const [row] = await run<{ 'QUERY PLAN': Array<{ Plan: unknown; 'Execution Time': number }> }>(
    em,
    sql`explain (analyze, format json) select count(*), sum(s.total) from sales s where ${where}`,
  );
  const plan = row?.['QUERY PLAN'][0];
  const indexes = new Set<string>();
  const walk = (node: unknown) => {
    if (typeof node !== 'object' || node === null) return;
    const name = Reflect.get(node, 'Index Name');
    if (typeof name === 'string') indexes.add(name);
    for (const child of (Reflect.get(node, 'Plans') as unknown[] | undefined) ?? []) walk(child);
  };
  walk(plan?.Plan);
  return { indexes: [...indexes], executionMs: plan?.['Execution Time'] ?? 0 };
}

async function measure(label: string): Promise<Record<string, Timing>> {
  await client.query('analyze');
  const out: Record<string, Timing> = {};
  for (const [name, work] of Object.entries(reports)) {
    if (args.only && !name.includes(args.only)) continue;
    out[name] = await time(args.runs, work);
    console.log(
      `${label.padEnd(9)} ${name.padEnd(46)} p50 ${String(out[name].p50).padStart(7)} ms  p95 ${String(out[name].p95).padStart(7)} ms`,
    );
  }
  return out;
}

for (const statement of REPORT_INDEXES) await client.query(statement);
const withIndexes = await measure('indexed');
const planWith = await planOf();
for (const statement of REPORT_INDEXES) await client.query(`drop index if exists ${indexName(statement)}`);
const baseline = await measure('baseline');
const planWithout = await planOf();

const overBudget = Object.entries(withIndexes)
  .filter(([, timing]) => timing.p95 > 300)
  .map(([name]) => name);
const results = {
  name: args.name,
  ranAt: new Date().toISOString(),
  machine: machineFacts(),
  seed: { sales: args.sales, otherWorkspaceSales: Math.round(args.sales / 5), seedMs },
  budgetMs: 300,
  indexes: REPORT_INDEXES.map(indexName),
  reports: Object.fromEntries(
    Object.keys(withIndexes).map((name) => [
      name,
      {
        indexed: withIndexes[name],
        withoutReportIndexes: baseline[name],
        speedup: ratio(baseline[name], withIndexes[name]),
      },
    ]),
  ),
  plan: {
    statement: 'CONFIRMED sales of the last 90 days (summary core)',
    indexed: planWith,
    withoutReportIndexes: planWithout,
  },
  overBudget,
};

function ratio(before: Timing | undefined, after: Timing | undefined): number | null {
  if (!before || !after || after.p50 === 0) return null;
  return Math.round((before.p50 / after.p50) * 100) / 100;
}

if (!args.only) saveResults(args.name, results);
console.log(`over the 300 ms budget: ${overBudget.length ? overBudget.join(', ') : 'none'}`);

await client.end();
await orm.close(true);
if (!keep) await dropDatabase(databaseUrl);
