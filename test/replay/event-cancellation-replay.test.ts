/**
 * Replay of the event-cancellation workflow: a fresh execution (a paid sale refunded, a pending one cancelled) must
 * replay against today's code; `RECORD_WORKFLOW_HISTORIES=1 npm test -- test/replay/event-cancellation-replay.test.ts`
 * commits its history as a fixture (new files only; see recorder.ts), which checkout-replay.test.ts replays with
 * every other committed history.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
