/**
 * Replay tests: workflow code must stay deterministic for executions already in flight. The committed histories in
 * test/replay/histories/ were recorded from real runs; every one must replay against today's workflow code, so a
 * change that would break running checkouts fails here first. Fresh executions of the same flows are replayed too,
 * and `RECORD_WORKFLOW_HISTORIES=1 npm test -- test/replay` rewrites the committed files after a deliberate,
 * versioned change (patched with `patched()` so old histories keep replaying).
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { temporalBinary } from '../../scripts/support/temporal.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { createOrganizer } from '../support/fixtures.js';
import {
  cardToken,
  confirmAtBank,
  customerOrder,
  eventually,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const HISTORIES = fileURLToPath(new URL('./histories', import.meta.url));

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Replays in a child process: the replay worker loads Temporal's native core, which must not share jest's module
 * registry. The same script serves operators checking a production history before a deploy.
 */
function replay(files: string[]): Array<{ file: string; ok: boolean; error?: string }> {
  let output: string;
  try {
    output = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/replay-histories.ts', ...files], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
  } catch (error) {
    output = String((error as { stdout?: string }).stdout ?? '');
  }
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

describe('committed histories replay against the current workflow code', () => {
  const files = readdirSync(HISTORIES).filter((file) => file.endsWith('.json'));
  test('there are recorded histories to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(3);
  });
  test('every committed history replays without nondeterminism', () => {
    const results = replay(files.map((file) => join(HISTORIES, file)));
    expect(results).toEqual(files.map((file) => ({ file, ok: true })));
  }, 120_000);
});

describe('fresh executions replay deterministically', () => {
  let api: TestApi;
  let shortApi: TestApi;
  const scratch = mkdtempSync(join(tmpdir(), 'ticketing-histories-'));
  beforeAll(async () => {
    api = await startTestApi();
    shortApi = await startTestApi({ PAYMENT_WINDOW_OVERRIDE_MS: '2000' });
  });
  afterAll(async () => {
    await api.close();
    await shortApi.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** The execution's history in the standard JSON form (as the Temporal CLI and UI export it). */
  function history(target: TestApi, saleId: string, name: string): string {
    const json = execFileSync(
      temporalBinary(),
      [
        'workflow',
        'show',
        '--workflow-id',
        checkoutWorkflowId(saleId),
        '--address',
        target.env.TEMPORAL_ADDRESS,
        '--output',
        'json',
      ],
      { encoding: 'utf8' },
    );
    const file =
      process.env.RECORD_WORKFLOW_HISTORIES === '1' ? join(HISTORIES, `${name}.json`) : join(scratch, `${name}.json`);
    writeFileSync(file, json);
    return file;
  }

  test('card approved, free order and expired reservation', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, `replay-${Math.random().toString(36).slice(2, 8)}@buyers.test`);

    const paid = (await reserveOrder(api, token, orderBody(event))).json().data;
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${paid.saleId}/payment`,
      headers: session(token),
    });
    const declined = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${paid.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'OTHE') },
    });
    expect(declined.json().data.status).toBe('rejected');
    const charged = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${paid.saleId}/payment/card`,
      headers: session(token),
      payload: { token: await cardToken(api, 'APRO') },
    });
    expect(charged.json().data.saleStatus).toBe('CONFIRMED');
    const recorded = [history(api, paid.saleId, 'checkout-card-approved')];

    const other = await publishEvent(shortApi, organizer);
    const expiring = (await reserveOrder(shortApi, token, orderBody(other))).json().data;
    await eventually(
      async () => await customerOrder(shortApi, token, expiring.saleId),
      (o) => o.status === 'ABANDONED',
    );
    recorded.push(history(shortApi, expiring.saleId, 'checkout-expired'));

    const released = (await reserveOrder(api, token, orderBody(event))).json().data;
    await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${released.saleId}/release`,
      headers: session(token),
    });
    recorded.push(history(api, released.saleId, 'checkout-released'));
    expect(replay(recorded).map((result) => result.ok)).toEqual([true, true, true]);
  }, 120_000);

  test('a second approved payment refunded after confirmation (patch refund-second-charge)', async () => {
    const organizer = await createOrganizer(api.orm.em.fork());
    const event = await publishEvent(api, organizer);
    const token = await signInBuyer(api, `replay-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
    const sale = (await reserveOrder(api, token, orderBody(event))).json().data;
    const pse = await api.request({
      method: 'POST',
      url: `/api/v1/customer/orders/${sale.saleId}/payment/pse`,
      headers: session(token),
    });
    const { redirectUrl } = pse.json().data;
    for (let tab = 0; tab < 2; tab += 1) {
      await confirmAtBank(redirectUrl, 'b@example.test');
    }
    const settle = () =>
      fetch(`${api.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reference: sale.reference, outcome: 'approved' }),
      });
    await settle();
    await eventually(
      async () => await customerOrder(api, token, sale.saleId),
      (o) => o.status === 'CONFIRMED',
    );
    await settle();
    await eventually(
      async () =>
        (await api.orm.em
          .fork()
          .execute(`select count(*)::int as n from payment_attempts where sale_id = ? and kind = 'REFUND'`, [
            sale.saleId,
          ])) as Array<{ n: number }>,
      (rows) => rows[0]?.n === 1,
    );
    const recorded = history(api, sale.saleId, 'checkout-second-charge-refunded');
    expect(replay([recorded]).map((result) => result.ok)).toEqual([true]);
  }, 120_000);
});
