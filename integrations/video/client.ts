import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import { decodeRsaPrivateKey } from '../../config/video-signing-key.js';

/**
 * The video provider's API, in the shape of Mux's (HTTP Basic with an access token id and secret). Only what this
 * service needs:
 * - creating a playback signing key (`POST /system/v1/signing-keys`): the provider keeps the public half and answers
 *   with the private half once, base64-encoded PEM; the key id becomes the `kid` of every playback token signed with it;
 * - finding who owns a playback id (`GET /video/v1/playback-ids/{id}`, then the asset or live stream it belongs to):
 *   the object's `passthrough` is the owning workspace's id, set when the media was created for that workspace.
 */

export interface SigningKey {
  id: string;
  privateKey: KeyObject;
}

/** The provider could not be reached or refused the call; the message never carries credentials. */
export class VideoProviderError extends Error {
  override readonly name = 'VideoProviderError';
  readonly status: number | null;

  constructor(message: string, status: number | null, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.status = status;
  }
}

export interface VideoProviderClientOptions {
  /** e.g. `https://api.mux.com` or `http://127.0.0.1:4010/video`. */
  baseUrl: string;
  tokenId: string;
  tokenSecret: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const CreatedSigningKey = z.object({
  data: z.object({ id: z.string().min(1), private_key: z.string().min(1), created_at: z.string().optional() }),
});

export type MediaKind = 'asset' | 'live_stream';

/** The asset or live stream a playback id plays, and the passthrough its creator set (the owning workspace's id). */
export interface PlaybackIdOwner {
  kind: MediaKind;
  objectId: string;
  passthrough: string | null;
}

const PlaybackIdAnswer = z.object({
  data: z.object({
    id: z.string(),
    object: z.object({ type: z.enum(['asset', 'live_stream']), id: z.string().min(1) }),
  }),
});
const MediaObjectAnswer = z.object({ data: z.object({ id: z.string(), passthrough: z.string().nullish() }) });

export class VideoProviderClient {
  readonly #options: VideoProviderClientOptions;

  constructor(options: VideoProviderClientOptions) {
    this.#options = options;
  }

  async createSigningKey(): Promise<SigningKey> {
    const { response, body } = await this.#call('POST', '/system/v1/signing-keys', 'creating a signing key');
    if (!response.ok) {
      throw new VideoProviderError(
        `video provider: creating a signing key answered ${response.status}`,
        response.status,
      );
    }
    const parsed = CreatedSigningKey.safeParse(body);
    if (!parsed.success) {
      throw new VideoProviderError('video provider: unexpected answer to creating a signing key', response.status);
    }
    return { id: parsed.data.data.id, privateKey: decodeRsaPrivateKey(parsed.data.data.private_key) };
  }

  /**
   * Who owns a playback id: null when the provider knows no such playback id. Any other refusal or a missing answer
   * throws VideoProviderError, so an outage is never read as "not owned".
   */
  async playbackIdOwner(playbackId: string): Promise<PlaybackIdOwner | null> {
    const lookup = await this.#call(
      'GET',
      `/video/v1/playback-ids/${encodeURIComponent(playbackId)}`,
      'looking up a playback id',
    );
    if (lookup.response.status === 404) return null;
    const found = lookup.response.ok ? PlaybackIdAnswer.safeParse(lookup.body) : null;
    if (!found?.success) {
      throw new VideoProviderError(
        `video provider: looking up a playback id answered ${lookup.response.status}`,
        lookup.response.status,
      );
    }
    const { type, id } = found.data.data.object;
    const objectPath = `/video/v1/${type === 'asset' ? 'assets' : 'live-streams'}/${encodeURIComponent(id)}`;
    const media = await this.#call('GET', objectPath, `reading the ${type} of a playback id`);
    if (media.response.status === 404) return null;
    const object = media.response.ok ? MediaObjectAnswer.safeParse(media.body) : null;
    if (!object?.success) {
      throw new VideoProviderError(
        `video provider: reading the ${type} of a playback id answered ${media.response.status}`,
        media.response.status,
      );
    }
    return { kind: type, objectId: id, passthrough: object.data.data.passthrough ?? null };
  }

  async #call(method: 'GET' | 'POST', path: string, what: string): Promise<{ response: Response; body: unknown }> {
    const { baseUrl, tokenId, tokenSecret } = this.#options;
    let response: Response;
    try {
      response = await (this.#options.fetch ?? fetch)(`${baseUrl.replace(/\/+$/, '')}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          authorization: `Basic ${Buffer.from(`${tokenId}:${tokenSecret}`, 'utf8').toString('base64')}`,
        },
        signal: AbortSignal.timeout(this.#options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      throw new VideoProviderError(`video provider: ${what} failed (no answer)`, null, error);
    }
    const body: unknown = await response.json().catch(() => null);
    return { response, body };
  }
}
