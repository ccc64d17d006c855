/**
 * Event cancellation explored with random faults, on the real stack: each seeded case cancels an event of random size
 * while gateway A goes down and comes back at random moments, lags, refuses the refunds of a random few payments
 * (insufficient merchant balance) until an operator retries them, while the organizer posts the cancel again and the
 * server terminates the running execution (as at the history limit). Then every paid sale is refunded exactly once
 * (one refund per payment at the gateway, one REFUND record, one `sale.refunded` notice), the stock is back, refused
 * refunds were counted before the retry, and no execution failed or came near the history limit.
 *
 * The seeds are printed; `EXPLORE_SEED=<seed> EXPLORE_CASES=1` replays one case's plan (timing may differ). Gateway A's
 * faults are sandbox-wide, so this file runs with the fault files that take turns on the shared services.
 */

import pg from 'pg';
import { runOperator } from '../../scripts/operator.js';
import { onPurpose } from '../../scripts/support/terminations.js';
import { eventCancellationWorkflowId } from '../../workflows/event-cancellation-definitions.js';
import { seededRandom } from '../simulation/world.js';
import {
  cancelEvent,
  eventOf,
  eventOfPaidSales,
  notRefundedOnce,
  refundRecordsOf,
  refundsAtGateway,
  setGatewayA,
} from '../support/event-cancellation.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const CASES = Number(process.env.EXPLORE_CASES ?? 3);
const FIRST_SEED = Number(process.env.EXPLORE_SEED ?? 1);
const PRICE = 42_000;

let api: TestApi;
let organizer: Organizer;
let pool: pg.Pool;
beforeAll(async () => {
  api = await startTestApi({ EVENT_CANCELLATION_FINAL_SWEEP_MS: '1000' });
  organizer = await createOrganizer(api.orm.em.fork());
  pool = new pg.Pool({ connectionString: api.env.DATABASE_URL, max: 4 });
});
afterAll(async () => {
  await setGatewayA(api, 'ok').catch(() => undefined);
  await control('DELETE', '/refund-refusals', { gateway: 'gateway-a' }).catch(() => undefined);
  await pool.end();
  await api.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

async function control(method: 'POST' | 'DELETE', path: string, body: unknown): Promise<void> {
  const response = await fetch(`${api.env.SANDBOX_URL}/control${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status}`);
}

interface Plan {
  sales: number;
  refusedShare: number;
  faults: Array<{ atMs: number; mode: 'ok' | 'down' | 'slow'; delayMs?: number }>;
  repostAtMs: number[];
  terminateAtMs: number | null;
}

/** A case's random plan: how many sales, which refunds are refused, and when the gateway and the organizer act. */
function planOf(seed: number): Plan {
  const random = seededRandom(seed);
  const faults: Plan['faults'] = [];
  let at = random() < 0.5 ? 0 : Math.floor(random() * 3_000);
  for (let flips = 1 + Math.floor(random() * 4); flips > 0; flips -= 1) {
    const mode = random() < 0.6 ? 'down' : 'slow';
    faults.push({ atMs: at, mode, ...(mode === 'slow' ? { delayMs: 200 + Math.floor(random() * 1_300) } : {}) });
    at += 2_000 + Math.floor(random() * 10_000);
    faults.push({ atMs: at, mode: 'ok' });
    at += Math.floor(random() * 6_000);
  }
  return {
    sales: 30 + Math.floor(random() * 90),
    refusedShare: random() < 0.6 ? random() * 0.1 : 0,
    faults,
    repostAtMs: Array.from({ length: Math.floor(random() * 3) }, () => Math.floor(random() * 20_000)),
    terminateAtMs: random() < 0.5 ? 1_000 + Math.floor(random() * 15_000) : null,
  };
}

async function operatorRetry(saleId: string): Promise<number> {
  return runOperator(['refunds-refused', 'retry', saleId], {
    orm: api.orm,
    temporal: api.services.temporal,
    env: api.env,
    print: () => undefined,
  });
}

async function exploreCase(seed: number): Promise<void> {
  const plan = planOf(seed);
  const label = `seed ${seed}: ${JSON.stringify(plan)}`;
  process.stdout.write(`  [event-cancellation-exploration] ${label}\n`);
  const { event, sales } = await eventOfPaidSales(api, organizer, pool, { count: plan.sales, price: PRICE });
  const refusedSales = sales.filter((_, index) => index < Math.round(plan.sales * plan.refusedShare));
  for (const sale of refusedSales) {
    await control('POST', '/refund-refusals', { gateway: 'gateway-a', providerPaymentId: sale.paymentId });
  }

  const workflowId = eventCancellationWorkflowId(event.eventId);
  const handle = api.services.temporal.workflow.getHandle(workflowId);
  const terminatedRuns: string[] = [];
  const began = Date.now();
  const actions: Array<{ atMs: number; run: () => Promise<unknown> }> = [
    ...plan.faults.map((fault) => ({ atMs: fault.atMs, run: () => setGatewayA(api, fault.mode, fault.delayMs) })),
    ...plan.repostAtMs.map((atMs) => ({
      atMs,
      run: async () =>
        expect((await cancelEvent(api, organizer, event.eventId, 'the artist fell ill')).statusCode).toBe(200),
    })),
    ...(plan.terminateAtMs === null
      ? []
      : [
          {
            atMs: plan.terminateAtMs,
            run: async () => {
              const running = await handle.describe();
              if (running.status.name !== 'RUNNING') return;
              await handle.terminate(onPurpose('plays the server terminating the run at the history limit'));
              terminatedRuns.push(running.runId);
              expect((await cancelEvent(api, organizer, event.eventId, 'the artist fell ill')).statusCode).toBe(200);
            },
          },
        ]),
  ].sort((a, b) => a.atMs - b.atMs);

  try {
    expect((await cancelEvent(api, organizer, event.eventId, 'the artist fell ill')).statusCode).toBe(200);
    for (const action of actions) {
      await sleep(action.atMs - (Date.now() - began));
      await action.run();
    }
  } finally {
    await setGatewayA(api, 'ok');
  }

  const settled = await eventually(
    async () => (await eventOf(api, organizer, event.eventId)).cancellation,
    (cancellation) => cancellation?.state === 'DONE',
    10 * 60_000,
  );
  expect({ label, refused: settled?.refused }).toEqual({ label, refused: refusedSales.length });
  // A refused refund leaves its sale paid (tickets valid again) and counted refused, for the operator.
  expect(settled).toMatchObject({
    confirmed: refusedSales.length,
    pending: 0,
    refunded: plan.sales - refusedSales.length,
  });

  // The merchant's balance is topped up and an operator retries each refused refund: each is refunded once.
  await control('DELETE', '/refund-refusals', { gateway: 'gateway-a' });
  for (const sale of refusedSales) expect(await operatorRetry(sale.saleId)).toBe(0);

  const ids = sales.map((sale) => sale.saleId);
  const records = await eventually(
    () => refundRecordsOf(pool, ids),
    (rows) => rows.every((row) => row.status === 'REFUNDED'),
    5 * 60_000,
  );
  expect({
    label,
    wrong: notRefundedOnce(records),
  }).toEqual({
    label,
    wrong: [],
  });
  expect({ label, refundsPerPayment: [...new Set((await refundsAtGateway(api, sales)).values())] }).toEqual({
    label,
    refundsPerPayment: [1],
  });
  const { rows: stock } = await pool.query<{ available: number }>(
    'select sum(available)::int as available from ticket_stock where ticket_type_id = $1',
    [event.ticketTypeId],
  );
  expect(stock[0]?.available).toBe(plan.sales);

  await handle.result();
  const runs: Array<{ runId: string; status: string; historyLength: number }> = [];
  for await (const run of api.services.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    // The list is read from visibility, which lags: each run's own description is authoritative.
    const described = await api.services.temporal.workflow.getHandle(workflowId, run.runId).describe();
    runs.push({ runId: run.runId, status: described.status.name, historyLength: described.historyLength });
  }
  expect({ label, long: runs.filter((run) => run.historyLength >= 10_000) }).toEqual({ label, long: [] });
  const unexpected = runs.filter(
    (run) => !['COMPLETED', 'CONTINUED_AS_NEW'].includes(run.status) && !terminatedRuns.includes(run.runId),
  );
  expect({ label, unexpected }).toEqual({ label, unexpected: [] });
  // The runs terminated on purpose are removed, so the suite's check that no execution was terminated judges only
  // what the code did.
  for (const runId of terminatedRuns) {
    await api.services.temporal.workflowService.deleteWorkflowExecution({
      namespace: api.env.TEMPORAL_NAMESPACE,
      workflowExecution: { workflowId, runId },
    });
  }
}

test(
  `${CASES} event cancellations with random outages, lags, refused refunds, re-posted cancels and terminated runs refund every paid sale exactly once`,
  async () => {
    for (let seed = FIRST_SEED; seed < FIRST_SEED + CASES; seed += 1) await exploreCase(seed);
  },
  30 * 60_000,
);
