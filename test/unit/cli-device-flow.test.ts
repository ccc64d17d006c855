/**
 * The command-line client's side of the device authorization grant (RFC 8628), against a fake authorization server:
 * how often it polls, what it sends, and when it stops.
 */

import { DEVICE_CODE_GRANT, type DeviceAuthorization, DeviceLoginError, deviceLogin } from '../../cli/device-flow.js';
import { CliError } from '../../cli/errors.js';
import {
  deviceAuthorization,
  type FakeAnswer,
  type FakeApi,
  fakeClock,
  oauthError,
  startFakeApi,
} from './cli-fake-api.js';

const TOKEN: FakeAnswer = {
  status: 200,
  body: { access_token: 'tkt_live_secret', token_type: 'Bearer', scope: 'write', expires_in: 7_776_000 },
};

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

/** A server whose device-code answer is `authorization` and whose token endpoint answers `polls` in order. */
async function authorizationServer(polls: FakeAnswer[], authorization = deviceAuthorization()): Promise<FakeApi> {
  const remaining = [...polls];
  api = await startFakeApi((request) => {
    if (request.path === '/api/v1/auth/device/code') return { status: 200, body: authorization };
    if (request.path === '/api/v1/auth/device/token') {
      return remaining.shift() ?? { status: 500, body: { error: 'test ran out of scripted answers' } };
    }
    return { status: 404, body: {} };
  });
  return api;
}

const tokenPolls = (server: FakeApi) => server.requests.filter((r) => r.path === '/api/v1/auth/device/token');

async function login(server: FakeApi, clock = fakeClock()) {
  const prompts: DeviceAuthorization[] = [];
  const result = deviceLogin({ apiUrl: server.url, scope: 'write', clock, onPrompt: (a) => prompts.push(a) });
  return { result, prompts, clock };
}

describe('device login (RFC 8628)', () => {
  test('polls at the interval, adds 5 s on every slow_down for the rest of the flow, and returns the key', async () => {
    const server = await authorizationServer([
      oauthError('authorization_pending'),
      oauthError('slow_down'),
      oauthError('slow_down'),
      oauthError('authorization_pending'),
      TOKEN,
    ]);
    const { result, prompts, clock } = await login(server);

    await expect(result).resolves.toEqual({
      accessToken: 'tkt_live_secret',
      scope: 'write',
      expiresInSeconds: 7_776_000,
    });
    expect(clock.sleeps).toEqual([5_000, 5_000, 10_000, 15_000, 15_000]);
    expect(prompts.map((p) => [p.user_code, p.verification_uri, p.verification_uri_complete])).toEqual([
      ['WDJB-MJHT', 'http://127.0.0.1:1/device', 'http://127.0.0.1:1/device?user_code=WDJB-MJHT'],
    ]);
  });

  test('sends form-encoded requests: client_id and scope for the code, the device_code grant for the token', async () => {
    const server = await authorizationServer([TOKEN]);
    await (await login(server)).result;

    const [codeRequest, tokenRequest] = server.requests;
    expect(codeRequest?.method).toBe('POST');
    expect(codeRequest?.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(Object.fromEntries(codeRequest?.form ?? [])).toEqual({ client_id: 'ticketing-cli', scope: 'write' });
    expect(tokenRequest?.path).toBe('/api/v1/auth/device/token');
    expect(tokenRequest?.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(Object.fromEntries(tokenRequest?.form ?? [])).toEqual({
      grant_type: DEVICE_CODE_GRANT,
      device_code: 'device-code-secret',
      client_id: 'ticketing-cli',
    });
  });

  test('access_denied stops polling with a clear refusal', async () => {
    const server = await authorizationServer([oauthError('authorization_pending'), oauthError('access_denied')]);
    const { result } = await login(server);

    const error = await result.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeviceLoginError);
    expect(error).toMatchObject({ reason: 'access_denied', exitCode: 1 });
    expect((error as Error).message).toMatch(/denied/i);
    expect(tokenPolls(server)).toHaveLength(2);
  });

  test('expired_token from the server stops polling and asks to log in again', async () => {
    const server = await authorizationServer([oauthError('authorization_pending'), oauthError('expired_token')]);
    const { result } = await login(server);

    await expect(result).rejects.toMatchObject({ reason: 'expired_token', message: expect.stringMatching(/expired/) });
    expect(tokenPolls(server)).toHaveLength(2);
  });

  test('once expires_in has passed the client stops by itself, without waiting a full interval or polling again', async () => {
    const pending = Array.from({ length: 10 }, () => oauthError('authorization_pending'));
    const server = await authorizationServer(pending, deviceAuthorization({ expires_in: 12, interval: 5 }));
    const { result, clock } = await login(server);

    await expect(result).rejects.toMatchObject({ reason: 'expired_token' });
    expect(clock.sleeps).toEqual([5_000, 5_000, 2_000]);
    expect(tokenPolls(server)).toHaveLength(2);
  });

  test('without an interval from the server the client waits 5 seconds (RFC 8628 section 3.2)', async () => {
    const authorization = deviceAuthorization();
    delete (authorization as { interval?: number }).interval;
    const server = await authorizationServer([oauthError('authorization_pending'), TOKEN], authorization);
    const { result, clock } = await login(server);

    await result;
    expect(clock.sleeps).toEqual([5_000, 5_000]);
  });

  test('a failing server (5xx) is not an answer: the client doubles its wait and keeps polling', async () => {
    const server = await authorizationServer([
      {
        status: 503,
        body: { error: { code: 'SERVICE_UNAVAILABLE', message: 'down', retryable: true, details: null } },
      },
      oauthError('authorization_pending'),
      TOKEN,
    ]);
    const { result, clock } = await login(server);

    await expect(result).resolves.toMatchObject({ accessToken: 'tkt_live_secret' });
    expect(clock.sleeps).toEqual([5_000, 10_000, 10_000]);
  });

  test('any other token error (invalid_grant) ends the login with the reason', async () => {
    const server = await authorizationServer([oauthError('invalid_grant')]);
    const { result } = await login(server);

    await expect(result).rejects.toMatchObject({
      reason: 'invalid_grant',
      message: 'Login failed: fake invalid_grant (invalid_grant)',
    });
  });

  test('a refused device-code request shows the contract error body in one line and never polls', async () => {
    api = await startFakeApi(() => ({
      status: 429,
      body: { error: { code: 'RATE_LIMITED', message: 'Too many requests', retryable: true, details: null } },
    }));
    const { result } = await login(api);

    const error = await result.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CliError);
    expect((error as Error).message).toBe('Login could not start: Too many requests (RATE_LIMITED)');
    expect(tokenPolls(api)).toHaveLength(0);
  });
});
