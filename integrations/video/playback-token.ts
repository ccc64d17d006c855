import { SignJWT } from 'jose';
import type { Env } from '../../config/env.js';
import { decodeRsaPrivateKey } from '../../config/video-signing-key.js';
import { type SigningKey, VideoProviderClient } from './client.js';

/**
 * Signed playback in the provider's scheme (Mux's signed playback policy): an RS256 JWT whose header names the
 * signing key (`kid`), with `sub` the playback id of the video or live stream, `aud` the kind of media request
 * (`v`, video playback, for recorded videos and live streams alike: the playback id already says which one it is),
 * `exp` a few minutes ahead. `viewer_id` binds the token to the member it was issued for, so a leaked token can
 * be traced to the session that asked for it; the provider ignores claims it does not know.
 */
export const PLAYBACK_AUDIENCE = 'v';

export interface PlaybackGrant {
  /** The provider's playback id of the video or live stream. */
  playbackId: string;
  /** Opaque id of the buyer the token is for. */
  viewerId: string;
}

export interface SignedPlayback {
  token: string;
  expiresAt: Date;
  /** Where a player loads the stream with this token. */
  playbackUrl: string;
}

export async function signPlaybackToken(
  key: SigningKey,
  grant: PlaybackGrant,
  options: { now: Date; ttlSeconds: number },
): Promise<{ token: string; expiresAt: Date }> {
  const issuedAt = Math.floor(options.now.getTime() / 1000);
  const expiresAtSeconds = issuedAt + options.ttlSeconds;
  const token = await new SignJWT({ kid: key.id, viewer_id: grant.viewerId })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.id })
    .setSubject(grant.playbackId)
    .setAudience(PLAYBACK_AUDIENCE)
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAtSeconds)
    .sign(key.privateKey);
  return { token, expiresAt: new Date(expiresAtSeconds * 1000) };
}

/**
 * Issues playback tokens with the configured signing key. Outside production a process with no key configured asks
 * the provider for one the first time it needs it (as a developer would in the provider's dashboard) and keeps it in
 * memory; production refuses to start without a configured key (config/env.ts).
 */
export class PlaybackTokens {
  readonly #ttlSeconds: number;
  readonly #playbackBaseUrl: string;
  readonly #createDevelopmentKey: () => Promise<SigningKey>;
  #key: Promise<SigningKey> | null;

  constructor(options: {
    configuredKey: SigningKey | null;
    createDevelopmentKey: () => Promise<SigningKey>;
    ttlSeconds: number;
    playbackBaseUrl: string;
  }) {
    this.#ttlSeconds = options.ttlSeconds;
    this.#playbackBaseUrl = options.playbackBaseUrl.replace(/\/+$/, '');
    this.#createDevelopmentKey = options.createDevelopmentKey;
    this.#key = options.configuredKey ? Promise.resolve(options.configuredKey) : null;
  }

  async issue(grant: PlaybackGrant, now: Date = new Date()): Promise<SignedPlayback> {
    const signed = await signPlaybackToken(await this.#signingKey(), grant, { now, ttlSeconds: this.#ttlSeconds });
    const playbackUrl = `${this.#playbackBaseUrl}/${encodeURIComponent(grant.playbackId)}?token=${signed.token}`;
    return { ...signed, playbackUrl };
  }

  #signingKey(): Promise<SigningKey> {
    if (!this.#key) {
      const created = this.#createDevelopmentKey();
      // A failed creation is not remembered: the next request asks the provider again.
      created.catch(() => {
        if (this.#key === created) this.#key = null;
      });
      this.#key = created;
    }
    return this.#key;
  }
}

/** The provider's API and playback bases: the configured ones, or the sandbox's stand-in. */
export function videoProviderUrls(env: Env): { api: string; playback: string } {
  const sandbox = `${env.SANDBOX_URL.replace(/\/+$/, '')}/video`;
  return {
    api: env.VIDEO_API_BASE_URL ?? sandbox,
    playback: env.VIDEO_PLAYBACK_BASE_URL ?? `${sandbox}/play`,
  };
}

export const videoProviderClientFromEnv = (env: Env): VideoProviderClient =>
  new VideoProviderClient({
    baseUrl: videoProviderUrls(env).api,
    tokenId: env.VIDEO_API_TOKEN_ID,
    tokenSecret: env.VIDEO_API_TOKEN_SECRET,
  });

export function playbackTokensFromEnv(env: Env): PlaybackTokens {
  const urls = videoProviderUrls(env);
  const configuredKey =
    env.VIDEO_SIGNING_KEY_ID && env.VIDEO_SIGNING_PRIVATE_KEY
      ? { id: env.VIDEO_SIGNING_KEY_ID, privateKey: decodeRsaPrivateKey(env.VIDEO_SIGNING_PRIVATE_KEY) }
      : null;
  const client = videoProviderClientFromEnv(env);
  return new PlaybackTokens({
    configuredKey,
    createDevelopmentKey: () =>
      env.NODE_ENV === 'production'
        ? Promise.reject(new Error('production signs playback with VIDEO_SIGNING_PRIVATE_KEY only'))
        : client.createSigningKey(),
    ttlSeconds: env.VIDEO_PLAYBACK_TOKEN_TTL_SECONDS,
    playbackBaseUrl: urls.playback,
  });
}
