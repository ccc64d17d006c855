/**
 * One scripted story on the real checkout code and a local Temporal server: the buyer's card charge reaches the
 * checkout while the order's reservation is still being made. Seen in the worker-kill fault test: the worker died
 * holding the reservation's workflow task; the API already had the sale (the reservation's step had written it), so
 * the buyer's retried order found it and went on to pay; the charge update arrived beside the reservation on the
 * restarted worker, was refused as "not pending" (final), and the buyer's reservation then expired unpaid. Here both
 * updates are sent while no worker runs, so the worker's first task holds the reservation and the charge together.
 *
 *   tsx test/simulation/run-charge-during-reservation.ts
 *
 * Prints one JSON line on stdout: { early, afterReservation, saleStatus, violations }.
 */

import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { checkout } from '../../workflows/checkout.js';
import {
  type CheckoutInput,
  chargeCardUpdate,
  checkoutWorkflowId,
  reserveUpdate,
} from '../../workflows/definitions.js';
import { runSimulationWorkers, startSimulationServer } from './simulation-stack.js';
import { storyActivities, storyReserveRequest } from './story-activities.js';
import { seededRandom, World } from './world.js';

const TASK_QUEUE = 'charge-during-reservation';
/** How long the updates wait for a worker: the server has admitted both by then. */
const WORKER_DOWN_MS = 1_500;
const NO_FAULTS = { gateway: 0, lostChargeAnswer: 0, database: 0, slowRefund: 0, slowOpen: 0 };

const saleId = '00000000-0000-4000-8000-00000000c4a3';
const world = new World(1, 'GATEWAY_A', false, seededRandom(1), NO_FAULTS, 1);
const activities = storyActivities(world, saleId);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const env = await startSimulationServer();
const client = env.client;
const workflowId = checkoutWorkflowId(saleId);

const input: CheckoutInput = { saleId, latePaymentGraceMs: 500, paymentPollMs: 200, reserveTimeoutMs: 10_000 };
const reserving = client.workflow.executeUpdateWithStart(reserveUpdate, {
  startWorkflowOperation: new WithStartWorkflowOperation<typeof checkout>('checkout', {
    workflowId,
    taskQueue: TASK_QUEUE,
    args: [input],
    workflowIdConflictPolicy: 'FAIL',
  }),
  args: [storyReserveRequest(60_000)],
});

/** A charge's outcome as the API reads it: the answer, or the refusal's type, reason and retryability. */
const charge = () =>
  client.workflow
    .getHandle<typeof checkout>(workflowId)
    .executeUpdate(chargeCardUpdate, { args: [{ cardToken: 'APRO#1', paymentMethodId: null, installments: 1 }] })
    .then(
      (answer) => ({ answered: answer }),
      (error: unknown) => {
        const cause = error instanceof WorkflowUpdateFailedError ? error.cause : null;
        if (!(cause instanceof ApplicationFailure)) return { failed: String(error) };
        const details = (cause.details?.[0] ?? {}) as { reason?: string };
        return { refused: { type: cause.type, reason: details.reason ?? null, retryable: !cause.nonRetryable } };
      },
    );

// The order's reservation and the buyer's charge, both sent while the worker is down (killed, restarting).
const earlyCharge = (async () => {
  await sleep(WORKER_DOWN_MS / 3);
  return charge();
})();
await sleep(WORKER_DOWN_MS);
const stopWorkers = await runSimulationWorkers(env, [{ taskQueue: TASK_QUEUE }], activities);
const early = await earlyCharge;
await reserving;
const afterReservation = await charge();
const saleStatus = world.sale?.status ?? null;

await stopWorkers();
console.log(JSON.stringify({ early, afterReservation, saleStatus, violations: world.violations() }));
process.exit(0);
