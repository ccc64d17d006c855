/**
 * Operator updates of a settlement arriving together: two approvals delivered in one workflow activation (an operator
 * double-clicking while the worker was away, two operators at once) must not both pass their validators. The
 * settlement runs on a private task queue whose worker this test stops, so both updates wait at the server and reach
 * the next worker in the same workflow task, as they would after a worker restart.
 */
import { newId } from '../../entities/ids.js';
import {
  approveSettlementUpdate,
  settlementStartOptions,
  settlementStatusQuery,
} from '../../workflows/settlement-definitions.js';
import { createOrganizer } from '../support/fixtures.js';
import { privateTaskQueue, startPrivateWorker } from '../support/private-stack.js';
import { eventually, publishEvent } from '../support/purchase.js';
import { complimentary } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

/** An update's outcome: the view it answered with, or the refusal's type. */
const outcome = (update: Promise<unknown>): Promise<string> =>
  update.then(
    () => 'accepted',
    (error: unknown) => {
      const cause = (error as { cause?: { type?: string } }).cause;
      return `refused: ${cause?.type ?? String(error)}`;
    },
  );

test('two approvals delivered in one activation: the second is refused as busy, the settlement sent once', async () => {
  const organizer = await createOrganizer(api.orm.em.fork());
  await api.orm.em.fork().execute(
    `insert into payout_accounts (id, created_at, updated_at, workspace_id, holder_name, bank_name, account_last4,
       default_percentage, active) values (?, now(), now(), ?, 'Busy SAS', 'Banco Uno', '4321', 100, true)`,
    [newId(), organizer.workspaceId],
  );
  const event = await publishEvent(api, organizer, { capacity: 5 });
  await complimentary(api, organizer, event, 1);
  await api.orm.em
    .fork()
    .execute(
      `update event_dates set starts_at = now() - interval '2 hours', ends_at = now() - interval '1 minute' where id = ?`,
      [event.eventDateId],
    );
  const taskQueue = privateTaskQueue('settlement-busy');
  const options = settlementStartOptions(
    { workspaceId: organizer.workspaceId, eventDateId: event.eventDateId, objectionWindowMs: 600_000 },
    taskQueue,
  );
  let worker = await startPrivateWorker(taskQueue);
  const handle = await api.services.temporal.workflow.start('settlement', options);
  try {
    await eventually(
      () => handle.query(settlementStatusQuery),
      (view) => view.status === 'REVIEW',
      60_000,
    );
    // The worker goes away; two approvals wait at the server for the next one.
    await worker.close();
    const approve = (notes: string) =>
      api.services.temporal.workflow
        .getHandle(handle.workflowId)
        .executeUpdate(approveSettlementUpdate, { args: [{ notes }] });
    const first = outcome(approve('first click'));
    const second = outcome(approve('second click'));
    // Both reach the server before a worker polls again (setup only: nothing is asserted on time).
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    worker = await startPrivateWorker(taskQueue);

    const outcomes = (await Promise.all([first, second])).sort();
    expect(outcomes).toEqual(['accepted', 'refused: INVALID_STATE']);
    const view = await handle.query(settlementStatusQuery);
    expect(view.status).toBe('SENT');
    const [row] = await api.orm.em
      .fork()
      .execute<{ status: string; notes: string | null }[]>(
        'select status, notes from settlements where workspace_id = ? and event_date_id = ?',
        [organizer.workspaceId, event.eventDateId],
      );
    expect(row?.status).toBe('SENT');
  } finally {
    await handle.cancel().catch(() => undefined);
    await handle.result().catch(() => undefined);
    await worker.close();
  }
}, 180_000);
