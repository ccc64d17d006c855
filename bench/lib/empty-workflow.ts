/**
 * The orchestration baseline: a workflow that does nothing but answer one update, started with update-with-start
 * exactly as the checkout is. Registered only by the bench worker (bench/lib/empty-worker.ts), never by worker/.
 */
import { condition, defineUpdate, setHandler } from '@temporalio/workflow';

export const benchPingUpdate = defineUpdate<{ ok: true }, [number]>('benchPing');

export async function benchEmpty(): Promise<void> {
  let answered = false;
  setHandler(benchPingUpdate, () => {
    answered = true;
    return { ok: true as const };
  });
  await condition(() => answered, '1 minute');
}
