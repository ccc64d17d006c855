/**
 * Reports and exports over HTTP (contract 4.1 reports group, 4.12, 5.4, 8): sales made through the API (a card
 * payment at gateway A, a box-office sale, a complimentary sale, a reservation still pending, a check-in at the
 * door), then every report read back with a VIEWER and an ADMIN key of the workspace and an ADMIN of another one.
 */
import { randomBytes } from 'node:crypto';
import { newId } from '../../entities/ids.js';
import { createEventFixture, holdStock } from '../support/catalog-fixtures.js';
import { addMembership, bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { type PublishedEvent, publishEvent } from '../support/purchase.js';
import { complimentary, payByCard, reserve, saleOf, sleep, ticketsOf, uniqueEmail } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let admin: Organizer;
let viewer: Organizer;
let stranger: Organizer;
let concert: PublishedEvent;
const sales: Record<'card' | 'boxOffice' | 'comp' | 'pending', { id: string; total: number }> = {} as never;

const REPORTS = [
  '/reports/summary',
  '/reports/inventory',
  '/reports/by-event',
  '/reports/timeseries',
  '/reports/financials',
  '/reports/reconciliation',
];
const EXPORTS = [
  '/reports/exports/reconciliation',
  '/reports/exports/attendees',
  '/reports/exports/buyers',
  '/reports/exports/subscribers',
];

const get = (key: string, url: string, headers: Record<string, string> = {}) =>
  api.request({ method: 'GET', url: `/api/v1${url}`, headers: { ...bearer(key), ...headers } });

async function untilConfirmed(saleId: string) {
  for (let i = 0; i < 100; i += 1) {
    const sale = await saleOf(api, admin, saleId);
    if (sale.status === 'CONFIRMED') return sale;
    await sleep(200);
  }
  throw new Error(`sale ${saleId} never confirmed`);
}

beforeAll(async () => {
  api = await startTestApi();
  admin = await createOrganizer(api.orm.em.fork(), { role: 'ADMIN' });
  viewer = await createOrganizer(api.orm.em.fork(), { role: 'VIEWER', workspaceId: admin.workspaceId });
  stranger = await createOrganizer(api.orm.em.fork(), { role: 'ADMIN' });
  concert = await publishEvent(api, admin, { price: 50_000, capacity: 40 });

  const paid = await reserve(api, concert, 'report-card', 2);
  await payByCard(api, paid.token, paid.order.saleId);
  sales.card = { id: paid.order.saleId, total: (await untilConfirmed(paid.order.saleId)).total };

  const boxOffice = await api.request({
    method: 'POST',
    url: '/api/v1/sales',
    headers: bearer(admin.key),
    payload: {
      eventDateId: concert.eventDateId,
      ticketTypeId: concert.ticketTypeId,
      quantity: 3,
      channel: 'POS',
      complimentary: false,
      // A name a spreadsheet would run as a formula, with a comma and an accent: the CSV must keep it as text.
      buyer: { name: '=HYPERLINK("x"), Gómez', email: uniqueEmail('pos') },
    },
  });
  expect(boxOffice.statusCode).toBe(201);
  sales.boxOffice = { id: boxOffice.json().data.id, total: boxOffice.json().data.total };
  const comp = await complimentary(api, admin, concert, 1);
  sales.comp = { id: comp.id, total: 0 };
  const pending = await reserve(api, concert, 'report-pending', 1);
  sales.pending = { id: pending.order.saleId, total: pending.order.total };

  const [first] = await ticketsOf(api, admin, sales.boxOffice.id);
  const scanned = await api.request({
    method: 'POST',
    url: `/api/v1/tickets/${first!.code}/checkin`,
    headers: bearer(admin.key),
  });
  expect(scanned.statusCode).toBe(200);

  // The subscription row the membership workflow writes, written directly so the figures here stay fixed while the
  // suite runs (no period passes); memberships.test.ts exports a subscriber the workflow itself created.
  const em = api.orm.em.fork();
  const buyerId = newId();
  const planId = newId();
  await em.execute(`insert into buyers (id, created_at, updated_at, email, name) values (?, now(), now(), ?, ?)`, [
    buyerId,
    uniqueEmail('member'),
    'Zoë Socia',
  ]);
  await em.execute(
    `insert into membership_plans (id, created_at, updated_at, workspace_id, name, price, currency, period, benefits)
     values (?, now(), now(), ?, 'Club Oro', 30000, 'COP', 'MONTHLY', '{"membersOnlyAccess":true,"discountPercent":10}')`,
    [planId, admin.workspaceId],
  );
  await em.execute(
    `insert into membership_subscriptions (id, created_at, updated_at, workspace_id, plan_id, buyer_id, status, currency,
       activated_at, current_period_end)
     values (?, now(), now(), ?, ?, ?, 'ACTIVE', 'COP', now() - interval '10 days', now() + interval '20 days')`,
    [newId(), admin.workspaceId, planId, buyerId],
  );
}, 180_000);
afterAll(async () => {
  await api.close();
});

describe('who may read what (contract 5.4)', () => {
  test.each(REPORTS)('a VIEWER reads %s', async (url) => {
    expect((await get(viewer.readKey, url)).statusCode).toBe(200);
  });

  test.each(EXPORTS)('exports are ADMIN: a VIEWER gets 403 on %s, an ADMIN 200', async (url) => {
    const refused = await get(viewer.readKey, url);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject({ code: expect.any(String), retryable: false });
    expect((await get(admin.readKey, url)).statusCode).toBe(200);
  });
});

describe('tenant isolation: another workspace’s key sees nothing of ours', () => {
  test.each([...REPORTS, ...EXPORTS])('%s is empty for a stranger, even filtered by our event', async (url) => {
    for (const query of ['', `?event=${concert.eventId}`]) {
      const response = await get(stranger.readKey, `${url}${url.includes('subscribers') ? '' : query}`, {
        accept: 'application/json',
      });
      expect(response.statusCode).toBe(200);
      const body = url === '/reports/exports/reconciliation' ? null : response.json();
      const text = response.body;
      expect(text).not.toContain(concert.eventId);
      expect(text).not.toContain(sales.card.id);
      if (url === '/reports/summary') {
        expect(body.data.revenue.collected).toBe(0);
        expect(body.data.sales.confirmed).toBe(0);
        expect(body.data.memberships.active).toBe(0);
      }
      if (url === '/reports/reconciliation') expect(body.meta.totals.sales).toBe(0);
      if (Array.isArray(body?.data)) expect(body.data).toEqual([]);
    }
  });

  test('a user with a VIEWER seat in our workspace and ADMIN in theirs reads ours with X-Workspace-Id', async () => {
    await addMembership(api.orm.em.fork(), stranger.userId, admin.workspaceId, 'VIEWER');
    const ours = await get(stranger.readKey, '/reports/summary', { 'x-workspace-id': admin.workspaceId });
    expect(ours.json().data.sales.confirmed).toBe(3);
    expect(
      (await get(stranger.readKey, '/reports/exports/attendees', { 'x-workspace-id': admin.workspaceId })).statusCode,
    ).toBe(403);
  });
});

describe('the reports', () => {
  test('summary: revenue of CONFIRMED sales as stored, tickets sold, sales by status, members', async () => {
    const { data } = (await get(viewer.readKey, '/reports/summary')).json();
    const card = await saleOf(api, admin, sales.card.id);
    const pos = await saleOf(api, admin, sales.boxOffice.id);
    expect(data.revenue.collected).toBe(card.total + pos.total);
    expect(data.revenue.gross).toBe(card.subtotal - card.discountAmount + pos.subtotal);
    expect(data.revenue.serviceFees).toBe(card.serviceFee + pos.serviceFee);
    expect(data.tickets.sold).toBe(2 + 3 + 1);
    expect(data.sales).toMatchObject({ confirmed: 3, free: 1, pending: 1, abandoned: 0, cancelled: 0, refunded: 0 });
    expect(data.memberships).toMatchObject({ active: 1, newInPeriod: 1 });
    expect(data.period.timeZone).toBe('America/Bogota');
  });

  test('summary filtered by a status and by a day range outside the sales', async () => {
    const pending = (await get(viewer.readKey, '/reports/summary?status=PENDING')).json().data;
    expect(pending.sales).toMatchObject({ confirmed: 0, pending: 1 });
    const past = (await get(viewer.readKey, '/reports/summary?from=2020-01-01&to=2020-01-31')).json().data;
    expect(past.revenue.collected).toBe(0);
    expect(past.period).toEqual({ from: '2020-01-01', to: '2020-01-31', timeZone: 'America/Bogota' });
  });

  test('inventory: capacity, sold, reserved and available per ticket type', async () => {
    const { data } = (await get(viewer.readKey, `/reports/inventory?event=${concert.eventId}`)).json();
    expect(data).toEqual([
      expect.objectContaining({
        eventId: concert.eventId,
        eventDateId: concert.eventDateId,
        ticketTypeId: concert.ticketTypeId,
        capacity: 40,
        sold: 6,
        reserved: 1,
        available: 33,
      }),
    ]);
  });

  test('by-event: one row for the event, adding up to the summary', async () => {
    const { data } = (await get(viewer.readKey, '/reports/by-event')).json();
    const summary = (await get(viewer.readKey, '/reports/summary')).json().data;
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({ eventId: concert.eventId, ticketsSold: 6, revenue: summary.revenue });
    expect(data[0].sales).toMatchObject({ confirmed: 3, pending: 1 });
  });

  test('timeseries: the last 30 days by default with empty days present; weeks and months too', async () => {
    const days = (await get(viewer.readKey, '/reports/timeseries')).json().data;
    expect(days.interval).toBe('day');
    expect(days.points).toHaveLength(30);
    expect(days.points.filter((point: { sales: number }) => point.sales === 0)).toHaveLength(29);
    expect(days.points.at(-1)).toMatchObject({ bucket: days.period.to, sales: 3, tickets: 6 });
    const months = (
      await get(viewer.readKey, '/reports/timeseries?interval=month&from=2026-01-15&to=2026-12-31')
    ).json().data;
    expect(months.points.map((point: { bucket: string }) => point.bucket)).toEqual(
      Array.from({ length: 12 }, (_, month) => `2026-${String(month + 1).padStart(2, '0')}-01`),
    );
    const weeks = (await get(viewer.readKey, '/reports/timeseries?interval=week&from=2026-11-02&to=2026-11-29')).json()
      .data;
    expect(weeks.points.map((point: { bucket: string }) => point.bucket)).toEqual([
      '2026-11-02',
      '2026-11-09',
      '2026-11-16',
      '2026-11-23',
    ]);
  });

  test('financials: the date’s gross, costs (gateway A on the card sale only) and net payable', async () => {
    const { data } = (await get(viewer.readKey, '/reports/financials')).json();
    const card = await saleOf(api, admin, sales.card.id);
    const pos = await saleOf(api, admin, sales.boxOffice.id);
    expect(data).toHaveLength(1);
    const gatewayCost = Math.floor((card.total * 329 + 5000) / 10000);
    expect(data[0]).toMatchObject({
      eventDateId: concert.eventDateId,
      salesCount: 3,
      unitsSold: 6,
      gross: card.subtotal + pos.subtotal,
      gatewayCosts: gatewayCost,
      costs: gatewayCost,
      // The box-office cash is already the organizer's: deducted, not paid out again.
      collectedByOrganizer: pos.total,
      netPayable: card.subtotal + pos.subtotal - gatewayCost - pos.total,
    });
  });

  test('reconciliation: the card sale was charged its total once, nothing flagged; offline sales expect nothing at the gateway', async () => {
    const { data, page, meta } = (await get(viewer.readKey, '/reports/reconciliation')).json();
    // The list envelope: the page's rows are data; the totals over the whole filter are meta.
    expect(Array.isArray(data)).toBe(true);
    const byId = new Map(data.map((row: { saleId: string }) => [row.saleId, row]));
    expect(byId.get(sales.card.id)).toMatchObject({
      status: 'CONFIRMED',
      gateway: 'GATEWAY_A',
      approvedPayments: 1,
      charged: sales.card.total,
      refunded: 0,
      expectedAtGateway: sales.card.total,
      netAtGateway: sales.card.total,
      mismatch: false,
      mismatchReason: null,
    });
    expect(byId.get(sales.boxOffice.id)).toMatchObject({ expectedAtGateway: 0, charged: 0, mismatch: false });
    expect(meta.totals).toMatchObject({
      mismatches: 0,
      charged: sales.card.total,
      confirmedAmount: sales.card.total + sales.boxOffice.total,
    });
    expect(page.hasMore).toBe(false);

    const first = (await get(viewer.readKey, '/reports/reconciliation?limit=1')).json();
    expect(first.data).toHaveLength(1);
    expect(first.page.hasMore).toBe(true);
    const second = (
      await get(viewer.readKey, `/reports/reconciliation?limit=1&cursor=${first.page.nextCursor}`)
    ).json();
    expect(second.data[0].saleId).not.toBe(first.data[0].saleId);
    expect(second.meta.totals).toEqual(first.meta.totals);
  });
});

describe('report lists page with limit and cursor, with a truthful hasMore', () => {
  /** Another workspace with two events, three dates and five ticket types, so every list has several rows. */
  let owner: Organizer;
  beforeAll(async () => {
    owner = await createOrganizer(api.orm.em.fork(), { role: 'ADMIN' });
    const day = 86_400_000;
    for (const name of ['Bambuco', 'Cumbia']) {
      await createEventFixture(api.orm.em.fork(), {
        workspaceId: owner.workspaceId,
        name,
        dates: [
          {
            startsAt: new Date(Date.now() + 10 * day),
            types: [
              { price: 1000, capacity: 5 },
              { price: 2000, capacity: 5 },
            ],
          },
          ...(name === 'Bambuco'
            ? [{ startsAt: new Date(Date.now() + 20 * day), types: [{ price: 1000, capacity: 5 }] }]
            : []),
        ],
      });
    }
  });

  /** Walks a list page by page with `limit`, answering every row seen and each page's hasMore. */
  async function walk(url: string, limit: number) {
    const rows: unknown[] = [];
    const hasMore: boolean[] = [];
    let cursor: string | null = null;
    do {
      const separator = url.includes('?') ? '&' : '?';
      const response = await get(owner.readKey, `${url}${separator}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(response.statusCode).toBe(200);
      const body = response.json();
      rows.push(...body.data);
      hasMore.push(body.page.hasMore);
      expect(body.page.nextCursor === null).toBe(!body.page.hasMore);
      cursor = body.page.nextCursor;
    } while (cursor);
    return { rows, hasMore };
  }

  test.each([
    ['/reports/inventory', 5],
    ['/reports/by-event', 2],
    ['/reports/financials', 3],
  ])(
    '%s: one row per page walks the whole list once, in order; hasMore is false on the last page only',
    async (url, total) => {
      const whole = (await get(owner.readKey, `${url}?limit=100`)).json();
      expect(whole.data).toHaveLength(total);
      expect(whole.page).toEqual({ nextCursor: null, hasMore: false });
      const paged = await walk(url, 1);
      expect(paged.rows).toEqual(whole.data);
      expect(paged.hasMore).toEqual([...Array(total - 1).fill(true), false]);
      const firstTwo = (await get(owner.readKey, `${url}?limit=2`)).json();
      expect(firstTwo.data).toEqual(whole.data.slice(0, 2));
    },
  );

  test.each(['/reports/inventory', '/reports/by-event', '/reports/financials'])(
    '%s: a cursor that is not one of its own is 422',
    async (url) => {
      const foreign = (await get(owner.readKey, '/reports/reconciliation?limit=1')).json().page.nextCursor ?? 'bm9wZQ';
      for (const cursor of ['garbage', foreign]) {
        const response = await get(owner.readKey, `${url}?cursor=${cursor}`);
        expect(response.statusCode).toBe(422);
        expect(response.json().error.code).toBe('VALIDATION_FAILED');
      }
    },
  );
});

describe('report ranges are bounded', () => {
  test.each([
    ['/reports/timeseries?from=1800-01-01', 366],
    ['/reports/timeseries?from=2024-01-01&to=2026-01-01', 366],
    ['/reports/timeseries?interval=week&from=2016-01-01&to=2026-01-01', 261],
    ['/reports/timeseries?interval=month&from=2016-01-01&to=2026-01-01', 120],
  ])('%s → 422 VALIDATION_FAILED that says the limit (%i points)', async (url, limit) => {
    const response = await get(viewer.readKey, url);
    expect(response.statusCode).toBe(422);
    const { error } = response.json();
    expect(error).toMatchObject({ code: 'VALIDATION_FAILED', details: { limit } });
    expect(error.message).toContain(`at most ${limit} points`);
    expect(error.details.fields[0].field).toBe('querystring.from');
  });

  test('a series at the limit is answered: a whole leap year of days, ten years of months', async () => {
    const days = await get(viewer.readKey, '/reports/timeseries?from=2024-01-01&to=2024-12-31');
    expect(days.statusCode).toBe(200);
    expect(days.json().data.points).toHaveLength(366);
    const months = await get(viewer.readKey, '/reports/timeseries?interval=month&from=2017-01-01&to=2026-12-31');
    expect(months.statusCode).toBe(200);
    expect(months.json().data.points).toHaveLength(120);
  });

  test('every list report answers at most 100 rows a page: a larger limit is 422', async () => {
    for (const url of ['/reports/inventory', '/reports/by-event', '/reports/financials', '/reports/reconciliation']) {
      const response = await get(viewer.readKey, `${url}?limit=101`);
      expect(response.statusCode).toBe(422);
      expect(response.json().error.details.fields[0].field).toBe('querystring.limit');
    }
  });
});

describe('exports', () => {
  test('attendees: one row per ticket with the ticket-access fields and the holder; filters by check-in', async () => {
    const all = await get(admin.readKey, '/reports/exports/attendees');
    expect(all.statusCode).toBe(200);
    expect(all.headers['content-type']).toMatch(/application\/json/);
    expect(all.headers['x-export-truncated']).toBe('false');
    const body = all.json();
    expect(body.data).toHaveLength(6);
    expect(body.page).toEqual({ nextCursor: null, hasMore: false });
    expect(body.data[0]).toEqual(
      expect.objectContaining({
        ticketCode: expect.any(String),
        status: expect.stringMatching(/^(VALID|USED)$/),
        saleStatus: 'CONFIRMED',
        eventId: concert.eventId,
        eventDateId: concert.eventDateId,
        ticketTypeId: concert.ticketTypeId,
        ticketTypeName: 'General',
        startsAt: expect.any(String),
        buyerEmail: expect.stringContaining('@'),
      }),
    );
    const scanned = (await get(admin.readKey, '/reports/exports/attendees?checkedIn=true')).json().data;
    expect(scanned).toHaveLength(1);
    expect(scanned[0]).toMatchObject({ status: 'USED', valid: false, checkedInAt: expect.any(String) });
    expect((await get(admin.readKey, '/reports/exports/attendees?checkedIn=false')).json().data).toHaveLength(5);
    expect(
      (await get(admin.readKey, `/reports/exports/attendees?ticketType=${concert.ticketTypeId}&status=VALID`)).json()
        .data,
    ).toHaveLength(5);
  });

  test('attendees as CSV (Accept: text/csv): BOM, header, quoted comma, neutralised formula, accents intact', async () => {
    const response = await get(admin.readKey, `/reports/exports/attendees?eventDate=${concert.eventDateId}`, {
      accept: 'text/csv',
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/csv; charset=utf-8/);
    expect(response.headers['content-disposition']).toBe('attachment; filename="attendees.csv"');
    const bytes = response.rawPayload;
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const text = bytes.toString('utf8').slice(1);
    const lines = text.split('\r\n').filter(Boolean);
    expect(lines[0]).toMatch(/^ticketCode,status,valid,saleStatus,eventId,eventName,/);
    expect(lines).toHaveLength(1 + 6);
    expect(text).toContain(`"'=HYPERLINK(""x""), Gómez"`);
    expect(text).not.toMatch(/(^|,)=HYPERLINK/m);
  });

  test('buyers: one row per buyer email, JSON or CSV by format=csv', async () => {
    const { data } = (await get(admin.readKey, '/reports/exports/buyers')).json();
    expect(data).toHaveLength(3);
    expect(data.find((row: { tickets: number }) => row.tickets === 3)).toMatchObject({
      name: '=HYPERLINK("x"), Gómez',
      sales: 1,
      totalSpent: sales.boxOffice.total,
    });
    const csv = await get(admin.readKey, '/reports/exports/buyers?format=csv');
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.body.split('\r\n').filter(Boolean)).toHaveLength(4);
    const pending = (await get(admin.readKey, '/reports/exports/buyers?status=PENDING')).json().data;
    expect(pending).toHaveLength(1);
  });

  test('subscribers: ExportSubscriber rows (name, email, plan, status, since, expiresAt)', async () => {
    const { data } = (await get(admin.readKey, '/reports/exports/subscribers')).json();
    expect(data).toEqual([
      {
        name: 'Zoë Socia',
        email: expect.stringContaining('@buyers.test'),
        plan: 'Club Oro',
        status: 'ACTIVE',
        since: expect.any(String),
        expiresAt: expect.any(String),
      },
    ]);
    expect(Date.parse(data[0].expiresAt)).toBeGreaterThan(Date.now());
  });

  test('reconciliation export is CSV by default, JSON with format=json', async () => {
    const csv = await get(admin.readKey, '/reports/exports/reconciliation');
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    const lines = csv.body
      .replace(/^\uFEFF/, '')
      .split('\r\n')
      .filter(Boolean);
    expect(lines[0]).toBe(
      'saleId,reference,status,channel,gateway,paymentRef,createdAt,confirmedAt,total,confirmedAmount,approvedPayments,charged,refunded,refundsPending,expectedAtGateway,netAtGateway,mismatch,mismatchReason',
    );
    const json = (await get(admin.readKey, '/reports/exports/reconciliation?format=json')).json();
    expect(json.data).toHaveLength(lines.length - 1);
    expect(json.data.find((row: { saleId: string }) => row.saleId === sales.card.id)).toMatchObject({
      charged: sales.card.total,
      mismatch: false,
    });
  });

  test('more than 5000 rows: the first 5000 go out and the response says there are more', async () => {
    const owner = await createOrganizer(api.orm.em.fork(), { role: 'ADMIN' });
    const catalog = await createEventFixture(api.orm.em.fork(), {
      workspaceId: owner.workspaceId,
      dates: [{ startsAt: new Date(Date.now() + 86_400_000), types: [{ price: 0, capacity: 10 }] }],
    });
    const date = catalog.dates[0]!;
    const saleId = await holdStock(api.orm.em.fork(), {
      workspaceId: owner.workspaceId,
      eventId: catalog.eventId,
      eventDateId: date.id,
      ticketTypeId: date.typeIds[0]!,
      quantity: 1,
      status: 'CONFIRMED',
    });
    // 5001 tickets written in one statement: issuing them one by one through checkout would take minutes.
    await api.orm.em.fork().execute(
      `insert into tickets (id, created_at, updated_at, workspace_id, sale_id, ticket_type_id, event_id, event_date_id, code, ordinal, status)
       select gen_random_uuid(), now(), now(), ?, ?, ?, ?, ?, ? || g, g, 'VALID' from generate_series(1, 5001) g`,
      [owner.workspaceId, saleId, date.typeIds[0], catalog.eventId, date.id, `bulk-${randomBytes(6).toString('hex')}-`],
    );
    const json = await get(owner.readKey, '/reports/exports/attendees');
    expect(json.headers['x-export-truncated']).toBe('true');
    expect(json.headers['x-export-row-limit']).toBe('5000');
    const body = json.json();
    expect(body.data).toHaveLength(5000);
    expect(body.page.hasMore).toBe(true);
    expect(body.warnings).toEqual([expect.objectContaining({ code: 'EXPORT_TRUNCATED' })]);
    // The list envelope's cursor (issue 31): the same request with it answers the rest, with no row twice.
    expect(body.page.nextCursor).toEqual(expect.any(String));
    const rest = await get(
      owner.readKey,
      `/reports/exports/attendees?cursor=${encodeURIComponent(body.page.nextCursor)}`,
    );
    expect(rest.statusCode).toBe(200);
    expect(rest.headers['x-export-truncated']).toBe('false');
    const restBody = rest.json();
    expect(restBody.page).toEqual({ nextCursor: null, hasMore: false });
    expect(restBody.data).toHaveLength(1);
    const codes = new Set([...body.data, ...restBody.data].map((row: { ticketCode: string }) => row.ticketCode));
    expect(codes.size).toBe(5001);
    const csv = await get(owner.readKey, '/reports/exports/attendees?format=csv');
    expect(csv.headers['x-export-truncated']).toBe('true');
    expect(csv.headers['x-export-next-cursor']).toBe(body.page.nextCursor);
    expect(csv.body.split('\r\n').filter(Boolean)).toHaveLength(5001);
    // A cursor of another export (or none of ours) is refused, never read as a position.
    const foreign = await get(
      owner.readKey,
      `/reports/exports/buyers?cursor=${encodeURIComponent(body.page.nextCursor)}`,
    );
    expect(foreign.statusCode).toBe(422);
  });
});

describe('bad filters get the contract’s error body', () => {
  test.each([
    ['/reports/summary?from=2026-13-01', 'querystring.from'],
    ['/reports/summary?from=2026-11-20&to=2026-11-01', 'querystring.to'],
    ['/reports/by-event?event=not-an-id', 'querystring.event'],
    ['/reports/timeseries?interval=hour', 'querystring.interval'],
    ['/reports/inventory?ticketType=42', 'querystring.ticketType'],
    ['/reports/reconciliation?mismatch=maybe', 'querystring.mismatch'],
    ['/reports/summary?status=PAID', 'querystring.status'],
    ['/reports/financials?from=2016-01-01&to=2026-12-31', 'querystring.to'],
  ])('%s → 422 VALIDATION_FAILED naming %s', async (url, field) => {
    const response = await get(viewer.readKey, url);
    expect(response.statusCode).toBe(422);
    const { error } = response.json();
    expect(error).toMatchObject({ code: 'VALIDATION_FAILED', retryable: false });
    expect(error.details.fields.map((each: { field: string }) => each.field)).toContain(field);
  });

  test.each([
    '/reports/exports/attendees?format=xml',
    '/reports/exports/attendees?checkedIn=yes',
    '/reports/exports/buyers?to=yesterday',
  ])('%s → 422 for an ADMIN too', async (url) => {
    const response = await get(admin.readKey, url);
    expect(response.statusCode).toBe(422);
    expect(response.json().error.code).toBe('VALIDATION_FAILED');
  });
});
