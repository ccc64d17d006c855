/**
 * Steps of the settlement workflow (`workflows/settlement.ts`) and its sweep (`workflows/settlement-sweep.ts`).
 * Each step is one transaction that locks the settlement row and changes it only from the status it expects, so a
 * retried or replayed step changes nothing. The money comes from `domain/settlement.ts` over the amounts stored on
 * each sale at sale time.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { saleReferenceFromBytes } from '../domain/codes.js';
import {
  allocationProblem,
  defaultAllocations,
  type PayoutAllocation,
  type SettledSale,
  type SettlementAdjustmentInput,
  type SettlementFigures,
  settlementFigures,
} from '../domain/settlement.js';
import { newId } from '../entities/ids.js';
import type { SettlementStatus } from '../entities/settlement.js';
import {
  PROOF_CONTENT_TYPES,
  PROOF_FILE_NAME_PATTERN,
  PROOF_MAX_BYTES,
  type RecordTransferRequest,
  type SettlementSweepInput,
  type SettlementSweepResult,
  type SettlementView,
  settlementStartOptions,
} from '../workflows/settlement-definitions.js';
import type { ActivityDeps } from './deps.js';
import { renderStatementPdf, statementFileName } from './settlement-statement.js';

const EDITABLE: readonly SettlementStatus[] = ['DRAFT', 'REVIEW'];

interface SettlementRow {
  id: string;
  workspace_id: string;
  reference: string;
  status: SettlementStatus;
  amount: number;
  currency: string;
  rejection_reason: string | null;
  allocations: PayoutAllocation[];
}

const refuse = (code: string, message: string, details: Record<string, unknown> = {}) =>
  ApplicationFailure.create({ type: code, message, nonRetryable: true, details: [details] });

const missingView = (): SettlementView => ({
  settlementId: null,
  reference: null,
  status: 'MISSING',
  amount: null,
  currency: null,
  rejectionReason: null,
  allocations: [],
  payoutAccounts: [],
  proofFileNames: [],
});

/** `ST-` + 8 unambiguous characters, the same alphabet as sale references. */
const settlementReference = (): string => `ST-${saleReferenceFromBytes(randomBytes(5)).slice(3)}`;

async function lockSettlement(tx: EntityManager, settlementId: string): Promise<SettlementRow> {
  const [row] = await tx.execute<SettlementRow[]>(
    `select id, workspace_id, reference, status, amount, currency, rejection_reason, allocations
       from settlements where id = ? for update`,
    [settlementId],
  );
  if (!row) throw refuse('NOT_FOUND', 'The settlement no longer exists', { settlementId });
  return row;
}

async function payoutAccounts(em: EntityManager, workspaceId: string) {
  const rows = await em.execute<Array<{ id: string; default_percentage: number }>>(
    `select id, default_percentage from payout_accounts where workspace_id = ? and active order by id`,
    [workspaceId],
  );
  return rows.map((row) => ({ id: row.id, defaultPercentage: row.default_percentage }));
}

async function viewOf(em: EntityManager, settlementId: string): Promise<SettlementView> {
  const [row] = await em.execute<SettlementRow[]>(
    `select id, workspace_id, reference, status, amount, currency, rejection_reason, allocations
       from settlements where id = ?`,
    [settlementId],
  );
  if (!row) return missingView();
  const proofs = await em.execute<Array<{ file_name: string }>>(
    `select file_name from settlement_files where settlement_id = ? and kind = 'PROOF' order by created_at, file_name`,
    [settlementId],
  );
  return {
    settlementId: row.id,
    reference: row.reference,
    status: row.status,
    amount: row.amount,
    currency: row.currency,
    rejectionReason: row.rejection_reason,
    allocations: row.allocations,
    payoutAccounts: await payoutAccounts(em, row.workspace_id),
    proofFileNames: proofs.map((proof) => proof.file_name),
  };
}

interface DateRow {
  id: string;
  workspace_id: string;
  event_id: string;
  event_name: string;
  starts_at: Date | string;
  currency: string;
}

/** The CONFIRMED sales of a date with their items, as stored at sale time. */
async function confirmedSales(tx: EntityManager, eventDateId: string): Promise<SettledSale[]> {
  const sales = await tx.execute<
    Array<{
      id: string;
      subtotal: number;
      discount_amount: number;
      service_fee: number;
      iva: number;
      total: number;
      organizer_service_fee: number;
      payment_provider: 'GATEWAY_A' | 'GATEWAY_B' | null;
    }>
  >(
    `select id, subtotal, discount_amount, service_fee, iva, total, organizer_service_fee, payment_provider
       from sales where event_date_id = ? and status = 'CONFIRMED' order by id`,
    [eventDateId],
  );
  const items = await tx.execute<
    Array<{ sale_id: string; ticket_type_id: string; ticket_type_name: string; quantity: number; unit_price: number }>
  >(
    `select i.sale_id, i.ticket_type_id, i.ticket_type_name, i.quantity, i.unit_price
       from sale_items i join sales s on s.id = i.sale_id
      where s.event_date_id = ? and s.status = 'CONFIRMED' order by i.sale_id, i.id`,
    [eventDateId],
  );
  const bySale = new Map<string, SettledSale['items']>();
  for (const item of items) {
    const list = bySale.get(item.sale_id) ?? [];
    list.push({
      ticketTypeId: item.ticket_type_id,
      ticketTypeName: item.ticket_type_name,
      quantity: item.quantity,
      unitPrice: item.unit_price,
    });
    bySale.set(item.sale_id, list);
  }
  return sales.map((sale) => {
    const saleItems = bySale.get(sale.id) ?? [];
    return {
      saleId: sale.id,
      quantity: saleItems.reduce((sum, item) => sum + item.quantity, 0),
      subtotal: sale.subtotal,
      discountAmount: sale.discount_amount,
      serviceFee: sale.service_fee,
      iva: sale.iva,
      total: sale.total,
      organizerServiceFee: sale.organizer_service_fee,
      paymentProvider: sale.payment_provider,
      items: saleItems,
    };
  });
}

/**
 * Refunds of sales that an earlier, already sent settlement of this workspace paid out become adjustments of
 * −(settled net), one per sale (unique), and this settlement claims every adjustment no settlement carries yet. The
 * claim is a conditional UPDATE, so two settlements computed at once never both carry one.
 */
async function claimAdjustments(
  tx: EntityManager,
  workspaceId: string,
  settlementId: string,
): Promise<SettlementAdjustmentInput[]> {
  const refunded = await tx.execute<Array<{ sale_id: string; settlement_id: string; net: number; reason: string }>>(
    `select ss.sale_id, ss.settlement_id, ss.net,
            'Refund of ' || s.reference || ' after ' || st.reference || ' was sent' as reason
       from settlement_sales ss
       join settlements st on st.id = ss.settlement_id
       join sales s on s.id = ss.sale_id
      where st.workspace_id = ? and st.id <> ? and st.status in ('SENT', 'AWAITING_PAYMENT', 'PAID')
        and s.status = 'REFUNDED'
        and not exists (select 1 from settlement_adjustments a where a.sale_id = ss.sale_id)`,
    [workspaceId, settlementId],
  );
  for (const each of refunded) {
    await tx.execute(
      `insert into settlement_adjustments
         (id, created_at, updated_at, workspace_id, sale_id, origin_settlement_id, applied_settlement_id, amount, reason)
       values (?, now(), now(), ?, ?, ?, null, ?, ?) on conflict (sale_id) do nothing`,
      [newId(), workspaceId, each.sale_id, each.settlement_id, -each.net, each.reason.slice(0, 200)],
    );
  }
  await tx.execute(
    `update settlement_adjustments set applied_settlement_id = ?, updated_at = now()
      where workspace_id = ? and applied_settlement_id is null`,
    [settlementId, workspaceId],
  );
  const carried = await tx.execute<Array<{ sale_id: string; amount: number; reason: string }>>(
    `select sale_id, amount, reason from settlement_adjustments where applied_settlement_id = ? order by id`,
    [settlementId],
  );
  return carried.map((row) => ({ saleId: row.sale_id, amount: row.amount, reason: row.reason }));
}

const isoOf = (value: Date | string): string => new Date(value).toISOString();

export function createSettlementActivities(deps: ActivityDeps) {
  const em = () => deps.orm.em.fork();

  return {
    /**
     * Creates or refreshes the settlement of an event date while it is still internal (DRAFT/REVIEW): figures from
     * the date's CONFIRMED sales and the adjustments it carries, the sales it pays out (settlement_sales). A
     * settlement already sent is returned as it is. `reason` (a rejection) records why and sends it back to DRAFT.
     */
    async computeSettlementDraft(input: {
      workspaceId: string;
      eventDateId: string;
      rejectionReason?: string | null;
    }): Promise<SettlementView> {
      const fork = em();
      const settlementId = await fork.transactional(async (tx) => {
        const [date] = await tx.execute<DateRow[]>(
          `select d.id, d.workspace_id, d.event_id, e.name as event_name, d.starts_at, w.currency
             from event_dates d join events e on e.id = d.event_id join workspaces w on w.id = d.workspace_id
            where d.id = ? and d.workspace_id = ?`,
          [input.eventDateId, input.workspaceId],
        );
        if (!date) return null;
        // Settlements of one workspace compute one at a time: each claims the adjustments no settlement carries yet.
        await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`settlement:${input.workspaceId}`]);
        const label = `${date.event_name} · ${isoOf(date.starts_at).slice(0, 10)}`.slice(0, 200);
        await tx.execute(
          `insert into settlements (id, created_at, updated_at, workspace_id, reference, label, status, event_id,
              event_date_id, amount, gross_amount, units_sold, currency, figures, allocations)
           values (?, now(), now(), ?, ?, ?, 'DRAFT', ?, ?, 0, 0, 0, ?, '{}', '[]')
           on conflict (event_date_id) do nothing`,
          [newId(), input.workspaceId, settlementReference(), label, date.event_id, date.id, date.currency],
        );
        const [row] = await tx.execute<Array<{ id: string; status: SettlementStatus }>>(
          'select id, status from settlements where event_date_id = ? for update',
          [date.id],
        );
        if (!row) throw new Error('settlement row vanished inside its transaction');
        if (!EDITABLE.includes(row.status)) return row.id;

        const sales = await confirmedSales(tx, date.id);
        const adjustments = await claimAdjustments(tx, input.workspaceId, row.id);
        const figures: SettlementFigures = settlementFigures(sales, adjustments);
        await tx.execute('delete from settlement_sales where settlement_id = ?', [row.id]);
        for (const sale of figures.perSale) {
          await tx.execute('insert into settlement_sales (settlement_id, sale_id, net) values (?, ?, ?)', [
            row.id,
            sale.saleId,
            sale.net,
          ]);
        }
        const rejected = input.rejectionReason !== undefined && input.rejectionReason !== null;
        await tx.execute(
          `update settlements set amount = ?, gross_amount = ?, units_sold = ?, figures = ?::jsonb, label = ?,
                  status = case when ? then 'DRAFT' else status end,
                  rejection_reason = case when ? then ? else rejection_reason end, updated_at = now()
            where id = ?`,
          [
            figures.netPayable,
            figures.gross,
            figures.unitsSold,
            JSON.stringify(figures),
            label,
            rejected,
            rejected,
            input.rejectionReason ?? null,
            row.id,
          ],
        );
        return row.id;
      });
      if (!settlementId) return missingView();
      return viewOf(fork, settlementId);
    },

    /** Renders the statement PDF from the stored figures and keeps it beside the settlement (one DOCUMENT). */
    async renderSettlementStatement(input: { settlementId: string }): Promise<{ fileName: string; byteSize: number }> {
      const fork = em();
      const [row] = await fork.execute<
        Array<{
          reference: string;
          label: string;
          status: SettlementStatus;
          currency: string;
          figures: SettlementFigures;
          event_name: string | null;
          starts_at: Date | string | null;
        }>
      >(
        `select st.reference, st.label, st.status, st.currency, st.figures, e.name as event_name, d.starts_at
           from settlements st left join events e on e.id = st.event_id left join event_dates d on d.id = st.event_date_id
          where st.id = ?`,
        [input.settlementId],
      );
      if (!row) throw refuse('NOT_FOUND', 'The settlement no longer exists', { settlementId: input.settlementId });
      const fileName = statementFileName(row.reference);
      // A sent statement is what the organizer received: it is never re-rendered.
      if (!EDITABLE.includes(row.status)) return { fileName, byteSize: 0 };
      const pdf = await renderStatementPdf({
        reference: row.reference,
        label: row.label,
        eventName: row.event_name,
        startsAt: row.starts_at ? isoOf(row.starts_at) : null,
        currency: row.currency,
        figures: row.figures,
        generatedAt: new Date(),
      });
      await fork.execute(
        `insert into settlement_files (id, settlement_id, kind, file_name, content_type, byte_size, sha256, content, created_at)
         values (?, ?, 'DOCUMENT', ?, 'application/pdf', ?, ?, ?, now())
         on conflict (settlement_id, kind, file_name) do update
           set content = excluded.content, byte_size = excluded.byte_size, sha256 = excluded.sha256,
               created_at = excluded.created_at`,
        [newId(), input.settlementId, fileName, pdf.length, createHash('sha256').update(pdf).digest('hex'), pdf],
      );
      return { fileName, byteSize: pdf.length };
    },

    /** DRAFT → REVIEW: the statement waits for an operator. */
    async enterSettlementReview(input: { settlementId: string }): Promise<SettlementView> {
      const fork = em();
      await fork.execute(
        `update settlements set status = 'REVIEW', updated_at = now() where id = ? and status = 'DRAFT'`,
        [input.settlementId],
      );
      return viewOf(fork, input.settlementId);
    },

    /**
     * REVIEW → SENT with the payout allocations (the operator's, else the accounts' defaults), checked again against
     * the workspace's active accounts under the row lock, since they may have changed after the update was accepted.
     */
    async sendSettlement(input: {
      settlementId: string;
      allocations: PayoutAllocation[] | null;
      notes: string | null;
    }): Promise<SettlementView> {
      const fork = em();
      await fork.transactional(async (tx) => {
        const row = await lockSettlement(tx, input.settlementId);
        // Already sent by an earlier attempt of this step: nothing left to do.
        if (!EDITABLE.includes(row.status)) return;
        const accounts = await payoutAccounts(tx, row.workspace_id);
        const allocations = input.allocations ?? defaultAllocations(accounts);
        const problem = allocationProblem(allocations, accounts);
        if (problem) {
          throw refuse('INVALID_ALLOCATIONS', 'The allocations cannot pay out this settlement', { reason: problem });
        }
        await tx.execute(
          `update settlements set status = 'SENT', sent_at = now(), allocations = ?::jsonb,
                  notes = coalesce(?, notes), updated_at = now()
            where id = ? and status in ('DRAFT', 'REVIEW')`,
          [JSON.stringify(allocations), input.notes, input.settlementId],
        );
      });
      return viewOf(fork, input.settlementId);
    },

    /** SENT → AWAITING_PAYMENT: the objection window passed, or an operator asked for the transfer now. */
    async requestSettlementPayment(input: { settlementId: string }): Promise<SettlementView> {
      const fork = em();
      await fork.execute(
        `update settlements set status = 'AWAITING_PAYMENT', requested_at = now(), updated_at = now()
          where id = ? and status = 'SENT'`,
        [input.settlementId],
      );
      return viewOf(fork, input.settlementId);
    },

    /**
     * Stores the bank transfer's proof and moves AWAITING_PAYMENT → PAID. The bytes must be what the content type
     * says (a PDF, PNG or JPEG signature), at most 1 MB; the same file name twice is the same proof.
     */
    async recordSettlementTransfer(input: { settlementId: string } & RecordTransferRequest): Promise<SettlementView> {
      const content = Buffer.from(input.contentBase64, 'base64');
      const problem = proofContentProblem(input, content);
      if (problem) throw refuse('INVALID_PROOF', 'The transfer proof cannot be stored', { reason: problem });
      const fork = em();
      await fork.transactional(async (tx) => {
        const row = await lockSettlement(tx, input.settlementId);
        if (row.status === 'PAID') return;
        if (row.status !== 'AWAITING_PAYMENT') {
          throw refuse('INVALID_STATE', `The settlement is ${row.status}, not AWAITING_PAYMENT`, {
            status: row.status,
          });
        }
        await tx.execute(
          `insert into settlement_files (id, settlement_id, kind, file_name, content_type, byte_size, sha256, content, created_at)
           values (?, ?, 'PROOF', ?, ?, ?, ?, ?, now()) on conflict (settlement_id, kind, file_name) do nothing`,
          [
            newId(),
            input.settlementId,
            input.fileName,
            input.contentType,
            content.length,
            createHash('sha256').update(content).digest('hex'),
            content,
          ],
        );
        await tx.execute(
          `update settlements set status = 'PAID', paid_at = now(), updated_at = now()
            where id = ? and status = 'AWAITING_PAYMENT'`,
          [input.settlementId],
        );
      });
      return viewOf(fork, input.settlementId);
    },

    /**
     * Starts the settlement of every event date that ended (endsAt, else startsAt) more than `endedAgoMs` ago, has a
     * CONFIRMED sale and no settlement yet. An execution already running for a date is left alone.
     */
    async startEndedSettlements(input: SettlementSweepInput): Promise<SettlementSweepResult> {
      const context = Context.current();
      const scope = input.workspaceId ? { sql: 'and d.workspace_id = ?', params: [input.workspaceId] } : null;
      const dates = await em().execute<Array<{ id: string; workspace_id: string }>>(
        `select d.id, d.workspace_id from event_dates d
          where coalesce(d.ends_at, d.starts_at) < ? ${scope?.sql ?? ''}
            and exists (select 1 from sales s where s.event_date_id = d.id and s.status = 'CONFIRMED')
            and not exists (select 1 from settlements st where st.event_date_id = d.id)
          order by coalesce(d.ends_at, d.starts_at) limit ?`,
        [new Date(Date.now() - input.endedAgoMs), ...(scope?.params ?? []), input.batchSize],
      );
      const result: SettlementSweepResult = { started: 0, alreadyRunning: 0, errors: 0 };
      for (const date of dates) {
        context.heartbeat();
        try {
          await deps.temporal.workflow.start(
            'settlement',
            settlementStartOptions(
              {
                workspaceId: date.workspace_id,
                eventDateId: date.id,
                objectionWindowMs: input.objectionWindowMs,
              },
              deps.env.TEMPORAL_TASK_QUEUE,
            ),
          );
          result.started += 1;
          context.log.info('settlement started', { what: 'settlement_started', eventDateId: date.id });
        } catch (error) {
          if (error instanceof WorkflowExecutionAlreadyStartedError) {
            result.alreadyRunning += 1;
            continue;
          }
          result.errors += 1;
          context.log.warn('settlement could not be started; the next run retries', {
            eventDateId: date.id,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }
      return result;
    },
  };
}

/** What is wrong with a proof's bytes, or null. The name and type rules are the update validator's too. */
export function proofContentProblem(request: RecordTransferRequest, content: Buffer): string | null {
  if (!PROOF_FILE_NAME_PATTERN.test(request.fileName) || request.fileName.includes('..')) return 'file_name';
  if (!(PROOF_CONTENT_TYPES as readonly string[]).includes(request.contentType)) return 'content_type';
  if (content.length === 0) return 'empty';
  if (content.length > PROOF_MAX_BYTES) return 'too_large';
  const signature: Record<string, number[]> = {
    'application/pdf': [0x25, 0x50, 0x44, 0x46, 0x2d],
    'image/png': [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
    'image/jpeg': [0xff, 0xd8, 0xff],
  };
  const expected = signature[request.contentType] ?? [];
  return expected.every((byte, index) => content[index] === byte) ? null : 'content_does_not_match_type';
}

export type SettlementActivities = ReturnType<typeof createSettlementActivities>;
