/**
 * Puts the stock of reservations whose payment window has passed back on sale within a second of their deadline,
 * however many lapse at once. Each checkout still closes its own sale when its timer fires, but thousands of timers
 * firing in the same second are worked off one workflow task at a time; the sweep does the stock part for all of them
 * in a few statements, so a flash sale's expired holds are buyable again at once. Closing is the same conditional
 * PENDING → ABANDONED as the checkout's, so whichever comes first closes, and the other finds it closed.
 *
 * Every worker replica runs it; a transaction-scoped advisory lock lets one sweep at a time, the others skip the tick.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { releaseLapsedHolds } from '../entities/stock.js';
import { saleMetrics } from '../observability/metrics.js';

/** Any fixed number shared by every replica: the key of the sweep's advisory lock. */
const SWEEP_LOCK_KEY = 74_190_001;

export interface LapsedHoldSweep {
  /** Sweeps now (also what each tick does); resolves with the number of sales closed. */
  sweepOnce(): Promise<number>;
  stop(): Promise<void>;
}

export function startLapsedHoldSweep(options: {
  orm: MikroORM;
  logger: Logger;
  intervalMs: number;
  batchSize: number;
  /** Sweep one workspace only (tests that share a database with others). */
  workspaceId?: string;
}): LapsedHoldSweep {
  const { orm, logger, intervalMs, batchSize, workspaceId } = options;
  let running: Promise<number> | null = null;
  let stopped = false;

  async function sweepBatch(): Promise<{ sales: number; units: number } | null> {
    return orm.em.fork().transactional(async (tx) => {
      const [lock] = await tx.execute<{ taken: boolean }[]>('select pg_try_advisory_xact_lock(?) as taken', [
        SWEEP_LOCK_KEY,
      ]);
      if (!lock?.taken) return null;
      return releaseLapsedHolds(tx, batchSize, { workspaceId });
    });
  }

  async function sweep(): Promise<number> {
    let closed = 0;
    for (;;) {
      const batch = await sweepBatch();
      if (!batch) break;
      closed += batch.sales;
      if (batch.sales > 0) saleMetrics.closedUnpaid.inc({ status: 'ABANDONED', reason: 'expired' }, batch.sales);
      if (batch.sales < batchSize || stopped) break;
    }
    if (closed > 0) logger.info({ sales: closed }, 'lapsed reservations closed, their stock is on sale again');
    return closed;
  }

  function sweepOnce(): Promise<number> {
    running ??= sweep().finally(() => {
      running = null;
    });
    return running;
  }

  const timer = setInterval(() => {
    if (running) return;
    sweepOnce().catch((error: unknown) =>
      logger.warn({ err: error }, 'the lapsed-hold sweep failed; next tick retries'),
    );
  }, intervalMs);
  timer.unref();

  return {
    sweepOnce,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
