/**
 * Replay of the reconciler: a fresh run (scoped to a workspace of its own, so it sweeps nothing of other suites) must
 * replay deterministically against today's code, and `RECORD_WORKFLOW_HISTORIES=1 npm test --
 * test/replay/reconciler-replay.test.ts` commits its history as a fixture (new files only; see recorder.ts; set
 * RECORD_HISTORY_SUFFIX to record under a patch's name). checkout-replay.test.ts replays every committed fixture
 * (`reconciler.json` is recorded from the launch baseline: runs are pinned, so a release never replays an older one).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '../../entities/ids.js';
import { createOrganizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';
import { exportHistory, replayHistories } from './recorder.js';

let api: TestApi;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
  rmSync(scratch, { recursive: true, force: true });
});

test('a reconciler run replays deterministically', async () => {
  const organizer = await createOrganizer(api.orm.em.fork());
  const workflowId = `reconciler-replay-${newId()}`;
  const counts = await api.services.temporal.workflow.execute('reconciler', {
    workflowId,
    taskQueue: api.env.TEMPORAL_TASK_QUEUE,
    args: [{ marginMs: 1_000, batchSize: 10, workspaceId: organizer.workspaceId }],
  });
  expect(counts).toMatchObject({ errors: 0 });
  const file = exportHistory({
    address: api.env.TEMPORAL_ADDRESS,
    workflowId,
    name: 'reconciler',
    scratchDir: scratch,
  });
  expect(replayHistories([file])).toEqual([expect.objectContaining({ ok: true })]);
}, 120_000);
