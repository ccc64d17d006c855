/**
 * Operator command for the internal steps of settlements (docs/operations.md "Settlement operator steps"). It reads Postgres to find a
 * settlement and talks to its workflow `settlement/<workspaceId>/<eventDateId>` through updates, exactly what the
 * Temporal UI's "Send update" and `temporal workflow update execute` do.
 *
 *   npm run operator -- settlement list [--status review] [--workspace <id>] [--limit 50]
 *   npm run operator -- settlement show <id|reference>
 *   npm run operator -- settlement approve <id|reference> [--allocations acc1=60,acc2=40] [--notes "…"]
 *   npm run operator -- settlement reject <id|reference> --reason "…"
 *   npm run operator -- settlement request-payment <id|reference>
 *   npm run operator -- settlement record-transfer <id|reference> --proof ./transfer.pdf
 *   npm run operator -- settlement start <eventDateId> [--objection-window-ms 259200000]
 *   npm run operator -- refunds-refused list [--limit 100]
 *   npm run operator -- refunds-refused retry <saleId|membershipPaymentId>
 *   npm run operator -- payout-accounts add --workspace <id> --holder "…" --bank "…" --last4 1234 --percentage 100
 *   npm run operator -- payout-accounts list [--workspace <id>]
 *   npm run operator -- enterprise …   (enterprise SSO integrations: scripts/operator-enterprise.ts)
 *   npm run operator -- reconciler refunds-overdue | adjustments-unapplied …   (scripts/operator-reconciler.ts)
 *
 * Exit codes: 0 done, 1 refused or failed (the reason is printed), 2 usage error.
 */
import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MikroORM } from '@mikro-orm/postgresql';
import { type Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { Command, CommanderError } from 'commander';
import { refundsRefused } from '../api/reports/refunds-refused.js';
import {
  addPayoutAccount,
  listPayoutAccounts,
  NewPayoutAccount,
  type PayoutAccountView,
} from '../api/services/payout-accounts.js';
import { type Env, loadEnv } from '../config/env.js';
import { connectTemporalClient } from '../config/temporal.js';
import { workflowRefusal } from '../config/workflow-refusals.js';
import { isUuid } from '../entities/ids.js';
import { initOrm } from '../entities/orm.js';
import { SETTLEMENT_STATUSES, type SettlementAllocation, type SettlementStatus } from '../entities/settlement.js';
import {
  checkoutWorkflowId,
  type RefundInput,
  refundWorkflowId,
  retryRefusedRefundSignal,
} from '../workflows/definitions.js';
import { membershipWorkflowId } from '../workflows/membership-definitions.js';
import {
  type ApproveRequest,
  approveSettlementUpdate,
  recordSettlementTransferUpdate,
  rejectSettlementUpdate,
  requestSettlementPaymentUpdate,
  type SettlementView,
  settlementStartOptions,
  settlementStatusQuery,
  settlementWorkflowId,
} from '../workflows/settlement-definitions.js';

export interface OperatorDeps {
  orm: MikroORM;
  /** Needed by the settlement and refund commands only; payout accounts are database rows. */
  temporal?: Client;
  env: Pick<Env, 'TEMPORAL_TASK_QUEUE' | 'SETTLEMENT_OBJECTION_WINDOW_MS'>;
  print(line: string): void;
}

class UsageError extends Error {}

function temporalOf(deps: OperatorDeps): Client {
  if (!deps.temporal) throw new Error('this command needs Temporal');
  return deps.temporal;
}

const USAGE = `usage: npm run operator -- settlement <command> …
  list [--status <status>] [--workspace <id>] [--limit <n>]
  show <id|reference>
  approve <id|reference> [--allocations <accountId>=<percent>,…] [--notes <text>]
  reject <id|reference> --reason <text>
  request-payment <id|reference>
  record-transfer <id|reference> --proof <file.pdf|.png|.jpg>
  start <eventDateId> [--objection-window-ms <ms>]
usage: npm run operator -- refunds-refused <command> …
  list [--limit <n>]
  retry <saleId|membershipPaymentId>
usage: npm run operator -- payout-accounts <command> …
  add --workspace <id> --holder <name> --bank <name> --last4 <digits> --percentage <n>
  list [--workspace <id>]
usage: npm run operator -- reconciler <command> …
  refunds-overdue [--workspace <id>] [--older-than-minutes <n>] [--limit <n>]
  adjustments-unapplied [--workspace <id>] [--limit <n>]`;

const PROOF_TYPES: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
};

/** `acc1=60,acc2=40` → allocations; percentages must be whole numbers (the workflow checks the rest). */
export function parseAllocations(text: string): SettlementAllocation[] {
  return text.split(',').map((part) => {
    const [bankAccountId, percent] = part.split('=');
    const percentage = Number(percent);
    if (!bankAccountId || !percent || !Number.isInteger(percentage)) {
      throw new UsageError(`--allocations: "${part}" is not <accountId>=<whole percent>`);
    }
    return { bankAccountId: bankAccountId.trim(), percentage };
  });
}

interface Row {
  id: string;
  workspace_id: string;
  event_date_id: string | null;
  reference: string;
  label: string;
  status: SettlementStatus;
  amount: number;
  currency: string;
  created_at: string | Date;
}

async function findSettlement(orm: MikroORM, idOrReference: string | undefined): Promise<Row> {
  if (!idOrReference) throw new UsageError('name the settlement by id or reference');
  const byReference = /^ST-/i.test(idOrReference);
  const [row] = await orm.em.fork().execute<Row[]>(
    `select id, workspace_id, event_date_id, reference, label, status, amount, currency, created_at
         from settlements where ${byReference ? 'reference = upper(?)' : 'id::text = ?'}`,
    [idOrReference],
  );
  if (!row) throw new Error(`no settlement ${idOrReference}`);
  if (!row.event_date_id) throw new Error(`settlement ${row.reference} has no event date (it was deleted)`);
  return row;
}

const line = (row: Row) =>
  [row.id, row.reference, row.status.padEnd(16), `${row.amount} ${row.currency}`.padEnd(16), row.label].join('  ');

function describeView(view: SettlementView): string {
  return JSON.stringify(view, null, 2);
}

/** Refund attempts (REFUND `refund_refused`) of a sale, each with the dedupe key that says which process owns it. */
interface RefusedSaleRefund {
  dedupe_key: string | null;
  provider_payment_id: string | null;
}

/** Refund requests the organizer's refund workflow records (activities/sales-ops.ts prepareRefund). */
const ORGANIZER_REFUND_PREFIX = 'refund-request:';

/**
 * `refunds-refused list` and `retry`. A refund the gateway refused for good is parked where it was refused: a
 * checkout waits for the `retryRefusedRefund` signal (no timer), a membership likewise; the organizer's refund
 * workflow ended with `refund_refused`, so its retry is a new refund execution.
 */
async function listRefusedRefunds(deps: OperatorDeps, limit: number): Promise<number> {
  const { print } = deps;
  const rows = await refundsRefused(deps.orm.em.fork(), { workspaceId: null, limit });
  for (const row of rows) {
    print(
      [
        'sale',
        row.saleId,
        row.reference,
        row.saleStatus.padEnd(10),
        `${row.total} ${row.currency}`.padEnd(16),
        row.gateway,
        row.providerPaymentId ?? '-',
        row.refundReason ?? '-',
        row.requestedAt,
        row.note ?? '',
      ].join('  '),
    );
  }
  const memberships = await deps.orm.em.fork().execute<
    Array<{
      id: string;
      reference: string;
      amount: number;
      currency: string;
      gateway: string;
      provider_payment_id: string | null;
      updated_at: Date | string;
    }>
  >(
    `select id, reference, amount, currency, gateway, provider_payment_id, updated_at
         from membership_payments where status = 'REFUND_REFUSED' order by updated_at desc limit ?`,
    [limit],
  );
  for (const row of memberships) {
    print(
      [
        'membership',
        row.id,
        row.reference,
        'REFUND_REFUSED',
        `${row.amount} ${row.currency}`.padEnd(16),
        row.gateway,
        row.provider_payment_id ?? '-',
        new Date(row.updated_at).toISOString(),
      ].join('  '),
    );
  }
  if (rows.length === 0 && memberships.length === 0) print('no refused refunds');
  return 0;
}

/** A refused refund asked again: through the execution that parked it, or a new refund execution. */
async function retryRefusedRefund(deps: OperatorDeps, id: string): Promise<number> {
  const { print } = deps;
  const operator = process.env.USER ?? 'operator';
  if (!id || !/^[0-9a-f-]{36}$/i.test(id)) throw new UsageError('retry needs a sale id or a membership payment id');
  const em = deps.orm.em.fork();
  const refused = await em.execute<RefusedSaleRefund[]>(
    `select dedupe_key, provider_payment_id from payment_attempts
        where sale_id = ? and kind = 'REFUND' and status = 'refund_refused'`,
    [id],
  );
  if (refused.length > 0) {
    for (const refund of refused) {
      if (refund.dedupe_key?.startsWith(ORGANIZER_REFUND_PREFIX)) {
        // The organizer's refund ended refused (the sale stayed CONFIRMED): a new execution asks the gateway again.
        // Its first step counts the retry and marks the request owed again (activities/sales-ops.ts prepareRefund),
        // so this retry asks under a key of its own while a duplicate of it joins the same execution and key.
        const args: [RefundInput] = [
          { saleId: id, reason: 'retried by an operator after a refusal', notifyBuyer: true },
        ];
        await temporalOf(deps).workflow.start('refund', {
          workflowId: refundWorkflowId(id),
          taskQueue: deps.env.TEMPORAL_TASK_QUEUE,
          args,
          workflowIdConflictPolicy: 'USE_EXISTING',
        });
        print(`sale ${id}: refund started again (${refundWorkflowId(id)})`);
        continue;
      }
      await temporalOf(deps)
        .workflow.getHandle(checkoutWorkflowId(id))
        .signal(retryRefusedRefundSignal, { providerPaymentId: refund.provider_payment_id, operator });
      print(`sale ${id}: refund of payment ${refund.provider_payment_id ?? '(order)'} retried by its checkout`);
    }
    return 0;
  }
  const [payment] = await em.execute<
    Array<{ workspace_id: string; buyer_id: string; provider_payment_id: string | null }>
  >(
    `select p.workspace_id, s.buyer_id, p.provider_payment_id
         from membership_payments p join membership_subscriptions s on s.id = p.subscription_id
        where p.id = ? and p.status = 'REFUND_REFUSED'`,
    [id],
  );
  if (!payment) throw new Error(`no refused refund for sale or membership payment ${id}`);
  await temporalOf(deps)
    .workflow.getHandle(membershipWorkflowId(payment.workspace_id, payment.buyer_id))
    .signal(retryRefusedRefundSignal, { providerPaymentId: payment.provider_payment_id, operator });
  print(`membership payment ${id}: refund retried by its membership`);
  return 0;
}

/** The outcome of the command an action ran: the exit code it sets. */
interface Outcome {
  code: number;
}

const positiveInteger = (label: string, fallback: number) => (value: string | undefined) => {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0) throw new UsageError(`${label} must be a positive whole number`);
  return parsed;
};

/** `payout-accounts add` and `list`: the rules are api/services/payout-accounts.ts. */
function payoutAccountCommands(program: Command, deps: OperatorDeps, outcome: Outcome) {
  const { print } = deps;
  const accounts = program
    .command('payout-accounts')
    .description("where a workspace's settlements are paid; approval needs active accounts summing to 100 %");
  accounts
    .command('add')
    .description('add an active payout account to a workspace')
    .requiredOption('--workspace <id>', 'the workspace id')
    .requiredOption('--holder <name>', 'account holder, as the bank knows it')
    .requiredOption('--bank <name>', 'bank name')
    .requiredOption('--last4 <digits>', 'last 4 digits of the account number (the full number is never stored)')
    .requiredOption('--percentage <n>', "default share of each payout, whole percent (the workspace's total ≤ 100)")
    .action(async (options: { workspace: string; holder: string; bank: string; last4: string; percentage: string }) => {
      const parsed = NewPayoutAccount.safeParse({
        workspaceId: options.workspace,
        holderName: options.holder,
        bankName: options.bank,
        accountLast4: options.last4,
        defaultPercentage: Number(options.percentage),
      });
      if (!parsed.success) {
        const flags: Record<string, string> = {
          workspaceId: '--workspace',
          holderName: '--holder',
          bankName: '--bank',
          accountLast4: '--last4',
          defaultPercentage: '--percentage',
        };
        throw new UsageError(
          parsed.error.issues.map((issue) => `${flags[String(issue.path[0])] ?? ''} ${issue.message}`).join('; '),
        );
      }
      const result = await addPayoutAccount(deps.orm.em.fork(), parsed.data);
      if (!result.ok) {
        print(`refused: ${result.reason}: ${result.message}`);
        outcome.code = 1;
        return;
      }
      print(`added ${payoutLine(result.account)}`);
      if (result.totalPercentage < 100) {
        print(
          `the workspace's active accounts take ${result.totalPercentage} %: settlements need 100 % to be approved`,
        );
      }
      outcome.code = 0;
    });
  accounts
    .command('list')
    .description("a workspace's payout accounts (every workspace's without --workspace)")
    .option('--workspace <id>', 'the workspace id')
    .action(async (options: { workspace?: string }) => {
      if (options.workspace !== undefined && !isUuid(options.workspace)) {
        throw new UsageError('--workspace must be a workspace id');
      }
      const rows = await listPayoutAccounts(deps.orm.em.fork(), options.workspace ?? null);
      for (const row of rows) print(payoutLine(row));
      if (rows.length === 0) print('no payout accounts');
      outcome.code = 0;
    });
}

const payoutLine = (row: PayoutAccountView) =>
  [
    row.id,
    row.workspaceId,
    `${row.defaultPercentage} %`.padEnd(6),
    row.active ? 'active  ' : 'inactive',
    `****${row.accountLast4}`,
    row.bankName,
    row.holderName,
  ].join('  ');

/** `settlement …`: reads Postgres to find a settlement and talks to its workflow through updates. */
function settlementCommands(program: Command, deps: OperatorDeps, outcome: Outcome) {
  const { print } = deps;
  const handleOf = (row: Row) =>
    temporalOf(deps).workflow.getHandle(settlementWorkflowId(row.workspace_id, row.event_date_id as string));
  const update = async (row: Row, send: (handle: ReturnType<typeof handleOf>) => Promise<SettlementView>) => {
    const view = await send(handleOf(row));
    print(`${view.reference}: ${view.status} (${view.amount} ${view.currency})`);
    outcome.code = 0;
  };
  const settlement = program.command('settlement').description('the internal steps of settlements');
  settlement
    .command('list')
    .option('--status <status>', `one of ${SETTLEMENT_STATUSES.join(', ')}`)
    .option('--workspace <id>')
    .option('--limit <n>', 'at most this many', '50')
    .action(async (options: { status?: string; workspace?: string; limit: string }) => {
      const status = options.status?.toUpperCase();
      if (status && !(SETTLEMENT_STATUSES as readonly string[]).includes(status)) {
        throw new UsageError(`--status must be one of ${SETTLEMENT_STATUSES.join(', ')}`);
      }
      const limit = positiveInteger('--limit', 50)(options.limit);
      const workspace = options.workspace;
      const rows = await deps.orm.em.fork().execute<Row[]>(
        `select id, workspace_id, event_date_id, reference, label, status, amount, currency, created_at
           from settlements where (?::text is null or status = ?) and (?::text is null or workspace_id::text = ?)
          order by id desc limit ?`,
        [status ?? null, status ?? null, workspace ?? null, workspace ?? null, limit],
      );
      for (const row of rows) print(line(row));
      if (rows.length === 0) print('no settlements');
      outcome.code = 0;
    });
  settlement
    .command('show')
    .argument('<idOrReference>')
    .action(async (idOrReference: string) => {
      const row = await findSettlement(deps.orm, idOrReference);
      print(line(row));
      try {
        print(describeView(await handleOf(row).query(settlementStatusQuery)));
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
        print('(no workflow execution: start it again with `settlement start <eventDateId>`)');
      }
      outcome.code = 0;
    });
  settlement
    .command('approve')
    .argument('<idOrReference>')
    .option('--allocations <list>', '<accountId>=<percent>,…')
    .option('--notes <text>')
    .action(async (idOrReference: string, options: { allocations?: string; notes?: string }) => {
      const row = await findSettlement(deps.orm, idOrReference);
      const request: ApproveRequest = {
        ...(options.allocations ? { allocations: parseAllocations(options.allocations) } : {}),
        ...(options.notes ? { notes: options.notes } : {}),
      };
      await update(row, (handle) => handle.executeUpdate(approveSettlementUpdate, { args: [request] }));
    });
  settlement
    .command('reject')
    .argument('<idOrReference>')
    .requiredOption('--reason <text>')
    .action(async (idOrReference: string, options: { reason: string }) => {
      const row = await findSettlement(deps.orm, idOrReference);
      await update(row, (handle) =>
        handle.executeUpdate(rejectSettlementUpdate, { args: [{ reason: options.reason }] }),
      );
    });
  settlement
    .command('request-payment')
    .argument('<idOrReference>')
    .action(async (idOrReference: string) => {
      const row = await findSettlement(deps.orm, idOrReference);
      await update(row, (handle) => handle.executeUpdate(requestSettlementPaymentUpdate, { args: [] }));
    });
  settlement
    .command('record-transfer')
    .argument('<idOrReference>')
    .requiredOption('--proof <file>', '.pdf, .png or .jpg')
    .action(async (idOrReference: string, options: { proof: string }) => {
      const row = await findSettlement(deps.orm, idOrReference);
      const contentType = PROOF_TYPES[extname(options.proof).toLowerCase()];
      if (!contentType) throw new UsageError('--proof must be a .pdf, .png or .jpg file');
      const content = await readFile(options.proof);
      const request = { fileName: basename(options.proof), contentType, contentBase64: content.toString('base64') };
      await update(row, (handle) => handle.executeUpdate(recordSettlementTransferUpdate, { args: [request] }));
    });
  settlement
    .command('start')
    .argument('<eventDateId>')
    .option('--objection-window-ms <ms>')
    .action(async (eventDateId: string, options: { objectionWindowMs?: string }) => {
      const [date] = await deps.orm.em
        .fork()
        .execute<Array<{ id: string; workspace_id: string }>>(
          'select id, workspace_id from event_dates where id::text = ?',
          [eventDateId],
        );
      if (!date) throw new Error(`no event date ${eventDateId}`);
      const window = Number(options.objectionWindowMs ?? deps.env.SETTLEMENT_OBJECTION_WINDOW_MS);
      if (!Number.isInteger(window) || window < 1000) throw new UsageError('--objection-window-ms must be ≥ 1000');
      const input = { workspaceId: date.workspace_id, eventDateId: date.id, objectionWindowMs: window };
      const workflowId = settlementWorkflowId(input.workspaceId, input.eventDateId);
      try {
        await temporalOf(deps).workflow.start(
          'settlement',
          settlementStartOptions(input, deps.env.TEMPORAL_TASK_QUEUE),
        );
        print(`started ${workflowId}`);
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        print(`already running ${workflowId}`);
      }
      outcome.code = 0;
    });
}

function refundsRefusedCommands(program: Command, deps: OperatorDeps, outcome: Outcome) {
  const refunds = program.command('refunds-refused').description('refunds a gateway refused for good');
  refunds
    .command('list')
    .option('--limit <n>', 'at most this many', '100')
    .action(async (options: { limit: string }) => {
      outcome.code = await listRefusedRefunds(deps, positiveInteger('--limit', 100)(options.limit));
    });
  refunds
    .command('retry')
    .argument('<saleIdOrMembershipPaymentId>')
    .action(async (id: string) => {
      outcome.code = await retryRefusedRefund(deps, id);
    });
}

/** The operator's commands, parsed by commander; a new program per run, so no state carries between runs. */
function operatorProgram(deps: OperatorDeps, outcome: Outcome): Command {
  const program = new Command('operator')
    .description('Operator commands of the ticketing service (npm run operator -- <area> <command> …)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => deps.print(text.trimEnd()),
      writeErr: (text) => deps.print(text.trimEnd()),
    });
  settlementCommands(program, deps, outcome);
  refundsRefusedCommands(program, deps, outcome);
  payoutAccountCommands(program, deps, outcome);
  return program;
}

/** Runs one operator command; returns the exit code. The tests call it in-process with their own clients. */
export async function runOperator(argv: string[], deps: OperatorDeps): Promise<number> {
  const { print } = deps;
  const outcome: Outcome = { code: 1 };
  try {
    await operatorProgram(deps, outcome).parseAsync(argv, { from: 'user' });
    return outcome.code;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help asked for is a success; any other parse failure (unknown command, missing option) is a usage error.
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return 0;
      print(USAGE);
      return 2;
    }
    if (error instanceof UsageError) {
      print(`${error.message}\n${USAGE}`);
      return 2;
    }
    const refusal = workflowRefusal(error);
    if (refusal) {
      print(`refused: ${refusal.code}: ${refusal.message} ${JSON.stringify(refusal.details)}`);
      return 1;
    }
    if (error instanceof WorkflowNotFoundError) {
      print('no running settlement workflow; start it again with `settlement start <eventDateId>`');
      return 1;
    }
    print(`failed: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [area, command] = process.argv.slice(2);
  if (area === 'enterprise') {
    const { enterpriseOperatorMain } = await import('./operator-enterprise.js');
    process.exit(await enterpriseOperatorMain(process.argv.slice(3)));
  }
  if (area === 'reconciler') {
    const { runReconcilerOperator } = await import('./operator-reconciler.js');
    const orm = await initOrm({ databaseUrl: loadEnv().DATABASE_URL, poolMax: 2 });
    try {
      process.exitCode = await runReconcilerOperator(process.argv.slice(3), {
        orm,
        print: (line) => console.log(line),
      });
    } finally {
      await orm.close(true);
    }
    process.exit();
  }
  if (area === 'payout-accounts') {
    // Database rows only: no Temporal connection needed.
    const orm = await initOrm({ databaseUrl: loadEnv().DATABASE_URL, poolMax: 2 });
    try {
      process.exitCode = await runOperator(process.argv.slice(2), {
        orm,
        env: loadEnv(),
        print: (text) => console.log(text),
      });
    } finally {
      await orm.close(true);
    }
    process.exit();
  }
  if ((area !== 'settlement' && area !== 'refunds-refused') || !command) {
    console.log(USAGE);
    process.exit(2);
  }
  const env = loadEnv();
  const connected = await connectTemporalClient(env).catch((error: unknown) => {
    console.log(`failed: cannot reach Temporal at ${env.TEMPORAL_ADDRESS} (${String(error)})`);
    process.exit(1);
  });
  const { client, connection } = connected;
  const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: 2 });
  let code = 1;
  try {
    code = await runOperator(process.argv.slice(2), { orm, temporal: client, env, print: (text) => console.log(text) });
  } finally {
    await connection.close();
    await orm.close(true);
  }
  process.exit(code);
}
