/**
 * A response kept for `Idempotency-Key` replays never keeps a credential shown once (here an API key's plaintext):
 * the record holds the response without it, so for the key's 24 hours nobody (a leaked store, a stolen
 * Idempotency-Key) can have it replayed; the replay says so instead. What it keeps is sealed at rest.
 */
import { decryptSecret } from '../../entities/webhook.js';
import { approveDevice } from '../support/device.js';
import { bearer, createOrganizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
});

test('a minted API key is never kept in the idempotency record; a replay answers without it and says so', async () => {
  const organizer = await createOrganizer(api.orm.em.fork(), { role: 'ADMIN' });
  const key = `keys-${Math.random().toString(36).slice(2, 10)}`;
  const create = () =>
    api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: { ...bearer(organizer.key), 'idempotency-key': key },
      payload: { name: 'reporting', scope: 'read' },
    });
  const first = await create();
  expect(first.statusCode).toBe(201);
  const plaintext: string = first.json().data.key;
  expect(plaintext).toMatch(/_live_/);

  const [stored] = (await api.orm.em
    .fork()
    .execute('select response_body::text as body from idempotency_records where key = ?', [key])) as Array<{
    body: string;
  }>;
  expect(stored?.body).toBeDefined();
  // Sealed at rest, and even opened with the secrets key the record holds no trace of the key.
  expect(stored?.body).not.toContain(plaintext.slice(-12));
  const opened = decryptSecret(JSON.parse(stored!.body) as string, api.env.SECRETS_ENCRYPTION_KEY);
  expect(opened).not.toContain(plaintext);
  expect(opened).not.toContain(plaintext.slice(-12));
  expect(JSON.parse(opened).data).toMatchObject({ id: first.json().data.id, key: null });

  const retried = await create();
  expect(retried.statusCode).toBe(201);
  expect(retried.headers['idempotent-replayed']).toBe('true');
  expect(retried.headers['idempotent-credential-withheld']).toBe('data.key');
  expect(retried.body).not.toContain(plaintext);
  const { key: replayedKey, ...rest } = retried.json().data;
  expect(replayedKey).toBeNull();
  const { key: _firstKey, ...firstRest } = first.json().data;
  expect(rest).toEqual(firstRest);
  expect(retried.json().warnings).toEqual([expect.objectContaining({ code: 'CREDENTIAL_NOT_REPLAYED' })]);
  // No second key was minted by the retry.
  const keys = await api.request({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(organizer.key) });
  expect(keys.json().data.filter((row: { name: string }) => row.name === 'reporting')).toHaveLength(1);
});

test('a device token is never kept in the idempotency record; a replay answers without it and says so', async () => {
  const organizer = await createOrganizer(api.orm.em.fork(), { role: 'ADMIN' });
  const started = await api.request({
    method: 'POST',
    url: '/api/v1/auth/device/code',
    payload: { client_id: 'ticketing-cli' },
  });
  expect(started.statusCode).toBe(200);
  const { device_code: deviceCode, user_code: userCode } = started.json();
  await approveDevice(api, { email: organizer.email, userCode, decision: 'approve' });

  const key = `device-${Math.random().toString(36).slice(2, 10)}`;
  const exchange = () =>
    api.request({
      method: 'POST',
      url: '/api/v1/auth/device/token',
      headers: { 'idempotency-key': key },
      payload: {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        device_code: deviceCode,
        client_id: 'ticketing-cli',
      },
    });
  const first = await exchange();
  expect(first.statusCode).toBe(200);
  const token: string = first.json().access_token;
  expect(token).toMatch(/_live_/);

  const [stored] = (await api.orm.em
    .fork()
    .execute('select response_body::text as body from idempotency_records where key = ?', [key])) as Array<{
    body: string;
  }>;
  const opened = decryptSecret(JSON.parse(stored!.body) as string, api.env.SECRETS_ENCRYPTION_KEY);
  expect(opened).not.toContain(token);
  expect(opened).not.toContain(token.slice(-12));
  expect(JSON.parse(opened)).toMatchObject({ access_token: null, token_type: 'Bearer' });

  const replayed = await exchange();
  expect(replayed.statusCode).toBe(200);
  expect(replayed.headers['idempotent-replayed']).toBe('true');
  expect(replayed.headers['idempotent-credential-withheld']).toBe('access_token');
  expect(replayed.body).not.toContain(token);
  expect(replayed.json()).toMatchObject({ access_token: null, token_type: 'Bearer', scope: 'write' });
  expect(replayed.json().warnings).toEqual([expect.objectContaining({ code: 'CREDENTIAL_NOT_REPLAYED' })]);
  // The key handed out the first time still works; the replay minted none.
  expect((await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(token) })).statusCode).toBe(200);
});
