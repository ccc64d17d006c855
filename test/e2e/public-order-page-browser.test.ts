/**
 * A storefront buyer pays a gateway B event in a real browser: headless Chromium (Debian's, driven by playwright-core)
 * opens the order's hosted payment page, whose gateway B button script (the sandbox's stand-in) mounts the button;
 * the buyer pays at the gateway's checkout and is sent back to the page, which then shows the order paid.
 */
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/browser.js';
import { createOrganizer } from '../support/fixtures.js';
import { eventually, publishEvent } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let browser: Browser;

beforeAll(async () => {
  api = await startTestApi({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10000' });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

test('the hosted page mounts the gateway B button; paid at the gateway, the buyer comes back to the order paid', async () => {
  const legend = await createOrganizer(api.orm.em.fork());
  await api.orm.em
    .fork()
    .execute(`update workspaces set plan = 'LEGEND', gateway_ballowlisted = true where id = ?`, [legend.workspaceId]);
  const event = await publishEvent(api, legend, { price: 60_000 });
  const created = await api.request({
    method: 'POST',
    url: '/api/public/orders',
    payload: {
      buyerEmail: `browser-b-${Math.random().toString(36).slice(2, 8)}@buyers.test`,
      buyerName: 'Compradora Navegante',
      items: [{ ticketTypeId: event.ticketTypeId, quantity: 1 }],
    },
  });
  expect(created.statusCode).toBe(200);
  const order = created.json().data as { orderId: string; reference: string; total: number; checkoutUrl: string };

  // The checkoutUrl is served by the stack's API process, as a buyer's browser reaches it.
  const page = await browser.newPage();
  await page.goto(order.checkoutUrl);
  expect(await page.textContent('#reference')).toBe(order.reference);
  expect(await page.getAttribute('#order-status', 'data-status')).toBe('pending');
  await Promise.all([page.waitForURL(/\/gateway-b\/checkout$/), page.click('text=Pagar con Bold (sandbox)')]);
  expect(await page.textContent('#order-id')).toBe(order.reference);
  expect(await page.getAttribute('#amount', 'data-amount')).toBe(String(order.total));
  await Promise.all([page.waitForURL((url) => url.href.startsWith(order.checkoutUrl)), page.click('#approve')]);
  expect(new URL(page.url()).searchParams.get('bold-tx-status')).toBe('approved');

  const status = await eventually(
    async () => {
      await page.reload();
      return page.getAttribute('#order-status', 'data-status');
    },
    (value) => value === 'paid',
  );
  expect(status).toBe('paid');
  expect(await page.locator('script[data-bold-button]').count()).toBe(0);
  await page.close();
});
