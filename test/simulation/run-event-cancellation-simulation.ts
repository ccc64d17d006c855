/**
 * Deterministic simulation of event cancellation: the REAL event-cancellation, refund, cancellation and checkout
 * workflows and the REAL activities (activities/index.ts createActivities, on a scratch PostgreSQL database and Redis)
 * on a local Temporal server, with gateway A replaced by the seeded in-memory gateway of event-cancellation-world.ts.
 * Each case seeds an event with a random mix of sales (card sales paid at the gateway, some checked in at the door or
 * refunded from the gateway's dashboard already; complimentary and box-office sales; sales refunded or cancelled
 * before; PENDING sales reserved through real checkouts (SIM_PENDING_SALES=0 leaves them out), most with a PSE payment
 * open that the buyer's bank approves, rejects or approves twice at some moment, its notification lost, late or
 * delivered twice), then cancels it as the API does (api/services/events.ts cancelEvent) while the gateway goes down
 * and lags, loses refund answers, answers refunds `in_process`, and refuses the refunds of a few payments until the
 * merchant's balance is topped up (or for good, until an operator retries them, or never); the organizer posts the
 * cancel again, twice at once, and the running execution is terminated (as the server does at the history limit) and
 * posted again. Half of the cases run on workers that keep a cache of two (nearly every task replays the whole
 * history), and either queue's workers are restarted every so often under all the cases running then. Small pages, pass
 * intervals, final sweep delays and continue-as-new thresholds make most cases a few seconds and exercise every branch.
 * At the end, when a sale had a payment opened, the real reconciler runs over the case's workspace (no margin, no
 * settlement lag) until every approved payment is refunded or two minutes pass: what finds a payment whose
 * notifications were all lost.
 *
 * Then: every payment approved at the gateway was refunded there exactly once (a PENDING sale's by its checkout or,
 * once it confirmed the sale, by the cancellation), with exactly one REFUND record and one `sale.refunded` notice for a
 * refunded sale; or (refused and never retried) it is still paid, counted refused and listed on the event; no refund
 * was asked of a payment that had one; no sale of the event is left PENDING or CONFIRMED otherwise; the stock came back
 * exactly once; the event's progress says DONE; no refund execution was still running when the cancellation
 * completed; no execution failed, timed out, was terminated (but by the story) or went past 10,000 history events,
 * and no workflow task failed.
 *
 * The PENDING stories found one gap (seeds 5 and 48 of an earlier run): a sale paid twice (two approved payments of
 * one reference, one notification lost) was confirmed by the notified one, which the cancellation refunded; the
 * reconciler asked about CONFIRMED sales with another payment opened but not REFUNDED ones, so the other stayed
 * approved. It asks about both now. A paid sale is asked about once its payment window is over: the story's windows
 * are ended before the reconciler runs, rather than waited for.
 *
 *   tsx test/simulation/run-event-cancellation-simulation.ts [--cases N] [--seed S] [--concurrency C]
 *
 * Prints progress on stderr and one JSON summary line on stdout: { cases, firstSeed, seconds, failures: [...] }.
 * `--seed <seed> --cases 1` replays one case's script (timing may differ).
 */
import { inspect, parseArgs } from 'node:util';
import type { MikroORM } from '@mikro-orm/postgresql';
import {
  Client,
  WithStartWorkflowOperation,
  type WorkflowClientInterceptor,
  WorkflowNotFoundError,
} from '@temporalio/client';
import proto from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import { Redis } from 'ioredis';
import { createActivities } from '../../activities/index.js';
import type { Providers } from '../../activities/ports.js';
import { cancelEvent } from '../../api/services/events.js';
import { type Env, loadEnv } from '../../config/env.js';
import { saleReferenceFromBytes } from '../../domain/codes.js';
import type { EventCancellationProgress } from '../../entities/event.js';
import { initOrm } from '../../entities/orm.js';
import { takeStock } from '../../entities/stock.js';
import { REFUND_REFUSED_ALERT } from '../../observability/metrics.js';
import { workerTracingOptions } from '../../observability/temporal-tracing.js';
import { runOperator } from '../../scripts/operator.js';
import { dropDatabase, recreateDatabase } from '../../scripts/support/database.js';
import { onPurpose } from '../../scripts/support/terminations.js';
import { createProviderWorker } from '../../worker/provider-worker.js';
import { buildWorkflowBundleCode } from '../../worker/workflow-bundle.js';
import type { checkout } from '../../workflows/checkout.js';
import {
  cancellationWorkflowId,
  checkoutWorkflowId,
  openPseUpdate,
  type PaymentNotification,
  paymentNotificationSignal,
  refundStatusQuery,
  refundWorkflowId,
  reserveUpdate,
} from '../../workflows/definitions.js';
import {
  type EventCancellationInput,
  eventCancellationWorkflowId,
} from '../../workflows/event-cancellation-definitions.js';
import type { reconciler } from '../../workflows/reconciler.js';
import type { ReconcilerSettings } from '../../workflows/reconciler-definitions.js';
import { createEventFixture, daysFromNow } from '../support/catalog-fixtures.js';
import {
  absentGatewayB,
  CaseFaults,
  RecordingMail,
  type RefusalAnswer,
  SimulatedGatewayA,
  type SimulatedPayment,
} from './event-cancellation-world.js';
import { type CaseResult, exploreCases, pendingActivities, startSimulationServer } from './simulation-stack.js';
import { seededRandom } from './world.js';

const { values: options } = parseArgs({
  options: {
    cases: { type: 'string', default: process.env.SIM_CASES ?? '200' },
    seed: { type: 'string', default: process.env.SIM_SEED ?? '1' },
    concurrency: { type: 'string', default: process.env.SIM_CONCURRENCY ?? '32' },
    /** Stop starting cases after this long (the cases running then finish): an exploration sized by time. */
    minutes: { type: 'string', default: process.env.SIM_MINUTES ?? '0' },
  },
});
const CASES = Number(options.cases);
/** PENDING sales in real checkouts are in the mix unless SIM_PENDING_SALES=0 (to tell a failure apart from them). */
const PENDING_SALES = process.env.SIM_PENDING_SALES !== '0';
const FIRST_SEED = Number(options.seed);
const CONCURRENCY = Number(options.concurrency);
const STOP_STARTING_AT = Number(options.minutes) > 0 ? Date.now() + Number(options.minutes) * 60_000 : Infinity;
const QUEUES = { cached: 'event-cancellation-sim-cached', replaying: 'event-cancellation-sim-replaying' } as const;
type QueueName = (typeof QUEUES)[keyof typeof QUEUES];
const HISTORY_LIMIT = 10_000;
/** Longer than the page activity's heartbeat timeout (1 minute) and the refund's longest refusal wait (40 s). */
const STALL_MS = 150_000;
const CASE_DEADLINE_MS = 10 * 60_000;
const PRICE = 42_000;
/** Between two restarts of one queue's workers (seeded by the first seed): most cases see none, some one. */
const WORKER_RESTART_EVERY_MS = [15_000, 40_000] as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

// ---------------------------------------------------------------------------------------------------------------
// The stack: scratch database, Redis under a prefix of its own, a local Temporal server, the real activities.

// The refund workflow's alert for a refund parked refused is an error line by design; the stories park some on purpose.
const databaseUrl =
  process.env.SIM_DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/ticketing_evsim_test_${process.pid}`;
await recreateDatabase(databaseUrl);
const orm: MikroORM = await initOrm({ databaseUrl, poolMax: 24 });
// The migrator reports each migration on stdout, where the summary line goes: it reports to stderr here.
const log = console.log;
console.log = (...args: unknown[]) => console.error(...args);
await orm.migrator.up();
console.log = log;
// The run's Redis database is shared with the test stack's processes: every key of this process goes under its own
// prefix, so the gateway budget's bucket (and anything else) is not the stack's.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/8', {
  keyPrefix: `event-cancellation-sim-${process.pid}:`,
  maxRetriesPerRequest: 2,
});

// The refund workflow's alert for a refund parked refused is an error line by design; the stories park some on purpose.
const temporal = await startSimulationServer(
  new DefaultLogger(process.env.SIM_LOG_LEVEL === 'debug' ? 'DEBUG' : 'ERROR', (entry) => {
    if (entry.message === REFUND_REFUSED_ALERT) return;
    process.stderr.write(`[${entry.level}] ${entry.message} ${inspect(entry.meta ?? {}, { depth: 3 })}\n`);
  }),
);

/** Each case's tuning of its cancellation (small pages and waits), added to the input the API starts it with. */
const tunings = new Map<string, Partial<EventCancellationInput>>();
const tuneCancellations: WorkflowClientInterceptor = {
  async startWithDetails(input, next) {
    if (input.workflowType !== 'eventCancellation') return next(input);
    const [args] = input.options.args as [EventCancellationInput];
    const tuning = tunings.get(args.eventId) ?? {};
    return next({ ...input, options: { ...input.options, args: [{ ...args, ...tuning }] } });
  },
};
const client = new Client({
  connection: temporal.connection,
  namespace: temporal.namespace ?? 'default',
  interceptors: { workflow: [tuneCancellations] },
});

const gateway = new SimulatedGatewayA();
const mail = new RecordingMail();
const providers: Providers = { gatewayA: gateway.port(), gatewayB: absentGatewayB, mail, seatMap: null };
const envOf = (taskQueue: QueueName): Env =>
  loadEnv({
    ...process.env,
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    TEMPORAL_TASK_QUEUE: taskQueue,
    // The simulated gateway has no rate limit: the budget would only space the cases' refunds.
    GATEWAY_A_REQUESTS_PER_SECOND: '100000',
    EVENT_CANCELLATION_FINAL_SWEEP_MS: '1000',
  });
const envs = { [QUEUES.cached]: envOf(QUEUES.cached), [QUEUES.replaying]: envOf(QUEUES.replaying) } as Record<
  QueueName,
  Env
>;

const workflowBundle = { code: await buildWorkflowBundleCode() };
const { sinks } = workerTracingOptions(null);

/** The workers of one task queue (workflows and activities, and its provider queue), restartable as a whole. */
class QueueWorkers {
  #workers: Worker[] = [];
  #runs: Promise<void>[] = [];
  /** A connection per generation: the SDK refuses a second worker of a queue on one connection while the first runs. */
  #connection: NativeConnection | null = null;
  readonly #activities: object;

  constructor(readonly taskQueue: QueueName) {
    this.#activities = createActivities({ env: envs[taskQueue], orm, redis, providers, temporal: client });
  }

  async start(): Promise<void> {
    const connection = await NativeConnection.connect({ address: temporal.address });
    this.#connection = connection;
    this.#workers = await Promise.all([
      Worker.create({
        connection,
        taskQueue: this.taskQueue,
        workflowBundle,
        activities: this.#activities,
        sinks,
        shutdownGraceTime: '10 seconds',
        // A cache of two, as the other simulations keep: nearly every workflow task replays the execution's whole
        // history, as after a worker restart. None at all leaves the SDK no room for a checkout whose local
        // activities are in flight: its tasks time out again and again (seen with 24 cases at once, every failure of
        // a 20-minute exploration), which is this setting, not a worker the service would ever run.
        ...(this.taskQueue === QUEUES.replaying ? { maxCachedWorkflows: 2 } : {}),
      }),
      createProviderWorker({
        connection,
        taskQueue: this.taskQueue,
        activities: this.#activities,
      }),
    ]);
    this.#runs = this.#workers.map((worker) => worker.run());
  }

  async stop(): Promise<void> {
    for (const worker of this.#workers) worker.shutdown();
    await Promise.allSettled(this.#runs);
    await this.#connection?.close();
  }

  /**
   * A rolling restart, as a deploy does it: the new workers poll before the old ones drain. Stopping first would hang
   * this process (a process the orchestrator kills does not): an activity that waits on another execution of the same
   * queue (a PENDING sale's cancel waits on its checkout's update) holds the old worker's shutdown until that execution
   * moves, which only a polling worker can make it do.
   */
  async restart(): Promise<void> {
    const old = { workers: this.#workers, runs: this.#runs, connection: this.#connection };
    await this.start();
    for (const worker of old.workers) worker.shutdown();
    await Promise.allSettled(old.runs);
    await old.connection?.close();
  }
}

const queueWorkers = {
  [QUEUES.cached]: new QueueWorkers(QUEUES.cached),
  [QUEUES.replaying]: new QueueWorkers(QUEUES.replaying),
};
await Promise.all(Object.values(queueWorkers).map((workers) => workers.start()));

// ---------------------------------------------------------------------------------------------------------------
// One case.

type SaleKind =
  /** CONFIRMED, paid by card at gateway A. */
  | 'card'
  /** CONFIRMED, paid by card, its ticket already scanned at the door (refunded all the same: the event is off). */
  | 'card_checked_in'
  /** CONFIRMED here, refunded at the gateway's dashboard already (under a key of its own). */
  | 'card_refunded_at_dashboard'
  /** CONFIRMED, no gateway payment, nothing paid. */
  | 'complimentary'
  /** CONFIRMED, paid at the box office (no gateway payment). */
  | 'box_office'
  /** REFUNDED before the event was cancelled (its gateway refund made then). */
  | 'refunded_before'
  /** CANCELLED before the event was cancelled. */
  | 'cancelled_before'
  /**
   * PENDING: reserved through a real checkout, mostly with a PSE payment opened at gateway A that the buyer's bank
   * settles (approved, rejected, twice) at some moment of the story, its notification lost, late or duplicated.
   */
  | 'pending';
const KINDS: Array<[SaleKind, number]> = [
  ['card', 0.58],
  ['card_checked_in', 0.06],
  ['card_refunded_at_dashboard', 0.05],
  ['complimentary', 0.08],
  ['box_office', 0.09],
  ['refunded_before', 0.08],
  ['cancelled_before', 0.06],
  ['pending', PENDING_SALES ? 0.14 : 0],
];

/** What happens to a payment whose refunds the gateway refuses. */
type RefusalPlan =
  /** The merchant's balance is topped up during the story: a later ask goes through. */
  | 'lifted_in_story'
  /** Refused until the refund is parked; after the cancellation, the balance is topped up and an operator retries it. */
  | 'operator_retries'
  /** Refused for good and never retried: still paid, counted refused and listed on the event. */
  | 'left';

interface SeededSale {
  id: string;
  reference: string;
  kind: SaleKind;
  /** A PENDING sale's payment opened at the gateway (its bank may pay it). */
  paymentOpened?: boolean;
  quantity: number;
  buyerEmail: string;
  payment: SimulatedPayment | null;
  refusal: { answer: RefusalAnswer; plan: RefusalPlan } | null;
}

type Action = 'outage' | 'slow' | 'repost' | 'repost_twice' | 'terminate' | 'lift_refusals' | 'bank';

/** What the buyer's bank does with a PENDING sale's open payment during the story. */
type BankMove = 'approve' | 'reject' | 'approve_twice' | 'nothing';

const running = new Map<number, CaseFaults>();

function pickWeighted<T>(random: () => number, items: Array<[T, number]>): T {
  const total = items.reduce((sum, [, weight]) => sum + weight, 0);
  let roll = random() * total;
  for (const [item, weight] of items) {
    roll -= weight;
    if (roll <= 0) return item;
  }
  return items[items.length - 1]![0];
}

async function seedSales(
  faults: CaseFaults,
  event: { workspaceId: string; eventId: string; eventDateId: string; ticketTypeId: string },
  sales: SeededSale[],
): Promise<void> {
  await orm.em.fork().transactional(async (tx) => {
    for (const sale of sales) {
      if (sale.kind === 'pending') continue;
      const total = sale.kind === 'complimentary' ? 0 : PRICE * sale.quantity;
      const paidByCard = sale.kind.startsWith('card') || sale.kind === 'refunded_before';
      if (paidByCard) {
        sale.payment = gateway.approve(faults, sale.reference, total);
        if (sale.kind === 'card_refunded_at_dashboard' || sale.kind === 'refunded_before') {
          gateway.refundAtDashboard(sale.payment);
        }
      }
      const status =
        sale.kind === 'refunded_before' ? 'REFUNDED' : sale.kind === 'cancelled_before' ? 'CANCELLED' : 'CONFIRMED';
      const offline = sale.kind === 'complimentary' || sale.kind === 'box_office';
      await tx.execute(
        `insert into sales (id, created_at, updated_at, workspace_id, reference, status, channel, origin, event_id,
                            event_date_id, buyer_name, buyer_email, subtotal, discount_amount, service_fee, iva, total,
                            currency, payment_provider, payment_ref, payment_status, confirmed_at, closed_at)
         values (?, now(), now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, ?, 'COP', ?, ?, ?, now(), ?)`,
        [
          sale.id,
          event.workspaceId,
          sale.reference,
          status,
          sale.kind === 'box_office' ? 'POS' : offline ? 'ADMIN' : 'WEB',
          offline ? 'ORGANIZER' : 'CUSTOMER',
          event.eventId,
          event.eventDateId,
          `Buyer ${sale.reference}`,
          sale.buyerEmail,
          total,
          total,
          paidByCard ? 'GATEWAY_A' : null,
          sale.payment?.id ?? null,
          paidByCard ? (status === 'REFUNDED' ? 'refunded' : 'approved') : null,
          status === 'CONFIRMED' ? null : new Date(),
        ],
      );
      await tx.execute(
        `insert into sale_items (id, sale_id, ticket_type_id, ticket_type_name, quantity, unit_price, unit_service_fee,
                                 unit_iva) values (gen_random_uuid(), ?, ?, 'General', ?, ?, 0, 0)`,
        [sale.id, event.ticketTypeId, sale.quantity, sale.kind === 'complimentary' ? 0 : PRICE],
      );
      for (let ordinal = 1; ordinal <= sale.quantity; ordinal += 1) {
        const used = sale.kind === 'card_checked_in' && ordinal === 1;
        await tx.execute(
          `insert into tickets (id, created_at, updated_at, workspace_id, sale_id, ticket_type_id, event_id,
                                event_date_id, code, ordinal, status, checked_in_at)
           values (gen_random_uuid(), now(), now(), ?, ?, ?, ?, ?, md5(? || ?), ?, ?, ?)`,
          [
            event.workspaceId,
            sale.id,
            event.ticketTypeId,
            event.eventId,
            event.eventDateId,
            sale.id,
            String(ordinal),
            ordinal,
            status !== 'CONFIRMED' ? 'INVALID' : used ? 'USED' : 'VALID',
            used ? new Date() : null,
          ],
        );
      }
      if (status === 'CONFIRMED') {
        const taken = await takeStock(tx, {
          saleId: sale.id,
          ticketTypeId: event.ticketTypeId,
          quantity: sale.quantity,
        });
        if (!taken) throw new Error(`no stock left for ${sale.reference}`);
      }
      if (sale.payment) {
        await tx.execute(
          `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, dedupe_key,
                                         created_at)
           values (gen_random_uuid(), ?, 'GATEWAY_A', 'CARD', ?, 'approved', ?, ?, now() - interval '1 hour')`,
          [sale.id, sale.payment.id, total, `card:${sale.payment.id}`],
        );
      }
      if (sale.kind === 'refunded_before') {
        await tx.execute(
          `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, dedupe_key,
                                         note, created_at)
           values (gen_random_uuid(), ?, 'GATEWAY_A', 'REFUND', ?, 'refunded', ?, ?, 'refunded before', now() - interval '1 hour')`,
          [sale.id, sale.payment?.id, total, `refund:${sale.id}`],
        );
      }
    }
  });
}

/** A PENDING sale reserved as the API reserves one: update-with-start of its checkout. */
async function reserveThroughCheckout(
  sale: SeededSale,
  event: { eventDateId: string; ticketTypeId: string },
  taskQueue: QueueName,
  paymentPollMs: number,
): Promise<void> {
  const operation = () =>
    new WithStartWorkflowOperation<typeof checkout>('checkout', {
      workflowId: checkoutWorkflowId(sale.id),
      taskQueue,
      args: [
        {
          saleId: sale.id,
          // Longer than any case: a late payment is the checkout's to refund while the case runs.
          latePaymentGraceMs: 15 * 60_000,
          paymentPollMs,
          refundCheckMs: 300,
        },
      ],
      // As the API's keyed request: a retry joins the checkout the first one started.
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  const reserve = () =>
    client.workflow.executeUpdateWithStart(reserveUpdate, {
      startWorkflowOperation: operation(),
      args: [
        {
          origin: 'CUSTOMER',
          channel: 'WEB',
          pinnedWorkspaceId: null,
          eventDateId: event.eventDateId,
          ticketTypeId: event.ticketTypeId,
          quantity: sale.quantity,
          seats: null,
          holdToken: null,
          discountCode: null,
          buyerId: null,
          buyerEmail: sale.buyerEmail,
          buyer: { name: 'Simulated Buyer', phone: null, idType: null, idNumber: null, nitDigit: null },
          returnUrl: null,
          confirmImmediately: false,
          complimentary: false,
          // The window outlasts every case: the event's cancellation, not the window, closes these sales.
          paymentWindowMs: 15 * 60_000,
        },
      ],
    });
  const result = await asBuyerRetries(reserve);
  if (!result.ok) throw new Error(`reservation refused: ${result.code} ${result.message}`);
  sale.reference = result.reference;
}

/**
 * A buyer's call through the API, retried as the API's 503 tells the buyer to: while a worker restarts, an update can
 * go unanswered for its whole timeout, or be refused while the first one is still being applied (INVALID_STATE).
 */
async function asBuyerRetries<T>(call: () => Promise<T>): Promise<T> {
  const giveUpAt = Date.now() + 120_000;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (Date.now() > giveUpAt) throw error;
      await sleep(500);
    }
  }
}

/** The buyer opens a PSE payment (the checkout creates the preference at the gateway); false when it could not. */
async function openPayment(sale: SeededSale): Promise<boolean> {
  const opened = await asBuyerRetries(() =>
    client.workflow.getHandle(checkoutWorkflowId(sale.id)).executeUpdate(openPseUpdate, { args: [{ bankCode: null }] }),
  );
  return opened.ok;
}

/** A version-4 UUID made of the given bytes (drawn from the case's seed). */
function uuidFrom(bytes: Uint8Array): string {
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Buffer.from(bytes).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

async function runCase(seed: number): Promise<CaseResult> {
  const random = seededRandom(seed);
  const faults = new CaseFaults(random);
  running.set(seed, faults);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const between = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
  const violations: string[] = [];
  const taskQueue = seed % 2 === 0 ? QUEUES.cached : QUEUES.replaying;
  faults.note(`queue ${taskQueue === QUEUES.replaying ? 'with a cache of two' : 'cached'}`);

  // The event and its sales.
  const count = between(3, 30);
  // Ids and references from the seed too: the pages take the sales in id order.
  const bytes = (length: number) => Uint8Array.from({ length }, () => Math.floor(random() * 256));
  const sales: SeededSale[] = Array.from({ length: count }, () => {
    const reference = saleReferenceFromBytes(bytes(5));
    return {
      id: uuidFrom(bytes(16)),
      reference,
      kind: pickWeighted(random, KINDS),
      quantity: random() < 0.8 ? 1 : 2,
      buyerEmail: `buyer-${reference.toLowerCase()}@simulation.test`,
      payment: null,
      refusal: null,
    };
  });
  const capacity = sales.reduce((sum, sale) => sum + sale.quantity, 0) + between(0, 4);
  const created = await createEventFixture(orm.em, {
    dates: [{ startsAt: daysFromNow(30), types: [{ price: PRICE, capacity }] }],
  });
  const event = {
    workspaceId: created.workspaceId,
    eventId: created.eventId,
    eventDateId: created.dates[0]!.id,
    ticketTypeId: created.dates[0]!.typeIds[0]!,
  };
  await seedSales(faults, event, sales);
  for (const sale of sales) {
    if (sale.kind !== 'pending') continue;
    gateway.registerBuyer(sale.buyerEmail, faults);
    await reserveThroughCheckout(sale, event, taskQueue, between(300, 1_500));
    sale.paymentOpened = random() < 0.8 && (await openPayment(sale));
  }
  faults.note(`${count} sales: ${sales.map((sale) => sale.kind).join(',')}`);

  // Faults of the gateway for the whole case, and the refusals.
  faults.lostAnswers = random() < 0.5 ? random() * 0.25 : 0;
  faults.inProcessRefunds = random() < 0.4 ? random() * 0.3 : 0;
  const refundable = sales.filter((sale) => sale.kind === 'card' || sale.kind === 'card_checked_in');
  if (refundable.length > 0 && random() < 0.25) {
    const plan = pickWeighted<RefusalPlan>(random, [
      ['lifted_in_story', 0.5],
      ['operator_retries', 0.3],
      ['left', 0.2],
    ]);
    for (let refused = between(1, Math.min(3, refundable.length)); refused > 0; refused -= 1) {
      const sale = pick(refundable);
      if (sale.refusal || !sale.payment) continue;
      sale.refusal = { answer: random() < 0.5 ? 'error' : 'rejected', plan };
      faults.refusals.set(sale.payment.id, sale.refusal.answer);
    }
  }
  faults.note(
    `lost answers ${faults.lostAnswers.toFixed(2)}, in-process refunds ${faults.inProcessRefunds.toFixed(2)}, ` +
      `refused: ${sales
        .filter((sale) => sale.refusal)
        .map((sale) => `${sale.reference} ${sale.refusal?.answer} ${sale.refusal?.plan}`)
        .join(', ')}`,
  );

  const tuning: Partial<EventCancellationInput> = {
    passIntervalMs: between(100, 400),
    finalSweepDelayMs: between(200, 1_500),
    pageSize: between(2, 10),
    concurrency: between(1, 4),
    continueAsNewAfterEvents: between(25, 150),
  };
  tunings.set(event.eventId, tuning);
  faults.note(`tuning ${JSON.stringify(tuning)}`);

  const workflowId = eventCancellationWorkflowId(event.eventId);
  const handle = () => client.workflow.getHandle(workflowId);
  const terminatedRuns = new Set<string>();
  const cancel = async () => {
    const em = orm.em.fork();
    em.setFilterParams('tenant', { workspaceId: event.workspaceId });
    await cancelEvent({ temporal: client, env: envs[taskQueue] }, em, {
      eventId: event.eventId,
      workspaceId: event.workspaceId,
      reason: 'the artist fell ill',
    });
  };

  // The story: the organizer cancels at once; faults and repeats over the next few seconds.
  const horizonMs = between(500, 6_000);
  const actions: Action[] = ['outage', 'outage', 'slow', 'repost', 'repost_twice', 'terminate'];
  if (sales.some((sale) => sale.refusal?.plan === 'lifted_in_story')) actions.push('lift_refusals');
  const script = Array.from({ length: between(1, 6) }, () => ({ at: between(0, horizonMs), action: pick(actions) }));
  if (sales.some((sale) => sale.refusal?.plan === 'lifted_in_story')) {
    script.push({ at: between(0, horizonMs), action: 'lift_refusals' });
  }
  const bankMoves = new Map<string, BankMove>();
  const banked = sales.filter((sale) => sale.paymentOpened);
  for (const sale of banked) {
    const move = pickWeighted<BankMove>(random, [
      ['approve', 0.55],
      ['reject', 0.15],
      ['approve_twice', 0.12],
      ['nothing', 0.18],
    ]);
    bankMoves.set(sale.id, move);
  }
  const bankQueue = [...banked];
  for (const _ of banked) script.push({ at: between(0, horizonMs), action: 'bank' });
  script.sort((a, b) => a.at - b.at);
  const deliveries: Promise<void>[] = [];
  /** The gateway tells the sale's checkout of a payment: the notification may be lost, late or delivered twice. */
  const announce = async (sale: SeededSale, payment: SimulatedPayment) => {
    const delivery = random();
    if (delivery < 0.3) {
      faults.note(`notification of ${payment.id} (${payment.status}) lost`);
      return;
    }
    const notification: PaymentNotification = {
      gateway: 'GATEWAY_A',
      providerPaymentId: payment.id,
      eventType: 'payment',
      receivedAtMs: Date.now(),
      dedupeKey: `${payment.id}:${payment.status}`,
    };
    const late = delivery > 0.75 ? between(100, 1_500) : 0;
    const twice = delivery > 0.85;
    faults.note(
      `notification of ${payment.id} (${payment.status})${late ? ` ${late}ms late` : ''}${twice ? ', twice' : ''}`,
    );
    const deliver = async () => {
      await sleep(late);
      const checkout = client.workflow.getHandle(checkoutWorkflowId(sale.id));
      await checkout.signal(paymentNotificationSignal, notification).catch(() => undefined);
      if (twice) await checkout.signal(paymentNotificationSignal, notification).catch(() => undefined);
    };
    // A late delivery does not hold up the rest of the story.
    deliveries.push(deliver());
  };
  const began = Date.now();
  await cancel();
  for (const { at, action } of script) {
    await sleep(at - (Date.now() - began));
    faults.note(`${at}ms ${action}`);
    switch (action) {
      case 'outage':
        faults.downUntilMs = Date.now() + between(300, 4_000);
        break;
      case 'slow':
        faults.slowUntilMs = Date.now() + between(500, 4_000);
        faults.slowMs = between(100, 1_500);
        break;
      case 'repost':
        await cancel();
        break;
      case 'repost_twice':
        await Promise.all([cancel(), cancel()]);
        break;
      case 'terminate': {
        const described = await handle().describe();
        if (described.status.name !== 'RUNNING') break;
        await handle()
          .terminate(onPurpose('plays the server terminating the run at the history limit'))
          .then(
            () => terminatedRuns.add(described.runId),
            () => undefined,
          );
        await cancel();
        break;
      }
      case 'bank': {
        const sale = bankQueue.shift();
        if (!sale) break;
        const move = bankMoves.get(sale.id) ?? 'nothing';
        faults.note(`bank: ${move} ${sale.reference}`);
        if (move === 'nothing') break;
        const paid = gateway.payPreference(sale.reference, move === 'reject' ? 'rejected' : 'approved');
        if (paid) await announce(sale, paid);
        if (move === 'approve_twice') {
          const again = gateway.payPreference(sale.reference, 'approved');
          if (again) await announce(sale, again);
        }
        break;
      }
      case 'lift_refusals':
        for (const sale of sales) {
          if (sale.refusal?.plan === 'lifted_in_story' && sale.payment) faults.refusals.delete(sale.payment.id);
        }
        break;
    }
  }

  await Promise.all(deliveries);
  const deadline = Date.now() + CASE_DEADLINE_MS;
  const finished = await untilFinished(workflowId, deadline);
  if (finished !== 'completed') violations.push(`the event's cancellation ${finished}`);

  // The cancellation waits for every refund execution of its sales: none may still be asking the gateway now. One
  // that has recorded its refund (phase done) may still be sending the buyer's courtesy email: the sale is REFUNDED
  // and no page lists it any more, so the cancellation is rightly done (a worker restart during that email once left
  // the execution running past the cancellation's end).
  if (finished === 'completed') {
    for (const sale of sales) {
      const handle = client.workflow.getHandle(refundWorkflowId(sale.id));
      const described = await handle.describe().catch(() => null);
      if (described?.status.name !== 'RUNNING') continue;
      const status = await handle.query(refundStatusQuery).catch(() => null);
      if (status?.phase !== 'done') {
        violations.push(
          `refund/${sale.id} (${sale.reference}) still ${status?.phase ?? 'running'} when the cancellation completed`,
        );
      }
    }
  }

  // As the cancellation finished: every sale undone but those refused, which are counted and listed.
  const refusedAtEnd = new Set(
    sales.filter((sale) => sale.refusal && sale.refusal.plan !== 'lifted_in_story').map((sale) => sale.id),
  );
  const [eventRow] = await orm.em
    .fork()
    .execute<{ status: string; cancellation: EventCancellationProgress | null }[]>(
      'select status, cancellation from events where id = ?',
      [event.eventId],
    );
  const progress = eventRow?.cancellation ?? null;
  if (eventRow?.status !== 'CANCELLED') violations.push(`event is ${eventRow?.status}`);
  if (finished === 'completed') {
    if (progress?.state !== 'DONE') violations.push(`event's cancellation progress is ${progress?.state}`);
    const listed = new Set((progress?.failures ?? []).map((failure) => failure.saleId));
    const expected = {
      pending: 0,
      confirmed: refusedAtEnd.size,
      refused: refusedAtEnd.size,
      listed: [...refusedAtEnd].filter((id) => listed.has(id)).length,
      unexpectedFailures: (progress?.failures ?? []).filter((failure) => !refusedAtEnd.has(failure.saleId)).length,
    };
    const actual = {
      pending: progress?.pending,
      confirmed: progress?.confirmed,
      refused: progress?.refused,
      listed: expected.listed,
      unexpectedFailures: expected.unexpectedFailures,
    };
    actual.listed = [...refusedAtEnd].filter((id) => listed.has(id)).length;
    expected.listed = refusedAtEnd.size;
    expected.unexpectedFailures = 0;
    if (JSON.stringify(actual) !== JSON.stringify(expected)) {
      violations.push(
        `progress at DONE ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)} (${JSON.stringify(progress?.failures ?? [])})`,
      );
    }
  }

  // The merchant's balance is topped up and an operator retries the refunds parked as refused.
  const retried = sales.filter((sale) => sale.refusal?.plan === 'operator_retries');
  if (retried.length > 0 && finished === 'completed') {
    for (const sale of retried) if (sale.payment) faults.refusals.delete(sale.payment.id);
    for (const sale of retried) {
      faults.note(`operator retries ${sale.reference}`);
      const code = await runOperator(['refunds-refused', 'retry', sale.id], {
        orm,
        temporal: client,
        env: envs[taskQueue],
        print: () => undefined,
      }).catch((error: unknown) => {
        violations.push(`operator retry of ${sale.reference}: ${error instanceof Error ? error.message : error}`);
        return 0;
      });
      if (code !== 0) violations.push(`operator retry of ${sale.reference} exited ${code}`);
    }
    for (const sale of retried) {
      const outcome = await untilFinished(refundWorkflowId(sale.id), deadline);
      if (outcome !== 'completed') violations.push(`the operator's refund of ${sale.reference} ${outcome}`);
    }
  }

  // The real reconciler, run as its Schedule runs it but over this case's workspace only, with no margin or settlement
  // lag, until every approved payment of a sale with an opened payment is refunded: a payment whose notifications
  // were all lost is found at the gateway, and a closed checkout is resumed (signal-with-start) to refund it.
  const opened = sales.filter((sale) => sale.paymentOpened);
  if (opened.length > 0) {
    // The reconciler asks about a paid sale's other payments once its payment window is over (a bank can still pay
    // until then); the story is over, so its windows are ended now rather than waited for, as the reconciler's own
    // tests do.
    await orm.em.fork().execute(
      `update sales set expires_at = least(expires_at, now())
          where event_id = ? and status in ('CONFIRMED', 'REFUNDED')`,
      [event.eventId],
    );
    const settled = () =>
      opened.every((sale) =>
        gateway
          .paymentsOf(sale.reference)
          .every((payment) => payment.status !== 'approved' || payment.refunds.some((r) => r.status === 'approved')),
      );
    const settleBy = Math.min(deadline, Date.now() + 120_000);
    let runs = 0;
    while (!settled() && Date.now() < settleBy) {
      runs += 1;
      const settings: Partial<ReconcilerSettings> = {
        workspaceId: event.workspaceId,
        marginMs: 0,
        settlementLagMs: 0,
        batchSize: 100,
      };
      await client.workflow
        .execute<typeof reconciler>('reconciler', {
          taskQueue,
          workflowId: `reconciler-${seed}-${runs}`,
          args: [settings],
          workflowExecutionTimeout: '2 minutes',
        })
        .catch((error: unknown) => faults.note(`reconciler run ${runs} failed: ${String(error)}`));
      const waitUntil = Math.min(settleBy, Date.now() + 5_000);
      while (!settled() && Date.now() < waitUntil) await sleep(250);
    }
    faults.note(`reconciler runs: ${runs}`);
  }

  // A PENDING sale's cancel that a payment got to first ends once its checkout answers (the page refunded the sale
  // meanwhile); every per-sale execution ends before the checks.
  for (const sale of sales) {
    for (const id of [refundWorkflowId(sale.id), cancellationWorkflowId(sale.id)]) {
      const described = await client.workflow
        .getHandle(id)
        .describe()
        .catch(() => null);
      if (described?.status.name !== 'RUNNING') continue;
      const outcome = await untilFinished(id, deadline);
      if (outcome !== 'completed') violations.push(`${id} (${sale.reference}) ${outcome}`);
    }
  }

  violations.push(...(await moneyAndStock(event, sales, capacity)));
  violations.push(...faults.secondRefundAsks.map((ask) => `a second refund was asked of payment ${ask}`));
  violations.push(...(await executions(workflowId, sales, terminatedRuns)));
  running.delete(seed);
  tunings.delete(event.eventId);
  gateway.forget(faults);
  return { seed, violations, story: faults.log };
}

/** Each sale, its payment and the stock as they must end. */
async function moneyAndStock(
  event: { eventId: string; ticketTypeId: string },
  sales: SeededSale[],
  capacity: number,
): Promise<string[]> {
  const violations: string[] = [];
  const rows = await orm.em.fork().execute<
    {
      id: string;
      status: string;
      refund_records: number;
      notices: number;
      valid_tickets: number;
      tickets: number;
      held: number;
    }[]
  >(
    `select s.id, s.status,
            (select count(*)::int from payment_attempts a where a.sale_id = s.id and a.kind = 'REFUND'
               and a.dedupe_key = 'refund:' || s.id::text) as refund_records,
            (select count(*)::int from outbox_events o where o.type = 'sale.refunded'
               and o.payload->>'saleId' = s.id::text) as notices,
            (select count(*)::int from tickets t where t.sale_id = s.id and t.status in ('VALID', 'USED')) as valid_tickets,
            (select count(*)::int from tickets t where t.sale_id = s.id) as tickets,
            (select coalesce(sum(quantity), 0)::int from sale_stock_allocations a where a.sale_id = s.id) as held
       from sales s where s.event_id = ?`,
    [event.eventId],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  let held = 0;
  for (const sale of sales) {
    const row = byId.get(sale.id);
    if (!row) {
      violations.push(`${sale.reference} disappeared`);
      continue;
    }
    const refundsAtGateway = sale.payment?.refunds.length ?? 0;
    const approvedRefunds = sale.payment?.refunds.filter((refund) => refund.status === 'approved').length ?? 0;
    const expect = (what: string, actual: unknown, wanted: unknown) => {
      if (actual !== wanted) violations.push(`${sale.reference} (${sale.kind}): ${what} ${actual}, expected ${wanted}`);
    };
    const stillPaid = sale.refusal?.plan === 'left';
    switch (sale.kind) {
      case 'card':
      case 'card_checked_in':
      case 'card_refunded_at_dashboard':
        if (stillPaid) {
          expect('status', row.status, 'CONFIRMED');
          expect('refunds at the gateway', refundsAtGateway, 0);
          expect('refund records', row.refund_records, 0);
          expect('tickets admitting', row.valid_tickets, sale.quantity);
          expect('units held', row.held, sale.quantity);
          held += sale.quantity;
        } else {
          expect('status', row.status, 'REFUNDED');
          expect('refunds at the gateway', refundsAtGateway, 1);
          expect('refunds approved at the gateway', approvedRefunds, 1);
          expect('payment status at the gateway', sale.payment?.status, 'refunded');
          expect('refund records', row.refund_records, 1);
          expect('sale.refunded notices', row.notices, 1);
          expect('tickets admitting', row.valid_tickets, 0);
          expect('units held', row.held, 0);
        }
        break;
      case 'complimentary':
      case 'box_office':
        expect('status', row.status, 'CANCELLED');
        expect('refund records', row.refund_records, 0);
        expect('tickets admitting', row.valid_tickets, 0);
        expect('units held', row.held, 0);
        break;
      case 'refunded_before':
        expect('status', row.status, 'REFUNDED');
        expect('refunds at the gateway', refundsAtGateway, 1);
        expect('refund records', row.refund_records, 1);
        expect('sale.refunded notices', row.notices, 0);
        break;
      case 'cancelled_before':
        expect('status', row.status, 'CANCELLED');
        expect('refund records', row.refund_records, 0);
        break;
      case 'pending': {
        // Cancelled unpaid, or confirmed by a payment that got there first and then refunded; either way every
        // payment the bank approved went back exactly once, and one that confirmed the sale left one REFUND record.
        const payments = gateway.paymentsOf(sale.reference);
        if (row.status !== 'CANCELLED' && row.status !== 'REFUNDED') {
          expect('status', row.status, 'CANCELLED or REFUNDED');
        }
        for (const payment of payments) {
          const rejected = payment.status === 'rejected';
          expect(`refunds of ${payment.id} at the gateway`, payment.refunds.length, rejected ? 0 : 1);
          expect(`status of ${payment.id} at the gateway`, payment.status, rejected ? 'rejected' : 'refunded');
        }
        if (row.status === 'REFUNDED') {
          expect('refund records', row.refund_records, 1);
          expect('sale.refunded notices', row.notices, 1);
        }
        expect('tickets admitting', row.valid_tickets, 0);
        expect('units held', row.held, 0);
        break;
      }
    }
  }
  const [stock] = await orm.em
    .fork()
    .execute<{ available: number }[]>(
      'select coalesce(sum(available), 0)::int as available from ticket_stock where ticket_type_id = ?',
      [event.ticketTypeId],
    );
  if (stock?.available !== capacity - held) {
    violations.push(`stock: ${stock?.available} units available, expected ${capacity - held} (${held} still sold)`);
  }
  return violations;
}

/** Every execution of the case ended as it should, none past the history limit or with a failed workflow task. */
async function executions(workflowId: string, sales: SeededSale[], terminatedRuns: Set<string>): Promise<string[]> {
  const violations: string[] = [];
  const ids = [
    workflowId,
    ...sales.flatMap((sale) => [
      refundWorkflowId(sale.id),
      cancellationWorkflowId(sale.id),
      ...(sale.kind === 'pending' ? [checkoutWorkflowId(sale.id)] : []),
    ]),
  ];
  const runs: Array<{ workflowId: string; runId: string }> = [];
  for (let start = 0; start < ids.length; start += 20) {
    const chunk = ids.slice(start, start + 20).map((id) => `'${id}'`);
    for await (const run of client.workflow.list({ query: `WorkflowId IN (${chunk.join(', ')})` })) {
      runs.push({ workflowId: run.workflowId, runId: run.runId });
    }
  }
  if (!runs.some((run) => run.workflowId === workflowId)) violations.push('no run of the cancellation is listed');
  for (const run of runs) {
    const execution = client.workflow.getHandle(run.workflowId, run.runId);
    const described = await execution.describe();
    const status = described.status.name;
    const label = `${run.workflowId} run ${run.runId}`;
    if (status === 'TERMINATED' && !terminatedRuns.has(run.runId)) violations.push(`${label} terminated`);
    if (status === 'FAILED' || status === 'TIMED_OUT' || status === 'CANCELLED') violations.push(`${label} ${status}`);
    // A checkout listens for late payments long after its sale closed; every other execution must have ended.
    if (status === 'RUNNING' && !run.workflowId.startsWith('checkout/')) violations.push(`${label} still running`);
    if (described.historyLength > HISTORY_LIMIT) violations.push(`${label}: ${described.historyLength} events`);
    const events = (await execution.fetchHistory()).events ?? [];
    const terminatedByUs = terminatedRuns.has(run.runId);
    for (const event of events) {
      const taskFailure = event.workflowTaskFailedEventAttributes;
      if (!taskFailure) continue;
      const cause = taskFailure.cause ?? 0;
      // A new event arrived as the task completed (the task runs again), and the task in flight when the story
      // terminated the run (the server fails it before it writes the termination).
      const expected =
        cause === proto.temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND ||
        (terminatedByUs &&
          cause === proto.temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE_COMMAND);
      if (!expected) {
        violations.push(
          `${label}: workflow task failed (${taskFailure.cause}): ${taskFailure.failure?.message ?? 'no failure'}`,
        );
      }
    }
  }
  return violations;
}

/**
 * Waits for the latest run of `workflowId` to complete. A run is stuck when its history stops growing for longer than
 * its longest wait (the page's heartbeat timeout after a worker restart) plus a margin, or outlives the deadline.
 */
async function untilFinished(workflowId: string, deadline: number): Promise<string> {
  let historyLength = -1;
  let lastProgressAt = Date.now();
  for (;;) {
    const latest = client.workflow.getHandle(workflowId);
    let described: Awaited<ReturnType<typeof latest.describe>>;
    try {
      described = await latest.describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return 'was never started';
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
      const pending = pendingActivities(described);
      return `${stalled ? 'is stuck' : 'still runs at the deadline'} (${described.historyLength} events; pending: ${pending.join(', ') || 'none'})`;
    }
    await sleep(250);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The exploration: cases in lanes, and the workers of either queue restarted every so often under them.

const chaos = seededRandom(FIRST_SEED * 7919);
let exploring = true;
const restarts = (async () => {
  while (exploring) {
    const [low, high] = WORKER_RESTART_EVERY_MS;
    const waitUntil = Date.now() + low + Math.floor(chaos() * (high - low));
    while (exploring && Date.now() < waitUntil) await sleep(200);
    if (!exploring) break;
    const queue = chaos() < 0.5 ? QUEUES.cached : QUEUES.replaying;
    for (const faults of running.values()) faults.note(`worker restart of ${queue}`);
    await queueWorkers[queue].restart();
  }
})();

const { failures, seconds, explored } = await exploreCases(
  {
    cases: CASES,
    firstSeed: FIRST_SEED,
    concurrency: CONCURRENCY,
    progressEvery: 25,
    stopStartingAt: STOP_STARTING_AT,
    // A case whose driver threw is done with too: its story is what its faults noted.
    storyOf: (seed) => {
      const story = running.get(seed)?.log ?? [];
      running.delete(seed);
      return story;
    },
  },
  runCase,
);
exploring = false;
await restarts;
await Promise.all(Object.values(queueWorkers).map((workers) => workers.stop()));
await temporal.teardown();
redis.disconnect();
await orm.close(true);
if (!process.env.SIM_DATABASE_URL) await dropDatabase(databaseUrl).catch(() => undefined);
console.log(JSON.stringify({ cases: explored, firstSeed: FIRST_SEED, seconds, failures }));
process.exit(failures.length === 0 ? 0 : 1);
