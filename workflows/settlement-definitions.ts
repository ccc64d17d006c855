/**
 * Names, ids and payload types of the settlement workflows (`workflows/settlement.ts`, `workflows/settlement-sweep.ts`),
 * shared with the activities, the operator command and the API. Free of I/O, so every side imports it.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { SettlementAllocation, SettlementStatus } from '../entities/settlement.js';
import { SA } from './definitions.js';

export type { SettlementAllocation, SettlementStatus };

/** One execution per ended event date: a retried start, the sweep and the operator all land on the same one. */
export const settlementWorkflowId = (workspaceId: string, eventDateId: string): string =>
  `settlement/${workspaceId}/${eventDateId}`;

/** Three days for the organizer to object to a sent statement before the transfer is requested. */
export const DEFAULT_OBJECTION_WINDOW_MS = 3 * 24 * 60 * 60_000;

export interface SettlementInput {
  workspaceId: string;
  eventDateId: string;
  /** How long a SENT statement waits for objections before it moves to AWAITING_PAYMENT by itself. */
  objectionWindowMs?: number;
}

/** What an operator (or the API) reads about a running settlement: query `status` and every update's answer. */
export interface SettlementView {
  settlementId: string | null;
  reference: string | null;
  status: SettlementStatus | 'MISSING';
  /** Net payable, signed minor units. */
  amount: number | null;
  currency: string | null;
  rejectionReason: string | null;
  allocations: SettlementAllocation[];
  /** The workspace's active payout accounts and their default shares, which approve's allocations must name. */
  payoutAccounts: Array<{ id: string; defaultPercentage: number }>;
  proofFileNames: string[];
}

export interface ApproveRequest {
  /** Whole percents summing to 100 over the workspace's payout accounts; default: the accounts' own shares. */
  allocations?: SettlementAllocation[];
  notes?: string;
}

export interface RejectRequest {
  reason: string;
}

export interface RecordTransferRequest {
  fileName: string;
  contentType: string;
  contentBase64: string;
}

/** Proofs are what a bank hands out: a PDF receipt or a screenshot. */
export const PROOF_CONTENT_TYPES = ['application/pdf', 'image/png', 'image/jpeg'] as const;
export const PROOF_MAX_BYTES = 1024 * 1024;
/** A plain name, so it can be matched exactly and served back without any path meaning. */
export const PROOF_FILE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$/;
export const REJECTION_REASON_MAX = 1000;

export const settlementStatusQuery = defineQuery<SettlementView>('status');
/** REVIEW → SENT: recomputes and re-renders the statement first, so a late refund is reflected. */
export const approveSettlementUpdate = defineUpdate<SettlementView, [ApproveRequest]>('approve');
/** REVIEW → (recomputed) REVIEW with the operator's reason recorded. */
export const rejectSettlementUpdate = defineUpdate<SettlementView, [RejectRequest]>('reject');
/** SENT → AWAITING_PAYMENT without waiting for the objection window. */
export const requestSettlementPaymentUpdate = defineUpdate<SettlementView, []>('requestPayment');
/** AWAITING_PAYMENT → PAID with the transfer's proof file. */
export const recordSettlementTransferUpdate = defineUpdate<SettlementView, [RecordTransferRequest]>('recordTransfer');

export interface SettlementOutcome {
  settlementId: string | null;
  status: SettlementStatus | 'MISSING';
}

// ---------------------------------------------------------------- sweep

/** The Schedule that runs the sweep; `temporal schedule trigger --schedule-id settlement-sweep` runs it now. */
export const SETTLEMENT_SWEEP_SCHEDULE_ID = 'settlement-sweep';
export const SETTLEMENT_SWEEP_WORKFLOW_ID = 'settlement-sweep';

export interface SettlementSweepInput {
  /** A date is settled once it ended (endsAt, else startsAt) at least this long ago: late payments settle first. */
  endedAgoMs: number;
  /** At most this many settlements started per run; the rest wait for the next run. */
  batchSize: number;
  /** Only this workspace's dates (tests, or an operator settling one organizer); null sweeps every workspace. */
  workspaceId: string | null;
  /** Passed to every settlement the run starts. */
  objectionWindowMs: number;
}

export const DEFAULT_SETTLEMENT_SWEEP_INPUT: SettlementSweepInput = {
  endedAgoMs: 6 * 60 * 60_000,
  batchSize: 100,
  workspaceId: null,
  objectionWindowMs: DEFAULT_OBJECTION_WINDOW_MS,
};

export interface SettlementSweepResult {
  /** Settlement executions started by this run. */
  started: number;
  /** Dates whose settlement was already running (started by an operator or an earlier run). */
  alreadyRunning: number;
  errors: number;
}

/** Start options of a settlement execution, the same from the sweep and the operator command. */
export function settlementStartOptions(input: SettlementInput, taskQueue: string) {
  return {
    workflowId: settlementWorkflowId(input.workspaceId, input.eventDateId),
    taskQueue,
    args: [input] as [SettlementInput],
    typedSearchAttributes: [
      { key: SA.workspaceId, value: input.workspaceId },
      { key: SA.eventDateId, value: input.eventDateId },
    ],
  };
}

/**
 * What is wrong with a transfer proof before its bytes are read (name, type, size from the base64 length), or null.
 * Workflow-safe: the update validator refuses these before anything enters history.
 */
export function proofRequestProblem(request: RecordTransferRequest): string | null {
  if (typeof request.fileName !== 'string' || !PROOF_FILE_NAME_PATTERN.test(request.fileName)) return 'file_name';
  // Served back by exact name only, but a name that reads like a parent path is refused outright.
  if (request.fileName.includes('..')) return 'file_name';
  if (!(PROOF_CONTENT_TYPES as readonly string[]).includes(request.contentType)) return 'content_type';
  const base64 = request.contentBase64;
  if (typeof base64 !== 'string' || base64.length === 0) return 'empty';
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64) || base64.length % 4 !== 0) return 'not_base64';
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return (base64.length / 4) * 3 - padding > PROOF_MAX_BYTES ? 'too_large' : null;
}
