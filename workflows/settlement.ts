/**
 * Settlement: the payout statement of one ended event date, from its figures to the organizer's money.
 *
 * compute draft ─▶ render statement ─▶ REVIEW ──approve──▶ (recompute, re-render) SENT ──objection window passes──┐
 *   (CONFIRMED sales      (PDF kept        │  ▲                                         │   or requestPayment     │
 *    + carried refunds)    beside it)      └──┘ reject {reason}: recompute, REVIEW      ▼                         │
 *                                                                           AWAITING_PAYMENT ◀────────────────────┘
 *                                                                                   │ recordTransfer {proof}
 *                                                                                   ▼
 *                                                                                  PAID
 *
 * DRAFT and REVIEW are internal: the organizer sees the settlement from SENT on. Operators drive it with the updates
 * `approve`, `reject`, `requestPayment` and `recordTransfer` (Temporal UI, `temporal workflow update execute`, or
 * `npm run operator -- settlement …`); validators refuse an update that does not fit the current step before it
 * enters history. Every step is a database activity retried without a cap, so nothing fails the execution; a run
 * started again for a settlement already sent picks up where the row is.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  log,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlements.js';
import { allocationProblem, defaultAllocations } from '../domain/settlement.js';
import {
  type ApproveRequest,
  approveSettlementUpdate,
  DEFAULT_OBJECTION_WINDOW_MS,
  proofRequestProblem,
  REJECTION_REASON_MAX,
  type RecordTransferRequest,
  type RejectRequest,
  recordSettlementTransferUpdate,
  rejectSettlementUpdate,
  requestSettlementPaymentUpdate,
  type SettlementInput,
  type SettlementOutcome,
  type SettlementView,
  settlementStatusQuery,
} from './settlement-definitions.js';

/** Database steps: retried with backoff and no cap, so an outage delays a settlement and never fails it. */
const steps = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/** A refusal an update validator or handler answers with; `type` is the code the operator command prints. */
function refusal(code: string, message: string, details: Record<string, unknown> = {}) {
  return ApplicationFailure.create({ type: code, message, nonRetryable: true, details: [details] });
}

/** An activity's own refusal (bad allocations or proof found under the row lock) becomes the update's answer. */
function asRefusal(error: unknown): unknown {
  if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure) return error.cause;
  return error;
}

class SettlementRun {
  private view: SettlementView = {
    settlementId: null,
    reference: null,
    status: 'DRAFT',
    amount: null,
    currency: null,
    rejectionReason: null,
    allocations: [],
    payoutAccounts: [],
    proofFileNames: [],
  };
  /** An operator's update is being carried out; another one waits for it to finish or is refused. */
  private busy = false;

  constructor(private readonly input: SettlementInput) {}

  registerHandlers(): void {
    setHandler(settlementStatusQuery, () => this.view);
    setHandler(approveSettlementUpdate, (request) => this.operate(() => this.approve(request)), {
      validator: (request) => this.validateApproval(request),
    });
    setHandler(rejectSettlementUpdate, (request) => this.operate(() => this.reject(request)), {
      validator: (request) => {
        this.expect('REVIEW');
        const reason = typeof request?.reason === 'string' ? request.reason.trim() : '';
        if (reason.length === 0 || reason.length > REJECTION_REASON_MAX) {
          throw refusal('VALIDATION_FAILED', `reason is required (1–${REJECTION_REASON_MAX} characters)`, {
            fields: [{ field: 'reason', message: 'required, at most 1000 characters' }],
          });
        }
      },
    });
    setHandler(requestSettlementPaymentUpdate, () => this.operate(() => this.requestPayment()), {
      validator: () => this.expect('SENT'),
    });
    setHandler(recordSettlementTransferUpdate, (request) => this.operate(() => this.recordTransfer(request)), {
      validator: (request) => {
        this.expect('AWAITING_PAYMENT');
        const problem = proofRequestProblem(request);
        if (problem) throw refusal('INVALID_PROOF', 'The transfer proof cannot be stored', { reason: problem });
      },
    });
  }

  get status(): SettlementView['status'] {
    return this.view.status;
  }

  // ------------------------------------------------------------ the story's steps

  /** Figures from the date's CONFIRMED sales and carried refunds, the PDF beside them, then an operator's review. */
  async prepareForReview(rejectionReason: string | null = null): Promise<void> {
    this.view = await steps.computeSettlementDraft({
      workspaceId: this.input.workspaceId,
      eventDateId: this.input.eventDateId,
      rejectionReason,
    });
    const id = this.view.settlementId;
    if (id === null || (this.view.status !== 'DRAFT' && this.view.status !== 'REVIEW')) return;
    await steps.renderSettlementStatement({ settlementId: id });
    this.view = await steps.enterSettlementReview({ settlementId: id });
  }

  /** Waits in REVIEW until an operator approves (rejections recompute and stay in REVIEW). */
  async awaitApproval(): Promise<void> {
    await condition(() => this.view.status !== 'REVIEW' && !this.busy);
  }

  /** SENT waits out the objection window, unless an operator requests the transfer first. */
  async awaitObjectionWindow(): Promise<void> {
    const window = this.input.objectionWindowMs ?? DEFAULT_OBJECTION_WINDOW_MS;
    const moved = await condition(() => this.view.status !== 'SENT', window, { summary: 'objection window ends' });
    if (moved) return;
    await this.operate(() => this.requestPayment());
  }

  /** AWAITING_PAYMENT until an operator records the transfer with its proof. */
  async awaitTransfer(): Promise<void> {
    await condition(() => this.view.status === 'PAID' && !this.busy);
  }

  outcome(): SettlementOutcome {
    return { settlementId: this.view.settlementId, status: this.view.status };
  }

  // ------------------------------------------------------------ operator updates

  private async approve(request: ApproveRequest): Promise<SettlementView> {
    const id = this.requireId();
    // Recomputed and re-rendered first: a refund since the review is reflected in what the organizer receives.
    await this.prepareForReview();
    this.view = await steps.sendSettlement({
      settlementId: id,
      allocations: request?.allocations ?? null,
      notes: request?.notes ?? null,
    });
    log.info('settlement sent', { settlementId: id, amount: this.view.amount });
    return this.view;
  }

  private async reject(request: RejectRequest): Promise<SettlementView> {
    await this.prepareForReview(request.reason.trim());
    log.info('settlement rejected and recomputed', { settlementId: this.view.settlementId });
    return this.view;
  }

  private async requestPayment(): Promise<SettlementView> {
    if (this.view.status !== 'SENT') return this.view;
    this.view = await steps.requestSettlementPayment({ settlementId: this.requireId() });
    return this.view;
  }

  private async recordTransfer(request: RecordTransferRequest): Promise<SettlementView> {
    this.view = await steps.recordSettlementTransfer({ settlementId: this.requireId(), ...request });
    log.info('settlement paid', { settlementId: this.view.settlementId, proof: request.fileName });
    return this.view;
  }

  // ------------------------------------------------------------ helpers

  /**
   * One operator action at a time, each seeing the state the previous one left. The turn is taken before the first
   * await: two updates delivered in one activation run validator, handler, validator, handler, so the second
   * validator must already see the first one busy (with the wait first, both validators passed and both approved).
   * The workflow's own requestPayment at the end of the objection window waits for its turn instead.
   */
  private async operate(action: () => Promise<SettlementView>): Promise<SettlementView> {
    while (this.busy) await condition(() => !this.busy);
    this.busy = true;
    try {
      return await action();
    } catch (error) {
      throw asRefusal(error);
    } finally {
      this.busy = false;
    }
  }

  private expect(status: SettlementView['status']): void {
    if (this.busy || this.view.status !== status) {
      throw refusal('INVALID_STATE', `The settlement is ${this.busy ? 'busy' : this.view.status}, not ${status}`, {
        status: this.view.status,
        busy: this.busy,
      });
    }
  }

  private validateApproval(request: ApproveRequest): void {
    this.expect('REVIEW');
    const allocations = request?.allocations ?? defaultAllocations(this.view.payoutAccounts);
    if (!Array.isArray(allocations)) throw refusal('INVALID_ALLOCATIONS', 'allocations must be a list');
    const problem = allocationProblem(allocations, this.view.payoutAccounts);
    if (problem) {
      throw refusal('INVALID_ALLOCATIONS', 'The allocations cannot pay out this settlement', {
        reason: problem,
        payoutAccounts: this.view.payoutAccounts,
      });
    }
  }

  private requireId(): string {
    if (this.view.settlementId === null) throw refusal('NOT_FOUND', 'The settlement has no row');
    return this.view.settlementId;
  }
}

export async function settlement(input: SettlementInput): Promise<SettlementOutcome> {
  const run = new SettlementRun(input);
  run.registerHandlers();

  await run.prepareForReview();
  if (run.status === 'MISSING') return run.outcome();
  if (run.status === 'REVIEW') await run.awaitApproval();
  if (run.status === 'SENT') await run.awaitObjectionWindow();
  if (run.status === 'AWAITING_PAYMENT') await run.awaitTransfer();

  await condition(allHandlersFinished);
  return run.outcome();
}
