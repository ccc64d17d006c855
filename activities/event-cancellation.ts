import { ApplicationFailure, Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { SaleStatus } from '../domain/sale-state.js';
import { Event, type EventCancellationProgress } from '../entities/event.js';
import { newId } from '../entities/ids.js';
import type { cancellation } from '../workflows/cancellation.js';
import {
  type CancellationResult,
  cancellationWorkflowId,
  type RefundResult,
  refundWorkflowId,
  SA,
  saleSearchAttributes,
} from '../workflows/definitions.js';
import type { eventCancellation } from '../workflows/event-cancellation.js';
import {
  type EventCancellationCounts,
  type EventCancellationFailure,
  eventCancellationWorkflowId,
  type SaleUndoAction,
  type UndoPageResult,
} from '../workflows/event-cancellation-definitions.js';
import type { refund } from '../workflows/refund.js';
import type { ActivityDeps } from './deps.js';
import { createSalesOpsActivities } from './sales-ops.js';
import { createTicketOpsActivities } from './ticket-ops.js';

const ANY_TENANT = { filters: { tenant: false, notDeleted: false } } as const;
/**
 * Sales read at once by `undoNextSales`: the unit the gateway-down check judges (a chunk whose every refund found the
 * gateway unavailable stops the page) and after which the cursor moves on.
 */
const CHUNK = 100;
/**
 * Refunds of one chunk that must all fail (none going through) for the gateway to be judged down. Several, so one
 * payment the gateway keeps failing cannot hold the cancellation at its chunk: it is left for a later pass instead.
 */
const GATEWAY_DOWN_FAILURES = 3;
/**
 * The sales whose refund the gateway refused since the event was cancelled (params: statuses, since), read once a
 * statement. Asked per sale instead (`exists` on each of the event's sales), the planner, without statistics on
 * tables filled since their last analyze (a bench, a restore, a big sale), scanned every REFUND row of the
 * refund-payment index for each sale: 15 s a page at 20,000 sales, half the mass refund's time
 * (bench/results/mass-refund-2026-11-29-20000-outage.json). Refusals are few; this is one pass whatever the plan.
 */
const REFUSED_SINCE_CTE = `refused as materialized (
  select distinct a.sale_id from payment_attempts a
   where a.kind = 'REFUND' and a.status = any(?::text[]) and a.created_at >= ?)`;

/** Refused refunds listed by name on the event (all of them are counted). */
const REFUSED_LISTED = 100;
/**
 * REFUND attempt statuses that say the gateway refused the refund: `refused` when it refused a page's refund (the sale
 * is then its refund workflow's), `refund_refused` once the refund workflow parked it for good.
 */
const REFUSAL_STATUSES = ['refused', 'refund_refused'];

/**
 * Codes with which a cancel of a PENDING sale stops because the sale moved on (a payment got there first): not a
 * failure, the next pass finds the sale CONFIRMED and refunds it.
 */
const MOVED_ON: ReadonlySet<string> = new Set(['SALE_PAID_AT_GATEWAY', 'INVALID_STATE', 'REFUND_REQUIRED']);

interface SaleRow {
  id: string;
  reference: string;
  workspace_id: string;
  event_date_id: string;
  status: SaleStatus;
  payment_provider: string | null;
  total: number;
}

/**
 * What to do with a sale of a cancelled event: a PENDING sale is cancelled through its checkout (an open payment is
 * acknowledged, the organizer cancelled the whole event); a CONFIRMED sale paid through a gateway is refunded; a
 * complimentary or box-office sale is cancelled directly.
 */
function undoActionOf(row: SaleRow): SaleUndoAction {
  return row.status === 'CONFIRMED' && row.payment_provider !== null && row.total > 0 ? 'refund' : 'cancel';
}

/** A sale of the page, with whether the gateway refused its refund since the event was cancelled. */
interface PageSaleRow extends SaleRow {
  refused: boolean;
}

/** What `undoNextSales` did with one sale. */
type SaleOutcome =
  /** Refunded at the gateway and recorded by this page. */
  | { kind: 'refunded' }
  /** Nothing left to do: undone meanwhile, by someone else or earlier. */
  | { kind: 'nothing' }
  /** A per-sale workflow was started or still runs (cancel, offline refund, a refusal handed over): look again later. */
  | { kind: 'in_flight' }
  /** The gateway could not be reached or has not confirmed yet: a later pass refunds it. */
  | { kind: 'unavailable' }
  /** The gateway refused the refund for good (the refund workflow parked it for the operator). */
  | { kind: 'refused' }
  /** The per-sale workflow ended without undoing it: the organizer handles it by hand. */
  | { kind: 'failed'; failure: EventCancellationFailure };

/** Where a page stood at its last heartbeat: a retried page goes on from there instead of the page's start. */
interface PageHeartbeat {
  cursor: string | null;
  undone: number;
  left: number;
  failures: EventCancellationFailure[];
}

/** A refusal no retry can change (the provider's 4xx, mapped non-retryable by worker/providers.ts). */
const isPermanentRefusal = (error: unknown): boolean =>
  error instanceof ApplicationFailure && error.nonRetryable === true;

/** Runs `work` over `items`, at most `limit` at once, results in the items' order. */
async function mapConcurrently<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  return results;
}

export function createEventCancellationActivities(deps: ActivityDeps) {
  const salesOps = createSalesOpsActivities(deps);
  const ticketOps = createTicketOpsActivities(deps);

  /** Starts the sale's cancellation or refund workflow (joining one already running under that id). */
  async function startSaleWorkflow(sale: SaleRow, action: SaleUndoAction, reason: string): Promise<void> {
    const workflowId = action === 'refund' ? refundWorkflowId(sale.id) : cancellationWorkflowId(sale.id);
    const common = {
      workflowId,
      taskQueue: deps.env.TEMPORAL_TASK_QUEUE,
      typedSearchAttributes: saleSearchAttributes({
        reference: sale.reference,
        workspace: sale.workspace_id,
        eventDate: sale.event_date_id,
        status: sale.status,
      }),
      workflowIdConflictPolicy: 'USE_EXISTING' as const,
    };
    try {
      if (action === 'refund') {
        // The whole event is off: tickets already scanned at the door are refunded too.
        await deps.temporal.workflow.start<typeof refund>('refund', {
          ...common,
          args: [{ saleId: sale.id, reason, force: true, notifyBuyer: true }],
        });
      } else {
        await deps.temporal.workflow.start<typeof cancellation>('cancellation', {
          ...common,
          args: [{ saleId: sale.id, acknowledgeOpenPayment: true, reason }],
        });
      }
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }

  /**
   * A sale undone through its own workflow (a PENDING sale's cancel through its checkout, a complimentary sale, an
   * offline refund, a refund the gateway refused): reads how the execution under the sale's id stands. One started
   * since the event was cancelled reports its outcome; a running one is waited for; none (or only older ones, the
   * organizer's attempts before the cancellation, or one that failed) starts one.
   */
  async function undoThroughWorkflow(
    sale: PageSaleRow,
    action: SaleUndoAction,
    reason: string,
    cancelledAt: Date,
  ): Promise<SaleOutcome> {
    const workflowId = action === 'refund' ? refundWorkflowId(sale.id) : cancellationWorkflowId(sale.id);
    const handle = deps.temporal.workflow.getHandle(workflowId);
    let described: Awaited<ReturnType<typeof handle.describe>> | null = null;
    try {
      described = await handle.describe();
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
    // Still running, refused before or not: a refund between two refusals may yet go through (the merchant's balance
    // topped up), and one retried by an operator is on its way. Counted as left, so the pass is made again and the
    // cancellation ends only once every execution it waits on has: never DONE with a refund still being asked for.
    if (described?.status.name === 'RUNNING') return { kind: 'in_flight' };
    const ours = described !== null && described.startTime.getTime() >= cancelledAt.getTime();
    if (described?.status.name === 'COMPLETED' && ours) {
      const outcome = (await handle.result()) as RefundResult | CancellationResult;
      // Done, or a PENDING sale that a payment got to first: the checkout confirms it and a later pass refunds it.
      if (outcome.ok || (action === 'cancel' && MOVED_ON.has(outcome.code))) return { kind: 'in_flight' };
      if (action === 'refund' && sale.refused) return { kind: 'refused' };
      return {
        kind: 'failed',
        failure: { saleId: sale.id, reference: sale.reference, code: outcome.code, message: outcome.message },
      };
    }
    await startSaleWorkflow(sale, action, reason);
    return { kind: 'in_flight' };
  }

  /**
   * The gateway refused the page's refund of a sale: a REFUND attempt `refused` (REFUSAL_STATUSES), once per sale and
   * cancellation (a retried page writes nothing more). The refund request stays `requested`: the money is still owed.
   */
  async function recordRefusal(
    saleId: string,
    payment: { gateway: string; paymentRef: string },
    message: string,
    cancelledAt: Date,
  ): Promise<void> {
    await deps.orm.em.fork().execute(
      `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, dedupe_key, note,
                                     created_at)
       select ?, s.id, ?, 'REFUND', ?, 'refused', s.total, ?, ?, now() from sales s where s.id = ?
       on conflict (dedupe_key) do nothing`,
      [
        newId(),
        payment.gateway,
        payment.paymentRef,
        `refund-refused:${saleId}:event-cancellation:${cancelledAt.getTime()}`,
        `the gateway refused the event cancellation's refund: ${message}`.slice(0, 300),
        saleId,
      ],
    );
  }

  /**
   * A sale paid through a gateway, refunded here as the refund workflow would (workflows/refund.ts): the sale locked
   * and its tickets stopped, the gateway asked with the idempotency key `refund-<saleId>` (and not at all when it
   * reports the payment refunded already), the refund recorded with its outbox event, the buyer emailed. A refusal
   * goes to the refund workflow, which bounds the refusals and parks the sale as refused for the operator.
   */
  async function refundDirectly(sale: PageSaleRow, reason: string, cancelledAt: Date): Promise<SaleOutcome> {
    const prepared = await salesOps.prepareRefund({ saleId: sale.id, reason });
    if (prepared.state === 'already_refunded' || prepared.state === 'rejected') return { kind: 'nothing' };
    if (prepared.state === 'offline') return undoThroughWorkflow(sale, 'refund', reason, cancelledAt);
    let refunded: { status: string; refundId: string | null };
    try {
      refunded = await salesOps.refundAtGateway({
        saleId: sale.id,
        gateway: prepared.gateway,
        paymentRef: prepared.paymentRef,
        reference: prepared.reference,
        retry: prepared.retry,
      });
    } catch (error) {
      if (!isPermanentRefusal(error)) return { kind: 'unavailable' };
      const message = error instanceof Error ? error.message : String(error);
      Context.current().log.warn('gateway refused an event-cancellation refund; handed to its refund workflow', {
        saleId: sale.id,
        error: message,
      });
      // Recorded before the hand-over, so every later page reads the sale as refused and leaves it to its refund
      // workflow. Without the record the next pass refunded it here again, under the first ask's key, on every pass
      // while the workflow waited between its own asks: a refund asked for twice at once, and a cancellation that
      // could end with the workflow still running.
      await recordRefusal(sale.id, prepared, message, cancelledAt);
      await startSaleWorkflow(sale, 'refund', reason);
      return { kind: 'in_flight' };
    }
    const completed = await salesOps.completeRefund({
      saleId: sale.id,
      gateway: prepared.gateway,
      paymentRef: prepared.paymentRef,
      gatewayStatus: refunded.status,
      refundId: refunded.refundId,
      reason,
    });
    if (completed.changed) {
      try {
        await ticketOps.emailRefundNotice(sale.id);
      } catch (error) {
        // The refund stands whether or not the courtesy email could be sent.
        Context.current().log.warn('refund notice not sent', { saleId: sale.id, error: String(error) });
      }
    }
    return completed.changed ? { kind: 'refunded' } : { kind: 'nothing' };
  }

  /** The event's sales by status now, and how many CONFIRMED ones the gateway refused to refund since `since`. */
  async function countSales(eventId: string, since: Date): Promise<EventCancellationCounts> {
    const em = deps.orm.em.fork();
    const counts = await em.execute<{ status: SaleStatus; count: string }[]>(
      'select status, count(*) as count from sales where event_id = ? group by status',
      [eventId],
    );
    const [refused] = await em.execute<{ count: string }[]>(
      `with ${REFUSED_SINCE_CTE}
       select count(*) as count from refused r where exists (
         select 1 from sales s where s.id = r.sale_id and s.event_id = ? and s.status = 'CONFIRMED')`,
      [`{${REFUSAL_STATUSES.join(',')}}`, since, eventId],
    );
    const count = (status: SaleStatus) => Number(counts.find((row) => row.status === status)?.count ?? 0);
    return {
      pending: count('PENDING'),
      confirmed: count('CONFIRMED'),
      cancelled: count('CANCELLED'),
      refunded: count('REFUNDED'),
      abandoned: count('ABANDONED'),
      refused: Number(refused?.count ?? 0),
    };
  }

  /** The refused refunds by name (the first REFUSED_LISTED), with the gateway's last word on each. */
  async function listRefused(eventId: string, since: Date): Promise<EventCancellationFailure[]> {
    const rows = await deps.orm.em.fork().execute<{ id: string; reference: string; note: string | null }[]>(
      `with ${REFUSED_SINCE_CTE}
       select s.id, s.reference, (select a.note from payment_attempts a where a.sale_id = s.id and a.kind = 'REFUND'
              and a.status = any(?::text[]) order by a.created_at desc limit 1) as note
         from sales s where s.id in (select r.sale_id from refused r) and s.event_id = ? and s.status = 'CONFIRMED'
        order by s.id limit ?`,
      [`{${REFUSAL_STATUSES.join(',')}}`, since, `{${REFUSAL_STATUSES.join(',')}}`, eventId, REFUSED_LISTED],
    );
    return rows.map((row) => ({
      saleId: row.id,
      reference: row.reference,
      code: 'REFUND_REFUSED',
      message: row.note ?? 'the gateway refused the refund',
    }));
  }

  /**
   * Writes the event's progress for GET /events/{id}. A look that found no sale left to undo (the final sweep, most
   * often) leaves a finished cancellation as the organizer saw it: DONE, finished when it was, not RUNNING for the
   * length of a sweep that changes nothing and then DONE at a later instant.
   */
  async function writeProgress(input: {
    eventId: string;
    startedAt: string;
    finished: boolean;
    /** The page read no sale still PENDING or CONFIRMED. */
    foundNothing: boolean;
    failures: EventCancellationFailure[];
    since: Date;
  }): Promise<EventCancellationProgress> {
    const counts = await countSales(input.eventId, input.since);
    const refused = counts.refused > 0 ? await listRefused(input.eventId, input.since) : [];
    const listed = new Set(input.failures.map((failure) => failure.saleId));
    const em = deps.orm.em.fork();
    const event = await em.findOne(Event, { id: input.eventId }, ANY_TENANT);
    const stored = event?.cancellation;
    const finishedBefore =
      stored?.state === 'DONE' && (input.finished || input.foundNothing) ? stored.finishedAt : null;
    const now = new Date().toISOString();
    const progress: EventCancellationProgress = {
      state: input.finished || finishedBefore ? 'DONE' : 'RUNNING',
      ...counts,
      failures: [...input.failures, ...refused.filter((failure) => !listed.has(failure.saleId))],
      startedAt: input.startedAt,
      updatedAt: now,
      finishedAt: finishedBefore ?? (input.finished ? now : null),
    };
    if (event) {
      event.cancellation = progress;
      await em.flush();
    }
    return progress;
  }

  /** When the event was cancelled (refusals and per-sale executions from then on are this cancellation's). */
  async function cancelledAtOf(eventId: string, fallback: string): Promise<Date> {
    const [row] = await deps.orm.em
      .fork()
      .execute<{ cancelled_at: Date | null }[]>('select cancelled_at from events where id = ?', [eventId]);
    return row?.cancelled_at ? new Date(row.cancelled_at) : new Date(fallback);
  }

  /** The next `limit` sales after `cursor` still PENDING or CONFIRMED, by id. */
  async function salesAfter(eventId: string, cursor: string | null, limit: number, since: Date) {
    return deps.orm.em.fork().execute<PageSaleRow[]>(
      `with ${REFUSED_SINCE_CTE}
       select s.id, s.reference, s.workspace_id, s.event_date_id, s.status, s.payment_provider, s.total,
              s.id in (select r.sale_id from refused r) as refused
         from sales s
        where s.workspace_id = (select workspace_id from events where id = ?) and s.event_id = ?
          and s.status in ('PENDING', 'CONFIRMED') and (?::uuid is null or s.id > ?::uuid)
        order by s.id limit ?`,
      [`{${REFUSAL_STATUSES.join(',')}}`, since, eventId, eventId, cursor, cursor, limit],
    );
  }

  return {
    /** Writes the event's progress for GET /events/{id}: counts by status now, and the sales given up on. */
    async recordEventCancellationProgress(input: {
      eventId: string;
      startedAt: string;
      finished: boolean;
      failures: EventCancellationProgress['failures'];
    }): Promise<EventCancellationProgress> {
      const since = await cancelledAtOf(input.eventId, input.startedAt);
      return writeProgress({ ...input, foundNothing: false, since });
    },

    /**
     * One page of the batched cancellation: undoes the next `pageSize` sales after `cursor` (by id) still PENDING
     * or CONFIRMED, `concurrency` at once, and writes the progress on the event. Heartbeats after every sale with the
     * cursor of the last chunk finished, so a retried page goes on from there.
     *
     * A chunk in which every refund found the gateway unavailable (and none went through) stops the page with the
     * cursor before it: the workflow waits and goes on from there, instead of walking the whole event through an
     * outage. A sale left behind otherwise (the gateway failed only it, or its own workflow still runs) is counted in
     * `left`, and the workflow makes another pass.
     */
    async undoNextSales(input: {
      eventId: string;
      reason: string;
      cursor: string | null;
      pageSize: number;
      concurrency: number;
      startedAt: string;
      failures: EventCancellationFailure[];
    }): Promise<UndoPageResult> {
      const context = Context.current();
      const resumed = context.info.heartbeatDetails as PageHeartbeat | undefined;
      const page: PageHeartbeat = resumed ?? { cursor: input.cursor, undone: 0, left: 0, failures: [] };
      const since = await cancelledAtOf(input.eventId, input.startedAt);
      let read = 0;
      let gatewayUnavailable = false;
      let reachedEnd = false;
      while (read < input.pageSize) {
        const chunk = await salesAfter(input.eventId, page.cursor, Math.min(CHUNK, input.pageSize - read), since);
        if (chunk.length === 0) {
          reachedEnd = true;
          break;
        }
        const outcomes = await mapConcurrently(chunk, input.concurrency, async (sale) => {
          const action = undoActionOf(sale);
          const outcome =
            action === 'refund' && !sale.refused
              ? await refundDirectly(sale, input.reason, since)
              : await undoThroughWorkflow(sale, action, input.reason, since);
          context.heartbeat(page);
          return outcome;
        });
        const tally = (kind: SaleOutcome['kind']) => outcomes.filter((outcome) => outcome.kind === kind).length;
        const unavailable = tally('unavailable');
        if (unavailable >= GATEWAY_DOWN_FAILURES && tally('refunded') === 0) {
          // Every refund of the chunk failed, for several payments: the gateway is down. Wait rather than walk on
          // through the outage (each sale walked past would cost a lock, a ticket update and a failed call).
          gatewayUnavailable = true;
          break;
        }
        page.undone += tally('refunded');
        page.left += unavailable + tally('in_flight');
        for (const outcome of outcomes) {
          if (outcome.kind === 'failed') page.failures.push(outcome.failure);
        }
        page.cursor = chunk[chunk.length - 1]?.id ?? page.cursor;
        read += chunk.length;
        context.heartbeat(page);
      }
      if (gatewayUnavailable) {
        context.log.warn('event cancellation: gateway unavailable, refunds wait', { eventId: input.eventId });
      }
      const known = new Set(input.failures.map((failure) => failure.saleId));
      const progress = await writeProgress({
        eventId: input.eventId,
        startedAt: input.startedAt,
        finished: false,
        foundNothing: reachedEnd && read === 0,
        failures: [...input.failures, ...page.failures.filter((failure) => !known.has(failure.saleId))],
        since,
      });
      return {
        cursor: reachedEnd ? null : page.cursor,
        undone: page.undone,
        left: page.left,
        gatewayUnavailable,
        failures: page.failures,
        progress: {
          pending: progress.pending,
          confirmed: progress.confirmed,
          cancelled: progress.cancelled,
          refunded: progress.refunded,
          abandoned: progress.abandoned,
          refused: progress.refused ?? 0,
        },
      };
    },

    /**
     * The reconciler's sweep of cancelled events: an event CANCELLED more than `marginMs` ago that still has sales
     * PENDING or paid through a gateway and CONFIRMED (other than refunds the gateway refused since; a complimentary
     * sale that cannot be cancelled holds no money and would restart it forever) and no cancellation running
     * gets its cancellation started again (a run the server terminated at the history limit, one that failed, one
     * that finished before a late payment confirmed a sale). The new run goes through the sales from the start;
     * nothing is refunded twice (see undoNextSales).
     */
    async resumeEventCancellations(input: {
      marginMs: number;
      limit: number;
      workspaceId: string | null;
    }): Promise<{ resumed: number; running: number; errors: number }> {
      const rows = await deps.orm.em.fork().execute<{ id: string; workspace_id: string }[]>(
        `select e.id, e.workspace_id from events e
          where e.status = 'CANCELLED' and e.cancelled_at < now() - (? * interval '1 millisecond')
            and (?::uuid is null or e.workspace_id = ?::uuid)
            and exists (
              select 1 from sales s where s.workspace_id = e.workspace_id and s.event_id = e.id
                 and (s.status = 'PENDING'
                      or (s.status = 'CONFIRMED' and s.payment_provider is not null and s.total > 0))
                 and not exists (select 1 from payment_attempts a where a.sale_id = s.id and a.kind = 'REFUND'
                                    and a.status = any(?::text[]) and a.created_at >= e.cancelled_at))
          order by e.cancelled_at limit ?`,
        [input.marginMs, input.workspaceId, input.workspaceId, `{${REFUSAL_STATUSES.join(',')}}`, input.limit],
      );
      let resumed = 0;
      let running = 0;
      let errors = 0;
      for (const row of rows) {
        try {
          const workflowId = eventCancellationWorkflowId(row.id);
          const status = await deps.temporal.workflow
            .getHandle(workflowId)
            .describe()
            .then((described) => described.status.name)
            .catch((error: unknown) => {
              if (error instanceof WorkflowNotFoundError) return null;
              throw error;
            });
          if (status === 'RUNNING') {
            running += 1;
            continue;
          }
          await deps.temporal.workflow.start<typeof eventCancellation>('eventCancellation', {
            workflowId,
            taskQueue: deps.env.TEMPORAL_TASK_QUEUE,
            args: [
              {
                eventId: row.id,
                workspaceId: row.workspace_id,
                reason: 'event_cancelled',
                finalSweepDelayMs: deps.env.EVENT_CANCELLATION_FINAL_SWEEP_MS,
              },
            ],
            typedSearchAttributes: [{ key: SA.workspaceId, value: row.workspace_id }],
            workflowIdConflictPolicy: 'USE_EXISTING',
            workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          });
          Context.current().log.warn('reconciler resumed an event cancellation with sales still to undo', {
            eventId: row.id,
            previous: status ?? 'none',
          });
          resumed += 1;
        } catch (error) {
          errors += 1;
          Context.current().log.error('event cancellation could not be resumed', {
            eventId: row.id,
            error: error instanceof Error ? error.message : String(error),
          });
        }
        Context.current().heartbeat();
      }
      return { resumed, running, errors };
    },
  };
}
export type EventCancellationActivities = ReturnType<typeof createEventCancellationActivities>;
