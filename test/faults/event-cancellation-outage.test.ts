/**
 * A 2,000-sale event cancelled while gateway A is down for two minutes: every sale is refunded exactly once (one
 * refund per payment at the gateway, one REFUND record and one `sale.refunded` per sale, the stock back), no run of
 * the cancellation grows its history anywhere near the limit, and the run terminated mid-outage (as the server
 * terminates one at the history limit) is resumed by the organizer posting the cancel again.
 *
 * Before the batched cancellation, the re-posted cancel was a silent no-op (REJECT_DUPLICATE, error swallowed): the
 * terminated run left all 2,000 buyers unrefunded and this test waited for DONE in vain.
 *
 * The sales are seeded straight into the database as the checkout would have confirmed them, each paid by a real
 * approved card payment at the sandbox (bench/lib/cancellation-seed.ts): buying 2,000 through the API would take
 * longer than the cancellation itself. Gateway A down is a sandbox-wide switch, so this file runs with the fault
 * files that take turns on the shared services.
 */

import pg from 'pg';
import { onPurpose } from '../../scripts/support/terminations.js';
import { eventCancellationWorkflowId } from '../../workflows/event-cancellation-definitions.js';
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

const SALES = 2_000;
const PRICE = 50_000;
const OUTAGE_MS = 2 * 60_000;

let api: TestApi;
let organizer: Organizer;
let pool: pg.Pool;
beforeAll(async () => {
  api = await startTestApi({ EVENT_CANCELLATION_FINAL_SWEEP_MS: '1000' });
  organizer = await createOrganizer(api.orm.em.fork());
  pool = new pg.Pool({ connectionString: api.env.DATABASE_URL, max: 4 });
});
afterAll(async () => {
  await setGatewayA(api, 'ok');
  await pool.end();
  await api.close();
});

const log = (line: string) => process.stdout.write(`  [event-cancellation-outage] ${line}\n`);

test(
  `a ${SALES}-sale event cancelled during a 2-minute gateway A outage refunds every sale exactly once; re-posting the cancel resumes a terminated run`,
  async () => {
    const { event, sales } = await eventOfPaidSales(api, organizer, pool, { count: SALES, price: PRICE });
    log(`${sales.length} paid sales seeded`);

    await setGatewayA(api, 'down');
    const downAt = Date.now();
    try {
      expect((await cancelEvent(api, organizer, event.eventId)).statusCode).toBe(200);
      const workflowId = eventCancellationWorkflowId(event.eventId);
      const handle = api.services.temporal.workflow.getHandle(workflowId);

      // The first page found the gateway down and wrote its progress: nothing is refunded without the gateway.
      const waiting = await eventually(
        () => eventOf(api, organizer, event.eventId),
        (current) => current.cancellation !== null,
        60_000,
      );
      expect(waiting.cancellation).toMatchObject({ state: 'RUNNING', confirmed: SALES, refunded: 0 });

      // The server terminates an execution at its history limit; this plays it, mid-outage.
      const terminated = await handle.describe();
      await handle.terminate(onPurpose('plays the server terminating the run at the history limit'));
      expect((await cancelEvent(api, organizer, event.eventId)).statusCode).toBe(200);
      const resumed = await handle.describe();
      expect(resumed.runId).not.toBe(terminated.runId);
      expect(resumed.status.name).toBe('RUNNING');
      // While it runs, posting again joins it.
      expect((await cancelEvent(api, organizer, event.eventId)).statusCode).toBe(200);
      expect((await handle.describe()).runId).toBe(resumed.runId);

      const stillDown = OUTAGE_MS - (Date.now() - downAt);
      if (stillDown > 0) await new Promise((resolve) => setTimeout(resolve, stillDown));
      const during = await eventOf(api, organizer, event.eventId);
      expect(during.cancellation).toMatchObject({ refunded: 0, confirmed: SALES });
      await setGatewayA(api, 'ok');
      log(`gateway A back after ${Date.now() - downAt} ms`);

      const done = await eventually(
        () => eventOf(api, organizer, event.eventId),
        (current) => current.cancellation?.state === 'DONE',
        10 * 60_000,
      );
      log(`DONE ${Date.now() - downAt} ms after the outage began`);
      expect(done.cancellation).toMatchObject({
        state: 'DONE',
        pending: 0,
        confirmed: 0,
        refunded: SALES,
        refused: 0,
        failures: [],
      });
      await handle.result();

      // Exactly once, by the database's records (the gateway's confirmation; the request row is marked refunded too)...
      const ids = sales.map((sale) => sale.saleId);
      const records = await refundRecordsOf(pool, ids);
      expect(records).toHaveLength(SALES);
      expect(notRefundedOnce(records)).toEqual([]);
      const { rows: stock } = await pool.query<{ available: number }>(
        'select sum(available)::int as available from ticket_stock where ticket_type_id = $1',
        [event.ticketTypeId],
      );
      expect(stock[0]?.available).toBe(SALES);
      // ...and by the gateway's: one refund per payment.
      const atGateway = await refundsAtGateway(api, sales);
      expect([...atGateway.values()].filter((count) => count !== 1)).toEqual([]);

      // No run came near the history limit (51,200 events; the simulation's bar is 10,000).
      const runs: { runId: string; status: string; historyLength: number }[] = [];
      for await (const run of api.services.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
        runs.push({ runId: run.runId, status: run.status.name, historyLength: run.historyLength ?? 0 });
      }
      log(`runs: ${JSON.stringify(runs)}`);
      expect(runs.length).toBeGreaterThanOrEqual(2);
      expect(runs.filter((run) => run.historyLength >= 10_000)).toEqual([]);
      expect(runs.filter((run) => run.status !== 'COMPLETED' && run.status !== 'CONTINUED_AS_NEW')).toEqual([
        expect.objectContaining({ runId: terminated.runId, status: 'TERMINATED' }),
      ]);

      // The run this test terminated on purpose is removed, so the suite's check that no execution was terminated
      // judges only what the code did.
      await api.services.temporal.workflowService.deleteWorkflowExecution({
        namespace: api.env.TEMPORAL_NAMESPACE,
        workflowExecution: { workflowId, runId: terminated.runId },
      });
    } finally {
      await setGatewayA(api, 'ok');
    }
  },
  20 * 60_000,
);
