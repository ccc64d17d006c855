/**
 * Operator listings of what the reconciler reports rather than fixes (activities/reconciler-listings.ts), the same
 * rows its runs count in `refundsOverdue` / `adjustmentsUnapplied` and the gauges `ticketing_refunds_overdue` and
 * `ticketing_settlement_adjustments_unapplied`:
 *
 *   npx tsx scripts/operator-reconciler.ts refunds-overdue [--workspace <id>] [--older-than-minutes 60] [--limit 50]
 *   npx tsx scripts/operator-reconciler.ts adjustments-unapplied [--workspace <id>] [--limit 50]
 *
 * A refused refund is retried with `npm run operator -- refunds-refused retry <saleId>`; an unapplied adjustment is
 * carried by the workspace's next settlement (or settled with the organizer by hand). Exit codes: 0 done, 1 failed,
 * 2 usage error.
 */
import { pathToFileURL } from 'node:url';
import type { MikroORM } from '@mikro-orm/postgresql';
import {
  listOverdueRefunds,
  listUnappliedAdjustments,
  REFUND_OVERDUE_AFTER_MS,
} from '../activities/reconciler-listings.js';
import { loadEnv } from '../config/env.js';
import { initOrm } from '../entities/orm.js';

const USAGE = `usage: npx tsx scripts/operator-reconciler.ts <command> …
  refunds-overdue [--workspace <id>] [--older-than-minutes <n>] [--limit <n>]
  adjustments-unapplied [--workspace <id>] [--limit <n>]`;

class UsageError extends Error {}

function options(argv: string[]): Map<string, string> {
  const found = new Map<string, string>();
  for (let index = 0; index < argv.length; index += 2) {
    const name = argv[index];
    const value = argv[index + 1];
    if (!name?.startsWith('--') || value === undefined) throw new UsageError(`unexpected argument ${name ?? ''}`);
    found.set(name.slice(2), value);
  }
  return found;
}

function positiveInteger(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0) throw new UsageError(`--${name} must be a positive integer`);
  return parsed;
}

export async function runReconcilerOperator(
  argv: string[],
  deps: { orm: MikroORM; print(line: string): void },
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    const given = options(rest);
    const workspaceId = given.get('workspace') ?? null;
    const limit = positiveInteger(given.get('limit'), 50, 'limit');
    if (command === 'refunds-overdue') {
      const minutes = positiveInteger(
        given.get('older-than-minutes'),
        REFUND_OVERDUE_AFTER_MS / 60_000,
        'older-than-minutes',
      );
      const refunds = await listOverdueRefunds(deps.orm.em.fork(), {
        workspaceId,
        olderThanMs: minutes * 60_000,
        limit,
      });
      deps.print(`${refunds.length} refund(s) asked for over ${minutes} min ago and not confirmed by the gateway`);
      for (const refund of refunds) {
        deps.print(
          [
            refund.requestedAt,
            refund.reference,
            `sale=${refund.saleId}`,
            `workspace=${refund.workspaceId}`,
            refund.gateway,
            `payment=${refund.providerPaymentId ?? '-'}`,
            `status=${refund.refundStatus ?? '-'}`,
            `reason=${refund.reason ?? '-'}`,
            `${refund.amount ?? '?'} ${refund.currency}`,
          ].join('  '),
        );
      }
      return 0;
    }
    if (command === 'adjustments-unapplied') {
      const adjustments = await listUnappliedAdjustments(deps.orm.em.fork(), { workspaceId, limit });
      deps.print(`${adjustments.length} refund(s) after a sent settlement that no later settlement carries yet`);
      for (const adjustment of adjustments) {
        deps.print(
          [
            adjustment.refundedAt ?? '-',
            `workspace=${adjustment.workspaceId}`,
            adjustment.saleReference,
            `paid out by ${adjustment.settlementReference}`,
            `${adjustment.amount} ${adjustment.currency}`,
          ].join('  '),
        );
      }
      return 0;
    }
    throw new UsageError(`unknown command ${command ?? ''}`);
  } catch (error) {
    if (error instanceof UsageError) {
      deps.print(`${error.message}\n${USAGE}`);
      return 2;
    }
    deps.print(`failed: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const env = loadEnv();
  const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: 2 });
  let code = 1;
  try {
    code = await runReconcilerOperator(process.argv.slice(2), { orm, print: (line) => console.log(line) });
  } finally {
    await orm.close(true);
  }
  process.exit(code);
}
