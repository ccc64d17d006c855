/**
 * The purchase-session execution over a long life: it continues as new before its history grows, and it never
 * orphans a hold token at the seat-map provider, even while the provider is down.
 */
import type { WorkflowExecutionInfo } from '@temporalio/client';
import {
  claimPurchaseSessionUpdate,
  finishPurchaseSessionOrderUpdate,
  purchaseSessionWorkflowId,
  SA,
} from '../../workflows/definitions.js';
import type { purchaseSession } from '../../workflows/purchase-session.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import {
  type PrivateProcess,
  privateTaskQueue,
  startPrivateSandbox,
  startPrivateWorker,
} from '../support/private-stack.js';
import { eventually, orderBody, publishEvent, reserveOrder, session, signInBuyer } from '../support/purchase.js';
import {
  buyerIdOf,
  openPurchaseSession,
  SEAT_LABELS,
  sandboxControl,
  seatedEvent,
  seatMapOf,
} from '../support/seats.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const email = () => `session-${Math.random().toString(36).slice(2, 9)}@buyers.test`;

async function runsOf(target: TestApi, workflowId: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const run of target.services.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    runs.push(run);
  }
  return runs;
}

test('after `continueAsNewAfter` updates the execution continues as new: the live session still answers and orders, old ids still say SUPERSEDED, every superseded token is expired', async () => {
  const event = await seatedEvent(api, organizer);
  const seatMap = seatMapOf(api);
  const token = await signInBuyer(api, email());
  const buyerId = await buyerIdOf(api, token);
  const workflowId = purchaseSessionWorkflowId(buyerId);
  // Started here with a small threshold; the API's opens join it (update-with-start, USE_EXISTING).
  const started = await api.services.temporal.workflow.start<typeof purchaseSession>('purchaseSession', {
    workflowId,
    taskQueue: api.env.TEMPORAL_TASK_QUEUE,
    args: [{ workspaceId: organizer.workspaceId, buyerId, continueAsNewAfter: 3 }],
    typedSearchAttributes: [{ key: SA.workspaceId, value: organizer.workspaceId }],
  });

  const opened = [];
  for (const label of SEAT_LABELS.slice(0, 5)) {
    const current = await openPurchaseSession(api, token, event.eventDateId);
    await seatMap.hold({ eventKey: event.eventDateId, labels: [label], holdToken: current.holdToken });
    opened.push({ ...current, label });
  }

  const runs = await eventually(
    () => runsOf(api, workflowId),
    (list) => list.some((run) => run.status.name === 'CONTINUED_AS_NEW'),
  );
  expect(runs.filter((run) => run.status.name === 'RUNNING')).toHaveLength(1);
  expect(runs.some((run) => run.runId === started.firstExecutionRunId && run.status.name === 'CONTINUED_AS_NEW')).toBe(
    true,
  );
  const current = await api.services.temporal.workflow.getHandle(workflowId).describe();
  expect(current.runId).not.toBe(started.firstExecutionRunId);
  expect(current.typedSearchAttributes.get(SA.workspaceId)).toBe(organizer.workspaceId);

  const live = opened.at(-1)!;
  for (const old of opened.slice(0, -1)) {
    expect(await seatMap.getHoldToken(old.holdToken)).toBeNull();
    const [seat] = await seatMap.objectStatuses(event.eventDateId, [old.label]);
    expect(seat?.status).toBe('free');
    const read = await api.request({
      method: 'GET',
      url: `/api/v1/customer/purchase-sessions/${old.id}`,
      headers: session(token),
    });
    expect(read.statusCode).toBe(200);
    expect(read.json().data.state).toBe('SUPERSEDED');
  }
  expect(await seatMap.getHoldToken(live.holdToken)).not.toBeNull();

  const ordered = await reserveOrder(
    api,
    token,
    orderBody(event, 1, {
      items: [{ ticketTypeId: event.ticketTypeId, quantity: 1, seats: [live.label] }],
      holdToken: live.holdToken,
    }),
  );
  expect(ordered.statusCode).toBe(201);
}, 120_000);

describe('the seat-map provider down while sessions end', () => {
  let sandbox: PrivateProcess & { url: string };
  let worker: PrivateProcess;
  let isolated: TestApi;
  beforeAll(async () => {
    // A sandbox and worker of this test's own: taking the seat map down here reaches no other test.
    sandbox = await startPrivateSandbox();
    const taskQueue = privateTaskQueue('seatmap-down');
    worker = await startPrivateWorker(taskQueue, { SANDBOX_URL: sandbox.url });
    isolated = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue, SANDBOX_URL: sandbox.url });
  }, 120_000);
  afterAll(async () => {
    await isolated?.close();
    await worker?.close();
    await sandbox?.close();
  });

  test('a token superseded or released while the seat map is down is expired once it is back; the execution neither fails nor ends before', async () => {
    const seatMap = seatMapOf(isolated);
    const event = await publishEvent(api, organizer, { capacity: 5 });
    const token = await signInBuyer(api, email());
    const buyerId = await buyerIdOf(api, token);
    const workflowId = purchaseSessionWorkflowId(buyerId);
    const handle = isolated.services.temporal.workflow.getHandle(workflowId);
    // A short idle period, so the execution would end during the outage if it let go of its tokens.
    await isolated.services.temporal.workflow.start<typeof purchaseSession>('purchaseSession', {
      workflowId,
      taskQueue: isolated.env.TEMPORAL_TASK_QUEUE,
      args: [{ workspaceId: organizer.workspaceId, buyerId, idleMs: 2_000 }],
    });

    const first = await openPurchaseSession(isolated, token, event.eventDateId);
    // An order in flight holds the first session while a second tab supersedes it.
    const claim = await handle.executeUpdate(claimPurchaseSessionUpdate, {
      args: [{ sessionId: first.id, eventDateId: event.eventDateId, leaseMs: 120_000 }],
    });
    expect(claim.ok).toBe(true);
    const second = await openPurchaseSession(isolated, token, event.eventDateId);
    expect(await seatMap.getHoldToken(first.holdToken)).not.toBeNull();

    await sandboxControl(isolated, '/faults', { target: 'seatmap', mode: 'down' });
    try {
      // The order fails (the seat map is down), so the superseded session's token is ours to expire again.
      await handle.executeUpdate(finishPurchaseSessionOrderUpdate, { args: [{ sessionId: first.id, ordered: false }] });
      const released = await isolated.request({
        method: 'POST',
        url: `/api/v1/customer/purchase-sessions/${second.id}/release`,
        headers: session(token),
      });
      expect(released.statusCode).toBe(200);
      expect(released.json().data.state).toBe('RELEASED');
      // Well past the idle period: still running, holding on to the tokens it could not expire.
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      expect((await handle.describe()).status.name).toBe('RUNNING');
    } finally {
      await sandboxControl(isolated, '/faults', { target: 'seatmap', mode: 'ok' });
    }

    await eventually(
      async () => [await seatMap.getHoldToken(first.holdToken), await seatMap.getHoldToken(second.holdToken)],
      (tokens) => tokens.every((found) => found === null),
      60_000,
    );
    // With nothing left to expire, the idle execution ends, completed, never failed.
    const runs = await eventually(
      () => runsOf(isolated, workflowId),
      (list) => list.every((run) => run.status.name !== 'RUNNING'),
      30_000,
    );
    expect(runs.map((run) => run.status.name)).toEqual(['COMPLETED']);
    // Waiting out the outage took a handful of timers, not a timer per instant (a wait that spins fills the history).
    expect((await handle.fetchHistory()).events?.length ?? 0).toBeLessThan(200);
  }, 150_000);
});
