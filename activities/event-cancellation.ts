import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { SaleStatus } from '../domain/sale-state.js';
import { Event, type EventCancellationProgress } from '../entities/event.js';
import type { cancellation } from '../workflows/cancellation.js';
import {
  type CancellationResult,
  cancellationWorkflowId,
  type RefundResult,
  refundWorkflowId,
  saleSearchAttributes,
} from '../workflows/definitions.js';
import type { SaleToUndo, SaleUndoAction, SaleUndoState } from '../workflows/event-cancellation-definitions.js';
import type { refund } from '../workflows/refund.js';
import type { ActivityDeps } from './deps.js';

const ANY_TENANT = { filters: { tenant: false, notDeleted: false } } as const;
/** Sales undone per pass: bounds the work (and gateway calls) between two progress updates. */
const UNDO_BATCH = 50;

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

export function createEventCancellationActivities(deps: ActivityDeps) {
  async function loadSale(saleId: string): Promise<SaleRow | null> {
    const rows = await deps.orm.em
      .fork()
      .execute<SaleRow[]>(
        'select id, reference, workspace_id, event_date_id, status, payment_provider, total from sales where id = ?',
        [saleId],
      );
    return rows[0] ?? null;
  }

  /** Reads how a finished execution ended; null when it is still running or never ran. */
  async function closedResult<T>(
    workflowId: string,
  ): Promise<{ running: true } | { running: false; result: T } | null> {
    const handle = deps.temporal.workflow.getHandle(workflowId);
    try {
      const described = await handle.describe();
      if (described.status.name === 'RUNNING') return { running: true };
      if (described.status.name !== 'COMPLETED') return null;
      return { running: false, result: (await handle.result()) as T };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return null;
      throw error;
    }
  }

  return {
    /**
     * The next sales of the event still holding stock or money (PENDING, or CONFIRMED), minus those already given up
     * on, oldest first.
     */
    async findSalesToUndo(input: { eventId: string; skip: string[] }): Promise<SaleToUndo[]> {
      const rows = await deps.orm.em.fork().execute<SaleRow[]>(
        `select id, reference, workspace_id, event_date_id, status, payment_provider, total from sales
          where event_id = ? and status in ('PENDING', 'CONFIRMED') and not (id = any(?::uuid[]))
          order by id limit ?`,
        [input.eventId, `{${input.skip.join(',')}}`, UNDO_BATCH],
      );
      return rows.map((row) => ({ saleId: row.id, reference: row.reference, action: undoActionOf(row) }));
    },

    /**
     * Starts the sale's cancellation or refund workflow, or reports on the one already running or finished. The ids
     * are the organizer's own (`cancellation/<saleId>`, `refund/<saleId>`), so an undo the organizer already asked
     * for is joined, never repeated: a sale is refunded once whoever asks.
     *
     * `startedBefore` says this event's cancellation already started that execution: a finished one then reports its
     * outcome. Otherwise a finished execution is the organizer's earlier attempt, and a new one starts.
     */
    async undoSale(input: {
      saleId: string;
      action: SaleUndoAction;
      reason: string;
      startedBefore: boolean;
    }): Promise<SaleUndoState> {
      const sale = await loadSale(input.saleId);
      if (!sale || (sale.status !== 'PENDING' && sale.status !== 'CONFIRMED')) return { state: 'done' };
      const workflowId = input.action === 'refund' ? refundWorkflowId(sale.id) : cancellationWorkflowId(sale.id);
      const previous = await closedResult<RefundResult | CancellationResult>(workflowId);
      if (previous && 'result' in previous && input.startedBefore) {
        const outcome = previous.result;
        if (outcome.ok) return { state: 'done' };
        if (input.action === 'cancel' && MOVED_ON.has(outcome.code)) return { state: 'done' };
        return { state: 'failed', code: outcome.code, message: outcome.message };
      }
      if (previous?.running) return { state: 'running' };
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
        if (input.action === 'refund') {
          // The whole event is off: tickets already scanned at the door are refunded too.
          await deps.temporal.workflow.start<typeof refund>('refund', {
            ...common,
            args: [{ saleId: sale.id, reason: input.reason, force: true, notifyBuyer: true }],
          });
        } else {
          await deps.temporal.workflow.start<typeof cancellation>('cancellation', {
            ...common,
            args: [{ saleId: sale.id, acknowledgeOpenPayment: true, reason: input.reason }],
          });
        }
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
      return { state: 'started' };
    },

    /** Writes the event's progress for GET /events/{id}: counts by status now, and the sales given up on. */
    async recordEventCancellationProgress(input: {
      eventId: string;
      startedAt: string;
      finished: boolean;
      failures: EventCancellationProgress['failures'];
    }): Promise<EventCancellationProgress> {
      const em = deps.orm.em.fork();
      const counts = await em.execute<{ status: SaleStatus; count: string }[]>(
        'select status, count(*) as count from sales where event_id = ? group by status',
        [input.eventId],
      );
      const count = (status: SaleStatus) => Number(counts.find((row) => row.status === status)?.count ?? 0);
      const now = new Date().toISOString();
      const progress: EventCancellationProgress = {
        state: input.finished ? 'DONE' : 'RUNNING',
        pending: count('PENDING'),
        confirmed: count('CONFIRMED'),
        cancelled: count('CANCELLED'),
        refunded: count('REFUNDED'),
        abandoned: count('ABANDONED'),
        failures: input.failures,
        startedAt: input.startedAt,
        updatedAt: now,
        finishedAt: input.finished ? now : null,
      };
      const event = await em.findOne(Event, { id: input.eventId }, ANY_TENANT);
      if (event) {
        event.cancellation = progress;
        await em.flush();
      }
      return progress;
    },
  };
}
export type EventCancellationActivities = ReturnType<typeof createEventCancellationActivities>;
