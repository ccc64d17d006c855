/**
 * One scripted story on the real checkout code and a local Temporal server: a card charged as a local activity inside
 * the pay update (LOCAL_CARD_CHARGE) whose workflow task is lost. The gateway approves the charge, then the worker's
 * process stalls (a starved box) for longer than the workflow task timeout, so the task never completes and the
 * server drops the update with it: the execution never hears of the charge. The payment window then ends, and the
 * reconciler asks the checkout to check the sale, as its gateway sweep does for a closed sale with an opened attempt.
 * The approved payment must end as the payment of a CONFIRMED sale or refunded (world.ts `violations`).
 *
 *   tsx test/simulation/run-lost-local-charge.ts
 *
 * Prints one JSON line on stdout: { updateOutcome, updateInHistory, violations, story }.
 */
import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { checkout } from '../../workflows/checkout.js';
import {
  type CheckoutInput,
  chargeCardUpdate,
  checkoutWorkflowId,
  checkPaymentSignal,
  reserveUpdate,
} from '../../workflows/definitions.js';
import { runSimulationWorkers, startSimulationServer } from './simulation-stack.js';
import { storyActivities, storyReserveRequest } from './story-activities.js';
import { seededRandom, World } from './world.js';

const TASK_QUEUE = 'lost-local-charge';
const WORKFLOW_TASK_TIMEOUT_MS = 1_000;
/** Longer than the workflow task timeout and its heartbeat: the task holding the local charge is lost. */
const STALL_MS = 3_000;
const DATABASE_BACK_AFTER_STALL_MS = 1_500;
const WINDOW_MS = 1_500;
let stalled = false;
const NO_FAULTS = { gateway: 0, lostChargeAnswer: 0, database: 0, slowRefund: 0, slowOpen: 0 };

const saleId = '00000000-0000-4000-8000-00000000c4a2';
const world = new World(1, 'GATEWAY_A', false, seededRandom(1), NO_FAULTS, 1);

const storyDefaults = storyActivities(world, saleId);
/** The world's activities, with the charge that stalls the whole process right after the gateway approved it. */
const activities = {
  ...storyDefaults,
  chargeCard: async (input: Parameters<typeof storyDefaults.chargeCard>[0]) => {
    const payment = await storyDefaults.chargeCard(input);
    if (Context.current().info.isLocal && !stalled) {
      stalled = true;
      world.note(`local charge ${payment.id} answered; the worker stalls ${STALL_MS} ms before its task completes`);
      // Right after this answer has left for the SDK's core (a task, not a microtask, later): the whole process stops,
      // as on a box with no CPU left, while the workflow task waits for the workflow to take the answer. No local
      // activity is running any more, so nothing heartbeats the task: it times out, and the update goes with it.
      setTimeout(() => {
        // The database is gone as long, and a little longer: the lost task's next step (recording the charge's
        // answer) never commits, as when the worker itself dies.
        world.databaseDownUntilMs = Date.now() + STALL_MS + DATABASE_BACK_AFTER_STALL_MS;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, STALL_MS);
      }, 0);
    }
    return payment;
  },
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const env = await startSimulationServer();
const stopWorkers = await runSimulationWorkers(env, [{ taskQueue: TASK_QUEUE }], activities);
const client = env.client;
const workflowId = checkoutWorkflowId(saleId);

const input: CheckoutInput = {
  saleId,
  latePaymentGraceMs: 500,
  paymentPollMs: 200,
  refundCheckMs: 40,
  reserveTimeoutMs: 10_000,
  localCardChargeTimeoutMs: 10_000,
};
const start = new WithStartWorkflowOperation<typeof checkout>('checkout', {
  workflowId,
  taskQueue: TASK_QUEUE,
  args: [input],
  workflowIdConflictPolicy: 'FAIL',
  workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT_MS,
});
await client.workflow.executeUpdateWithStart(reserveUpdate, {
  startWorkflowOperation: start,
  args: [storyReserveRequest(WINDOW_MS)],
});

const began = Date.now();
const charging = client.workflow
  .getHandle<typeof checkout>(workflowId)
  .executeUpdate(chargeCardUpdate, { args: [{ cardToken: 'APRO#1', paymentMethodId: null, installments: 1 }] })
  .then(
    (answer) => `answered: ${JSON.stringify(answer)}`,
    (error: unknown) => `failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
  );
const updateOutcome = await charging;

// After the window and the grace period: the reconciler's gateway check of a sale closed with an opened attempt.
await sleep(Math.max(0, WINDOW_MS + 1_000 - (Date.now() - began)));
await client.workflow.signalWithStart<typeof checkout, [{ source: 'buyer' | 'reconciler' | 'operator' }]>('checkout', {
  workflowId,
  taskQueue: TASK_QUEUE,
  args: [{ ...input, resumeAfterClose: true }],
  workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT_MS,
  signal: checkPaymentSignal,
  signalArgs: [{ source: 'reconciler' }],
});
const violations: string[] = [];
const outcome = await Promise.race([
  client.workflow
    .getHandle(workflowId)
    .result()
    .then(
      () => 'completed',
      (error: unknown) => `failed: ${String(error)}`,
    ),
  sleep(60_000).then(() => 'stuck'),
]);
if (outcome !== 'completed') violations.push(`the latest execution ${outcome}`);
const runs = client.workflow.list({ query: `WorkflowId = '${workflowId}'` });
let updateInHistory = false;
for await (const run of runs) {
  const history = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
  updateInHistory ||= (history.events ?? []).some(
    (event) => event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'chargeCard',
  );
}
violations.push(...world.violations());

await stopWorkers();
console.log(JSON.stringify({ updateOutcome, updateInHistory, violations, story: world.log }));
process.exit(0);
