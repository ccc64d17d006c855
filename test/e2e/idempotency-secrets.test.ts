/**
 * A response kept for `Idempotency-Key` replays can carry a credential shown once (here an API key's plaintext):
 * it is sealed at rest like every other secret, and the same principal's retry still gets it back.
 */
import { bearer, createOrganizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
});

test('a created API key is not readable in the idempotency store, and a retry gets the same key back', async () => {
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
  expect(stored?.body).not.toContain(plaintext);
  expect(stored?.body).not.toContain(plaintext.slice(-12));

  const retried = await create();
  expect(retried.statusCode).toBe(201);
  expect(retried.headers['idempotent-replayed']).toBe('true');
  expect(retried.json()).toEqual(first.json());
});
