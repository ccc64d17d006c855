/**
 * Operator command for the internal steps of settlements (README "Settlements"). It reads Postgres to find a
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
 *   npm run operator -- enterprise …   (enterprise SSO integrations: scripts/operator-enterprise.ts)
 *
 * Exit codes: 0 done, 1 refused or failed (the reason is printed), 2 usage error.
 */
import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MikroORM } from '@mikro-orm/postgresql';
import { type Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { type Env, loadEnv } from '../config/env.js';
import { connectTemporalClient } from '../config/temporal.js';
import { workflowRefusal } from '../config/workflow-refusals.js';
import { initOrm } from '../entities/orm.js';
import { SETTLEMENT_STATUSES, type SettlementAllocation, type SettlementStatus } from '../entities/settlement.js';
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
  temporal: Client;
  env: Pick<Env, 'TEMPORAL_TASK_QUEUE' | 'SETTLEMENT_OBJECTION_WINDOW_MS'>;
  print(line: string): void;
}

class UsageError extends Error {}

const USAGE = `usage: npm run operator -- settlement <command> …
  list [--status <status>] [--workspace <id>] [--limit <n>]
  show <id|reference>
  approve <id|reference> [--allocations <accountId>=<percent>,…] [--notes <text>]
  reject <id|reference> --reason <text>
  request-payment <id|reference>
  record-transfer <id|reference> --proof <file.pdf|.png|.jpg>
  start <eventDateId> [--objection-window-ms <ms>]`;

const PROOF_TYPES: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
};

/** `--name value` options and positional arguments. */
function parseArgs(args: string[]): { positional: string[]; options: Map<string, string> } {
  const positional: string[] = [];
  const options = new Map<string, string>();
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] as string;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      if (eq > 2) {
        options.set(arg.slice(2, eq), arg.slice(eq + 1));
        continue;
      }
      const value = args[i + 1];
      if (value === undefined) throw new UsageError(`${arg} needs a value`);
      options.set(arg.slice(2), value);
      i += 1;
    } else {
      positional.push(arg);
    }
  }
  return { positional, options };
}

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

/** Runs one operator command; returns the exit code. The tests call it in-process with their own clients. */
export async function runOperator(argv: string[], deps: OperatorDeps): Promise<number> {
  const { print } = deps;
  try {
    const [area, command, ...rest] = argv;
    if (area !== 'settlement' || !command) throw new UsageError('unknown command');
    const { positional, options } = parseArgs(rest);

    const handleOf = (row: Row) =>
      deps.temporal.workflow.getHandle(settlementWorkflowId(row.workspace_id, row.event_date_id as string));
    const update = async (row: Row, send: (handle: ReturnType<typeof handleOf>) => Promise<SettlementView>) => {
      const view = await send(handleOf(row));
      print(`${view.reference}: ${view.status} (${view.amount} ${view.currency})`);
      return 0;
    };

    switch (command) {
      case 'list': {
        const status = options.get('status')?.toUpperCase();
        if (status && !(SETTLEMENT_STATUSES as readonly string[]).includes(status)) {
          throw new UsageError(`--status must be one of ${SETTLEMENT_STATUSES.join(', ')}`);
        }
        const limit = Number(options.get('limit') ?? 50);
        const workspace = options.get('workspace');
        const rows = await deps.orm.em.fork().execute<Row[]>(
          `select id, workspace_id, event_date_id, reference, label, status, amount, currency, created_at
             from settlements where (?::text is null or status = ?) and (?::text is null or workspace_id::text = ?)
            order by id desc limit ?`,
          [status ?? null, status ?? null, workspace ?? null, workspace ?? null, Number.isInteger(limit) ? limit : 50],
        );
        for (const row of rows) print(line(row));
        if (rows.length === 0) print('no settlements');
        return 0;
      }
      case 'show': {
        const row = await findSettlement(deps.orm, positional[0]);
        print(line(row));
        try {
          print(describeView(await handleOf(row).query(settlementStatusQuery)));
        } catch (error) {
          if (!(error instanceof WorkflowNotFoundError)) throw error;
          print('(no workflow execution: start it again with `settlement start <eventDateId>`)');
        }
        return 0;
      }
      case 'approve': {
        const row = await findSettlement(deps.orm, positional[0]);
        const allocations = options.get('allocations');
        const notes = options.get('notes');
        const request: ApproveRequest = {
          ...(allocations ? { allocations: parseAllocations(allocations) } : {}),
          ...(notes ? { notes } : {}),
        };
        return await update(row, (handle) => handle.executeUpdate(approveSettlementUpdate, { args: [request] }));
      }
      case 'reject': {
        const row = await findSettlement(deps.orm, positional[0]);
        const reason = options.get('reason');
        if (!reason) throw new UsageError('reject needs --reason "<text>"');
        return await update(row, (handle) => handle.executeUpdate(rejectSettlementUpdate, { args: [{ reason }] }));
      }
      case 'request-payment': {
        const row = await findSettlement(deps.orm, positional[0]);
        return await update(row, (handle) => handle.executeUpdate(requestSettlementPaymentUpdate, { args: [] }));
      }
      case 'record-transfer': {
        const row = await findSettlement(deps.orm, positional[0]);
        const proof = options.get('proof');
        if (!proof) throw new UsageError('record-transfer needs --proof <file>');
        const contentType = PROOF_TYPES[extname(proof).toLowerCase()];
        if (!contentType) throw new UsageError('--proof must be a .pdf, .png or .jpg file');
        const content = await readFile(proof);
        const request = { fileName: basename(proof), contentType, contentBase64: content.toString('base64') };
        return await update(row, (handle) => handle.executeUpdate(recordSettlementTransferUpdate, { args: [request] }));
      }
      case 'start': {
        const eventDateId = positional[0];
        if (!eventDateId) throw new UsageError('start needs the event date id');
        const [date] = await deps.orm.em
          .fork()
          .execute<Array<{ id: string; workspace_id: string }>>(
            'select id, workspace_id from event_dates where id::text = ?',
            [eventDateId],
          );
        if (!date) throw new Error(`no event date ${eventDateId}`);
        const window = Number(options.get('objection-window-ms') ?? deps.env.SETTLEMENT_OBJECTION_WINDOW_MS);
        if (!Number.isInteger(window) || window < 1000) throw new UsageError('--objection-window-ms must be ≥ 1000');
        const input = { workspaceId: date.workspace_id, eventDateId: date.id, objectionWindowMs: window };
        const workflowId = settlementWorkflowId(input.workspaceId, input.eventDateId);
        try {
          await deps.temporal.workflow.start('settlement', settlementStartOptions(input, deps.env.TEMPORAL_TASK_QUEUE));
          print(`started ${workflowId}`);
        } catch (error) {
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
          print(`already running ${workflowId}`);
        }
        return 0;
      }
      default:
        throw new UsageError(`unknown command settlement ${command}`);
    }
  } catch (error) {
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
  if (area !== 'settlement' || !command) {
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
