/**
 * New buyers never wait behind background work (issue 32, api/services/task-fairness.ts): with a backlog of checkouts'
 * workflow tasks on the queue (holds reserved minutes ago, all expiring at once), a new buyer's checkout is dispatched
 * among the first tasks, not after the backlog. Judged by the order in which the test stack's Temporal server hands
 * the tasks out to a poller, not by timing: a private task queue with no worker, polled by the test itself.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { checkoutPriority } from '../../api/services/task-fairness.js';
import { brokenExecutions, onPurpose } from '../../scripts/support/terminations.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { orderBody, publishEvent, reserveOrder, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
let temporal: Client;
const startedHere: string[] = [];
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  temporal = api.services.temporal;
});
afterAll(async () => {
  await api.close();
});

/**
 * The server splits a queue into 4 partitions and a poll reaches one of them at random: the backlog is large enough
 * that the bounds below hold whatever partition each task lands in (100 tasks a partition).
 */
const BACKLOG = 400;
const PAYMENT_WINDOW_MS = 10 * 60_000;
const DRAINED = 20;

/** Starts executions on a queue nobody polls: each leaves its first workflow task in the backlog. */
async function backlogOn(taskQueue: string, startedAtMs: number, count: number, spreadMs: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const workflowId = `backlog-${index}-${randomUUID()}`;
    // Spread over the seconds in which a flash sale's holds were made, as the bench's expiry storm makes them.
    await temporal.workflow.start('checkout', {
      taskQueue,
      workflowId,
      priority: checkoutPriority(startedAtMs + Math.floor((index * spreadMs) / count)),
      workflowExecutionTimeout: '5 minutes',
    });
    ids.push(workflowId);
  }
  startedHere.push(...ids);
  return ids;
}

/** The order in which the server hands out `count` workflow tasks of the queue. */
async function dispatchOrder(taskQueue: string, count: number): Promise<string[]> {
  const order: string[] = [];
  while (order.length < count) {
    const task = await temporal.withDeadline(Date.now() + 10_000, () =>
      temporal.workflowService.pollWorkflowTaskQueue({
        namespace: temporal.options.namespace,
        taskQueue: { name: taskQueue },
        identity: 'buyer-work-first test',
      }),
    );
    if (task.workflowExecution?.workflowId) order.push(task.workflowExecution.workflowId);
  }
  return order;
}

async function terminate(ids: readonly string[]): Promise<void> {
  await Promise.allSettled(
    ids.map((id) => temporal.workflow.getHandle(id).terminate(onPurpose('the backlog has been handed out'))),
  );
}

/**
 * A backlog of BACKLOG earlier checkouts' tasks is being worked off (the poller has taken DRAINED of them) when one
 * more checkout starts, under the key of `newcomerStartedAtMs`: how many tasks the server hands out before that one.
 */
async function tasksAheadOfNewcomer(
  label: string,
  backlog: { startedAtMs: number; spreadMs: number },
  newcomerStartedAtMs: number,
): Promise<number> {
  const taskQueue = `buyer-first-${label}-${randomUUID()}`;
  const backlogIds = await backlogOn(taskQueue, backlog.startedAtMs, BACKLOG, backlog.spreadMs);
  const newcomer = `${label}-${randomUUID()}`;
  startedHere.push(newcomer);
  try {
    const drained = await dispatchOrder(taskQueue, DRAINED);
    await temporal.workflow.start('checkout', {
      taskQueue,
      workflowId: newcomer,
      priority: checkoutPriority(newcomerStartedAtMs),
      workflowExecutionTimeout: '5 minutes',
    });
    const rest = await dispatchOrder(taskQueue, BACKLOG - DRAINED + 1);
    expect(drained).not.toContain(newcomer);
    expect(rest).toContain(newcomer);
    return rest.indexOf(newcomer);
  } finally {
    await terminate([...backlogIds, newcomer]);
  }
}

describe('buyer-facing work first', () => {
  test("a new checkout is dispatched ahead of a backlog of earlier checkouts' tasks", async () => {
    // Holds made over 40 s, a payment window ago. The newcomer goes ahead of its partition's backlog (after at most one
    // task of each of the backlog's few keys). In arrival order it would come out only when its partition's 90 or so
    // remaining tasks are gone, some 300 or more tasks into the queue. On an idle box it came out 10–45th; on a loaded
    // box later, as a partition first hands out the tasks it has already read into memory: 151st once in a full run,
    // 250th once at load 4.6 (twice the box's cores). The bound is 70% of the backlog.
    const ahead = await tasksAheadOfNewcomer(
      'fresh',
      { startedAtMs: Date.now() - PAYMENT_WINDOW_MS, spreadMs: 40_000 },
      Date.now(),
    );
    expect(ahead).toBeLessThan(BACKLOG * 0.7);
  });

  test('started under the key of the backlog it waits behind it: the key is what does it', async () => {
    const reservedAtMs = Date.now() - PAYMENT_WINDOW_MS;
    const ahead = await tasksAheadOfNewcomer('late', { startedAtMs: reservedAtMs, spreadMs: 0 }, reservedAtMs);
    expect(ahead).toBeGreaterThan(150);
  });

  test('the API starts every checkout under the key of the moment it began', async () => {
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, `fair-${randomUUID().slice(0, 8)}@buyers.test`);
    const before = Date.now();
    const reserved = await reserveOrder(api, token, orderBody(event));
    expect(reserved.statusCode).toBe(201);
    const saleId: string = reserved.json().data.saleId;
    const described = await temporal.workflow.getHandle(checkoutWorkflowId(saleId)).describe();
    const key = described.raw.workflowExecutionInfo?.priority?.fairnessKey;
    expect([checkoutPriority(before).fairnessKey, checkoutPriority(Date.now()).fairnessKey]).toContain(key);
  });

  test("the suite's last check does not count this file's on-purpose terminations as broken executions", async () => {
    const { broken, terminatedOnPurpose } = await brokenExecutions(temporal);
    expect(startedHere.length).toBeGreaterThan(BACKLOG);
    expect(broken.filter((line) => startedHere.some((id) => line.includes(id)))).toEqual([]);
    expect(terminatedOnPurpose).toBeGreaterThanOrEqual(startedHere.length);
  });
});
