/**
 * The codec endpoint (Temporal's codec-server protocol): the Temporal UI and CLI send the payloads of a workflow
 * history here to see buyer data the payload codec encrypted (`POST /codec/decode`), or to encrypt input they send
 * to a workflow (`POST /codec/encode`). Bodies are protobuf JSON `Payloads`: `{ payloads: [{ metadata: { k: base64 },
 * data: base64 }] }`; `X-Namespace`, when sent, must name the namespace this service runs in.
 *
 * Operators only: `Authorization: Bearer <CODEC_OPERATOR_TOKEN>` (CLI `--codec-auth`, curl), or the same token as the
 * password of HTTP Basic, which a browser remembers after `GET /codec/login` and sends with the Temporal UI's
 * cross-origin requests when its codec setting "Include cross-origin credentials" is on. The UI's origins
 * (CODEC_CORS_ORIGINS) get CORS with credentials. Requests are logged by operation and count only, never with
 * payloads; the Idempotency-Key header is ignored here, so decoded data is never stored as a replayable response.
 * Kept out of the OpenAPI documents: it is an operator tool, not part of the organizer or public API.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { EncryptionCodec, PayloadCodecError } from '../../config/payload-codec.js';
import { AppError } from '../../domain/errors.js';
import type { ApiServices } from '../services.js';

export const CODEC_PREFIX = '/codec';
const REALM = 'ticketing-codec';
/** Temporal refuses payloads above 2 MB; base64 and a batch of them need more than the API's default body limit. */
const CODEC_BODY_LIMIT = 8 * 1024 * 1024;
const MAX_PAYLOADS = 1000;
const ALLOWED_HEADERS = 'Authorization, Content-Type, X-Namespace';

const Base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');
/** One protobuf-JSON Payload; fields this endpoint does not know are kept, so a plain payload comes back as sent. */
const JsonPayloadSchema = z.looseObject({
  metadata: z.record(z.string(), Base64).nullish(),
  data: Base64.nullish(),
});
type JsonPayload = z.infer<typeof JsonPayloadSchema>;
/** Protobuf JSON omits an empty list: the Temporal CLI sends `{}` for a field without payloads. */
const PayloadsSchema = z.object({
  payloads: z
    .array(JsonPayloadSchema)
    .max(MAX_PAYLOADS)
    .nullish()
    .transform((payloads) => payloads ?? []),
});

function toPayload(json: JsonPayload): Payload {
  const metadata: Record<string, Uint8Array> = {};
  for (const [key, value] of Object.entries(json.metadata ?? {})) metadata[key] = Buffer.from(value, 'base64');
  return { metadata, data: Buffer.from(json.data ?? '', 'base64') };
}

function toJson(payload: Payload): { metadata: Record<string, string>; data: string } {
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(payload.metadata ?? {})) {
    metadata[key] = Buffer.from(value).toString('base64');
  }
  return { metadata, data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64') };
}

/** The token the caller presents: a Bearer token, or the password (else the user name) of HTTP Basic. */
function presentedToken(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (typeof authorization !== 'string') return undefined;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (bearer?.[1]) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(authorization);
  if (!basic?.[1]) return undefined;
  const credentials = Buffer.from(basic[1], 'base64').toString('utf8');
  const separator = credentials.indexOf(':');
  const password = separator < 0 ? '' : credentials.slice(separator + 1);
  const user = separator < 0 ? credentials : credentials.slice(0, separator);
  return password || user || undefined;
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

export const codecRoutes: FastifyPluginAsyncZod<ApiServices> = async (app, services) => {
  const { env } = services;
  const codec = EncryptionCodec.fromEnv(env);
  const expected = env.CODEC_OPERATOR_TOKEN ? digest(env.CODEC_OPERATOR_TOKEN) : null;
  const allowedOrigins = new Set(
    env.CODEC_CORS_ORIGINS.split(',')
      .map((origin) => origin.trim().replace(/\/+$/, ''))
      .filter((origin) => origin !== ''),
  );

  /** 401 with the contract's error body; `Basic` makes a browser ask for the token (GET /codec/login only). */
  const requireOperator =
    (scheme: 'Basic' | 'Bearer') =>
    async (request: FastifyRequest): Promise<void> => {
      const presented = presentedToken(request);
      // Both sides hashed to equal lengths, so the comparison takes the same time whatever was sent.
      if (expected && presented !== undefined && timingSafeEqual(digest(presented), expected)) return;
      throw new AppError(
        'UNAUTHENTICATED',
        expected
          ? 'The codec endpoint is for operators: send the codec operator token as `Authorization: Bearer <token>`'
          : 'The codec endpoint is disabled: CODEC_OPERATOR_TOKEN is not set',
        {
          headers: { 'www-authenticate': `${scheme} realm="${REALM}"${scheme === 'Basic' ? ', charset="UTF-8"' : ''}` },
        },
      );
    };

  const checkNamespace = (request: FastifyRequest): string => {
    const header = request.headers['x-namespace'];
    const namespace = Array.isArray(header) ? header[0] : header;
    // The Temporal CLI sends an empty X-Namespace unless --namespace is given: empty means "not said".
    if (namespace !== undefined && namespace !== '' && namespace !== env.TEMPORAL_NAMESPACE) {
      throw new AppError(
        'BAD_REQUEST',
        `This codec serves the Temporal namespace ${env.TEMPORAL_NAMESPACE}, not ${namespace.slice(0, 100)}`,
        { details: { namespace: namespace.slice(0, 100), servedNamespace: env.TEMPORAL_NAMESPACE } },
      );
    }
    return env.TEMPORAL_NAMESPACE;
  };

  app.addHook('onRequest', async (request, reply) => {
    // Decoded buyer data must never be stored as an idempotent response (api/plugins/idempotency.ts).
    delete request.headers['idempotency-key'];
    const origin = request.headers.origin;
    if (typeof origin === 'string' && allowedOrigins.has(origin)) {
      reply.header('access-control-allow-origin', origin).header('access-control-allow-credentials', 'true');
    }
    reply.header('vary', 'Origin').header('cache-control', 'no-store');
  });

  for (const operation of ['encode', 'decode'] as const) {
    // The CORS preflight: no credentials are sent with it, so it is answered without any.
    app.options(`${CODEC_PREFIX}/${operation}`, { schema: { hide: true } }, async (request, reply) => {
      const origin = request.headers.origin;
      if (typeof origin === 'string' && !allowedOrigins.has(origin)) {
        throw new AppError(
          'FORBIDDEN',
          `Origin ${origin.slice(0, 200)} may not call the codec endpoint; add it to CODEC_CORS_ORIGINS`,
        );
      }
      return reply
        .status(204)
        .header('allow', 'POST, OPTIONS')
        .header('access-control-allow-methods', 'POST, OPTIONS')
        .header('access-control-allow-headers', ALLOWED_HEADERS)
        .header('access-control-max-age', '600')
        .send();
    });
  }

  app.post(
    `${CODEC_PREFIX}/encode`,
    { schema: { hide: true, body: PayloadsSchema }, bodyLimit: CODEC_BODY_LIMIT, onRequest: requireOperator('Bearer') },
    async (request) => {
      const namespace = checkNamespace(request);
      const encoded = await codec.encode(request.body.payloads.map(toPayload));
      request.log.info({ codec: 'encode', namespace, payloads: encoded.length }, 'codec request');
      return { payloads: encoded.map(toJson) };
    },
  );

  app.post(
    `${CODEC_PREFIX}/decode`,
    { schema: { hide: true, body: PayloadsSchema }, bodyLimit: CODEC_BODY_LIMIT, onRequest: requireOperator('Bearer') },
    async (request) => {
      const namespace = checkNamespace(request);
      const decoded: JsonPayload[] = [];
      let encrypted = 0;
      for (const [index, json] of request.body.payloads.entries()) {
        const payload = toPayload(json);
        // Payloads the codec did not encrypt (histories from before it, search attributes) come back as sent.
        if (!EncryptionCodec.isEncrypted(payload)) {
          decoded.push(json);
          continue;
        }
        encrypted += 1;
        try {
          const [plain] = await codec.decode([payload]);
          decoded.push(toJson(plain ?? payload));
        } catch (error) {
          if (!(error instanceof PayloadCodecError)) throw error;
          throw new AppError('BAD_REQUEST', `payloads[${index}] could not be decoded: ${error.message}`, {
            details: { index },
          });
        }
      }
      request.log.info({ codec: 'decode', namespace, payloads: decoded.length, encrypted }, 'codec request');
      return { payloads: decoded };
    },
  );

  // Opened in a browser: asks for the token (any user name, the token as password) and remembers it for /codec/,
  // so the Temporal UI's cross-origin decode requests carry it when "Include cross-origin credentials" is on.
  app.get(
    `${CODEC_PREFIX}/login`,
    { schema: { hide: true }, onRequest: requireOperator('Basic') },
    async (_request, reply) =>
      reply
        .type('text/plain; charset=utf-8')
        .send(
          'Signed in to the codec endpoint. In the Temporal UI open Codec Server settings, use your browser setting ' +
            `with endpoint ${env.PUBLIC_ORIGIN.replace(/\/$/, '')}${CODEC_PREFIX} and tick "Include cross-origin credentials".\n`,
        ),
  );
};
