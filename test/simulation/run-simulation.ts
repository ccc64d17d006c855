/**
 * Deterministic simulation of the checkout: the real workflow code on a local Temporal server (TestWorkflowEnvironment
 * with the cached CLI binary), its activities replaced by the seeded fault model of world.ts, and for each case a
 * random script of what buyers, banks, organizers and gateways do: payments approved, rejected, pending, duplicated,
 * lost, late or for the wrong amount; releases, cancels, refunds, "check now" requests, gateway outages, seats lost,
 * and worker restarts (half of the cases run on a worker that keeps no workflow cache, so every step replays the
 * whole history). After each case: every approved payment is one CONFIRMED sale or a confirmed refund, stock is
 * conserved, seats follow the sale, tickets are mailed once, and no execution failed.
 *
 *   tsx test/simulation/run-simulation.ts [--cases N] [--seed S] [--concurrency C]
 *
 * Prints progress on stderr and one JSON summary line on stdout: { cases, seconds, failures: [{ seed, … }] }.
 * A failing case prints its seed: `--seed <seed> --cases 1` replays exactly that case; with SIM_FAILURE_DIR set, its
 * executions' histories are written there too (a failure that depends on timing may not happen again).
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Context } from '@temporalio/activity';
import { type Client, WithStartWorkflowOperation } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import proto from '@temporalio/proto';
import type { checkout } from '../../workflows/checkout.js';
import {
  type CheckoutInput,
  chargeCardUpdate,
  checkoutWorkflowId,
  checkPaymentSignal,
  openPaymentUpdate,
  openPseUpdate,
  type PaymentNotification,
  paymentNotificationSignal,
  releaseUpdate,
  reserveUpdate,
  retryRefusedRefundSignal,
  saleStatusChangedSignal,
} from '../../workflows/definitions.js';
import { type CaseResult, exploreCases, runSimulationWorkers, startSimulationServer } from './simulation-stack.js';
import { storyReserveRequest } from './story-activities.js';
import { type FaultRates, seededRandom, World, type WorldPayment } from './world.js';

const { values: options } = parseArgs({
  options: {
    cases: { type: 'string', default: process.env.SIM_CASES ?? '1000' },
    seed: { type: 'string', default: process.env.SIM_SEED ?? '1' },
    concurrency: { type: 'string', default: process.env.SIM_CONCURRENCY ?? '40' },
  },
});
const CASES = Number(options.cases);
const FIRST_SEED = Number(options.seed);
const CONCURRENCY = Number(options.concurrency);
const QUEUES = { cached: 'simulation-cached', replaying: 'simulation-replaying' } as const;

const worlds = new Map<string, World>();
const worldOf = (saleId: string): World => {
  const world = worlds.get(saleId);
  if (!world) throw new Error(`no simulated world for sale ${saleId}`);
  return world;
};

/** The activities the checkout calls, answered by each sale's world (names and shapes as in activities/). */
const activities = {
  reserveSale: async (input: { saleId: string; request: Parameters<World['reserveSale']>[1] }) =>
    worldOf(input.saleId).reserveSale(input.saleId, input.request),
  readSaleSnapshot: async (saleId: string) => worldOf(saleId).readSaleSnapshot(),
  confirmSale: async (input: { saleId: string; paymentRef: string | null; queueTicketEmail?: boolean }) =>
    worldOf(input.saleId).confirmSale(input.paymentRef, input.queueTicketEmail === true),
  closeUnpaidSale: async (input: { saleId: string; to: 'ABANDONED' | 'CANCELLED' }) =>
    worldOf(input.saleId).closeUnpaidSale(input.to),
  confirmLatePayment: async (input: { saleId: string; paymentRef: string | null; queueTicketEmail?: boolean }) =>
    worldOf(input.saleId).confirmLatePayment(input.paymentRef, input.queueTicketEmail === true),
  recordPaymentStatus: async () => undefined,
  flagGatewayBRenotification: async () => ({ flagged: false }),
  recordAttempt: async (input: {
    saleId: string;
    kind: string;
    dedupeKey: string | null;
    providerPaymentId: string | null;
  }) => worldOf(input.saleId).recordAttempt(input.kind, input.dedupeKey, input.providerPaymentId),
  markAttempt: async () => undefined,
  recordRefundRefused: async (input: { saleId: string; providerPaymentId: string | null }) =>
    worldOf(input.saleId).recordRefundRefused(input.providerPaymentId),
  choosePaymentRail: async (saleId: string) => ({
    gateway: worldOf(saleId).gateway,
    gatewayBOnly: false,
    eligibleForB: true,
  }),
  buildPaymentConfiguration: async (input: { saleId: string }) => {
    const delayMs = worldOf(input.saleId).openDelayMs();
    // A starved worker process: nothing else of it runs (no workflow task answered, no step reported) meanwhile.
    if (BLOCKING_OPENS && delayMs > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, delayMs);
    else await sleep(delayMs);
    return paymentConfiguration(input.saleId);
  },
  publicKey: 'simulated',
  amount: 1,
  currency: 'COP',
  // Local (LOCAL_CARD_CHARGE) or on the task queue: the same activity, as in activities/payments.ts.
  chargeCard: async (input: { saleId: string; request: { cardToken: string }; recordBeforeCharging?: boolean }) => {
    const world = worldOf(input.saleId);
    if (Context.current().info.isLocal) {
      return world.chargeCardLocally(input.request.cardToken, LOCAL_CHARGE_BOUND_MS, input.recordBeforeCharging);
    }
    world.taskQueueCharges += 1;
    return world.chargeCard(input.request.cardToken);
  },
  openPsePayment: async (input: { saleId: string }) => worldOf(input.saleId).openPsePayment(),
  readPayment: async (input: { saleId: string; notification: PaymentNotification }) =>
    worldOf(input.saleId).readPayment(input.notification),
  findSalePayments: async (input: { saleId: string }) => worldOf(input.saleId).findSalePayments(),
  refundPayment: async (input: { saleId: string; providerPaymentId: string | null }) =>
    worldOf(input.saleId).refundPayment(input.providerPaymentId),
  bookSaleSeats: async (input: { saleId: string }) => worldOf(input.saleId).bookSaleSeats(),
  releaseSaleSeats: async (input: { saleId: string }) => worldOf(input.saleId).releaseSaleSeats(),
  releaseBookedSeats: async (input: { saleId: string }) => worldOf(input.saleId).releaseBookedSeats(),
  emailTickets: async (saleId: string) => worldOf(saleId).emailTickets(),
};

/** The local card charge's bound in the simulation (production: 10 s), so a timed-out one falls back within a case. */
const LOCAL_CHARGE_BOUND_MS = 300;
/** Card charges of every case: local ones answered, failed or timed out, and task-queue ones (fallbacks included). */
const cardCharges = { attempts: 0, localAnswered: 0, localFailed: 0, localTimedOut: 0, taskQueue: 0 };

const FAULTS: FaultRates = { gateway: 0.12, lostChargeAnswer: 0.08, database: 0.03, slowRefund: 0.3, slowOpen: 0.15 };

function paymentConfiguration(saleId: string) {
  return {
    gateway: 'GATEWAY_A' as const,
    publicKey: 'simulated',
    amount: 1,
    currency: 'COP',
    reference: worldOf(saleId).sale?.reference ?? '',
    payerEmail: 'buyer@simulation.test',
  };
}

type Action =
  | 'card'
  | 'open'
  | 'bank_pays'
  | 'bank_pays_wrong_amount'
  | 'bank_rejects'
  | 'release'
  | 'cancel'
  | 'check'
  | 'organizer_refund'
  | 'gateway_outage'
  | 'seats_lost'
  | 'replay_last_notification'
  | 'open_in_lost_task'
  | 'pending_settles'
  | 'gateway_refuses_refunds';
const ACTIONS: Action[] = [
  'card',
  'open',
  'bank_pays',
  'bank_pays',
  'bank_pays_wrong_amount',
  'bank_rejects',
  'release',
  'cancel',
  'check',
  'organizer_refund',
  'gateway_outage',
  'seats_lost',
  'replay_last_notification',
  'open_in_lost_task',
  'pending_settles',
  'gateway_refuses_refunds',
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Where a failing case's histories are written (SIM_FAILURE_DIR): timing-dependent failures may not replay by seed. */
const FAILURE_DIR = process.env.SIM_FAILURE_DIR ?? '';
/**
 * SIM_KEEP_MARKER=<patch id>: the histories of runs that went through that versioned change are written to
 * SIM_FAILURE_DIR too (one way to record a replay fixture of a path only a race reaches).
 */
const KEEP_MARKER = process.env.SIM_KEEP_MARKER ?? '';
/** SIM_BLOCKING_OPENS=true: a slow open blocks the worker's whole process, as a starved box does, instead of waiting. */
const BLOCKING_OPENS = process.env.SIM_BLOCKING_OPENS === 'true';
/**
 * One case in four runs with short workflow tasks (2 s) and payment opens of up to 3 s: a local step then outlives a
 * workflow-task heartbeat (80% of the timeout), as a database outage does against the default 10 s, and deadlines,
 * news and other local steps arrive while it runs. Those cases run on the replaying worker, so a history whose local
 * steps' markers could not be replayed in the order they were recorded fails a workflow task there.
 * SIM_WORKFLOW_TASK_TIMEOUT_MS and SIM_SLOW_OPEN_MAX_MS set them for every case.
 */
const SHORT_TASKS = { workflowTaskTimeoutMs: 2_000, slowOpenMaxMs: 3_000 } as const;
const NORMAL_TASKS = { workflowTaskTimeoutMs: 0, slowOpenMaxMs: 900 } as const;
function taskTimingOf(seed: number): { workflowTaskTimeoutMs: number; slowOpenMaxMs: number } {
  const chosen = seed % 4 === 3 ? SHORT_TASKS : NORMAL_TASKS;
  return {
    workflowTaskTimeoutMs: Number(process.env.SIM_WORKFLOW_TASK_TIMEOUT_MS ?? chosen.workflowTaskTimeoutMs),
    slowOpenMaxMs: Number(process.env.SIM_SLOW_OPEN_MAX_MS ?? chosen.slowOpenMaxMs),
  };
}

/** The patch ids a history's markers carry (in each marker's `patch-data` payload). */
function patchesOf(history: proto.temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? []).flatMap((event) => {
    const data = event.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data;
    if (!data) return [];
    const { id } = JSON.parse(Buffer.from(data).toString('utf8')) as { id?: string };
    return id ? [id] : [];
  });
}

async function keepHistories(
  client: Client,
  workflowId: string,
  seed: number,
  runIds: Set<string>,
  failed: boolean,
): Promise<void> {
  for (const runId of runIds) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    if (!failed && !(KEEP_MARKER && patchesOf(history).includes(KEEP_MARKER))) continue;
    const json = historyToJSON(proto.temporal.api.history.v1.History.create(history));
    mkdirSync(FAILURE_DIR, { recursive: true });
    writeFileSync(join(FAILURE_DIR, `seed-${seed}-${failed ? 'failed' : 'marker'}-${runId}.json`), json);
  }
}
const ignore = () => undefined;

async function runCase(client: Client, seed: number): Promise<CaseResult> {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const gateway = random() < 0.6 ? 'GATEWAY_A' : 'GATEWAY_B';
  const seated = random() < 0.3;
  const timing = taskTimingOf(seed);
  const runOptions = timing.workflowTaskTimeoutMs > 0 ? { workflowTaskTimeout: timing.workflowTaskTimeoutMs } : {};
  const world = new World(seed, gateway, seated, random, FAULTS, 1 + Math.floor(random() * 2), timing.slowOpenMaxMs);
  const saleId = `00000000-0000-4000-8000-${String(seed).padStart(12, '0')}`;
  worlds.set(saleId, world);
  const workflowId = checkoutWorkflowId(saleId);
  const taskQueue = seed % 2 === 0 ? QUEUES.cached : QUEUES.replaying;
  const windowMs = 300 + Math.floor(random() * 600);
  const input: CheckoutInput = {
    saleId,
    latePaymentGraceMs: 150 + Math.floor(random() * 400),
    paymentPollMs: 80 + Math.floor(random() * 200),
    refundCheckMs: 40,
    reserveTimeoutMs: 10_000,
    // Cards are charged on the task queue (CARD_CHARGE_LOCAL=false, the default). With SIM_LOCAL_CARD_CHARGE=1, half
    // the cases try the opt-in local charge first, which sometimes fails or outlives its bound (world.ts) and falls
    // back to the task queue with the same key. Off in npm test while the local charge is opt-in; the starved-worker
    // run found it stranding approved payments (seeds 139, 153, 319: a charge made by a workflow task lost with its
    // update) until the charge was recorded before leaving (test/simulation/lost-local-charge.test.ts).
    ...(process.env.SIM_LOCAL_CARD_CHARGE !== '1' || Math.floor(seed / 8) % 2 === 0
      ? { cardChargeOnTaskQueue: true }
      : { localCardChargeTimeoutMs: LOCAL_CHARGE_BOUND_MS }),
  };
  const violations: string[] = [];
  const runIds = new Set<string>();

  const start = new WithStartWorkflowOperation<typeof checkout>('checkout', {
    workflowId,
    taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'FAIL',
    ...runOptions,
  });
  const reserved = await client.workflow.executeUpdateWithStart(reserveUpdate, {
    startWorkflowOperation: start,
    args: [
      {
        ...storyReserveRequest(windowMs),
        seats: seated ? ['A-1'] : null,
        holdToken: seated ? 'hold-token' : null,
      },
    ],
  });
  runIds.add((await (await start.workflowHandle()).describe()).runId);
  if (!reserved.ok) return { seed, violations: [`reservation refused: ${reserved.reason}`], story: world.log };

  const handle = () => client.workflow.getHandle<typeof checkout>(workflowId);
  let cardAttempts = 0;
  let lastNotification: PaymentNotification | null = null;
  const notify = async (notification: PaymentNotification) => {
    lastNotification = notification;
    const started = await client.workflow.signalWithStart<typeof checkout, [PaymentNotification]>('checkout', {
      workflowId,
      taskQueue,
      args: [{ ...input, resumeAfterClose: true }],
      ...runOptions,
      signal: paymentNotificationSignal,
      signalArgs: [notification],
    });
    runIds.add(started.signaledRunId);
  };
  /** The bank or button settles: the gateway holds the payment; its notification may be lost or duplicated. */
  const settle = async (outcome: 'approved' | 'rejected', amountOff: number) => {
    const payment = world.pay(outcome, amountOff);
    if (!payment) return;
    await announce(payment, outcome);
  };
  /** The gateway's notification of a payment's new status: lost, delivered, or delivered twice. */
  const announce = async (payment: WorldPayment, outcome: 'approved' | 'rejected') => {
    // Money for a closed sale: sometimes the task that decided its refund is lost right after recording it.
    if (outcome === 'approved' && random() < 0.25) world.refundInLostTask();
    const delivery = random();
    if (delivery < 0.3) {
      world.note(`notification for ${payment.id} lost`);
      return;
    }
    const notification: PaymentNotification = {
      gateway,
      providerPaymentId: payment.id,
      eventType: gateway === 'GATEWAY_B' ? (outcome === 'approved' ? 'SALE_APPROVED' : 'SALE_REJECTED') : 'payment',
      receivedAtMs: Date.now(),
      dedupeKey: `${payment.id}:${payment.status}`,
    };
    await notify(notification);
    if (delivery > 0.85) {
      await sleep(Math.floor(random() * 300));
      await notify(notification);
    }
  };

  const steps = 1 + Math.floor(random() * 5);
  const horizonMs = windowMs + (input.latePaymentGraceMs ?? 0) + 300;
  const script = Array.from({ length: steps }, () => ({ at: Math.floor(random() * horizonMs), action: pick(ACTIONS) }));
  // Half the card buyers pay at once, within the window: a card drawn at random mostly comes after the deadline on a
  // busy box, and the charge's paths (local, its fallback, the task queue) need charges that reach the gateway.
  if (gateway === 'GATEWAY_A' && random() < 0.5) script.push({ at: 0, action: 'card' });
  script.sort((a, b) => a.at - b.at);
  const began = Date.now();
  for (const { at, action } of script) {
    await sleep(Math.max(0, at - (Date.now() - began)));
    world.note(`${at}ms ${action}`);
    switch (action) {
      case 'card':
        if (gateway !== 'GATEWAY_A') break;
        // A fresh token per attempt (the card form tokenizes each time): its own idempotency key at the gateway.
        cardAttempts += 1;
        await handle()
          .executeUpdate(chargeCardUpdate, {
            args: [
              {
                cardToken: `${pick(['APRO', 'APRO', 'OTHE', 'CONT', 'MISM'])}#${cardAttempts}`,
                paymentMethodId: null,
                installments: 1,
              },
            ],
          })
          .catch(ignore);
        break;
      case 'open':
        if (gateway === 'GATEWAY_A' && random() < 0.5) {
          await handle()
            .executeUpdate(openPseUpdate, { args: [{ bankCode: null }] })
            .catch(ignore);
        } else {
          await handle().executeUpdate(openPaymentUpdate).catch(ignore);
        }
        break;
      case 'bank_pays':
      case 'bank_pays_wrong_amount':
      case 'bank_rejects': {
        // A buyer pays only after opening a payment; a page left open may still pay after the window.
        await handle().executeUpdate(openPaymentUpdate).catch(ignore);
        if (!world.attemptKeys.has('opened:OPEN') && !world.attemptKeys.has('opened:PSE')) break;
        await settle(
          action === 'bank_rejects' ? 'rejected' : 'approved',
          action === 'bank_pays_wrong_amount' ? 500 : 0,
        );
        break;
      }
      case 'release':
      case 'cancel':
        await handle()
          .executeUpdate(releaseUpdate, {
            args: [
              { reason: action === 'cancel' ? 'organizer_cancel' : 'buyer_release', acknowledgeOpenPayment: true },
            ],
          })
          .catch(ignore);
        break;
      case 'check':
        await handle().signal(checkPaymentSignal, { source: 'buyer' }).catch(ignore);
        break;
      case 'organizer_refund':
        if (world.refundSaleOutside()) {
          await handle().signal(saleStatusChangedSignal, { status: 'REFUNDED', source: 'refund' }).catch(ignore);
        }
        break;
      case 'gateway_outage':
        world.gatewayDownUntilMs = Date.now() + 200 + Math.floor(random() * 800);
        break;
      case 'seats_lost':
        world.seatsLostToAnotherBuyer = true;
        break;
      case 'replay_last_notification':
        if (lastNotification) await notify(lastNotification);
        break;
      case 'pending_settles': {
        // A card left in_process or a PSE transfer settles, possibly after another payment confirmed the sale.
        const settled = world.settlePending();
        if (settled) await announce(settled, 'approved');
        break;
      }
      case 'gateway_refuses_refunds':
        // Until the simulated operator steps in at the end: every refund is refused for good meanwhile.
        world.refusingRefunds = true;
        break;
      case 'open_in_lost_task':
        // A buyer's open committed its record, then the workflow task that ran it was lost (a worker crash, a task
        // timed out on a starved worker): the database knows of an opened payment, the execution does not. The bank
        // may then pay on it, its notification lost.
        world.openInLostTask();
        break;
    }
  }

  // The reconciler's sweep of recently closed sales: ask the gateway once more for money nobody announced.
  await sleep(horizonMs - (Date.now() - began) + 200);
  // The operator has topped up the merchant's balance: refunds go through again once retried.
  world.refusingRefunds = false;
  const swept = await client.workflow.signalWithStart<
    typeof checkout,
    [{ source: 'buyer' | 'reconciler' | 'operator' }]
  >('checkout', {
    workflowId,
    taskQueue,
    args: [{ ...input, resumeAfterClose: true }],
    ...runOptions,
    signal: checkPaymentSignal,
    signalArgs: [{ source: 'reconciler' }],
  });
  runIds.add(swept.signaledRunId);

  // Every execution of this sale must finish on its own (no terminate), the latest possibly started by late news.
  const deadline = Date.now() + 120_000;
  for (;;) {
    const latest = handle();
    // The operator retries every refund parked as refused (`operator refunds-refused retry`), as often as one parks.
    const operatorRetries = setInterval(() => {
      if (world.parkedRefunds === 0) return;
      world.parkedRefunds = 0;
      void latest.signal(retryRefusedRefundSignal, { providerPaymentId: null, operator: 'simulation' }).catch(ignore);
    }, 100);
    const outcome = await Promise.race([
      latest.result().then(
        () => 'completed' as const,
        (error: unknown) =>
          `failed: ${error instanceof Error ? `${error.message} (${(error.cause as Error | undefined)?.message})` : String(error)}`,
      ),
      sleep(Math.max(0, deadline - Date.now())).then(() => 'stuck' as const),
    ]).finally(() => clearInterval(operatorRetries));
    if (outcome !== 'completed') {
      violations.push(`the latest execution ${outcome}`);
      break;
    }
    const described = await latest.describe();
    runIds.add(described.runId);
    if (described.status.name === 'COMPLETED') break;
  }
  for (const runId of runIds) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    for (const event of history.events ?? []) {
      const taskFailure = event.workflowTaskFailedEventAttributes;
      // The server refuses to complete a run while a new signal waits (UnhandledCommand) and retries the task with
      // the signal: that is how no signal is lost at completion, not a failure of the workflow.
      if (taskFailure && taskFailure.failure?.message !== 'UnhandledCommand') {
        violations.push(`run ${runId}: workflow task failed: ${taskFailure.failure?.message}`);
      }
      if (event.workflowExecutionFailedEventAttributes || event.workflowExecutionTimedOutEventAttributes) {
        violations.push(`run ${runId} failed or timed out`);
      }
    }
  }
  violations.push(...world.violations());
  cardCharges.attempts += cardAttempts;
  cardCharges.localAnswered += world.localCharges.answered;
  cardCharges.localFailed += world.localCharges.failed;
  cardCharges.localTimedOut += world.localCharges.timedOut;
  cardCharges.taskQueue += world.taskQueueCharges;
  worlds.delete(saleId);
  if (FAILURE_DIR && (violations.length > 0 || KEEP_MARKER)) {
    await keepHistories(client, workflowId, seed, runIds, violations.length > 0);
  }
  return { seed, violations, story: world.log };
}

const env = await startSimulationServer();
const stop = await runSimulationWorkers(
  env,
  [{ taskQueue: QUEUES.cached }, { taskQueue: QUEUES.replaying, maxCachedWorkflows: 2 }],
  activities,
);
const { failures, seconds } = await exploreCases(
  { cases: CASES, firstSeed: FIRST_SEED, concurrency: CONCURRENCY, progressEvery: 100 },
  (seed) => runCase(env.client, seed),
);
await stop();
process.stderr.write(`card charges: ${JSON.stringify(cardCharges)}\n`);
console.log(JSON.stringify({ cases: CASES, firstSeed: FIRST_SEED, seconds, cardCharges, failures }));
process.exit(failures.length === 0 ? 0 : 1);
