/**
 * Names, ids and payload types shared by the API (which starts, updates and signals workflows) and the workflows
 * themselves. Free of I/O, so both sides import it; workflow-ID helpers go both ways.
 */
import { defineSearchAttributeKey, type SearchAttributePair, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PaymentVerdict } from '../domain/payment-verdict.js';
import type { SaleStatus } from '../domain/sale-state.js';

export const TASK_QUEUE_DEFAULT = 'ticketing';

/**
 * The queue of provider calls no buyer waits on (refunds, polls and last asks), named after the queue of the execution
 * that schedules them. Its worker is rate-limited to the providers' request limits (PROVIDER_ACTIVITIES_PER_SECOND), so
 * a flood of refunds or membership polls neither trips the gateway's throttle nor takes the slots checkouts need.
 */
export const providerTaskQueueOf = (taskQueue: string): string => `${taskQueue}-providers`;

/** Search attributes the worker registers at start-up; operators find executions by them in the Temporal UI. */
export const SEARCH_ATTRIBUTES = {
  SaleReference: 'Keyword',
  WorkspaceId: 'Keyword',
  EventDateId: 'Keyword',
  SaleStatus: 'Keyword',
  Gateway: 'Keyword',
} as const;

export const healthProbeWorkflowId = (probeId: string): string => `health-probe/${probeId}`;

export interface HealthProbeResult {
  workerIdentity: string;
  databaseTime: string;
}

export const healthProbeStatusQuery = defineQuery<'running' | 'done'>('status');

// ---------------------------------------------------------------- checkout

export const checkoutWorkflowId = (saleId: string): string => `checkout/${saleId}`;
export const saleIdFromCheckoutWorkflowId = (workflowId: string): string | null =>
  workflowId.startsWith('checkout/') ? workflowId.slice('checkout/'.length) : null;

export type Gateway = 'GATEWAY_A' | 'GATEWAY_B';

/** Durations are inputs so tests run the whole life of a sale in seconds; the API enforces the 10-minute floor. */
export interface CheckoutInput {
  saleId: string;
  /** How long to keep listening for a late payment after the sale left PENDING unpaid. */
  latePaymentGraceMs: number;
  /** How long to wait for the reserve update before giving up on an execution that was started by mistake. */
  reserveTimeoutMs?: number;
  /**
   * First interval of the pull schedule: while a payment attempt is open the checkout asks the gateway for the
   * sale's payments this often, doubling up to five minutes. Default 30 s.
   */
  paymentPollMs?: number;
  /** First wait before re-reading a payment being refunded, doubling up to ten minutes. Default 5 s. */
  refundCheckMs?: number;
  /**
   * Started again by a gateway notification after this sale's first execution had closed (signal-with-start):
   * the run reads the sale's state instead of waiting for a reservation, then handles the payment.
   */
  resumeAfterClose?: boolean;
  /**
   * The card charge runs as a task-queue activity only, never first as a local activity (LOCAL_CARD_CHARGE): set by
   * the API when CARD_CHARGE_LOCAL is false (a gateway whose answers take longer than the local attempt's bound, or a
   * same-run comparison in the bench). Executions started without it take the local attempt once patched.
   */
  cardChargeOnTaskQueue?: boolean;
  /**
   * How long the local card charge may take, retries included, before the same call goes to the task queue
   * (default 5 s); an input so simulations run with short bounds.
   */
  localCardChargeTimeoutMs?: number;
  /**
   * Patches (workflows/checkout-patches.ts) the execution has from its start: it never asks `patched` for them, so its
   * history holds no marker and no TemporalChangeVersion update for them (two events and a visibility write each).
   * Executions started without it ask `patched` as they ran. Accepted and ignored for the development-era names an
   * API of an older build still sends: the launch baseline runs their paths unconditionally.
   */
  patchesInForce?: readonly string[];
}

/**
 * The boolean input options every checkout started now opts into (and `patchesInForce` when a patch joins
 * CHECKOUT_PATCHES_IN_FORCE). None at the launch baseline: the development-era options (`ticketsByMailer`,
 * `stepsTakeTurns`, `leanCardPurchase`) are the checkout's only path, and an input that still carries them (an API of
 * an older build) is read without them. With WORKER_VERSIONING, starters send only the options the current version
 * publishes (config/worker-versioning.ts).
 */
export const CHECKOUTS_STARTED_NOW = {} as const satisfies Partial<CheckoutInput>;

/**
 * A card charge's answer as the sale's payment history records it (the CARD attempt, one per gateway payment), with the
 * idempotency key the charge was sent with (`requestKey`).
 */
export function cardChargeAttempt(
  saleId: string,
  payment: { id: string; status: string; statusDetail: string | null; amount: number },
  requestKey: string,
) {
  return {
    saleId,
    gateway: 'GATEWAY_A' as const,
    kind: 'CARD' as const,
    providerPaymentId: payment.id,
    status: payment.status,
    statusDetail: payment.statusDetail,
    amount: payment.amount,
    dedupeKey: `card:${payment.id}`,
    requestKey,
    note: null,
  };
}

export interface BuyerDetails {
  name: string;
  phone: string | null;
  idType: string | null;
  idNumber: string | null;
  nitDigit: string | null;
}

/** One line of an order: a ticket type of the order's date, its units and, for a numbered type, one seat per unit. */
export interface ReserveItem {
  ticketTypeId: string;
  quantity: number;
  seats: string[] | null;
}

export interface ReserveRequest {
  origin: 'CUSTOMER' | 'PUBLIC' | 'ORGANIZER';
  channel: 'WEB' | 'MOBILE' | 'POS' | 'ADMIN';
  /** Workspace pinned by the caller's API key, if any: the date must belong to it. */
  pinnedWorkspaceId: string | null;
  eventDateId: string;
  /** The order's first item (the only one, for callers that sell one item); see `items`. */
  ticketTypeId: string;
  quantity: number;
  seats: string[] | null;
  /**
   * Every item of the order, all of one event date, each ticket type once; the first repeats ticketTypeId,
   * quantity and seats. Absent from one-item requests and from histories recorded before orders had several
   * items: `reserveItemsOf` reads those as their single item.
   */
  items?: ReserveItem[];
  holdToken: string | null;
  discountCode: string | null;
  buyerId: string | null;
  buyerEmail: string;
  buyer: BuyerDetails;
  returnUrl: string | null;
  /** Organizer sales (complimentary, POS) are confirmed at once without a gateway. */
  confirmImmediately: boolean;
  complimentary: boolean;
  /** Payment window override in ms (tests); otherwise the date's paymentWindowMinutes. */
  paymentWindowMs: number | null;
  /** The API checked the buyer's virtual-queue turn for this date (X-Queue-Token). */
  queueTurnAdmitted?: boolean;
  /** Set by the checkout, not the caller: a sale confirmed at once owes its ticket email to the ticket mailer. */
  queueTicketEmail?: boolean;
}

/** The items of a reservation, whichever shape it was sent in (one-item requests and old histories carry none). */
export function reserveItemsOf(
  request: Pick<ReserveRequest, 'ticketTypeId' | 'quantity' | 'seats' | 'items'>,
): ReserveItem[] {
  if (request.items && request.items.length > 0) return request.items;
  return [{ ticketTypeId: request.ticketTypeId, quantity: request.quantity, seats: request.seats }];
}

export type ReserveRejection = {
  ok: false;
  code:
    | 'NOT_FOUND'
    | 'NOT_AVAILABLE'
    | 'SALE_CLOSED'
    | 'EXTERNAL_SALE'
    | 'MEMBERS_ONLY'
    | 'ORDER_REJECTED'
    | 'VALIDATION_FAILED'
    | 'SEAT_NOT_AVAILABLE'
    | 'HOLD_TOKEN_MISMATCH'
    | 'PURCHASE_SESSION_EXPIRED'
    | 'QUEUE_REQUIRED'
    | 'MIXED_CURRENCY';
  reason: string;
  message: string;
  details?: Record<string, unknown>;
};

export interface ReservedSale {
  ok: true;
  saleId: string;
  reference: string;
  workspaceId: string;
  eventDateId: string;
  status: SaleStatus;
  free: boolean;
  total: number;
  currency: string;
  /** Epoch ms; null once confirmed (free or complimentary). */
  expiresAtMs: number | null;
  /** Numbered seats held at the seat-map provider: booked on confirmation, released when the sale ends unpaid. */
  seated?: boolean;
  /** The gateway payment that paid the sale, once confirmed. Absent in histories recorded before it existed. */
  paymentRef?: string | null;
}

export type ReserveResult = ReservedSale | ReserveRejection;

/** The reservation as the reserve step answers it, from the sale's row; pure, so the API and activities share it. */
export function reservedSaleOf(sale: {
  id: string;
  reference: string;
  workspace: string;
  eventDate: string;
  status: SaleStatus;
  total: number;
  currency: string;
  expiresAt?: Date | null;
  paymentRef?: string | null;
}): ReservedSale {
  return {
    ok: true,
    saleId: sale.id,
    reference: sale.reference,
    workspaceId: sale.workspace,
    eventDateId: sale.eventDate,
    status: sale.status,
    free: sale.total === 0 && sale.status === 'CONFIRMED',
    total: sale.total,
    currency: sale.currency,
    expiresAtMs: sale.status === 'PENDING' && sale.expiresAt ? sale.expiresAt.getTime() : null,
    paymentRef: sale.paymentRef ?? null,
  };
}

export const reserveUpdate = defineUpdate<ReserveResult, [ReserveRequest]>('reserve');

/**
 * Failure type of a step whose data the database refuses whatever the number of tries (a NUL byte, a value out of
 * range, a check violation; see activities/db-errors.ts). The API answers it with 422, not 503.
 */
export const DATABASE_REJECTED_FAILURE = 'DatabaseRejected';

export type PaymentConfiguration =
  | { gateway: 'GATEWAY_A'; publicKey: string; amount: number; currency: string; reference: string; payerEmail: string }
  | {
      gateway: 'GATEWAY_B';
      orderId: string;
      amount: number;
      currency: string;
      apiKey: string;
      integritySignature: string;
      renderMode: string;
      redirectionUrl: string;
      description: string;
      expirationDate: number;
    };

export type PaymentUnavailable = { ok: false; code: 'PAYMENT_UNAVAILABLE'; reason: string; message: string };

export const openPaymentUpdate = defineUpdate<
  { ok: true; configuration: PaymentConfiguration } | PaymentUnavailable,
  []
>('openPayment');

export interface CardChargeRequest {
  cardToken: string;
  paymentMethodId: string | null;
  installments: number;
}

export interface CardChargeResult {
  ok: true;
  paymentId: string;
  paymentStatus: string;
  statusDetail: string | null;
  declineCode: string | null;
  saleStatus: SaleStatus;
}

export const chargeCardUpdate = defineUpdate<CardChargeResult | PaymentUnavailable, [CardChargeRequest]>('chargeCard');

/** What the buyer may pay with at gateway A's page: PSE only (the customer PSE rail) or card or PSE (storefront). */
export type GatewayAPageMethods = 'pse' | 'card_or_pse';

/** Opens a gateway A checkout page for the sale and answers its address; `methods` absent means PSE only. */
export const openPseUpdate = defineUpdate<
  { ok: true; redirectUrl: string } | PaymentUnavailable,
  [{ bankCode: string | null; methods?: GatewayAPageMethods }]
>('openPse');

/** A gateway told us something about this sale's payment. The workflow re-reads the payment before believing it. */
export interface PaymentNotification {
  gateway: Gateway;
  /** Gateway A payment id, or gateway B's transaction id when known. */
  providerPaymentId: string | null;
  /** Gateway B reports by order (= sale reference) and event type. */
  eventType: string | null;
  receivedAtMs: number;
  /** Provider event id, for deduplicating repeated deliveries. */
  dedupeKey: string;
  /**
   * What the gateway's own record of the payment says, when the sender has just read it from the gateway's API (the
   * gateway A route re-reads every notification before waking the checkout): judged as is, not read a second time.
   */
  verdict?: PaymentVerdict;
}

export const paymentNotificationSignal = defineSignal<[PaymentNotification]>('paymentNotification');

/**
 * "Ask the gateway now": pull reconciliation on demand. Sent by a buyer reading a PENDING sale with an open payment
 * attempt (rate limited by the API) and by the reconciler; the checkout searches the gateway for payments of the
 * sale's reference and treats what it finds exactly like a notification.
 */
export const checkPaymentSignal = defineSignal<[{ source: 'buyer' | 'reconciler' | 'operator' }]>('checkPayment');

/**
 * Another process moved a sale the checkout has already settled (refund workflow → REFUNDED, organizer cancel of a
 * complimentary sale → CANCELLED). The checkout's phase, query and SaleStatus search attribute follow, so the
 * database, the execution and the Temporal UI say the same. Sending it to a checkout that has finished is harmless.
 */
export const saleStatusChangedSignal = defineSignal<[{ status: SaleStatus; source: string }]>('saleStatusChanged');

/**
 * An operator's "try that refused refund again" (scripts/operator.ts `refunds-refused retry`): the checkout parked a
 * refund the gateway kept refusing (PaymentAttempt REFUND `refund_refused`) and gives it another round of tries.
 * `providerPaymentId` names one parked refund; null retries every refund the execution holds parked.
 */
export const retryRefusedRefundSignal =
  defineSignal<[{ providerPaymentId: string | null; operator: string }]>('retryRefusedRefund');

/** Refusals in a row after which a refund is recorded `refund_refused` and parked for an operator. */
export const REFUND_REFUSALS_BEFORE_PARKING = 5;

export type ReleaseReason = 'buyer_release' | 'organizer_cancel';
export interface ReleaseRequest {
  reason: ReleaseReason;
  acknowledgeOpenPayment: boolean;
}
export type ReleaseResult =
  | { ok: true; saleStatus: SaleStatus }
  | {
      ok: false;
      code: 'INVALID_STATE' | 'SALE_ALREADY_CHECKED_IN' | 'SALE_PAID_AT_GATEWAY' | 'OPEN_PAYMENT_CONFIRMATION_REQUIRED';
      message: string;
    };

export const releaseUpdate = defineUpdate<ReleaseResult, [ReleaseRequest]>('release');

export type CheckoutPhase =
  | 'awaiting_reservation'
  | 'rejected'
  | 'reserved'
  | 'confirmed'
  | 'abandoned'
  | 'cancelled'
  | 'refunded';

export interface CheckoutStatus {
  phase: CheckoutPhase;
  saleId: string;
  reference: string | null;
  expiresAtMs: number | null;
  gateway: Gateway | null;
  lateListeningUntilMs: number | null;
}

export const checkoutStatusQuery = defineQuery<CheckoutStatus>('status');

/** Default grace period during which a late payment still confirms or is refunded. */
export const DEFAULT_LATE_PAYMENT_GRACE_MS = 24 * 60 * 60 * 1000;

/** Typed keys for the search attributes above, used by the workflows (upsert) and operators' queries. */
export const SA = {
  saleReference: defineSearchAttributeKey('SaleReference', SearchAttributeType.KEYWORD),
  workspaceId: defineSearchAttributeKey('WorkspaceId', SearchAttributeType.KEYWORD),
  eventDateId: defineSearchAttributeKey('EventDateId', SearchAttributeType.KEYWORD),
  saleStatus: defineSearchAttributeKey('SaleStatus', SearchAttributeType.KEYWORD),
  gateway: defineSearchAttributeKey('Gateway', SearchAttributeType.KEYWORD),
};

/**
 * Set when a cancellation or refund execution starts, so an operator finds it in the Temporal UI by the sale; the
 * workflow overwrites SaleStatus with the status it ends with.
 */
export const saleSearchAttributes = (sale: {
  reference: string;
  workspace: string;
  eventDate: string;
  status: SaleStatus;
}): SearchAttributePair[] => [
  { key: SA.saleReference, value: sale.reference },
  { key: SA.workspaceId, value: sale.workspace },
  { key: SA.eventDateId, value: sale.eventDate },
  { key: SA.saleStatus, value: sale.status },
];

// ---------------------------------------------------------------- buyer sign-in

export const buyerSignInWorkflowId = (requestId: string): string => `buyer-sign-in/${requestId}`;

/** The code is created and mailed inside one activity, so the plaintext code never enters workflow history. */
export interface BuyerSignInInput {
  email: string;
  codeTtlMs: number;
  /** signInRequester of the asking client (a hash, never the address); absent in histories made before it existed. */
  requestedBy?: string;
}

// ---------------------------------------------------------------- sales operations (cancel, refund, tickets, webhooks)

export const cancellationWorkflowId = (saleId: string): string => `cancellation/${saleId}`;
export const saleIdFromCancellationWorkflowId = (workflowId: string): string | null =>
  workflowId.startsWith('cancellation/') ? workflowId.slice('cancellation/'.length) : null;

export interface CancellationInput {
  saleId: string;
  /** The caller sent acknowledge_open_payment: true (contract part 3, rule 3). */
  acknowledgeOpenPayment: boolean;
  /** Free text kept as the sale's failureReason. */
  reason: string | null;
}

export type CancellationRejectionCode =
  | 'NOT_FOUND'
  | 'INVALID_STATE'
  | 'SALE_ALREADY_CHECKED_IN'
  | 'SALE_PAID_AT_GATEWAY'
  | 'OPEN_PAYMENT_CONFIRMATION_REQUIRED'
  | 'REFUND_REQUIRED';

export type CancellationResult =
  | { ok: true; saleStatus: SaleStatus; changed: boolean }
  | { ok: false; code: CancellationRejectionCode; message: string; details: Record<string, unknown> };

export const refundWorkflowId = (saleId: string): string => `refund/${saleId}`;
export const saleIdFromRefundWorkflowId = (workflowId: string): string | null =>
  workflowId.startsWith('refund/') ? workflowId.slice('refund/'.length) : null;

export interface RefundInput {
  saleId: string;
  reason: string;
  /** No longer read: refunds go through with used tickets. Kept so executions recorded with it still decode. */
  force?: boolean;
  notifyBuyer: boolean;
}

export type RefundResult =
  | {
      ok: true;
      saleStatus: SaleStatus;
      /** False when the sale was already refunded: nothing was sent to the gateway again. */
      changed: boolean;
      gateway: Gateway | null;
      refundId: string | null;
      gatewayStatus: string | null;
    }
  | {
      ok: false;
      code: 'NOT_FOUND' | 'SALE_NOT_REFUNDABLE' | 'SALE_ALREADY_CHECKED_IN';
      message: string;
      details: Record<string, unknown>;
    };

/** Where a refund is; the refund route answers 202 with this while the gateway has not confirmed yet. */
export type RefundPhase = 'checking' | 'refunding_at_gateway' | 'recording' | 'done' | 'rejected' | 'failed';
export const refundStatusQuery = defineQuery<{ phase: RefundPhase; gatewayAttempts: number }>('refundStatus');

export const ticketResendWorkflowId = (ticketId: string): string => `ticket-resend/${ticketId}`;

export const WEBHOOK_DISPATCHER_WORKFLOW_ID = 'webhook-dispatcher';

export interface TicketMailerInput {
  /** How long one mailing activity keeps sending and looking for queued emails before it returns (a long poll). */
  pollWindowMs: number;
}

/** One ticket mailer per task queue: its activity sends with the mail settings of that queue's workers. */
export const ticketMailerWorkflowId = (taskQueue: string): string => `ticket-mailer/${taskQueue}`;
export const webhookDeliveryWorkflowId = (webhookId: string, eventId: string): string =>
  `webhook/${webhookId}/${eventId}`;
export const idsFromWebhookDeliveryWorkflowId = (workflowId: string): { webhookId: string; eventId: string } | null => {
  const match = /^webhook\/([^/]+)\/([^/]+)$/.exec(workflowId);
  return match?.[1] && match[2] ? { webhookId: match[1], eventId: match[2] } : null;
};

export interface WebhookDispatcherInput {
  /** How long one dispatch activity waits for new outbox rows before returning (a long poll). */
  pollWindowMs: number;
}

/**
 * Moves the running dispatcher to another task queue: it continues as new there after its current poll. A worker
 * sends it at start-up when it finds the dispatcher on a queue other than the webhooks queue it serves (a dispatcher
 * started before deliveries had a queue of their own, or after the queue was renamed).
 */
export const moveWebhookDispatcherSignal = defineSignal<[{ taskQueue: string }]>('moveToTaskQueue');

export interface WebhookDeliveryInput {
  webhookId: string;
  eventId: string;
  /** Attempts including the first; waits double from initialIntervalMs up to maxIntervalMs. */
  maxAttempts: number;
  initialIntervalMs: number;
  maxIntervalMs: number;
}

export interface WebhookAttemptResult {
  outcome: 'delivered' | 'failed' | 'skipped';
  /** HTTP status as text, or why no status: timeout, connection_error, blocked_address, redirect_not_followed… */
  status: string;
  /** False when another attempt cannot help (blocked address, endpoint paused, deleted or deactivated). */
  retryable: boolean;
}

export interface WebhookDeliveryResult {
  outcome: 'delivered' | 'failed' | 'skipped';
  attempts: number;
  lastStatus: string;
}

// ---------------------------------------------------------------- purchase session

/**
 * One execution per buyer owns the buyer's live purchase session, its hold token and its timer (contract part 3:
 * one live session per buyer). A buyer is one account across workspaces, so a session opened in one workspace
 * supersedes the live one of another.
 */
export const purchaseSessionWorkflowId = (buyerId: string): string => `purchase-session/${buyerId}`;

export interface PurchaseSessionInput {
  /** The workspace of the session the execution opened last (its WorkspaceId search attribute). */
  workspaceId: string;
  buyerId: string;
  /** How long the execution waits for a new session once none is live before it ends. */
  idleMs?: number;
  /**
   * Updates one run handles before it continues as new, so a buyer who keeps reopening the map never grows a history
   * past Temporal's limits (the server's own suggestion also triggers it). Default 500; tests pass a few.
   */
  continueAsNewAfter?: number;
  /** What the previous run handed over when it continued as new. */
  carried?: PurchaseSessionCarriedState;
}

/** A session as one run hands it to the next: its view, its order lease and whether its hold token is still ours. */
export interface CarriedPurchaseSession extends Omit<PurchaseSessionView, 'busy'> {
  busyUntilMs: number;
  /** The execution still has to see this token expired (false once queued for expiry or handed to an order). */
  tokenOwned: boolean;
}

export interface PurchaseSessionCarriedState {
  /** Oldest first, so the next run forgets the same ones first. */
  sessions: CarriedPurchaseSession[];
  currentId: string | null;
  /** Hold tokens whose expiry at the provider has not succeeded yet. */
  toExpire: string[];
  lastActivityMs: number;
}

export type PurchaseSessionState = 'ACTIVE' | 'ORDERED' | 'RELEASED' | 'EXPIRED' | 'SUPERSEDED';

export interface PurchaseSessionView {
  id: string;
  state: PurchaseSessionState;
  eventDateId: string;
  holdToken: string;
  expiresAtMs: number;
  busy: boolean;
}

export type PurchaseSessionCode =
  | 'PURCHASE_SESSION_REQUIRED'
  | 'PURCHASE_SESSION_SUPERSEDED'
  | 'PURCHASE_SESSION_EXPIRED'
  | 'PURCHASE_SESSION_BUSY';

export type PurchaseSessionRefusal = { ok: false; code: PurchaseSessionCode; reason: string; message: string };
export type PurchaseSessionClaim = { ok: true; session: PurchaseSessionView } | PurchaseSessionRefusal;

export const openPurchaseSessionUpdate = defineUpdate<
  PurchaseSessionView,
  [
    {
      sessionId: string;
      eventDateId: string;
      expiresInMinutes: number;
      /** The event date's workspace; absent in updates sent before sessions were per buyer. */
      workspaceId?: string;
    },
  ]
>('openPurchaseSession');
/**
 * Takes the session for one order (sessionId null: the buyer's live session, if any). A second claim while the
 * first is in flight is refused (BUSY); the claim lapses by itself after `leaseMs`.
 */
export const claimPurchaseSessionUpdate = defineUpdate<
  PurchaseSessionClaim,
  [{ sessionId: string | null; eventDateId: string; leaseMs: number }]
>('claimPurchaseSession');
/**
 * Ends a claim: `ordered` makes the session the one that created an order (ORDERED) and hands its hold token to the
 * order's checkout (the session no longer expires it), unless the order used no seats.
 */
export const finishPurchaseSessionOrderUpdate = defineUpdate<
  void,
  [
    {
      sessionId: string;
      ordered: boolean;
      /**
       * false: the order took no seats, so its checkout does not take the session's hold token (general admission).
       * Absent in updates sent before general-admission orders moved their session to ORDERED: read as true.
       */
      holdTokenUsed?: boolean;
      /** The order's reservation deadline (null: nothing to pay); the ORDERED session's expiry follows it. */
      orderExpiresAtMs?: number | null;
    },
  ]
>('finishPurchaseSessionOrder');
export const releasePurchaseSessionUpdate = defineUpdate<PurchaseSessionClaim, [{ sessionId: string }]>(
  'releasePurchaseSession',
);
export const purchaseSessionQuery = defineQuery<PurchaseSessionView | null, [string]>('purchaseSession');

// ---------------------------------------------------------------- reconciler

/** The Schedule that runs the reconciler; an operator runs it now with `temporal schedule trigger --schedule-id reconciler`. */
export const RECONCILER_SCHEDULE_ID = 'reconciler';
/** Scheduled runs are `reconciler-<scheduled time>`; tests and operators start runs under ids of their own. */
export const RECONCILER_WORKFLOW_ID_PREFIX = 'reconciler';

/** Margins keep the reconciler off what a live checkout is still doing; a run fixes only what stayed broken past them. */
export interface ReconcilerInput {
  /**
   * A PENDING sale counts as overdue once its deadline passed this long ago, an approved payment as stranded once
   * recorded this long ago, and a closed sale is asked about once closed this long ago.
   */
  marginMs: number;
  /** Sales closed unpaid longer ago than this are no longer asked about at the gateway. */
  closedLookbackMs: number;
  /** At most this many items per sweep and run; the rest wait for the next run. */
  batchSize: number;
  /** Only this workspace's sales (tests, or an operator re-checking one organizer); null sweeps every workspace. */
  workspaceId: string | null;
}

export const DEFAULT_RECONCILER_INPUT: ReconcilerInput = {
  marginMs: 2 * 60_000,
  closedLookbackMs: 48 * 60 * 60_000,
  batchSize: 200,
  workspaceId: null,
};

/** What one run fixed; `errors` counts items (or whole sweeps) that failed and are retried by the next run. */
export interface ReconcilerCounts {
  /** Overdue PENDING sales without a running checkout, handed back to their checkout to be closed. */
  expiredPendingClosed: number;
  /** Approved payments with neither a confirmed sale nor a refund, handed to their sale's checkout. */
  unresolvedPaymentsResolved: number;
  /** Sales closed unpaid after a payment was opened, asked about at their gateway. */
  closedSalesChecked: number;
  /** Approved payments those gateways hold that we had no record of (lost notifications): handed to the checkout. */
  lateMoneyFound: number;
  errors: number;
}
