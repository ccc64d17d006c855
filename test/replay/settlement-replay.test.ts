/**
 * Replay of the settlement workflows: fresh executions (a settlement driven through every update to PAID, one moved
 * on by its objection window, and a sweep) must replay deterministically against today's code, and
 * `RECORD_WORKFLOW_HISTORIES=1 npm test -- test/replay/settlement-replay.test.ts` commits their histories as
 * fixtures (new files only; see recorder.ts). checkout-replay.test.ts replays every committed fixture.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '../../entities/ids.js';
import {
  approveSettlementUpdate,
  recordSettlementTransferUpdate,
  rejectSettlementUpdate,
  requestSettlementPaymentUpdate,
  SETTLEMENT_SWEEP_WORKFLOW_ID,
  settlementStartOptions,
  settlementStatusQuery,
  settlementWorkflowId,
} from '../../workflows/settlement-definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, publishEvent } from '../support/purchase.js';
import { complimentary } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';
import { exportHistory, replayHistories } from './recorder.js';

let api: TestApi;
let organizer: Organizer;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  await api.orm.em.fork().execute(
    `insert into payout_accounts (id, created_at, updated_at, workspace_id, holder_name, bank_name, account_last4,
       default_percentage, active) values (?, now(), now(), ?, 'Replay SAS', 'Banco Uno', '4321', 100, true)`,
    [newId(), organizer.workspaceId],
  );
});
afterAll(async () => {
  await api.close();
  rmSync(scratch, { recursive: true, force: true });
});

const record = (workflowId: string, name: string) =>
  exportHistory({ address: api.env.TEMPORAL_ADDRESS, workflowId, name, scratchDir: scratch });

/** An ended date with one complimentary sale. */
async function endedDate(): Promise<string> {
  const event = await publishEvent(api, organizer, { capacity: 5 });
  await complimentary(api, organizer, event, 1);
  await api.orm.em
    .fork()
    .execute(
      `update event_dates set starts_at = now() - interval '2 hours', ends_at = now() - interval '1 minute' where id = ?`,
      [event.eventDateId],
    );
  return event.eventDateId;
}

async function startInReview(eventDateId: string, objectionWindowMs: number) {
  const options = settlementStartOptions(
    { workspaceId: organizer.workspaceId, eventDateId, objectionWindowMs },
    api.env.TEMPORAL_TASK_QUEUE,
  );
  const handle = await api.services.temporal.workflow.start('settlement', options);
  await eventually(
    () => handle.query(settlementStatusQuery),
    (view) => view.status === 'REVIEW',
    30_000,
  );
  return handle;
}

test('settlement executions replay deterministically (rejected, approved, payment requested, paid)', async () => {
  const eventDateId = await endedDate();
  const handle = await startInReview(eventDateId, 600_000);
  await handle.executeUpdate(rejectSettlementUpdate, { args: [{ reason: 'replay fixture' }] });
  await handle.executeUpdate(approveSettlementUpdate, { args: [{ notes: 'replay fixture' }] });
  await handle.executeUpdate(requestSettlementPaymentUpdate, { args: [] });
  await handle.executeUpdate(recordSettlementTransferUpdate, {
    args: [
      {
        fileName: 'proof.pdf',
        contentType: 'application/pdf',
        contentBase64: Buffer.from('%PDF-1.4\n%%EOF\n').toString('base64'),
      },
    ],
  });
  expect((await handle.result()).status).toBe('PAID');
  const files = [record(settlementWorkflowId(organizer.workspaceId, eventDateId), 'settlement-paid')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);

test('settlement executions moved on by the objection window replay deterministically', async () => {
  const eventDateId = await endedDate();
  const handle = await startInReview(eventDateId, 1_000);
  await handle.executeUpdate(approveSettlementUpdate, { args: [{}] });
  await eventually(
    () => handle.query(settlementStatusQuery),
    (view) => view.status === 'AWAITING_PAYMENT',
    30_000,
  );
  await handle.executeUpdate(recordSettlementTransferUpdate, {
    args: [
      {
        fileName: 'proof.png',
        contentType: 'image/png',
        contentBase64: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]).toString('base64'),
      },
    ],
  });
  expect((await handle.result()).status).toBe('PAID');
  const files = [record(settlementWorkflowId(organizer.workspaceId, eventDateId), 'settlement-objection-window')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);

test('the settlement sweep replays deterministically', async () => {
  const eventDateId = await endedDate();
  const workflowId = `${SETTLEMENT_SWEEP_WORKFLOW_ID}-replay-${newId()}`;
  const result = await api.services.temporal.workflow.execute('settlementSweep', {
    workflowId,
    taskQueue: api.env.TEMPORAL_TASK_QUEUE,
    args: [{ endedAgoMs: 0, workspaceId: organizer.workspaceId, objectionWindowMs: 1_000 }],
  });
  expect(result).toEqual({ started: 1, alreadyRunning: 0, errors: 0 });
  // The settlement it started is finished here, so the run leaves nothing waiting.
  const handle = api.services.temporal.workflow.getHandle(settlementWorkflowId(organizer.workspaceId, eventDateId));
  await eventually(
    () => handle.query(settlementStatusQuery),
    (view) => view.status === 'REVIEW',
    30_000,
  );
  await handle.executeUpdate(approveSettlementUpdate, { args: [{}] });
  await eventually(
    () => handle.query(settlementStatusQuery),
    (view) => view.status === 'AWAITING_PAYMENT',
    30_000,
  );
  await handle.executeUpdate(recordSettlementTransferUpdate, {
    args: [
      {
        fileName: 'proof.pdf',
        contentType: 'application/pdf',
        contentBase64: Buffer.from('%PDF-1.4\n%%EOF\n').toString('base64'),
      },
    ],
  });
  const files = [record(workflowId, 'settlement-sweep')];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);
