/** Organizer webhooks, CRUD and URL rules (contract 4.15): ADMIN only, secret shown once and stored encrypted. */
import type { HostResolver } from '../../domain/webhook-targets.js';
import { decryptSecret } from '../../entities/webhook.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let admin: Organizer;
let staff: Organizer;

/** Names a DNS server would answer; anything else does not resolve. */
const resolver: HostResolver = async (hostname) => {
  const table: Record<string, string[]> = {
    'hooks.example.com': ['93.184.216.34'],
    'loopback.example.test': ['127.0.0.1'],
    'v6loopback.example.test': ['::1'],
    'metadata.example.test': ['169.254.169.254'],
    'intranet.example.test': ['192.168.10.20'],
  };
  const found = table[hostname];
  if (!found) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
  return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

beforeAll(async () => {
  api = await startTestApi();
  api.services.resolveHost = resolver;
  admin = await createOrganizer(api.orm.em.fork());
  staff = await createOrganizer(api.orm.em.fork(), { role: 'STAFF', workspaceId: admin.workspaceId });
});
afterAll(async () => {
  await api.close();
});

const create = (payload: Record<string, unknown>, who: Organizer = admin) =>
  api.request({ method: 'POST', url: '/api/v1/webhooks', headers: bearer(who.key), payload });

describe('webhook endpoints (contract 4.15)', () => {
  test('POST returns signingSecret once; GET lists delivery health without it; the secret is stored encrypted', async () => {
    const created = await create({ url: 'https://hooks.example.com/tickets', events: ['sale.confirmed'] });
    expect(created.statusCode).toBe(201);
    const hook = created.json().data;
    expect(hook).toMatchObject({
      url: 'https://hooks.example.com/tickets',
      events: ['sale.confirmed'],
      active: true,
      lastDeliveryAt: null,
      lastDeliveryStatus: null,
      failureCount: 0,
      pausedAt: null,
    });
    expect(hook.signingSecret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const listed = await api.request({ method: 'GET', url: '/api/v1/webhooks', headers: bearer(admin.key) });
    expect(listed.statusCode).toBe(200);
    const row = listed.json().data.find((h: { id: string }) => h.id === hook.id);
    expect(row).toMatchObject({ lastDeliveryAt: null, lastDeliveryStatus: null, failureCount: 0 });
    expect(row.signingSecret).toBeUndefined();
    expect(listed.body).not.toContain(hook.signingSecret);

    const stored = await api.orm.em
      .fork()
      .execute<{ secret_ciphertext: string }[]>('select secret_ciphertext from webhooks where id = ?', [hook.id]);
    expect(stored[0]!.secret_ciphertext).not.toContain(hook.signingSecret);
    expect(decryptSecret(stored[0]!.secret_ciphertext, api.env.SECRETS_ENCRYPTION_KEY)).toBe(hook.signingSecret);
  });

  test('a caller-supplied secret is used as the signing secret', async () => {
    const created = await create({
      url: 'https://hooks.example.com/own',
      events: ['sale.confirmed', 'sale.refunded'],
      secret: 'my-own-secret-of-32-characters!!',
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().data.signingSecret).toBe('my-own-secret-of-32-characters!!');
  });

  test('PATCH changes url, events and active but never rotates the secret; DELETE removes it from the list', async () => {
    const hook = (await create({ url: 'https://hooks.example.com/a', events: ['sale.confirmed'] })).json().data;
    const patched = await api.request({
      method: 'PATCH',
      url: `/api/v1/webhooks/${hook.id}`,
      headers: bearer(admin.key),
      payload: { url: 'https://hooks.example.com/b', events: ['sale.refunded'], active: false },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({
      url: 'https://hooks.example.com/b',
      events: ['sale.refunded'],
      active: false,
    });
    expect(patched.json().data.signingSecret).toBeUndefined();
    const stored = await api.orm.em
      .fork()
      .execute<{ secret_ciphertext: string }[]>('select secret_ciphertext from webhooks where id = ?', [hook.id]);
    expect(decryptSecret(stored[0]!.secret_ciphertext, api.env.SECRETS_ENCRYPTION_KEY)).toBe(hook.signingSecret);

    const deleted = await api.request({
      method: 'DELETE',
      url: `/api/v1/webhooks/${hook.id}`,
      headers: bearer(admin.key),
    });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().data).toEqual({ id: hook.id, deleted: true });
    const listed = await api.request({ method: 'GET', url: '/api/v1/webhooks?limit=100', headers: bearer(admin.key) });
    expect(listed.json().data.map((h: { id: string }) => h.id)).not.toContain(hook.id);
    expect(
      (await api.request({ method: 'DELETE', url: `/api/v1/webhooks/${hook.id}`, headers: bearer(admin.key) }))
        .statusCode,
    ).toBe(404);
  });

  test('webhooks need ADMIN: STAFF gets 403 INSUFFICIENT_ROLE', async () => {
    const response = await create({ url: 'https://hooks.example.com/x', events: ['sale.confirmed'] }, staff);
    expect(response.statusCode).toBe(403);
    expect(response.json().error.code).toBe('INSUFFICIENT_ROLE');
  });

  test('unknown event names are 422', async () => {
    expect((await create({ url: 'https://hooks.example.com/x', events: ['sale.created'] })).statusCode).toBe(422);
    expect((await create({ url: 'https://hooks.example.com/x', events: [] })).statusCode).toBe(422);
  });
});

describe('SSRF: webhook URLs that are not publicly reachable are refused (422)', () => {
  test.each([
    ['ftp://hooks.example.com/x', 'scheme_not_allowed'],
    ['http://localhost:3000/hook', 'localhost'],
    ['http://127.0.0.1:8080/hook', 'private_address'],
    ['http://10.1.2.3/hook', 'private_address'],
    ['http://172.20.0.5/hook', 'private_address'],
    ['http://192.168.0.10/hook', 'private_address'],
    ['http://169.254.169.254/latest/meta-data/', 'private_address'],
    ['http://0.0.0.0/hook', 'private_address'],
    ['http://[::1]:8080/hook', 'private_address'],
    ['http://[fe80::1]/hook', 'private_address'],
    ['http://[fc00::5]/hook', 'private_address'],
    ['http://[::ffff:127.0.0.1]/hook', 'private_address'],
    ['https://loopback.example.test/hook', 'resolves_to_private_address'],
    ['https://v6loopback.example.test/hook', 'resolves_to_private_address'],
    ['https://metadata.example.test/hook', 'resolves_to_private_address'],
    ['https://intranet.example.test/hook', 'resolves_to_private_address'],
  ])('%s → %s', async (url, reason) => {
    const response = await create({ url, events: ['sale.confirmed'] });
    expect(response.statusCode).toBe(422);
    expect(response.json().error).toMatchObject({ code: 'VALIDATION_FAILED', details: { reason } });
  });

  test('a name resolving to loopback through the system resolver (localhost) is refused', async () => {
    api.services.resolveHost = undefined;
    try {
      const response = await create({ url: 'http://LOCALHOST./hook', events: ['sale.confirmed'] });
      expect(response.statusCode).toBe(422);
    } finally {
      api.services.resolveHost = resolver;
    }
  });

  test('PATCH applies the same rules to a new url', async () => {
    const hook = (await create({ url: 'https://hooks.example.com/p', events: ['sale.confirmed'] })).json().data;
    const response = await api.request({
      method: 'PATCH',
      url: `/api/v1/webhooks/${hook.id}`,
      headers: bearer(admin.key),
      payload: { url: 'http://10.0.0.1/internal' },
    });
    expect(response.statusCode).toBe(422);
  });
});
