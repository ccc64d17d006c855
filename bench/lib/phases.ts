/**
 * The benchmark phases. Each returns plain numbers (written to the JSON) and never throws on a slow or failing
 * system under test: errors are counted by code, every loop is bounded by a count and a deadline.
 */
import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { type Client, WithStartWorkflowOperation } from '@temporalio/client';
import type pg from 'pg';
import { buildApp } from '../../api/app.js';
import type { ApiServices } from '../../api/services.js';
import { type Env, loadEnv } from '../../config/env.js';
import { createRedis } from '../../config/redis.js';
import { connectTemporalClient } from '../../config/temporal.js';
import { takeStock } from '../../entities/stock.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import { checkInvariants, type InvariantReport } from '../../test/faults/invariants.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { benchEmpty, benchPingUpdate } from './empty-workflow.js';
import { type BenchBuyer, type BenchEvent, cardTokens, createBuyers, orderBody, publishEvent } from './fixtures.js';
import {
  errorOf,
  type HttpClient,
  type LatencySummary,
  pollUntil,
  requestHonouringRetryAfter,
  runPool,
  summarize,
  wasShed,
} from './http.js';
import { EMPTY_TASK_QUEUE } from './stack.js';
import { takeStockLockAll } from './stock-variants.js';

export interface BenchContext {
  pool: pg.Pool;
  orm: MikroORM;
  temporal: Client;
  http: HttpClient;
  apiKey: string;
  env: Record<string, string>;
  log: (line: string) => void;
}

const query =
  (pool: pg.Pool) =>
  async <R>(sql: string, params: unknown[]): Promise<R[]> =>
    (await pool.query(sql, params)).rows as R[];

export const invariantsOf = (ctx: BenchContext, event: BenchEvent, gateway = false): Promise<InvariantReport> =>
  checkInvariants(query(ctx.pool), {
    ticketTypeId: event.ticketTypeId,
    capacity: event.capacity,
    ...(gateway ? { gateway: { sandboxUrl: ctx.env.SANDBOX_URL ?? '' } } : {}),
  });

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Logs `done/total` every 15 s while a long phase runs. */
function progress(ctx: BenchContext, label: string, total: number, done: () => number): () => void {
  const started = Date.now();
  const timer = setInterval(() => {
    const n = done();
    ctx.log(`    ${label}: ${n}/${total} after ${Math.round((Date.now() - started) / 1000)} s`);
  }, 15_000);
  return () => clearInterval(timer);
}

// ------------------------------------------------------------------------------------------------ reservations

interface Attempt {
  ok: boolean;
  saleId: string | null;
  buyer: BenchBuyer;
  ms: number;
  endAt: number;
  code: string;
}

export interface ReserveRun {
  capacity: number;
  connections: number;
  attempts: number;
  completed: number;
  durationMs: number;
  attemptsPerSecond: number;
  reservations: number;
  /** Reservations over the time from the first request to the last successful reservation. */
  reservationsPerSecond: number;
  timeToSoldOutMs: number | null;
  latencyMs: LatencySummary;
  reservedLatencyMs: LatencySummary;
  errorsByCode: Record<string, number>;
  soldMinusCapacity: number;
  invariantViolations: string[];
}

/** N connections send `attempts` POST /customer/orders for one ticket type, one distinct buyer each. */
export async function reserveRun(
  ctx: BenchContext,
  options: { label: string; capacity: number; connections: number; attempts: number; maxMs: number },
): Promise<{ run: ReserveRun; event: BenchEvent; reserved: Attempt[] }> {
  const event = await publishEvent(ctx.http, ctx.apiKey, {
    name: `${options.label} ${randomUUID().slice(0, 6)}`,
    capacity: options.capacity,
  });
  const buyers = await createBuyers(ctx.pool, options.label, options.attempts);
  const body = orderBody(event);
  const started = Date.now();
  let finished = 0;
  const stopProgress = progress(ctx, options.label, options.attempts, () => finished);
  const results = await runPool(options.attempts, options.connections, started + options.maxMs, async (i) => {
    const buyer = buyers[i]!;
    const response = await ctx.http.request('POST', '/api/v1/customer/orders', {
      headers: { 'x-customer-session': buyer.token },
      body,
      timeoutMs: 180_000,
    });
    finished += 1;
    const ok = response.status === 201;
    const error = ok ? null : errorOf(response);
    return {
      ok,
      saleId: ok ? ((response.body as { data: { saleId: string } }).data.saleId ?? null) : null,
      buyer,
      ms: response.ms,
      endAt: Date.now(),
      code: ok ? 'created' : `${error?.code}${error?.reason ? `:${error.reason}` : ''}`,
    } satisfies Attempt;
  });
  stopProgress();
  const done = results.filter((r): r is Attempt => r !== undefined);
  const durationMs = Math.max(1, Date.now() - started);
  const reserved = done.filter((r) => r.ok);
  const lastReservedAt = Math.max(started + 1, ...reserved.map((r) => r.endAt));
  const errorsByCode: Record<string, number> = {};
  for (const r of done) if (!r.ok) errorsByCode[r.code] = (errorsByCode[r.code] ?? 0) + 1;
  const invariants = await invariantsOf(ctx, event);
  const soldOut = invariants.available === 0;
  return {
    event,
    reserved,
    run: {
      capacity: options.capacity,
      connections: options.connections,
      attempts: options.attempts,
      completed: done.length,
      durationMs,
      attemptsPerSecond: round((done.length * 1000) / durationMs),
      reservations: reserved.length,
      reservationsPerSecond: round((reserved.length * 1000) / (lastReservedAt - started)),
      timeToSoldOutMs: soldOut ? lastReservedAt - started : null,
      latencyMs: summarize(done.map((r) => r.ms)),
      reservedLatencyMs: summarize(reserved.map((r) => r.ms)),
      errorsByCode,
      soldMinusCapacity: invariants.soldMinusCapacity,
      invariantViolations: invariants.violations,
    },
  };
}

// ------------------------------------------------------------------------------------------------ confirmations

export interface ConfirmRun {
  reservations: number;
  /** Sales whose payment was started before the phase's time box closed. */
  paid: number;
  durationMs: number;
  openLatencyMs: LatencySummary;
  chargeLatencyMs: LatencySummary;
  chargeAnswers: Record<string, number>;
  /** Requests the API shed (503 overloaded) and the buyer sent again after Retry-After. */
  shedRetries: number;
  confirmed: number;
  confirmationsPerSecond: number;
  timeToLastConfirmedMs: number | null;
  /** Confirmed sales whose ticket email went out, and when the last one did (from the phase's start). */
  ticketsEmailed: number;
  timeToLastTicketEmailMs: number | null;
  approvedPayments: number;
  approvedUnconfirmed: number;
  soldMinusCapacity: number;
  invariantViolations: string[];
  /** The paid sales (not written to the results: the run reads their histories). */
  paidSaleIds?: string[];
}

/**
 * Reservations pay (open payment, then charge an approved test card) until every one has or the time box closes;
 * then waits for every paid sale to be CONFIRMED and checks that no approved payment is left unconfirmed.
 */
export async function confirmRun(
  ctx: BenchContext,
  event: BenchEvent,
  reserved: Attempt[],
  options: { connections: number; maxMs: number },
): Promise<ConfirmRun> {
  ctx.log(`  tokenizing ${reserved.length} test cards (untimed: the buyer's browser does this at the gateway)`);
  const tokens = await cardTokens(ctx.env, reserved.length);
  // The API sheds on its last event-loop sample: two quiet samples, so this phase measures payments, not the tail of
  // the flash sale (a buyer still shed is sent again after Retry-After below).
  await new Promise((resolve) => setTimeout(resolve, 2 * Number(ctx.env.LOAD_SHED_SAMPLE_INTERVAL_MS ?? 1000)));
  const started = Date.now();
  const opens: number[] = [];
  const charges: number[] = [];
  const answers: Record<string, number> = {};
  const paid: string[] = [];
  const count = (key: string) => {
    answers[key] = (answers[key] ?? 0) + 1;
  };
  const stopProgress = progress(ctx, 'payments', reserved.length, () => charges.length);
  const deadline = started + options.maxMs;
  let shedRetries = 0;
  await runPool(reserved.length, options.connections, deadline, async (i) => {
    const sale = reserved[i]!;
    const headers = { 'x-customer-session': sale.buyer.token };
    // Were the API still shedding, buyers come back after Retry-After, as a front end does.
    const opened = await requestHonouringRetryAfter(
      () => ctx.http.request('POST', `/api/v1/customer/orders/${sale.saleId}/payment`, { headers, timeoutMs: 180_000 }),
      deadline,
    );
    shedRetries += opened.shed;
    opens.push(opened.ms);
    if (opened.status !== 200) {
      count(`open:${errorOf(opened).code}`);
      return;
    }
    const charged = await requestHonouringRetryAfter(
      () =>
        ctx.http.request('POST', `/api/v1/customer/orders/${sale.saleId}/payment/card`, {
          headers,
          body: { token: tokens[i] },
          timeoutMs: 180_000,
        }),
      deadline,
    );
    shedRetries += charged.shed;
    charges.push(charged.ms);
    // A charge still shed when the time box closed never reached the checkout: nothing was paid. Any other answer
    // (a timeout included) may have charged the card, so the sale must end CONFIRMED.
    if (sale.saleId && !wasShed(charged)) paid.push(sale.saleId);
    if (charged.status !== 200) {
      count(`charge:${errorOf(charged).code}`);
      return;
    }
    const data = (charged.body as { data: { status: string; saleStatus: string } }).data;
    count(`${data.status}→${data.saleStatus}`);
  });
  stopProgress();
  const confirmedOf = async () =>
    (
      await ctx.pool.query<{ last: Date | null; n: string }>(
        `select max(confirmed_at) as last, count(*) as n from sales where id = any($1::uuid[]) and status = 'CONFIRMED'`,
        [paid],
      )
    ).rows[0];
  await pollUntil(async () => Number((await confirmedOf())?.n ?? 0) >= paid.length, 120_000, 200);
  const durationMs = Date.now() - started;
  const last = await confirmedOf();
  const confirmed = Number(last?.n ?? 0);
  const lastAt = last?.last?.getTime() ?? null;
  const invariants = await invariantsOf(ctx, event, true);
  // The ticket mailer sends beside the purchases; every confirmed sale's email must have gone out.
  const emailsOf = async () =>
    (
      await ctx.pool.query<{ last: Date | null; emailed: string }>(
        `select max(tickets_emailed_at) as last, count(tickets_emailed_at) as emailed from sales
          where id = any($1::uuid[]) and status = 'CONFIRMED'`,
        [paid],
      )
    ).rows[0];
  await pollUntil(async () => Number((await emailsOf())?.emailed ?? 0) >= confirmed, 60_000, 200);
  const emails = await emailsOf();
  const lastEmailAt = emails?.last?.getTime() ?? null;
  return {
    reservations: reserved.length,
    paid: paid.length,
    durationMs,
    openLatencyMs: summarize(opens),
    chargeLatencyMs: summarize(charges),
    chargeAnswers: answers,
    shedRetries,
    confirmed,
    confirmationsPerSecond: lastAt ? round((confirmed * 1000) / Math.max(1, lastAt - started)) : 0,
    timeToLastConfirmedMs: lastAt ? lastAt - started : null,
    ticketsEmailed: Number(emails?.emailed ?? 0),
    timeToLastTicketEmailMs: lastEmailAt ? lastEmailAt - started : null,
    approvedPayments: invariants.approvedPayments,
    approvedUnconfirmed: invariants.approvedUnconfirmed,
    soldMinusCapacity: invariants.soldMinusCapacity,
    invariantViolations: invariants.violations,
    paidSaleIds: paid,
  };
}

// ------------------------------------------------------------------------------------------------ baselines

export interface OpsRun {
  ops: number;
  completed: number;
  errors: number;
  durationMs: number;
  opsPerSecond: number;
  latencyMs: LatencySummary;
}

async function timedOps(
  ops: number,
  connections: number,
  maxMs: number,
  op: (i: number) => Promise<void>,
): Promise<OpsRun> {
  const latencies: number[] = [];
  let errors = 0;
  const started = Date.now();
  const results = await runPool(ops, connections, started + maxMs, async (i) => {
    const t = performance.now();
    try {
      await op(i);
      latencies.push(performance.now() - t);
      return true;
    } catch {
      errors += 1;
      return false;
    }
  });
  const durationMs = Math.max(1, Date.now() - started);
  const completed = results.filter((r) => r === true).length;
  return {
    ops,
    completed,
    errors,
    durationMs,
    opsPerSecond: round((completed * 1000) / durationMs),
    latencyMs: summarize(latencies),
  };
}

/** (a) The hot-row limit: one conditional UPDATE on one row, autocommit, from N clients over the same pool size. */
export async function hotRowBaseline(ctx: BenchContext, options: { ops: number; connections: number }) {
  await ctx.pool.query(
    'create table if not exists bench_hot_row (id int primary key, available int not null check (available >= 0))',
  );
  await ctx.pool.query(
    'insert into bench_hot_row (id, available) values (1, $1) on conflict (id) do update set available = $1',
    [options.ops],
  );
  return timedOps(options.ops, options.connections, 120_000, async () => {
    const result = await ctx.pool.query(
      'update bench_hot_row set available = available - 1 where id = $1 and available >= 1',
      [1],
    );
    if (result.rowCount !== 1) throw new Error('sold out');
  });
}

/** Placeholder sales for the stock-step runs (allocations reference a sale); no items, so no invariant sees them. */
async function placeholderSales(ctx: BenchContext, event: BenchEvent, count: number): Promise<string[]> {
  const tag = randomUUID().replace(/-/g, '').slice(0, 4).toUpperCase();
  const rows = await ctx.pool.query<{ id: string }>(
    `insert into sales (id, created_at, updated_at, workspace_id, reference, status, channel, origin, event_id,
                        event_date_id, buyer_name, buyer_email, subtotal, discount_amount, service_fee, iva, total, currency)
     select gen_random_uuid(), now(), now(), e.workspace_id, 'BS' || $3 || lpad(g::text, 8, '0'), 'PENDING', 'WEB',
            'CUSTOMER', e.id, $2, 'bench', 'bench@bench.test', 0, 0, 0, 0, 0, 'COP'
       from events e, generate_series(1, $4::int) g where e.id = $1
     returning id`,
    [event.eventId, event.eventDateId, tag, count],
  );
  return rows.rows.map((row) => row.id);
}

export type StockVariant = 'split' | 'single' | 'shards32' | 'lockAll';

/**
 * The stock step alone: entities/stock.ts `takeStock` (one transaction per take, through MikroORM, the pool size
 * the worker uses) on the split rows of a fresh ticket type (`split`: 8 shards, as the product creates them). For
 * comparison: the same code on a single stock row (`single`) and on 32 rows (`shards32`), and the earlier product
 * code that locked all shards when every shard was busy (`lockAll`, bench/lib/stock-variants.ts).
 */
export async function stockStepBaseline(
  ctx: BenchContext,
  options: { ops: number; connections: number; variant: StockVariant },
) {
  const capacity = options.ops * 2;
  const event = await publishEvent(ctx.http, ctx.apiKey, {
    name: `stock step ${options.variant} ${randomUUID().slice(0, 6)}`,
    capacity,
  });
  const shards = options.variant === 'single' ? 1 : options.variant === 'shards32' ? 32 : 0;
  if (shards > 0) {
    await ctx.pool.query('delete from ticket_stock where ticket_type_id = $1', [event.ticketTypeId]);
    await ctx.pool.query(
      `insert into ticket_stock (ticket_type_id, shard, available)
       select $1, s, $2::int / $3::int + case when s < $2::int % $3::int then 1 else 0 end from generate_series(0, $3::int - 1) s`,
      [event.ticketTypeId, capacity, shards],
    );
  }
  const take = options.variant === 'lockAll' ? takeStockLockAll : takeStock;
  const sales = await placeholderSales(ctx, event, options.ops);
  const run = await timedOps(options.ops, options.connections, 120_000, async (i) => {
    const taken = await ctx.orm.em
      .fork()
      .transactional((tx) => take(tx, { saleId: sales[i]!, ticketTypeId: event.ticketTypeId, quantity: 1 }));
    if (!taken) throw new Error('sold out');
  });
  const stock = await ctx.pool.query<{ n: string; sum: string }>(
    'select count(*) as n, sum(available) as sum from ticket_stock where ticket_type_id = $1',
    [event.ticketTypeId],
  );
  const rows = Number(stock.rows[0]?.n ?? 0);
  const left = Number(stock.rows[0]?.sum ?? 0);
  return { ...run, variant: options.variant, stockRows: rows, conserved: left === capacity - run.completed };
}

/** (b) The orchestration limit: update-with-start of an empty workflow on the same Temporal server. */
export async function orchestrationBaseline(
  ctx: BenchContext,
  options: { ops: number; connections: number; maxMs: number },
) {
  const runId = randomUUID().slice(0, 8);
  const ids: string[] = [];
  const run = await timedOps(options.ops, options.connections, options.maxMs, async (i) => {
    const workflowId = `bench-empty/${runId}/${i}`;
    ids.push(workflowId);
    await ctx.temporal.workflow.executeUpdateWithStart(benchPingUpdate, {
      args: [i],
      startWorkflowOperation: new WithStartWorkflowOperation(benchEmpty, {
        workflowId,
        taskQueue: EMPTY_TASK_QUEUE,
        workflowIdConflictPolicy: 'FAIL',
      }),
    });
  });
  return { run, workflowIds: ids };
}

// ------------------------------------------------------------------------------------------------ expiry storm

export interface StormRun {
  reservations: number;
  requested: number;
  creationMs: number;
  expirySpreadMs: number;
  firstExpiry: string | null;
  timeToAllStockBackFromFirstExpiryMs: number | null;
  timeToAllStockBackFromLastExpiryMs: number | null;
  releasesPerSecond: number;
  availableAfter: number;
  capacity: number;
  exact: boolean;
  invariantViolations: string[];
}

/**
 * `count` reservations that all expire in the same second. The reservations go through the real customer route
 * of an API built in this process (as test/support/stack.ts builds one) whose PAYMENT_WINDOW_OVERRIDE_MS is read per
 * request as "deadline − now", so every reservation's window ends at the same instant however long creating them
 * takes. Then: how long until every unit is back on sale, and is availability exact.
 */
export async function expiryStorm(
  ctx: BenchContext,
  options: {
    count: number;
    connections: number;
    expectedRatePerSecond: number;
    maxCreationMs: number;
    maxWaitMs: number;
  },
): Promise<StormRun> {
  const event = await publishEvent(ctx.http, ctx.apiKey, {
    name: `expiry storm ${randomUUID().slice(0, 6)}`,
    capacity: options.count,
  });
  const buyers = await createBuyers(ctx.pool, 'storm', options.count);
  // Every window ends at `deadline`: enough time to create them all at the measured rate (+50 %), within the box.
  const creationBudgetMs =
    Math.min(options.maxCreationMs, Math.ceil((options.count / Math.max(1, options.expectedRatePerSecond)) * 1500)) +
    5000;
  const deadline = Date.now() + creationBudgetMs;
  const env: Env = loadEnv({ ...process.env, ...ctx.env });
  Object.defineProperty(env, 'PAYMENT_WINDOW_OVERRIDE_MS', {
    get: () => Math.max(1000, deadline - Date.now()),
    enumerable: true,
  });
  const redis = createRedis(env.REDIS_URL);
  const { client: temporal, connection } = await connectTemporalClient(env);
  const services: ApiServices = {
    env,
    orm: ctx.orm,
    redis,
    temporal,
    gatewayA: new GatewayAClient({ baseUrl: `${env.SANDBOX_URL}/gateway-a`, accessToken: env.GATEWAY_A_ACCESS_TOKEN }),
  };
  const app = await buildApp(services, { logger: false });
  await app.ready();
  const body = orderBody(event);
  const started = Date.now();
  let created = 0;
  const stopProgress = progress(ctx, 'storm reservations', options.count, () => created);
  try {
    await runPool(options.count, options.connections, deadline - 5000, async (i) => {
      const response = await app.inject({
        method: 'POST',
        url: '/api/v1/customer/orders',
        headers: { 'x-customer-session': buyers[i]!.token },
        payload: body,
      });
      if (response.statusCode === 201) created += 1;
    });
  } finally {
    stopProgress();
    await app.close();
    await connection.close();
    redis.disconnect();
  }
  const creationMs = Date.now() - started;
  const window = await ctx.pool.query<{ first: Date | null; last: Date | null }>(
    `select min(s.expires_at) as first, max(s.expires_at) as last from sales s
       join sale_items i on i.sale_id = s.id where i.ticket_type_id = $1`,
    [event.ticketTypeId],
  );
  const first = window.rows[0]?.first?.getTime() ?? deadline;
  const last = window.rows[0]?.last?.getTime() ?? deadline;
  ctx.log(
    `  ${created} reservations expire between +${first - Date.now()} ms and +${last - Date.now()} ms (spread ${last - first} ms)`,
  );
  const back = async () => {
    const stock = await ctx.pool.query<{ sum: string }>(
      'select sum(available) as sum from ticket_stock where ticket_type_id = $1',
      [event.ticketTypeId],
    );
    return Number(stock.rows[0]?.sum ?? 0) === options.count;
  };
  const waitStart = Date.now();
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, first - Date.now())));
  const allBack = await pollUntil(back, Math.max(1000, options.maxWaitMs - (Date.now() - waitStart)), 100);
  const backAt = allBack ? Date.now() : null;
  // Let the workflows' last projection writes land before reading the invariants.
  await pollUntil(
    async () =>
      Number(
        (
          await ctx.pool.query<{ n: string }>(
            `select count(*) as n from sales s join sale_items i on i.sale_id = s.id
              where i.ticket_type_id = $1 and s.status = 'PENDING'`,
            [event.ticketTypeId],
          )
        ).rows[0]?.n ?? 1,
      ) === 0,
    10_000,
  );
  const invariants = await invariantsOf(ctx, event);
  return {
    reservations: created,
    requested: options.count,
    creationMs,
    expirySpreadMs: last - first,
    firstExpiry: new Date(first).toISOString(),
    timeToAllStockBackFromFirstExpiryMs: backAt ? backAt - first : null,
    timeToAllStockBackFromLastExpiryMs: backAt ? backAt - last : null,
    releasesPerSecond: backAt ? round((created * 1000) / Math.max(1, backAt - first)) : 0,
    availableAfter: invariants.available,
    capacity: options.count,
    exact: invariants.available === options.count && invariants.violations.length === 0,
    invariantViolations: invariants.violations,
  };
}

export const sampleWorkflowIds = (reserved: Array<{ saleId: string | null }>, count: number): string[] => {
  const ids = reserved.map((r) => r.saleId).filter((id): id is string => id !== null);
  const step = Math.max(1, Math.floor(ids.length / count));
  return ids
    .filter((_, i) => i % step === 0)
    .slice(0, count)
    .map(checkoutWorkflowId);
};
