/**
 * Deterministic simulation of memberships: the real membership workflow on a local Temporal server
 * (TestWorkflowEnvironment with the cached CLI binary), its activities replaced by the seeded fault model of
 * membership-world.ts, and for each case a random script of what one buyer, their bank and gateway A do over a signup
 * and a few short periods: card and PSE payments approved, declined, pending then settled, for the wrong amount, twice,
 * on an old link; cancels; notifications lost, duplicated and late; gateway outages and refunds the gateway refuses
 * for a while (an operator retries them); and worker restarts (half of the cases run on a worker that keeps no
 * workflow cache, so every step replays the whole history). The reconciler's membership sweep runs at the end. Then:
 * every approved payment is exactly one paid period or one refund, no period is paid twice, and no execution failed or
 * went past 10,000 history events.
 *
 *   tsx test/simulation/run-membership-simulation.ts [--cases N] [--seed S] [--concurrency C] [--minutes M]
 *
 * Prints progress on stderr and one JSON summary line on stdout: { cases, seconds, failures: [{ seed, … }] }.
 * `--seed <seed> --cases 1` replays one case's script (timing may differ).
 */
import { parseArgs } from 'node:util';
import { Context } from '@temporalio/activity';
import { type Client, WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import type { MembershipVerdict } from '../../activities/memberships.js';
import { SA } from '../../workflows/definitions.js';
import type { membership } from '../../workflows/membership.js';
import {
  cancelMembershipUpdate,
  type MembershipInput,
  type MembershipPaymentNotification,
  membershipPaymentSignal,
  membershipWorkflowId,
  retryRefusedRefundSignal,
  signupUpdate,
} from '../../workflows/membership-definitions.js';
import { type GatewayPayment, MembershipWorld } from './membership-world.js';
import {
  type CaseResult,
  exploreCases,
  pendingActivities,
  runSimulationWorkers,
  startSimulationServer,
} from './simulation-stack.js';
import { seededRandom } from './world.js';

const { values: options } = parseArgs({
  options: {
    cases: { type: 'string', default: process.env.SIM_CASES ?? '200' },
    seed: { type: 'string', default: process.env.SIM_SEED ?? '1' },
    concurrency: { type: 'string', default: process.env.SIM_CONCURRENCY ?? '30' },
    /** Stop starting cases after this long (the cases running then finish): an exploration sized by time. */
    minutes: { type: 'string', default: process.env.SIM_MINUTES ?? '0' },
  },
});
const CASES = Number(options.cases);
const FIRST_SEED = Number(options.seed);
const CONCURRENCY = Number(options.concurrency);
const STOP_STARTING_AT = Number(options.minutes) > 0 ? Date.now() + Number(options.minutes) * 60_000 : Infinity;
const QUEUES = { cached: 'membership-simulation-cached', replaying: 'membership-simulation-replaying' } as const;
const HISTORY_LIMIT = 10_000;
/** Longer than the longest activity retry interval of the membership (2 minutes): a run quiet for this long is stuck. */
const STALL_MS = 150_000;

const worlds = new Map<string, MembershipWorld>();
/** Each case's world is found by the execution that calls the step (one buyer per case). */
const world = (): MembershipWorld => {
  const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
  const found = worlds.get(workflowId);
  if (!found) throw new Error(`no simulated world for ${workflowId}`);
  return found;
};

/** The activities the membership calls, answered by the case's world (names and shapes as in activities/). */
const activities = {
  readMembership: async (subscriptionId: string) => world().readMembership(subscriptionId),
  startSignup: async (input: Parameters<MembershipWorld['startSignup']>[0]) => world().startSignup(input),
  openPaymentLink: async (input: { paymentId: string }) => world().openPaymentLink(input),
  expireMembershipPaymentLink: async (input: { reference: string }) => world().expireMembershipPaymentLink(input),
  readMembershipGatewayPayment: async (input: { providerPaymentId: string }) =>
    world().readMembershipGatewayPayment(input),
  findMembershipGatewayPayments: async (input: { reference: string }) => world().findMembershipGatewayPayments(input),
  refundMembershipGatewayPayment: async (input: { providerPaymentId: string }) =>
    world().refundMembershipGatewayPayment(input),
  applyApprovedPayment: async (input: Parameters<MembershipWorld['applyApprovedPayment']>[0]) =>
    world().applyApprovedPayment(input),
  notePaymentRejected: async (input: { reference: string; providerPaymentId: string; noticeByWorkflow?: boolean }) =>
    world().notePaymentRejected(input),
  closeSignup: async (input: { subscriptionId: string; to: 'EXPIRED' | 'CANCELLED' }) => world().closeSignup(input),
  openRenewal: async (input: { subscriptionId: string; paymentId: string; expiresAtMs: number }) =>
    world().openRenewal(input),
  requestCancel: async (input: { subscriptionId: string }) => world().requestCancel(input),
  startNextPeriod: async (input: { subscriptionId: string; fromPeriod: number; periodMs: number | null }) =>
    world().startNextPeriod(input),
  endMembership: async (input: { subscriptionId: string; to: 'CANCELLED' | 'EXPIRED' }) => world().endMembership(input),
  markMembershipPaymentRefunded: async (input: { providerPaymentId: string }) =>
    world().markMembershipPaymentRefunded(input),
  recordRefundRefused: async (input: { providerPaymentId: string }) => world().recordRefundRefused(input),
  releaseUnstartedRenewal: async () => world().releaseUnstartedRenewal(),
  emailMembership: async () => undefined,
};

type Action =
  | 'pay_card'
  | 'pay_card_declined'
  | 'pay_pse'
  | 'settle'
  | 'pay_old_link'
  | 'pay_wrong_amount'
  | 'pay_twice'
  | 'cancel'
  | 'gateway_outage'
  | 'refunds_refused'
  | 'replay_notification';
const ACTIONS: Action[] = [
  'pay_card',
  'pay_card',
  'pay_card_declined',
  'pay_pse',
  'pay_pse',
  'settle',
  'settle',
  'pay_old_link',
  'pay_wrong_amount',
  'pay_twice',
  'cancel',
  'gateway_outage',
  'refunds_refused',
  'replay_notification',
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
const ignore = () => undefined;

async function runCase(client: Client, seed: number): Promise<CaseResult> {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const sim = new MembershipWorld(seed, random, { gateway: 0.1, slowRefund: 0.3 });
  const input: MembershipInput = {
    workspaceId: `ws-${seed}`,
    buyerId: 'buyer',
    durations: {
      periodMs: 1_200 + Math.floor(random() * 800),
      signupWindowMs: 500 + Math.floor(random() * 500),
      renewalNoticeMs: 700,
      reminderIntervalMs: 300,
      paymentPollMs: 80 + Math.floor(random() * 170),
      refundCheckMs: 40,
      lateAskDelayMs: 80 + Math.floor(random() * 170),
    },
  };
  const workflowId = membershipWorkflowId(input.workspaceId, input.buyerId);
  worlds.set(workflowId, sim);
  const taskQueue = seed % 2 === 0 ? QUEUES.cached : QUEUES.replaying;
  const violations: string[] = [];
  const runIds = new Set<string>();
  const handle = () => client.workflow.getHandle<typeof membership>(workflowId);

  // The buyer signs up (the API's update-with-start); a link the gateway could not create is asked for again.
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const start = new WithStartWorkflowOperation<typeof membership>('membership', {
      workflowId,
      taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [{ key: SA.workspaceId, value: input.workspaceId }],
    });
    const signed = await client.workflow
      .executeUpdateWithStart(signupUpdate, { startWorkflowOperation: start, args: [{ planId: 'plan' }] })
      .then(
        () => true,
        () => false,
      );
    runIds.add((await (await start.workflowHandle()).describe()).runId);
    if (signed) break;
    await sleep(100);
  }

  let lastNotification: MembershipPaymentNotification | null = null;
  const notify = async (notification: MembershipPaymentNotification) => {
    lastNotification = notification;
    const started = await client.workflow.signalWithStart<typeof membership, [MembershipPaymentNotification]>(
      'membership',
      {
        workflowId,
        taskQueue,
        args: [{ ...input, settleLateMoney: true }],
        signal: membershipPaymentSignal,
        signalArgs: [notification],
      },
    );
    runIds.add(started.signaledRunId);
  };
  /** The gateway announces a payment: the notification may be lost, late or duplicated. */
  const announce = async (payment: GatewayPayment) => {
    const delivery = random();
    if (delivery < 0.3) {
      sim.note(`notification for ${payment.id} lost`);
      return;
    }
    const notification: MembershipPaymentNotification = {
      providerPaymentId: payment.id,
      reference: payment.reference,
      eventType: 'payment',
      receivedAtMs: Date.now(),
      dedupeKey: `${payment.id}:${payment.status}`,
    };
    if (delivery > 0.75) await sleep(Math.floor(random() * 400));
    await notify(notification);
    if (delivery > 0.85) await notify(notification);
  };

  const { periodMs, signupWindowMs } = input.durations;
  const horizonMs = signupWindowMs + 2 * (periodMs ?? 0);
  const steps = 2 + Math.floor(random() * 7);
  const script = Array.from({ length: steps }, () => ({ at: Math.floor(random() * horizonMs), action: pick(ACTIONS) }));
  script.sort((a, b) => a.at - b.at);
  const began = Date.now();
  for (const { at, action } of script) {
    await sleep(at - (Date.now() - began));
    sim.note(`${at}ms ${action}`);
    switch (action) {
      case 'pay_card':
      case 'pay_card_declined':
      case 'pay_pse':
      case 'pay_wrong_amount':
      case 'pay_twice': {
        const request = sim.payableRequest();
        if (!request) break;
        const status = action === 'pay_card_declined' ? 'rejected' : action === 'pay_pse' ? 'pending' : 'approved';
        await announce(sim.pay(request, status, action === 'pay_wrong_amount' ? 1_000 : 0));
        if (action === 'pay_twice') await announce(sim.pay(request, 'approved'));
        break;
      }
      case 'settle': {
        const pending = sim.pendingPayments();
        if (pending.length === 0) break;
        const payment = pick(pending);
        sim.settle(payment, random() < 0.8 ? 'approved' : 'rejected');
        await announce(payment);
        break;
      }
      case 'pay_old_link': {
        const link = sim.oldLink();
        if (link) await announce(sim.pay(link, 'approved'));
        break;
      }
      case 'cancel':
        await handle()
          .executeUpdate(cancelMembershipUpdate, { args: [{ by: 'buyer', subscriptionId: null }] })
          .catch(ignore);
        break;
      case 'gateway_outage':
        sim.gatewayDownUntilMs = Date.now() + 200 + Math.floor(random() * 800);
        break;
      case 'refunds_refused':
        sim.refusingRefunds = true;
        break;
      case 'replay_notification':
        if (lastNotification) await notify(lastNotification);
        break;
    }
  }

  // The bank settles what is still pending; the merchant's balance is topped up (refunds go through again).
  await sleep(horizonMs - (Date.now() - began));
  for (const payment of sim.pendingPayments()) {
    sim.settle(payment, random() < 0.7 ? 'approved' : 'rejected');
    await announce(payment);
  }
  sim.refusingRefunds = false;

  // Every execution must finish on its own. An operator retries refunds recorded refused; the reconciler's sweep
  // hands over money of closed requests nobody announced, and refunds left requested.
  const deadline = Date.now() + 600_000;
  let sweeps = 0;
  for (;;) {
    const finished = await untilFinished(client, workflowId, sim, deadline);
    if (finished !== 'completed') {
      violations.push(`the latest execution ${finished}`);
      break;
    }
    runIds.add((await handle().describe()).runId);
    const handedOver = await reconcilerSweep(sim, notify);
    if (handedOver === 0 || ++sweeps > 3) break;
  }
  for (const runId of runIds) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    if (events.length > HISTORY_LIMIT) violations.push(`run ${runId}: ${events.length} history events`);
    for (const event of events) {
      const taskFailure = event.workflowTaskFailedEventAttributes;
      if (taskFailure && taskFailure.failure?.message !== 'UnhandledCommand') {
        violations.push(`run ${runId}: workflow task failed: ${taskFailure.failure?.message}`);
      }
      if (event.workflowExecutionFailedEventAttributes || event.workflowExecutionTimedOutEventAttributes) {
        violations.push(`run ${runId} failed or timed out`);
      }
    }
  }
  violations.push(...sim.violations());
  worlds.delete(workflowId);
  return { seed, violations, story: sim.log };
}

/**
 * Waits for the latest run to complete; meanwhile an operator retries every refund recorded refused. A run is stuck
 * when its history stops growing for longer than the longest activity retry interval (2 minutes) plus a margin, or
 * when it outlives the hard deadline: a run that still moves on a loaded box (retries backing off) is slow, not stuck.
 */
async function untilFinished(
  client: Client,
  workflowId: string,
  sim: MembershipWorld,
  deadline: number,
): Promise<string> {
  let historyLength = -1;
  let lastProgressAt = Date.now();
  for (;;) {
    const latest = client.workflow.getHandle<typeof membership>(workflowId);
    let described: Awaited<ReturnType<typeof latest.describe>>;
    try {
      described = await latest.describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return 'completed';
      throw error;
    }
    const status = described.status.name;
    if (status === 'COMPLETED') return 'completed';
    if (status !== 'RUNNING' && status !== 'CONTINUED_AS_NEW') return status.toLowerCase();
    if (described.historyLength !== historyLength) {
      historyLength = described.historyLength;
      lastProgressAt = Date.now();
    }
    const stalled = Date.now() - lastProgressAt > STALL_MS;
    if (stalled || Date.now() > deadline) {
      return `${stalled ? 'stuck' : 'still running at the hard deadline'} (${await whereItWaits(latest, described)})`;
    }
    if (sim.refusedRefunds().length > 0 && !sim.refusingRefunds) {
      await latest.signal(retryRefusedRefundSignal, {}).catch(ignore);
    }
    await sleep(150);
  }
}

/** What a run that does not finish waits on: its pending activities and its last history events. */
async function whereItWaits(
  handle: ReturnType<Client['workflow']['getHandle']>,
  described: Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['describe']>>,
): Promise<string> {
  const activities = pendingActivities(described);
  const events = (await handle.fetchHistory()).events ?? [];
  const lastEvents = events.slice(-6).map((event) => {
    const kind = Object.keys(event).find((key) => key.endsWith('EventAttributes')) ?? 'event';
    return kind.replace('EventAttributes', '');
  });
  return `${events.length} events; pending activities: ${activities.join(', ') || 'none'}; last events: ${lastEvents.join(' > ')}`;
}

/** The reconciler's membership sweep (activities/membership-reconciler.ts) over the world; returns how many it handed over. */
async function reconcilerSweep(
  sim: MembershipWorld,
  notify: (notification: MembershipPaymentNotification) => Promise<void>,
): Promise<number> {
  let handedOver = 0;
  const tell = async (verdict: Pick<MembershipVerdict, 'providerPaymentId'> & { reference: string }) => {
    handedOver += 1;
    sim.note(`reconciler hands over ${verdict.providerPaymentId}`);
    await notify({
      providerPaymentId: verdict.providerPaymentId,
      reference: verdict.reference,
      eventType: 'reconciler',
      receivedAtMs: Date.now(),
      dedupeKey: `reconciler:${verdict.providerPaymentId}`,
    });
  };
  for (const request of sim.closedRequestsWithLinks()) {
    for (const payment of sim.gateway.values()) {
      if (payment.reference !== request.reference || payment.status !== 'approved') continue;
      if (!sim.isRecorded(payment.id)) await tell({ providerPaymentId: payment.id, reference: payment.reference });
    }
  }
  for (const row of sim.rows) {
    if (row.status === 'REFUND_REQUESTED' && row.providerPaymentId) {
      await tell({ providerPaymentId: row.providerPaymentId, reference: row.reference });
    }
  }
  return handedOver;
}

const env = await startSimulationServer();
const stop = await runSimulationWorkers(
  env,
  [{ taskQueue: QUEUES.cached }, { taskQueue: QUEUES.replaying, maxCachedWorkflows: 2 }],
  activities,
);
const { failures, seconds, explored } = await exploreCases(
  {
    cases: CASES,
    firstSeed: FIRST_SEED,
    concurrency: CONCURRENCY,
    progressEvery: 50,
    stopStartingAt: STOP_STARTING_AT,
  },
  (seed) => runCase(env.client, seed),
);
await stop();
console.log(JSON.stringify({ cases: explored, firstSeed: FIRST_SEED, seconds, failures }));
process.exit(failures.length === 0 ? 0 : 1);
