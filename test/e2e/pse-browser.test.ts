/**
 * A buyer pays by PSE in a real browser: headless Chromium (Debian's, driven by playwright-core) opens the gateway's
 * bank page, picks a bank, confirms, and is sent back through our return endpoint to the shop's returnUrl. The sale
 * confirms only when the bank settles and the gateway's signed notification arrives.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/browser.js';
import { createOrganizer } from '../support/fixtures.js';
import {
  customerOrder,
  eventually,
  orderBody,
  publishEvent,
  reserveOrder,
  session,
  signInBuyer,
} from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let browser: Browser;
const profile = mkdtempSync(join(tmpdir(), 'ticketing-chromium-'));

beforeAll(async () => {
  api = await startTestApi();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
  rmSync(profile, { recursive: true, force: true });
});

test('a buyer clicks through the PSE bank page and lands back on the shop; the sale confirms when the bank settles', async () => {
  const organizer = await createOrganizer(api.orm.em.fork());
  const event = await publishEvent(api, organizer);
  const token = await signInBuyer(api, `browser-${Math.random().toString(36).slice(2, 8)}@buyers.test`);
  // The shop's landing page: any page on an allowed host; the API's own liveness page stands in for it.
  const returnUrl = `${api.env.PUBLIC_ORIGIN}/health/live`;
  const order = (await reserveOrder(api, token, orderBody(event, 1, { returnUrl }))).json().data;
  const pse = await api.request({
    method: 'POST',
    url: `/api/v1/customer/orders/${order.saleId}/payment/pse`,
    headers: session(token),
  });
  const { redirectUrl } = pse.json().data;

  const page = await browser.newPage();
  await page.goto(redirectUrl);
  expect(await page.textContent('#reference')).toBe(order.reference);
  await page.selectOption('#bank', '1007');
  await Promise.all([page.waitForURL(/\/health\/live\?reference=FT-/), page.click('#confirm')]);
  expect(new URL(page.url()).searchParams.get('reference')).toBe(order.reference);
  await page.screenshot({ path: join(profile, 'landing.png') });
  await page.close();

  const afterBank = await customerOrder(api, token, order.saleId);
  expect(afterBank.status).toBe('PENDING');

  await fetch(`${api.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reference: order.reference, outcome: 'approved' }),
  });
  const confirmed = await eventually(
    async () => await customerOrder(api, token, order.saleId),
    (o) => o.status === 'CONFIRMED',
  );
  expect(confirmed.tickets).toHaveLength(1);
}, 60_000);
