import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import { decodeRsaPrivateKey } from '../../config/video-signing-key.js';

/**
 * The video provider's System API, in the shape of Mux's (`POST /system/v1/signing-keys`, HTTP Basic with an
 * access token id and secret). Only what this service needs: creating a playback signing key. The provider keeps
 * the public half and answers with the private half once, base64-encoded PEM; the key id becomes the `kid` of every
 * playback token signed with it.
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

export class VideoProviderClient {
  readonly #options: VideoProviderClientOptions;

  constructor(options: VideoProviderClientOptions) {
    this.#options = options;
  }

  async createSigningKey(): Promise<SigningKey> {
    const { baseUrl, tokenId, tokenSecret } = this.#options;
    const url = `${baseUrl.replace(/\/+$/, '')}/system/v1/signing-keys`;
    let response: Response;
    try {
      response = await (this.#options.fetch ?? fetch)(url, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          authorization: `Basic ${Buffer.from(`${tokenId}:${tokenSecret}`, 'utf8').toString('base64')}`,
        },
        signal: AbortSignal.timeout(this.#options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      throw new VideoProviderError('video provider: creating a signing key failed (no answer)', null, error);
    }
    const body: unknown = await response.json().catch(() => null);
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
}
