/**
 * Replay of the event-cancellation workflow: a fresh execution (a paid sale refunded, a pending one cancelled), and
 * one that continues as new (both runs), must replay against today's code; `RECORD_WORKFLOW_HISTORIES=1 npm test -- test/replay/event-cancellation-replay.test.ts`
 * commits its history as a fixture (new files only; see recorder.ts), which checkout-replay.test.ts replays with
 * every other committed history.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { eventCancellation } from '../../workflows/event-cancellation.js';
import { eventCancellationWorkflowId } from '../../workflows/event-cancellation-definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { publishEvent } from '../support/purchase.js';
import { payByCard, reserve } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';
import { exportHistory, replayHistories } from './recorder.js';

let api: TestApi;
let organizer: Organizer;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
beforeAll(async () => {
  api = await startTestApi({ EVENT_CANCELLATION_FINAL_SWEEP_MS: '500' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
  rmSync(scratch, { recursive: true, force: true });
});

test('event-cancellation executions replay deterministically (one sale refunded, one cancelled)', async () => {
  const event = await publishEvent(api, organizer, { capacity: 10 });
  const paid = await reserve(api, event, 'replay-evc-paid');
  await payByCard(api, paid.token, paid.order.saleId, 'APRO');
  await reserve(api, event, 'replay-evc-pending');
  const cancelled = await api.request({
    method: 'POST',
    url: `/api/v1/events/${event.eventId}/cancel`,
    headers: bearer(organizer.key),
    payload: { reason: 'replay fixture' },
  });
  expect(cancelled.statusCode).toBe(200);
  const workflowId = eventCancellationWorkflowId(event.eventId);
  await api.services.temporal.workflow.getHandle(workflowId).result();
  const files = [
    exportHistory({ address: api.env.TEMPORAL_ADDRESS, workflowId, name: 'event-cancellation', scratchDir: scratch }),
  ];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true]);
}, 120_000);

test('a cancellation that continues as new replays deterministically, both runs (three sales, one a page)', async () => {
  const event = await publishEvent(api, organizer, { capacity: 10 });
  for (const key of ['replay-evc-can-1', 'replay-evc-can-2', 'replay-evc-can-3']) {
    const paid = await reserve(api, event, key);
    await payByCard(api, paid.token, paid.order.saleId, 'APRO');
  }
  await api.orm.em
    .fork()
    .execute(`update events set status = 'CANCELLED', cancelled_at = now() where id = ?`, [event.eventId]);
  const workflowId = eventCancellationWorkflowId(event.eventId);
  // One sale a page and a tiny history budget: the first run continues as new after its first page.
  const handle = await api.services.temporal.workflow.start<typeof eventCancellation>('eventCancellation', {
    workflowId,
    taskQueue: api.env.TEMPORAL_TASK_QUEUE,
    args: [
      {
        eventId: event.eventId,
        workspaceId: organizer.workspaceId,
        reason: 'replay fixture',
        pageSize: 1,
        continueAsNewAfterEvents: 10,
        finalSweepDelayMs: 500,
      },
    ],
  });
  const result = await handle.result();
  expect(result).toEqual({ cancelled: 0, refunded: 3, failures: 0 });
  const lastRunId = (await handle.describe()).runId;
  expect(lastRunId).not.toBe(handle.firstExecutionRunId);
  const files = [
    exportHistory({
      address: api.env.TEMPORAL_ADDRESS,
      workflowId,
      runId: handle.firstExecutionRunId,
      name: 'event-cancellation-continued-first-run',
      scratchDir: scratch,
    }),
    exportHistory({
      address: api.env.TEMPORAL_ADDRESS,
      workflowId,
      runId: lastRunId,
      name: 'event-cancellation-continued-next-run',
      scratchDir: scratch,
    }),
  ];
  expect(replayHistories(files).map((result) => result.ok)).toEqual([true, true]);
}, 120_000);
