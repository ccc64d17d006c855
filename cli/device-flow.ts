/**
 * The client side of the OAuth 2.0 device authorization grant (RFC 8628) as the service implements it:
 * POST /api/v1/auth/device/code starts it, the person approves the user code on the verification page in a browser,
 * and POST /api/v1/auth/device/token is polled until it answers with the API key or a final refusal.
 *
 * Time is injected (`Clock`), so the polling rules are tested without waiting: wait `interval` seconds between
 * polls (5 when the server names none, RFC 8628 §3.2), add 5 seconds on every `slow_down` for the rest of the
 * flow, double the wait when the server cannot be reached (§3.5 asks clients to back off on timeouts), and stop
 * once the device code has expired even if the server never says so.
 */
import { z } from 'zod';
import { describeErrorBody, type Fetch, normalizeApiUrl, USER_AGENT } from './api-client.js';
import { CliError, networkReason } from './errors.js';
import { terminalSafe } from './text.js';

export const DEVICE_CLIENT_ID = 'ticketing-cli';
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
export const LOGIN_SCOPES = ['write', 'read'] as const;
export type LoginScope = (typeof LOGIN_SCOPES)[number];

const DEFAULT_INTERVAL_SECONDS = 5;
const SLOW_DOWN_STEP_MS = 5_000;
const REQUEST_TIMEOUT_MS = 30_000;

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

const DeviceAuthorizationSchema = z.object({
  device_code: z.string().min(1),
  user_code: z.string().min(1),
  verification_uri: z.url(),
  verification_uri_complete: z.url().optional(),
  expires_in: z.number().positive(),
  interval: z.number().positive().optional(),
});
export type DeviceAuthorization = z.infer<typeof DeviceAuthorizationSchema>;

const TokenSchema = z.object({
  access_token: z.string().min(1),
  token_type: z.string(),
  scope: z.string().optional(),
  expires_in: z.number().optional(),
});

/** RFC 6749 §5.2 error response, which RFC 8628 §3.5 extends with the polling codes. */
const OAuthErrorSchema = z.object({ error: z.string(), error_description: z.string().optional() });

export interface DeviceLoginResult {
  accessToken: string;
  scope: string;
  expiresInSeconds: number | undefined;
}

/** Why a login ended without a key; `reason` is the RFC 8628 error code when the server gave one. */
export class DeviceLoginError extends CliError {
  readonly reason: string;

  constructor(reason: string, message: string) {
    super(message);
    this.name = 'DeviceLoginError';
    this.reason = reason;
  }
}

export interface DeviceLoginOptions {
  apiUrl: string;
  scope: LoginScope;
  clientId?: string;
  fetch?: Fetch;
  clock?: Clock;
  /** Shows the person where to go and which code to type; called once, before polling starts. */
  onPrompt(authorization: DeviceAuthorization): void;
  /** Told about every wait, for a progress indicator (and for tests). */
  onPoll?(event: { waitedMs: number; outcome: PollOutcome['kind'] }): void;
}

type PollOutcome =
  | { kind: 'token'; token: z.infer<typeof TokenSchema> }
  | { kind: 'authorization_pending' }
  | { kind: 'slow_down' }
  | { kind: 'unreachable'; reason: string }
  | { kind: 'refused'; error: string; description: string | undefined };

const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { accept: 'application/json', 'user-agent': USER_AGENT },
  // URLSearchParams sets application/x-www-form-urlencoded, the encoding RFC 8628 §3.1 and §3.4 require.
  body: new URLSearchParams(fields),
  signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
});

async function readJson(response: Response): Promise<unknown> {
  return response.json().catch(() => undefined);
}

export async function requestDeviceCode(
  apiUrl: string,
  scope: LoginScope,
  clientId: string,
  fetchImpl: Fetch,
): Promise<DeviceAuthorization> {
  let response: Response;
  try {
    response = await fetchImpl(`${apiUrl}/api/v1/auth/device/code`, form({ client_id: clientId, scope }));
  } catch (error) {
    throw new CliError(`Cannot reach ${apiUrl}: ${networkReason(error)}`, { cause: error });
  }
  const body = await readJson(response);
  if (!response.ok) {
    const oauth = OAuthErrorSchema.safeParse(body);
    if (oauth.success) {
      throw new DeviceLoginError(oauth.data.error, `Login could not start: ${describeOAuthError(oauth.data)}`);
    }
    throw new CliError(`Login could not start: ${describeErrorBody(response.status, body)}`);
  }
  const parsed = DeviceAuthorizationSchema.safeParse(body);
  if (!parsed.success) throw new CliError(`${apiUrl} did not answer like a device authorization endpoint`);
  return parsed.data;
}

const describeOAuthError = (error: z.infer<typeof OAuthErrorSchema>): string =>
  terminalSafe(error.error_description ? `${error.error_description} (${error.error})` : error.error);

async function pollToken(apiUrl: string, deviceCode: string, clientId: string, fetchImpl: Fetch): Promise<PollOutcome> {
  let response: Response;
  try {
    response = await fetchImpl(
      `${apiUrl}/api/v1/auth/device/token`,
      form({ grant_type: DEVICE_CODE_GRANT, device_code: deviceCode, client_id: clientId }),
    );
  } catch (error) {
    return { kind: 'unreachable', reason: networkReason(error) };
  }
  const body = await readJson(response);
  if (response.ok) {
    const token = TokenSchema.safeParse(body);
    if (!token.success) return { kind: 'refused', error: 'invalid_response', description: 'malformed token answer' };
    return { kind: 'token', token: token.data };
  }
  // A busy or failing server is not an answer about this code: back off and ask again while the code lives.
  if (response.status === 429 || response.status >= 500) {
    return { kind: 'unreachable', reason: `HTTP ${response.status}` };
  }
  const oauth = OAuthErrorSchema.safeParse(body);
  if (!oauth.success) {
    return { kind: 'refused', error: 'unexpected_response', description: describeErrorBody(response.status, body) };
  }
  if (oauth.data.error === 'authorization_pending') return { kind: 'authorization_pending' };
  if (oauth.data.error === 'slow_down') return { kind: 'slow_down' };
  return { kind: 'refused', error: oauth.data.error, description: oauth.data.error_description };
}

function refusal(error: string, description: string | undefined): DeviceLoginError {
  switch (error) {
    case 'access_denied':
      return new DeviceLoginError(error, 'Login denied on the verification page; nothing was stored');
    case 'expired_token':
      return new DeviceLoginError(error, 'The code expired before anyone approved it: run `ticketing login` again');
    default:
      return new DeviceLoginError(
        error,
        `Login failed: ${describeOAuthError({ error, error_description: description })}`,
      );
  }
}

/** Polls until approved, denied or expired (RFC 8628 §3.4–3.5). */
export async function pollForApproval(
  authorization: DeviceAuthorization,
  options: Omit<DeviceLoginOptions, 'onPrompt'>,
): Promise<DeviceLoginResult> {
  const apiUrl = normalizeApiUrl(options.apiUrl);
  const clientId = options.clientId ?? DEVICE_CLIENT_ID;
  const fetchImpl = options.fetch ?? fetch;
  const clock = options.clock ?? systemClock;
  const deadline = clock.now() + authorization.expires_in * 1000;
  let intervalMs = (authorization.interval ?? DEFAULT_INTERVAL_SECONDS) * 1000;
  for (;;) {
    // Never sleep past the code's life: once it is over, the answer is known without asking.
    const waitMs = Math.max(0, Math.min(intervalMs, deadline - clock.now()));
    await clock.sleep(waitMs);
    if (clock.now() >= deadline) throw refusal('expired_token', undefined);
    const outcome = await pollToken(apiUrl, authorization.device_code, clientId, fetchImpl);
    options.onPoll?.({ waitedMs: waitMs, outcome: outcome.kind });
    switch (outcome.kind) {
      case 'token': {
        if (outcome.token.token_type.toLowerCase() !== 'bearer') {
          throw new DeviceLoginError('unsupported_token_type', `Login failed: unexpected token type`);
        }
        return {
          accessToken: outcome.token.access_token,
          scope: outcome.token.scope ?? options.scope,
          expiresInSeconds: outcome.token.expires_in,
        };
      }
      case 'authorization_pending':
        break;
      case 'slow_down':
        intervalMs += SLOW_DOWN_STEP_MS;
        break;
      case 'unreachable':
        intervalMs *= 2;
        break;
      case 'refused':
        throw refusal(outcome.error, outcome.description);
    }
  }
}

/** The whole grant: ask for a code, show it, wait for the person to approve it. */
export async function deviceLogin(options: DeviceLoginOptions): Promise<DeviceLoginResult> {
  const apiUrl = normalizeApiUrl(options.apiUrl);
  const authorization = await requestDeviceCode(
    apiUrl,
    options.scope,
    options.clientId ?? DEVICE_CLIENT_ID,
    options.fetch ?? fetch,
  );
  options.onPrompt(authorization);
  return pollForApproval(authorization, { ...options, apiUrl });
}

/**
 * Ends a key at the service by presenting it (OAuth token revocation, RFC 7009: POST /api/v1/auth/revoke), as
 * `ticketing logout` does before forgetting it: deleting the saved file alone would leave a working key behind in
 * backups, shell histories or wherever it was copied. The service answers 200 whether or not the key was live.
 */
export async function revokeKey(apiUrl: string, key: string, fetchImpl: Fetch, clientId = DEVICE_CLIENT_ID) {
  const notRevoked =
    'the key was NOT revoked and is still saved: try again, or `ticketing logout --local` to only forget it';
  let response: Response;
  try {
    response = await fetchImpl(
      `${normalizeApiUrl(apiUrl)}/api/v1/auth/revoke`,
      form({ token: key, token_type_hint: 'access_token', client_id: clientId }),
    );
  } catch (error) {
    throw new CliError(`Cannot reach ${apiUrl}: ${networkReason(error)}; ${notRevoked}`, { cause: error });
  }
  if (response.ok) return;
  const body = await readJson(response);
  const oauth = OAuthErrorSchema.safeParse(body);
  const reason = oauth.success ? describeOAuthError(oauth.data) : describeErrorBody(response.status, body);
  throw new CliError(`${apiUrl} did not revoke the key: ${reason}; ${notRevoked}`);
}
