/**
 * The stalled-refund sweep (activities/reconciler.ts redriveStalledRefunds) against the real database, with a
 * Temporal client of the test's own that says which refund executions are running and records what the sweep starts:
 *
 * - the organizer's notifyBuyer choice is kept with the refund request (activities/sales-ops.ts prepareRefund; the
 *   latest choice given wins) and the refund started again carries it; a request recorded before the choice was kept
 *   starts one that sends no courtesy email;
 * - requests whose execution still runs do not hide the ones behind them: the sweep goes on from where its last run
 *   stopped, a batch at most a run, and starts over from the oldest at the end.
 *
 * The end-to-end case (a terminated refund redriven, the buyer emailed once) is in
 * test/faults/refund-retries-and-stalls.test.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Providers } from '../../activities/ports.js';
import { createReconcilerActivities, type StalledRefundSweep } from '../../activities/reconciler.js';
import { createSalesOpsActivities } from '../../activities/sales-ops.js';
import { newId } from '../../entities/ids.js';
import { type RefundInput, refundWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { type PublishedEvent, publishEvent } from '../support/purchase.js';
import { complimentary } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

const query = <R>(sql: string, params: unknown[] = []): Promise<R[]> => api.orm.em.fork().execute<R[]>(sql, params);

/**
 * A Temporal client that knows only what the sweep asks of it: the refund executions in `running` are RUNNING, every
 * other one is not found; starts are recorded, nothing runs.
 */
function temporalStub(running: Set<string>) {
  const started: RefundInput[] = [];
  const client = {
    workflow: {
      getHandle: (workflowId: string) => ({
        describe: async () => {
          if (running.has(workflowId)) return { status: { name: 'RUNNING' } };
          throw new WorkflowNotFoundError('no such execution', workflowId, undefined);
        },
      }),
      start: async (_type: string, options: { args: [RefundInput] }) => {
        started.push(options.args[0]);
        return {};
      },
    },
  };
  return { client: client as unknown as Client, started };
}

function sweeps(temporal: Client) {
  return createReconcilerActivities({
    env: api.env,
    orm: api.orm,
    redis: api.services.redis,
    // The sweep reads the database and asks Temporal only.
    providers: {} as Providers,
    temporal,
  });
}

const redrive = (temporal: Client, workspaceId: string, limit: number): Promise<StalledRefundSweep> =>
  new MockActivityEnvironment().run(sweeps(temporal).redriveStalledRefunds, { marginMs: 1000, limit, workspaceId });

/** The organizer's refund request of `saleId` as prepareRefund records it, asked for `agoMs` ago. */
async function refundRequest(saleId: string, agoMs: number, notifyBuyer: boolean | null): Promise<void> {
  await query(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, dedupe_key, note,
       notify_buyer, created_at)
     values (?, ?, 'GATEWAY_A', 'REFUND', ?, 'requested', 1000, ?, 'refund requested by the organizer: test', ?,
       now() - ? * interval '1 millisecond')`,
    [newId(), saleId, `pay-${randomUUID()}`, `refund-request:${saleId}`, notifyBuyer, agoMs],
  );
}

/** A workspace of the test's own, so the sweep (scoped to it) sees only the test's requests. */
async function workspace(): Promise<{ organizer: Organizer; event: PublishedEvent }> {
  const organizer = await createOrganizer(api.orm.em.fork());
  return { organizer, event: await publishEvent(api, organizer, { capacity: 20 }) };
}

describe('the refund the reconciler starts again keeps the organizer’s notifyBuyer choice', () => {
  /** A CONFIRMED sale that reads as paid through gateway A: a complimentary sale given a payment. */
  const gatewaySale = async ({ organizer, event }: { organizer: Organizer; event: PublishedEvent }) => {
    const sale = await complimentary(api, organizer, event);
    await query(`update sales set payment_provider = 'GATEWAY_A', payment_ref = ? where id = ?`, [
      `pay-${randomUUID()}`,
      sale.id,
    ]);
    return sale.id;
  };
  const storedChoice = async (saleId: string) =>
    (
      await query<{ notify_buyer: boolean | null }>('select notify_buyer from payment_attempts where dedupe_key = ?', [
        `refund-request:${saleId}`,
      ])
    )[0]?.notify_buyer;

  test('the request keeps the latest choice given; a step that gives none leaves it', async () => {
    const salesOps = createSalesOpsActivities({
      env: api.env,
      orm: api.orm,
      redis: api.services.redis,
      // prepareRefund reads and writes the database only.
      providers: {} as Providers,
      temporal: api.services.temporal,
    });
    const saleId = await gatewaySale(await workspace());
    expect(await salesOps.prepareRefund({ saleId, reason: 'moved', notifyBuyer: true })).toMatchObject({
      state: 'ready',
    });
    expect(await storedChoice(saleId)).toBe(true);
    // The organizer asks again after the first execution ended, choosing otherwise.
    await salesOps.prepareRefund({ saleId, reason: 'moved', notifyBuyer: false });
    expect(await storedChoice(saleId)).toBe(false);
    // An execution recorded before the choice was passed (or an event cancellation's refund) says nothing.
    await salesOps.prepareRefund({ saleId, reason: 'moved' });
    expect(await storedChoice(saleId)).toBe(false);
  }, 60_000);

  test('started again with the stored choice; a request recorded without one sends no email', async () => {
    const own = await workspace();
    const chose = await gatewaySale(own);
    const declined = await gatewaySale(own);
    const before = await gatewaySale(own);
    await refundRequest(chose, 30_000, true);
    await refundRequest(declined, 20_000, false);
    await refundRequest(before, 10_000, null);
    const temporal = temporalStub(new Set());

    expect(await redrive(temporal.client, own.organizer.workspaceId, 50)).toEqual({
      redriven: 3,
      stillRunning: 0,
      errors: 0,
    });
    // Before the choice was kept, every refund started again had notifyBuyer false.
    expect(temporal.started.map(({ saleId, notifyBuyer }) => [saleId, notifyBuyer])).toEqual([
      [chose, true],
      [declined, false],
      [before, false],
    ]);
  }, 60_000);
});

describe('requests whose refund execution still runs do not hide the ones behind them', () => {
  test('with more running than a batch, the next run goes on to the stalled one behind them', async () => {
    const { organizer, event } = await workspace();
    const sales: string[] = [];
    for (let i = 0; i < 4; i++) sales.push((await complimentary(api, organizer, event)).id);
    // Oldest first: three whose execution is running, then one whose execution ended.
    for (const [index, saleId] of sales.entries()) await refundRequest(saleId, 40_000 - index * 10_000, true);
    const [stalled] = sales.slice(-1);
    const temporal = temporalStub(new Set(sales.slice(0, 3).map(refundWorkflowId)));

    // A batch of two: the two oldest, both still running.
    expect(await redrive(temporal.client, organizer.workspaceId, 2)).toEqual({
      redriven: 0,
      stillRunning: 2,
      errors: 0,
    });
    // Before the walk, every run read the same two oldest and never reached the stalled one.
    expect(await redrive(temporal.client, organizer.workspaceId, 2)).toEqual({
      redriven: 1,
      stillRunning: 1,
      errors: 0,
    });
    expect(temporal.started.map((input) => input.saleId)).toEqual([stalled]);
    // Past the newest, the walk starts over from the oldest.
    expect(await redrive(temporal.client, organizer.workspaceId, 2)).toEqual({
      redriven: 0,
      stillRunning: 2,
      errors: 0,
    });
  }, 60_000);
});
