/**
 * A reservation whose update never reaches its checkout. The reserve step can commit the sale on a worker that is then
 * killed before its workflow task completes; if the server drops the pending update meanwhile, the execution only
 * sees its reserve timeout. It must compensate what the lost step committed: the sale closed ABANDONED and its stock
 * back, by the checkout itself (the fault suite runs with the reconciler off, and found sales left PENDING this way).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readOrderCatalog, reserveInTransaction } from '../../activities/reservation.js';
import type { checkout } from '../../workflows/checkout.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { replayHistories, showHistory, writeHistory } from '../replay/recorder.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { eventually, publishEvent, storefrontReserveRequest } from '../support/purchase.js';
import { available } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
  rmSync(scratch, { recursive: true, force: true });
});

const statusOf = async (saleId: string): Promise<string | undefined> =>
  (await api.orm.em.fork().execute<{ status: string }[]>('select status from sales where id = ?', [saleId]))[0]?.status;

test('a sale committed by a reserve step whose update was lost is closed by its checkout, stock back', async () => {
  const event = await publishEvent(api, organizer, { capacity: 4 });
  const saleId = randomUUID();
  // What the lost step committed: the sale and its stock, as the checkout's reserve step writes them.
  const request = {
    ...storefrontReserveRequest(event, `lost-${saleId.slice(0, 8)}@buyers.test`),
    paymentWindowMs: null,
  };
  const em = api.orm.em.fork();
  const catalog = await readOrderCatalog(em, request);
  await em.transactional((tx) => reserveInTransaction(tx, saleId, request, new Date(), catalog));
  expect(await statusOf(saleId)).toBe('PENDING');
  expect(await available(api, organizer, event.ticketTypeId)).toBe(3);

  // Its execution, whose reserve update never arrives.
  const handle = await api.services.temporal.workflow.start<typeof checkout>('checkout', {
    workflowId: checkoutWorkflowId(saleId),
    taskQueue: api.env.TEMPORAL_TASK_QUEUE,
    args: [{ saleId, latePaymentGraceMs: 1000, reserveTimeoutMs: 1500 }],
  });
  await handle.result();
  expect(await statusOf(saleId)).toBe('ABANDONED');
  const units = () => available(api, organizer, event.ticketTypeId);
  expect(await eventually(units, (left) => left === 4)).toBe(4);
  expect((await handle.describe()).status.name).toBe('COMPLETED');

  // This path replays deterministically (RECORD_WORKFLOW_HISTORIES=1 commits its history as a fixture).
  const recorded = writeHistory(
    showHistory(api.env.TEMPORAL_ADDRESS, checkoutWorkflowId(saleId)),
    'checkout-lost-reservation-compensated',
    scratch,
  );
  expect(replayHistories([recorded]).map((result) => result.ok)).toEqual([true]);
});
