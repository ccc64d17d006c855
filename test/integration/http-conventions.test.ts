import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi({ MAX_BODY_BYTES: '4096' });
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

const expectErrorBody = (body: unknown, code: string) => {
  expect(body).toEqual({
    error: {
      code,
      message: expect.any(String),
      retryable: expect.any(Boolean),
      details: (body as { error: { details: unknown } }).error.details,
    },
  });
  expect(Object.keys((body as { error: object }).error).sort()).toEqual(['code', 'details', 'message', 'retryable']);
  expect(JSON.stringify(body)).not.toMatch(/at .*\.(ts|js):\d+/);
};

describe('error bodies for bad input (contract 7, 8)', () => {
  test('an unknown route gets 404 with the error body', async () => {
    const response = await api.request({ method: 'GET', url: '/api/v1/no-such-thing', headers: bearer(organizer.key) });
    expect(response.statusCode).toBe(404);
    expectErrorBody(response.json(), 'ROUTE_NOT_FOUND');
  });

  test('malformed JSON gets 400 MALFORMED_JSON', async () => {
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: { ...bearer(organizer.key), 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expect(response.statusCode).toBe(400);
    expectErrorBody(response.json(), 'MALFORMED_JSON');
  });

  test('a wrong content type gets 415', async () => {
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: { ...bearer(organizer.key), 'content-type': 'application/xml' },
      payload: '<name>x</name>',
    });
    expect(response.statusCode).toBe(415);
    expectErrorBody(response.json(), 'UNSUPPORTED_MEDIA_TYPE');
  });

  test.each([
    ['/api/v1/api-keys', 'text/plain'],
    ['/api/v1/api-keys', 'text/plain; charset=utf-8'],
    ['/api/public/orders', 'text/plain'],
  ])('a %s body sent as %s gets 415, not 422', async (url, contentType) => {
    const response = await api.request({
      method: 'POST',
      url,
      headers: { ...bearer(organizer.key), 'content-type': contentType },
      payload: '{"name":"x"}',
    });
    expect(response.statusCode).toBe(415);
    expectErrorBody(response.json(), 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('an oversized body gets 413 and nothing is written', async () => {
    const name = 'x'.repeat(5000);
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(organizer.key),
      payload: { name },
    });
    expect(response.statusCode).toBe(413);
    expectErrorBody(response.json(), 'PAYLOAD_TOO_LARGE');
  });

  test('a validation failure gets 422 naming every bad field', async () => {
    const response = await api.request({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(organizer.key),
      payload: { name: '', scope: 'admin' },
    });
    expect(response.statusCode).toBe(422);
    const body = response.json();
    expectErrorBody(body, 'VALIDATION_FAILED');
    const fields = body.error.details.fields.map((f: { field: string }) => f.field).sort();
    expect(fields).toEqual(['body.name', 'body.scope']);
  });

  test('limit outside 1–100 gets 422; a forged cursor gets 422', async () => {
    for (const limit of ['0', '101', 'abc']) {
      const response = await api.request({
        method: 'GET',
        url: `/api/v1/api-keys?limit=${limit}`,
        headers: bearer(organizer.key),
      });
      expect(response.statusCode).toBe(422);
      expect(response.json().error.details.fields[0].field).toBe('querystring.limit');
    }
    const forged = await api.request({
      method: 'GET',
      url: '/api/v1/api-keys?cursor=not-a-cursor',
      headers: bearer(organizer.key),
    });
    expect(forged.statusCode).toBe(422);
  });

  test('a non-uuid id in the path is a 404, not a server error', async () => {
    const response = await api.request({
      method: 'DELETE',
      url: '/api/v1/api-keys/abc',
      headers: bearer(organizer.key),
    });
    expect(response.statusCode).toBe(404);
    expectErrorBody(response.json(), 'NOT_FOUND');
  });
});

describe('request ids', () => {
  test('every response carries x-request-id; a sane caller id is kept', async () => {
    const generated = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(organizer.key) });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await api.request({
      method: 'GET',
      url: '/api/v1/me',
      headers: { ...bearer(organizer.key), 'x-request-id': 'client-req-12345' },
    });
    expect(kept.headers['x-request-id']).toBe('client-req-12345');
    const replaced = await api.request({
      method: 'GET',
      url: '/api/v1/me',
      headers: { ...bearer(organizer.key), 'x-request-id': 'bad id\nwith newline' },
    });
    expect(replaced.headers['x-request-id']).not.toContain('bad');
  });
});

describe('cursor pagination (contract part 2, Page)', () => {
  test('pages cover every row exactly once while rows are inserted between pages', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const mint = (name: string) =>
      api.request({ method: 'POST', url: '/api/v1/api-keys', headers: bearer(owner.key), payload: { name } });
    for (let i = 0; i < 7; i += 1) expect((await mint(`initial ${i}`)).statusCode).toBe(201);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `?limit=3&cursor=${encodeURIComponent(cursor)}` : '?limit=3';
      const response = await api.request({
        method: 'GET',
        url: `/api/v1/api-keys${query}`,
        headers: bearer(owner.key),
      });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.data.length).toBeLessThanOrEqual(3);
      seen.push(...body.data.map((k: { name: string }) => k.name));
      expect(body.page.hasMore).toBe(body.page.nextCursor !== null);
      cursor = body.page.nextCursor;
      pages += 1;
      // Concurrent writers: new rows land while the client is paging.
      await Promise.all([mint(`concurrent ${pages}a`), mint(`concurrent ${pages}b`)]);
    } while (cursor);

    const initial = seen.filter((name) => name.startsWith('initial') || name.endsWith('key'));
    expect(new Set(seen).size).toBe(seen.length);
    expect(initial.sort()).toEqual(
      [...Array.from({ length: 7 }, (_, i) => `initial ${i}`), 'read key', 'write key'].sort(),
    );
  });

  test('the default page size is 20', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    await Promise.all(
      Array.from({ length: 22 }, (_, i) =>
        api.request({
          method: 'POST',
          url: '/api/v1/api-keys',
          headers: bearer(owner.key),
          payload: { name: `k${i}` },
        }),
      ),
    );
    const response = await api.request({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(owner.key) });
    expect(response.json().data).toHaveLength(20);
    expect(response.json().page.hasMore).toBe(true);
  });
});

describe('idempotent retries with Idempotency-Key', () => {
  test('a retry with the same key and body returns the first response and does the work once', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const send = () =>
      api.request({
        method: 'POST',
        url: '/api/v1/api-keys',
        headers: { ...bearer(owner.key), 'idempotency-key': 'mint-once-1' },
        payload: { name: 'idempotent', scope: 'write' },
      });
    const first = await send();
    const retry = await send();
    expect(first.statusCode).toBe(201);
    expect(retry.statusCode).toBe(201);
    // The minted key is a credential shown once: the replay names the same key but never repeats its secret.
    const { key: firstSecret, ...firstKey } = first.json().data;
    expect(firstSecret).toMatch(/_live_/);
    expect(retry.json().data).toEqual({ ...firstKey, key: null });
    expect(retry.json().warnings).toEqual([expect.objectContaining({ code: 'CREDENTIAL_NOT_REPLAYED' })]);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    const list = await api.request({ method: 'GET', url: '/api/v1/api-keys?limit=100', headers: bearer(owner.key) });
    expect(list.json().data.filter((k: { name: string }) => k.name === 'idempotent')).toHaveLength(1);
  });

  test('concurrent duplicates while the first is running still produce one result', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const responses = await Promise.all(
      Array.from({ length: 5 }, () =>
        api.request({
          method: 'POST',
          url: '/api/v1/workspaces',
          headers: { ...bearer(owner.key), 'idempotency-key': 'create-ws-concurrently' },
          payload: { name: 'Concurrent Workspace' },
        }),
      ),
    );
    const ids = new Set(responses.map((r) => r.json().data.id));
    expect(responses.every((r) => r.statusCode === 201)).toBe(true);
    expect(ids.size).toBe(1);
    const me = await api.request({ method: 'GET', url: '/api/v1/me', headers: bearer(owner.key) });
    expect(me.json().data.workspaces.filter((w: { name: string }) => w.name === 'Concurrent Workspace')).toHaveLength(
      1,
    );
  });

  test('the same key with another body is a 422', async () => {
    const owner = await createOrganizer(api.orm.em.fork());
    const headers = { ...bearer(owner.key), 'idempotency-key': 'reused-key' };
    await api.request({ method: 'POST', url: '/api/v1/api-keys', headers, payload: { name: 'first' } });
    const reused = await api.request({ method: 'POST', url: '/api/v1/api-keys', headers, payload: { name: 'second' } });
    expect(reused.statusCode).toBe(422);
    expect(reused.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  test('keys are per caller: two organizers using the same key do not share responses', async () => {
    const a = await createOrganizer(api.orm.em.fork());
    const b = await createOrganizer(api.orm.em.fork());
    const send = (key: string) =>
      api.request({
        method: 'POST',
        url: '/api/v1/api-keys',
        headers: { ...bearer(key), 'idempotency-key': 'shared-name' },
        payload: { name: 'same' },
      });
    const first = await send(a.key);
    const second = await send(b.key);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(second.json().data.id).not.toBe(first.json().data.id);
  });
});
