import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { pollDeviceAuthorization, startDeviceAuthorization } from '../../../domain/device-authorizations.js';
import {
  CLIENT_ID_PATTERN,
  DEVICE_CODE_GRANT_TYPE,
  formatUserCode,
  OAUTH_ERROR_CODES,
  type OAuthErrorCode,
} from '../../../domain/device-codes.js';
import { AppError } from '../../../domain/errors.js';
import type { Scope } from '../../../domain/roles.js';
import { organizerAccountEmailWorkflowId } from '../../../workflows/organizer-account-definitions.js';
import type { organizerAccountEmail } from '../../../workflows/organizer-account-email.js';
import { EmailSchema } from '../../http/email.js';
import { dataOf, WarningSchema } from '../../http/envelope.js';
import { acceptFormBodies } from '../../http/form-body.js';
import { enforceRateLimit } from '../../http/limits.js';
import { publicAccess } from '../../http/route-access.js';
import { rateLimitClientKey } from '../../plugins/rate-limit.js';
import { revokePresentedKey } from '../../services/api-keys.js';
import type { ApiServices } from '../../services.js';

/**
 * The auth group (contract 4.1): self-service sign-up, the two endpoints of the OAuth 2.0 device authorization
 * grant (RFC 8628) a command-line client uses to obtain an API key, and token revocation (RFC 7009), with which it
 * ends that key at logout. These endpoints speak OAuth, as clients of those RFCs expect: form-encoded requests (JSON
 * accepted too), and errors in OAuth's own format (RFC 6749 section 5.2) rather than the contract's error body.
 */

const NO_CREDENTIAL: Array<Record<string, string[]>> = [];

/** Rate-limit key for an (email, client) pair, length-prefixed so no pair can spell another's. */
const signUpKey = (email: string, client: string): string => `${email.length}:${email}:${client.length}:${client}`;

const ClientIdSchema = z
  .string()
  .regex(CLIENT_ID_PATTERN, 'a short client name: letters, digits, space, . _ -')
  .meta({
    description:
      'The client asking, e.g. `ticketing-cli`; shown to the person who approves. No client secret (a public client).',
    examples: ['ticketing-cli'],
  });

/** OAuth's space-delimited scope list; `write` includes reading, so the key gets `write` whenever it is asked for. */
const ScopeSchema = z
  .string()
  .regex(/^(read|write)( (read|write))*$/, 'read or write')
  .transform((value): Scope => (value.split(' ').includes('write') ? 'write' : 'read'))
  .meta({
    description:
      'The scope of the key: `write` (the default: the command-line session can write, contract 5.3) or `read`',
    examples: ['write'],
  });

const OAuthErrorSchema = z
  .object({
    error: z.enum(OAUTH_ERROR_CODES),
    error_description: z.string(),
    interval: z
      .number()
      .int()
      .optional()
      .meta({ description: 'With slow_down: the seconds to wait between polls from now on (the old interval + 5)' }),
  })
  .meta({
    id: 'OAuthError',
    description:
      "OAuth 2.0's error format (RFC 6749 section 5.2, RFC 8628 section 3.5), used by the device endpoints instead of " +
      "the contract's error body. authorization_pending: keep polling; slow_down: keep polling, 5 seconds slower; " +
      'access_denied: the person denied; expired_token: start again; invalid_grant: unknown, foreign or used device_code.',
  });

const DeviceAuthorizationSchema = z
  .object({
    device_code: z.string().meta({ description: 'Secret the client polls the token endpoint with; never show it' }),
    user_code: z
      .string()
      .meta({ description: 'What the person types on the verification page', examples: ['WDJB-MJHT'] }),
    verification_uri: z.string().meta({ description: 'The page where the person enters user_code' }),
    verification_uri_complete: z
      .string()
      .meta({ description: 'The same page with user_code filled in (for a link or QR code)' }),
    expires_in: z.number().int().meta({ description: 'Seconds both codes stay valid' }),
    interval: z.number().int().meta({ description: 'Seconds to wait between polls of the token endpoint' }),
  })
  .meta({ id: 'DeviceAuthorization' });

const DeviceTokenSchema = z
  .object({
    access_token: z
      .string()
      .nullable()
      .meta({
        description:
          'An organizer API key (`<prefix>_live_…`), shown only in this answer. Null in a replay of the same ' +
          'Idempotency-Key: the key is never kept for replays (warnings says so); revoke it and log in again if lost.',
      }),
    token_type: z.literal('Bearer'),
    expires_in: z
      .number()
      .int()
      .optional()
      .meta({ description: 'Absent: the key does not expire (revoke it with DELETE /api-keys/{id})' }),
    scope: z.enum(['read', 'write']),
    warnings: z
      .array(WarningSchema)
      .optional()
      .meta({ description: 'Only in an Idempotency-Key replay: CREDENTIAL_NOT_REPLAYED' }),
  })
  .meta({ id: 'DeviceToken' });

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

function sendOAuthError(
  reply: FastifyReply,
  error: OAuthErrorCode,
  description: string,
  extra: { interval?: number } = {},
): FastifyReply {
  return reply
    .status(400)
    .headers(NO_STORE)
    .send({ error, error_description: description, ...extra });
}

/** The OAuth error a malformed request gets: which parameter was wrong decides it (RFC 6749 section 5.2). */
function oauthErrorOfInvalidRequest(
  request: FastifyRequest,
  issues: Array<{ instancePath: string; message?: string }>,
): { error: OAuthErrorCode; description: string } {
  const body = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Record<
    string,
    unknown
  >;
  const first = issues[0];
  const parameter = first?.instancePath.split('/')[1] ?? '';
  const description = parameter
    ? `${parameter}: ${first?.message ?? 'is invalid'}`
    : 'The request body is missing or malformed';
  const present = parameter !== '' && typeof body[parameter] === 'string';
  if (present && parameter === 'client_id') return { error: 'invalid_client', description };
  if (present && parameter === 'scope') return { error: 'invalid_scope', description };
  return { error: 'invalid_request', description };
}

/**
 * The device endpoints' error handler: every malformed request (bad parameters, unreadable body, control
 * characters) answers in OAuth's format; anything else (rate limits, outages) goes on to the service's handler.
 */
function oauthErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (hasZodFastifySchemaValidationErrors(error)) {
    const { error: code, description } = oauthErrorOfInvalidRequest(request, error.validation);
    return sendOAuthError(reply, code, description);
  }
  if (error instanceof AppError && error.code === 'VALIDATION_FAILED') {
    return sendOAuthError(reply, 'invalid_request', error.message);
  }
  if (typeof error.code === 'string' && error.code.startsWith('FST_ERR_CTP_') && error.statusCode !== 413) {
    return sendOAuthError(
      reply,
      'invalid_request',
      'Send the parameters as application/x-www-form-urlencoded (or a JSON object)',
    );
  }
  throw error;
}

export const authRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  acceptFormBodies(app);
  const { env } = services;

  app.post(
    '/auth/signup',
    {
      config: publicAccess(),
      schema: {
        tags: ['auth'],
        summary: 'Sign up as an organizer: emails a verification link',
        description:
          'Creates an unverified account and emails a link to the address; opening it verifies the address, signs the ' +
          'browser in and leads to the device page, where the first workspace is named and the first key approved. ' +
          'The answer is the same whether or not the address already has an account (that address gets a sign-in ' +
          'pointer instead of a link, and its account is left untouched). Rate limited per client, and per email from ' +
          'each client (so nobody can block an address for its owner).',
        security: NO_CREDENTIAL,
        body: z.object({
          email: EmailSchema,
          name: z.string().trim().min(2).max(120).meta({ description: 'Your name, as your team will see it' }),
        }),
        response: {
          202: dataOf(
            z
              .object({
                sent: z.literal(true),
                expiresInSeconds: z.number().int().meta({ description: 'How long the verification link works' }),
              })
              .meta({ id: 'SignUpAccepted' }),
          ),
        },
      },
    },
    async (request, reply) => {
      const { email, name } = request.body;
      const client = rateLimitClientKey(request.ip);
      await enforceRateLimit(request, 'signUpPerClient', client);
      // Per email and client: a stranger spending the budget of someone's address must not block its owner.
      await enforceRateLimit(request, 'signUpPerEmailAndClient', signUpKey(email, client));
      const linkTtlMs = env.SIGN_UP_LINK_TTL_SECONDS * 1000;
      await services.temporal.workflow.start<typeof organizerAccountEmail>('organizerAccountEmail', {
        taskQueue: env.TEMPORAL_TASK_QUEUE,
        workflowId: organizerAccountEmailWorkflowId(randomUUID()),
        args: [{ kind: 'sign-up', email, name, linkTtlMs, publicOrigin: env.PUBLIC_ORIGIN }],
        workflowExecutionTimeout: '10 minutes',
      });
      // Decided by the worker, not here: whether the address is known never changes this answer or its timing.
      return reply.status(202).send({ data: { sent: true as const, expiresInSeconds: env.SIGN_UP_LINK_TTL_SECONDS } });
    },
  );

  app.post(
    '/auth/device/code',
    {
      config: publicAccess(),
      errorHandler: oauthErrors,
      schema: {
        tags: ['auth'],
        summary: 'Start the device authorization grant (RFC 8628 section 3.1)',
        description:
          'A command-line client asks for a key. Show the person `user_code` and `verification_uri` (or ' +
          '`verification_uri_complete`), then poll POST /auth/device/token every `interval` seconds with `device_code`.',
        security: NO_CREDENTIAL,
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: z.object({ client_id: ClientIdSchema, scope: ScopeSchema.optional() }),
        response: { 200: DeviceAuthorizationSchema, 400: OAuthErrorSchema },
      },
    },
    async (request, reply) => {
      await enforceRateLimit(request, 'deviceCodePerClient', rateLimitClientKey(request.ip));
      const started = await startDeviceAuthorization(request.em, {
        clientId: request.body.client_id,
        requestedFrom: request.ip,
        scope: request.body.scope ?? 'write',
        ttlSeconds: env.DEVICE_CODE_TTL_SECONDS,
        intervalSeconds: env.DEVICE_CODE_INTERVAL_SECONDS,
      });
      const userCode = formatUserCode(started.userCode);
      const verificationUri = new URL('/device', env.PUBLIC_ORIGIN).toString();
      return reply.headers(NO_STORE).send({
        device_code: started.deviceCode,
        user_code: userCode,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${userCode}`,
        expires_in: env.DEVICE_CODE_TTL_SECONDS,
        interval: started.intervalSeconds,
      });
    },
  );

  app.post(
    '/auth/device/token',
    {
      // The key is a credential shown once: an Idempotency-Key replay answers without it (api/plugins/idempotency.ts).
      config: { ...publicAccess(), credentialFields: ['access_token'] },
      errorHandler: oauthErrors,
      schema: {
        tags: ['auth'],
        summary: 'Poll for the key of a device authorization (RFC 8628 section 3.4)',
        description:
          'Answers 400 with an OAuth error until the person decides (authorization_pending; slow_down when polled ' +
          'faster than the interval, which then grows by 5 seconds), then once 200 with the API key. A second ' +
          'exchange of the same device_code is invalid_grant.',
        security: NO_CREDENTIAL,
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: z.object({
          grant_type: z
            .string()
            .min(1)
            .meta({ description: `Always \`${DEVICE_CODE_GRANT_TYPE}\`` }),
          device_code: z.string().min(1).max(200),
          client_id: ClientIdSchema,
        }),
        response: { 200: DeviceTokenSchema, 400: OAuthErrorSchema },
      },
    },
    async (request, reply) => {
      if (request.body.grant_type !== DEVICE_CODE_GRANT_TYPE) {
        return sendOAuthError(reply, 'unsupported_grant_type', `grant_type must be ${DEVICE_CODE_GRANT_TYPE}`);
      }
      const result = await pollDeviceAuthorization(request.em, {
        deviceCode: request.body.device_code,
        clientId: request.body.client_id,
        apiKeyPrefix: env.API_KEY_PREFIX,
      });
      if (result.answer === 'slow_down') {
        return sendOAuthError(reply, 'slow_down', result.description, { interval: result.intervalSeconds });
      }
      if (result.answer === 'error') return sendOAuthError(reply, result.error, result.description);
      request.log.info({ clientId: request.body.client_id, scope: result.scope }, 'device authorization exchanged');
      return reply
        .headers(NO_STORE)
        .send({ access_token: result.accessToken, token_type: 'Bearer' as const, scope: result.scope });
    },
  );

  app.post(
    '/auth/revoke',
    {
      config: publicAccess(),
      errorHandler: oauthErrors,
      schema: {
        tags: ['auth'],
        summary: 'Revoke an API key by presenting it (OAuth token revocation, RFC 7009)',
        description:
          'How a client logs out: it sends the key it holds, read or write, and the key stops working at once (401 on ' +
          'its next use). The answer is 200 with an empty object whether or not the string was a live key (RFC 7009 ' +
          'section 2.2), so it tells nobody which strings are keys. DELETE /api-keys/{id} revokes a key by id instead.',
        security: NO_CREDENTIAL,
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: z.object({
          token: z.string().min(1).max(200).meta({ description: 'The API key to revoke' }),
          token_type_hint: z
            .string()
            .max(40)
            .optional()
            .meta({ description: 'Optional (RFC 7009); every token here is an API key, so it is not needed' }),
          client_id: ClientIdSchema.optional(),
        }),
        response: { 200: z.object({}).strict(), 400: OAuthErrorSchema },
      },
    },
    async (request, reply) => {
      // The device grant's clients: one budget per client address for starting and ending logins.
      await enforceRateLimit(request, 'deviceCodePerClient', rateLimitClientKey(request.ip));
      const revoked = await revokePresentedKey(request.em, request.body.token);
      if (revoked)
        request.log.info({ apiKeyId: revoked, clientId: request.body.client_id }, 'api key revoked by its holder');
      return reply.headers(NO_STORE).send({});
    },
  );
};
