import { generateKeyPair, type KeyObject, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { z } from 'zod';
import { issuesText, sameSecret } from './support.js';

/**
 * Video provider stand-in with signed playback, imitating Mux under `/video`:
 *
 *   POST /system/v1/signing-keys     HTTP Basic (access token id:secret) → { data: { id, private_key, created_at } }
 *   POST /video/v1/assets            HTTP Basic; body { passthrough?, playback_policy? } → { data: asset }
 *   POST /video/v1/live-streams      HTTP Basic; body { passthrough?, playback_policy? } → { data: live stream }
 *   GET  /video/v1/assets/{id}, /video/v1/live-streams/{id}   HTTP Basic → { data: … } or 404
 *   GET  /video/v1/playback-ids/{playbackId}   HTTP Basic → { data: { id, policy, object: { type, id } } } or 404
 *   GET  /play/{playbackId}?token=…  200 with an HLS manifest, or 403 `{ error: { type, messages } }`
 *
 * A signing key is an RSA key pair the provider makes: it keeps the public half under the key's id and hands out the
 * private half once (base64 of a PKCS#1 PEM), as Mux does. Playback checks the token as the provider would: an RS256
 * JWT whose header `kid` names a key it issued, whose signature verifies against that key's public half, whose `sub`
 * is the playback id requested, whose `aud` is `v` (video playback) and whose `exp` has not passed.
 * Assets and live streams carry Mux's `passthrough`, the free text the uploader sets to link the provider's object to
 * its own records: the platform sets it to the owning workspace's id, and the API reads it back through the
 * playback-id lookup to prove a workspace owns what it registers. Creating an asset takes no media here (uploads are
 * not imitated) and it is ready at once.
 * Sandbox leniencies: playback plays any playback id (even one never created here), and the manifest names
 * renditions that are not served. Keys and assets live in memory: a restarted sandbox knows none.
 */

export interface VideoCredentials {
  tokenId: string;
  tokenSecret: string;
}

export const DEV_VIDEO_CREDENTIALS: VideoCredentials = {
  tokenId: 'dev-video-token-id',
  tokenSecret: 'dev-video-token-secret',
};

/** The same variable names the API reads (config/env.ts); unset ones keep the dev default. */
export const videoCredentialsFromEnv = (env: NodeJS.ProcessEnv): VideoCredentials => ({
  tokenId: env.VIDEO_API_TOKEN_ID ?? DEV_VIDEO_CREDENTIALS.tokenId,
  tokenSecret: env.VIDEO_API_TOKEN_SECRET ?? DEV_VIDEO_CREDENTIALS.tokenSecret,
});

const generateRsaKeyPair = promisify(generateKeyPair);
const PLAYBACK_AUDIENCE = 'v';

type MediaObjectType = 'asset' | 'live_stream';

interface MediaObject {
  id: string;
  type: MediaObjectType;
  passthrough: string | null;
  playbackId: string;
  createdAt: string;
}

const CreateMediaBody = z
  .object({
    passthrough: z.string().max(255).optional(),
    playback_policy: z.array(z.enum(['public', 'signed'])).optional(),
  })
  .loose();

type Refusal = 'missing_token' | 'unknown_signing_key' | 'invalid_signature' | 'token_expired' | 'invalid_claims';

export class VideoSandbox {
  readonly #credentials: VideoCredentials;
  readonly #publicKeys = new Map<string, KeyObject>();
  readonly #objects = new Map<string, MediaObject>();
  readonly #objectsByPlaybackId = new Map<string, MediaObject>();

  constructor(credentials: VideoCredentials = DEV_VIDEO_CREDENTIALS) {
    this.#credentials = credentials;
  }

  register(app: FastifyInstance): void {
    app.register(
      async (api) => {
        api.post('/system/v1/signing-keys', async (request, reply) => {
          if (!this.#authorized(request)) return this.#unauthorized(reply);
          return reply.code(201).send({ data: await this.createSigningKey() });
        });
        api.post('/video/v1/assets', async (request, reply) => this.#create('asset', request, reply));
        api.post('/video/v1/live-streams', async (request, reply) => this.#create('live_stream', request, reply));
        api.get<{ Params: { id: string } }>('/video/v1/assets/:id', async (request, reply) =>
          this.#show('asset', request, reply),
        );
        api.get<{ Params: { id: string } }>('/video/v1/live-streams/:id', async (request, reply) =>
          this.#show('live_stream', request, reply),
        );
        api.get<{ Params: { playbackId: string } }>('/video/v1/playback-ids/:playbackId', async (request, reply) => {
          if (!this.#authorized(request)) return this.#unauthorized(reply);
          const object = this.#objectsByPlaybackId.get(request.params.playbackId);
          if (!object) return this.#notFound(reply, 'Playback ID not found');
          return reply.send({
            data: { id: object.playbackId, policy: 'signed', object: { type: object.type, id: object.id } },
          });
        });
        api.get<{ Params: { playbackId: string }; Querystring: { token?: string } }>(
          '/play/:playbackId',
          async (request, reply) => this.#play(request.params.playbackId, request.query.token, reply),
        );
      },
      { prefix: '/video' },
    );
  }

  async createSigningKey(): Promise<{ id: string; private_key: string; created_at: string }> {
    const { publicKey, privateKey } = await generateRsaKeyPair('rsa', { modulusLength: 2048 });
    const id = randomBytes(18).toString('base64url');
    this.#publicKeys.set(id, publicKey);
    const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    return {
      id,
      private_key: Buffer.from(pem, 'utf8').toString('base64'),
      created_at: String(Math.floor(Date.now() / 1000)),
    };
  }

  /** An asset or live stream as the platform creates it, with the passthrough naming its owner. */
  createMediaObject(type: MediaObjectType, passthrough: string | null): MediaObject {
    const object: MediaObject = {
      id: randomBytes(18).toString('base64url'),
      type,
      passthrough,
      playbackId: randomBytes(18).toString('base64url'),
      createdAt: String(Math.floor(Date.now() / 1000)),
    };
    this.#objects.set(`${type}:${object.id}`, object);
    this.#objectsByPlaybackId.set(object.playbackId, object);
    return object;
  }

  #create(type: MediaObjectType, request: FastifyRequest, reply: FastifyReply) {
    if (!this.#authorized(request)) return this.#unauthorized(reply);
    const body = CreateMediaBody.safeParse(request.body ?? {});
    if (!body.success) {
      return reply.code(400).send({ error: { type: 'invalid_parameters', messages: [issuesText(body.error)] } });
    }
    return reply.code(201).send({ data: this.#present(this.createMediaObject(type, body.data.passthrough ?? null)) });
  }

  #show(type: MediaObjectType, request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) {
    if (!this.#authorized(request)) return this.#unauthorized(reply);
    const object = this.#objects.get(`${type}:${request.params.id}`);
    if (!object) return this.#notFound(reply, `${type === 'asset' ? 'Asset' : 'Live stream'} not found`);
    return reply.send({ data: this.#present(object) });
  }

  #present(object: MediaObject) {
    return {
      id: object.id,
      status: object.type === 'asset' ? 'ready' : 'idle',
      created_at: object.createdAt,
      ...(object.passthrough === null ? {} : { passthrough: object.passthrough }),
      playback_ids: [{ id: object.playbackId, policy: 'signed' }],
    };
  }

  #unauthorized(reply: FastifyReply) {
    return reply.code(401).send({ error: { type: 'unauthorized', messages: ['Invalid access token'] } });
  }

  #notFound(reply: FastifyReply, message: string) {
    return reply.code(404).send({ error: { type: 'not_found', messages: [message] } });
  }

  async #play(playbackId: string, token: string | undefined, reply: FastifyReply) {
    if (!token) return this.#refuse(reply, 'missing_token', 'This playback id needs a signed token (?token=)');
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return this.#refuse(reply, 'invalid_signature', 'The token is not a JWT');
    }
    const publicKey = kid === undefined ? undefined : this.#publicKeys.get(kid);
    if (!publicKey) return this.#refuse(reply, 'unknown_signing_key', 'The token names no signing key of this account');
    try {
      await jwtVerify(token, publicKey, {
        algorithms: ['RS256'],
        audience: PLAYBACK_AUDIENCE,
        subject: playbackId,
        requiredClaims: ['sub', 'aud', 'exp'],
      });
    } catch (error) {
      if (error instanceof errors.JWTExpired) return this.#refuse(reply, 'token_expired', 'The token has expired');
      if (error instanceof errors.JWTClaimValidationFailed) {
        return this.#refuse(reply, 'invalid_claims', `The token's ${error.claim} claim does not allow this playback`);
      }
      return this.#refuse(reply, 'invalid_signature', 'The token signature does not verify');
    }
    const rendition = `/video/play/${encodeURIComponent(playbackId)}/rendition/360p.m3u8?token=${token}`;
    return reply
      .code(200)
      .type('application/vnd.apple.mpegurl')
      .send(
        ['#EXTM3U', '#EXT-X-VERSION:3', '#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360', rendition, ''].join(
          '\n',
        ),
      );
  }

  #refuse(reply: FastifyReply, type: Refusal, message: string) {
    return reply.code(403).send({ error: { type, messages: [message] } });
  }

  #authorized(request: FastifyRequest): boolean {
    const header = request.headers.authorization;
    if (typeof header !== 'string' || !header.startsWith('Basic ')) return false;
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const separator = decoded.indexOf(':');
    if (separator < 0) return false;
    return (
      sameSecret(decoded.slice(0, separator), this.#credentials.tokenId) &&
      sameSecret(decoded.slice(separator + 1), this.#credentials.tokenSecret)
    );
  }
}
