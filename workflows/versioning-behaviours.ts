/**
 * How each workflow type moves between worker deployment versions (WORKER_VERSIONING=true; ignored otherwise).
 *
 * PINNED: the execution runs on the version it started on until it closes; a new release never replays it, so its
 * code may change freely (no `patched` needed for executions started after the release). Everything a buyer or an
 * organizer waits on, bounded in time: checkouts (the late-payment grace included), sale cancellations, refunds,
 * purchase sessions, event cancellations, and the short scheduled or one-shot runs.
 *
 * AUTO_UPGRADE: the execution moves to the deployment's current version on its next workflow task and is replayed by
 * the new code, so every change of its commands must go behind `patched()`. Those that live longer than a release:
 * memberships (a period, up to a year), settlements (weeks of objection window), and the ticket mailer's and webhook
 * dispatcher's endless continue-as-new loops (pinned, they would hold the first version forever).
 */
import type { VersioningBehavior } from '@temporalio/common';
import type * as workflows from './index.js';

export const VERSIONING_BEHAVIOURS = {
  checkout: 'PINNED',
  cancellation: 'PINNED',
  refund: 'PINNED',
  purchaseSession: 'PINNED',
  eventCancellation: 'PINNED',
  buyerSignIn: 'PINNED',
  healthProbe: 'PINNED',
  organizerAccountEmail: 'PINNED',
  reconciler: 'PINNED',
  settlementSweep: 'PINNED',
  ticketResend: 'PINNED',
  webhookDelivery: 'PINNED',
  membership: 'AUTO_UPGRADE',
  settlement: 'AUTO_UPGRADE',
  ticketMailer: 'AUTO_UPGRADE',
  webhookDispatcher: 'AUTO_UPGRADE',
} as const satisfies Record<keyof typeof workflows, VersioningBehavior>;
