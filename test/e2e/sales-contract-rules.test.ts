/**
 * Contract rules on the sales group that cut across routes: the list envelope of a sale's tickets and attempts
 * (part 2) and who may read buyer contact data (part 5.4).
 */
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { publishEvent } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let admin: Organizer;
let staff: Organizer;
let viewer: Organizer;
let saleId: string;
const buyer = { name: 'Lucía Contacto', email: 'lucia.contacto@example.test', phone: '+57 300 000 0000' };

beforeAll(async () => {
  api = await startTestApi();
  admin = await createOrganizer(api.orm.em.fork(), { role: 'ADMIN' });
  staff = await createOrganizer(api.orm.em.fork(), { role: 'STAFF', workspaceId: admin.workspaceId });
  viewer = await createOrganizer(api.orm.em.fork(), { role: 'VIEWER', workspaceId: admin.workspaceId });
  const event = await publishEvent(api, admin, { capacity: 20 });
  const created = await api.request({
    method: 'POST',
    url: '/api/v1/sales',
    headers: bearer(admin.key),
    payload: {
      eventDateId: event.eventDateId,
      ticketTypeId: event.ticketTypeId,
      quantity: 2,
      channel: 'ADMIN',
      complimentary: true,
      buyer,
    },
  });
  expect(created.statusCode).toBe(201);
  saleId = created.json().data.id;
});
afterAll(async () => {
  await api.close();
});

const get = (url: string, key: string) => api.request({ method: 'GET', url, headers: bearer(key) });
const CONTACT_FIELDS = ['buyerEmail', 'buyerPhone', 'buyerDocumentType', 'buyerDocumentNumber'] as const;

describe('contract 2: a sale’s tickets and attempts come in the list envelope', () => {
  test.each(['tickets', 'attempts'])('GET /sales/{id}/%s answers { data: [...], page }', async (sub) => {
    const response = await get(`/api/v1/sales/${saleId}/${sub}`, staff.readKey);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(Array.isArray(body.data)).toBe(true);
    expect(body.page).toEqual({ nextCursor: null, hasMore: false });
    if (sub === 'tickets') expect(body.data).toHaveLength(2);
  });

  test.each(['tickets', 'attempts'])(
    'the OpenAPI response schema of GET /sales/{id}/%s documents page',
    async (sub) => {
      const document = (await api.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
      const path = Object.keys(document.paths).find((p) => new RegExp(`^/sales/\\{[^}]+\\}/${sub}$`).test(p));
      expect(path).toBeDefined();
      const schema = document.paths[path as string].get.responses['200'].content['application/json'].schema;
      const resolve = (s: { $ref?: string }) =>
        s.$ref ? document.components.schemas[s.$ref.replace('#/components/schemas/', '')] : s;
      const body = resolve(schema);
      expect(body.required).toEqual(expect.arrayContaining(['data', 'page']));
      expect(body.properties.data.type).toBe('array');
    },
  );
});

describe('contract 5.4: buyer contact fields are visible to STAFF and above only', () => {
  const rowOf = async (key: string) => {
    const response = await get(`/api/v1/sales?limit=100`, key);
    expect(response.statusCode).toBe(200);
    return response.json().data.find((row: { id: string }) => row.id === saleId);
  };

  test('a STAFF key reads them in GET /sales and GET /sales/{id}', async () => {
    const row = await rowOf(staff.readKey);
    expect(row).toMatchObject({ buyerName: buyer.name, buyerEmail: buyer.email, buyerPhone: buyer.phone });
    const detail = await get(`/api/v1/sales/${saleId}`, staff.readKey);
    expect(detail.statusCode).toBe(200);
    expect(detail.json().data).toMatchObject({ buyerEmail: buyer.email, buyerPhone: buyer.phone });
  });

  test('a VIEWER key gets the email masked and the other contact fields null in GET /sales, and no sale details', async () => {
    const row = await rowOf(viewer.readKey);
    expect(row).toBeDefined();
    expect(row.buyerName).toBe(buyer.name);
    for (const field of CONTACT_FIELDS) expect(row).toHaveProperty(field);
    // The contract's Sale has buyerEmail as a string: it stays one, but only the first letter and the domain show.
    expect(row.buyerEmail).toBe(`${buyer.email[0]}***${buyer.email.slice(buyer.email.lastIndexOf('@'))}`);
    expect(row.buyerPhone).toBeNull();
    expect(row.buyerDocumentType).toBeNull();
    expect(row.buyerDocumentNumber).toBeNull();
    expect(JSON.stringify(row)).not.toContain(buyer.email);
    const detail = await get(`/api/v1/sales/${saleId}`, viewer.readKey);
    expect(detail.statusCode).toBe(403);
    expect(detail.json().error.code).toBe('INSUFFICIENT_ROLE');
  });

  test('a VIEWER cannot probe hidden emails through the buyer filter; the name still matches', async () => {
    const byEmail = await get(`/api/v1/sales?buyer=${encodeURIComponent('lucia.contacto@')}`, viewer.readKey);
    expect(byEmail.json().data.map((row: { id: string }) => row.id)).not.toContain(saleId);
    const byName = await get(`/api/v1/sales?buyer=${encodeURIComponent('Lucía Contacto')}`, viewer.readKey);
    expect(byName.json().data.map((row: { id: string }) => row.id)).toContain(saleId);
    const staffByEmail = await get(`/api/v1/sales?buyer=${encodeURIComponent('lucia.contacto@')}`, staff.readKey);
    expect(staffByEmail.json().data.map((row: { id: string }) => row.id)).toContain(saleId);
  });
});
