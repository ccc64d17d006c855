/**
 * Member content operations the content routes run: loading videos and live streams of the caller's workspace, and
 * registering a provider playback id only for the workspace that owns it. Routes keep the HTTP side.
 *
 * Why ownership is proven: every playback token is signed with the platform's key and names only the playback id,
 * so whoever holds a row with a playback id can have tokens minted for it. A workspace that could register another
 * workspace's playback id (as public) would play that workspace's members-only media. So a playback id is accepted
 * only when the provider says the asset or live stream it plays was created for this workspace (its `passthrough`
 * is the workspace id), and a playback id is held by one workspace on the whole platform (unique index).
 */
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  type AssetType,
  assertMayPublishPost,
  assertPlayable,
  isPublished,
  liveTransition,
  type PostKind,
} from '../../domain/content.js';
import { AppError, notFound } from '../../domain/errors.js';
import type { IContentLive, IContentPost, IContentVideo } from '../../entities/content.js';
import { isUuid, newId } from '../../entities/ids.js';
import { ContentLive, ContentPost, ContentVideo } from '../../entities/index.js';
import { activeMembership } from '../../entities/membership-queries.js';
import { type MediaKind, type VideoProviderClient, VideoProviderError } from '../../integrations/video/client.js';
import type { PlaybackTokens, SignedPlayback } from '../../integrations/video/playback-token.js';

export type PlaybackOwnerLookup = Pick<VideoProviderClient, 'playbackIdOwner'>;

type PlaybackField = 'providerAssetId' | 'providerStreamId';

const MEDIA_OF_FIELD: Record<PlaybackField, { kind: MediaKind; name: string }> = {
  providerAssetId: { kind: 'asset', name: 'video asset' },
  providerStreamId: { kind: 'live_stream', name: 'live stream' },
};

const fieldError = (code: 'VALIDATION_FAILED' | 'FORBIDDEN', field: PlaybackField, message: string, reason?: string) =>
  new AppError(code, `body.${field}: ${message}`, {
    details: { ...(reason ? { reason } : {}), fields: [{ field: `body.${field}`, message }] },
  });

const alreadyRegistered = (field: PlaybackField, value: string) =>
  new AppError('ALREADY_EXISTS', `${field} ${value} is already registered`, {
    details: { fields: [{ field: `body.${field}`, message: 'already registered' }] },
  });

/**
 * Refuses a playback id the provider does not attribute to this workspace: unknown at the provider (422), a live
 * stream's id registered as a video or the reverse (422), or media created for someone else (403, reason
 * playback_id_not_owned; the answer never says whose it is). A provider that cannot answer is 502, never a pass.
 */
export async function assertPlaybackIdOwned(
  provider: PlaybackOwnerLookup,
  workspaceId: string,
  field: PlaybackField,
  playbackId: string,
): Promise<void> {
  const expected = MEDIA_OF_FIELD[field];
  let owner: Awaited<ReturnType<PlaybackOwnerLookup['playbackIdOwner']>>;
  try {
    owner = await provider.playbackIdOwner(playbackId);
  } catch (error) {
    if (error instanceof VideoProviderError) {
      throw new AppError('PROVIDER_UNAVAILABLE', 'The video provider could not confirm the playback id; retry', {
        details: { reason: 'playback_id_unverified' },
      });
    }
    throw error;
  }
  if (!owner) throw fieldError('VALIDATION_FAILED', field, 'no such playback id at the video provider');
  if (owner.kind !== expected.kind) {
    throw fieldError('VALIDATION_FAILED', field, `this playback id does not play a ${expected.name}`);
  }
  if (owner.passthrough !== workspaceId) {
    throw fieldError(
      'FORBIDDEN',
      field,
      `the ${expected.name} was not created for this workspace (its passthrough at the provider must be the workspace id)`,
      'playback_id_not_owned',
    );
  }
}

/** Flushes, turning a second row for the same playback id (anywhere on the platform) into 409. */
async function flushUnique(em: EntityManager, conflict: () => AppError): Promise<void> {
  try {
    await em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw conflict();
    throw error;
  }
}

export async function findVideo(em: EntityManager, id: string): Promise<IContentVideo> {
  const video = isUuid(id) ? await em.findOne(ContentVideo, { id }) : null;
  if (!video) throw notFound('Video');
  return video;
}

export async function findLive(em: EntityManager, id: string): Promise<IContentLive> {
  const live = isUuid(id) ? await em.findOne(ContentLive, { id }) : null;
  if (!live) throw notFound('Live stream');
  return live;
}

export interface NewVideo {
  title: string;
  description?: string | null | undefined;
  providerAssetId: string;
  membersOnly: boolean;
  publishedAt?: Date | null | undefined;
}

export type VideoPatch = { [K in keyof NewVideo]?: NewVideo[K] | undefined };

export async function registerVideo(
  em: EntityManager,
  provider: PlaybackOwnerLookup,
  workspaceId: string,
  input: NewVideo,
  now: Date,
): Promise<IContentVideo> {
  await assertPlaybackIdOwned(provider, workspaceId, 'providerAssetId', input.providerAssetId);
  const video = em.create(ContentVideo, {
    id: newId(),
    workspace: workspaceId,
    title: input.title,
    description: input.description ?? null,
    providerAssetId: input.providerAssetId,
    membersOnly: input.membersOnly,
    publishedAt: input.publishedAt === undefined ? now : input.publishedAt,
  });
  await flushUnique(em, () => alreadyRegistered('providerAssetId', input.providerAssetId));
  return video;
}

export async function updateVideo(
  em: EntityManager,
  provider: PlaybackOwnerLookup,
  workspaceId: string,
  id: string,
  patch: VideoPatch,
): Promise<IContentVideo> {
  const video = await findVideo(em, id);
  if (patch.providerAssetId !== undefined && patch.providerAssetId !== video.providerAssetId) {
    await assertPlaybackIdOwned(provider, workspaceId, 'providerAssetId', patch.providerAssetId);
    video.providerAssetId = patch.providerAssetId;
  }
  if (patch.title !== undefined) video.title = patch.title;
  if (patch.description !== undefined) video.description = patch.description;
  if (patch.membersOnly !== undefined) video.membersOnly = patch.membersOnly;
  if (patch.publishedAt !== undefined) video.publishedAt = patch.publishedAt;
  await flushUnique(em, () => alreadyRegistered('providerAssetId', video.providerAssetId));
  return video;
}

export interface NewLive {
  title: string;
  description?: string | null | undefined;
  providerStreamId: string;
  membersOnly: boolean;
  scheduledStartAt: Date;
}

export async function registerLive(
  em: EntityManager,
  provider: PlaybackOwnerLookup,
  workspaceId: string,
  input: NewLive,
): Promise<IContentLive> {
  await assertPlaybackIdOwned(provider, workspaceId, 'providerStreamId', input.providerStreamId);
  const live = em.create(ContentLive, {
    id: newId(),
    workspace: workspaceId,
    title: input.title,
    description: input.description ?? null,
    providerStreamId: input.providerStreamId,
    membersOnly: input.membersOnly,
    scheduledStartAt: input.scheduledStartAt,
    status: 'scheduled',
    startedAt: null,
    endedAt: null,
  });
  await flushUnique(em, () => alreadyRegistered('providerStreamId', input.providerStreamId));
  return live;
}

export type LivePatch = { [K in keyof NewLive]?: NewLive[K] | undefined } & {
  status?: IContentLive['status'] | undefined;
};

/**
 * Applies a live stream update: its fields, and a status move only along scheduled → live → ended (409 INVALID_STATE
 * otherwise, domain/content.ts), recording when it started or ended.
 */
export async function changeLiveStream(
  em: EntityManager,
  provider: PlaybackOwnerLookup,
  workspaceId: string,
  id: string,
  { status, ...patch }: LivePatch,
  now: Date,
): Promise<IContentLive> {
  const live = await findLive(em, id);
  const statusChange = status === undefined ? null : liveTransition(live.status, status, now);
  if (patch.providerStreamId !== undefined && patch.providerStreamId !== live.providerStreamId) {
    await assertPlaybackIdOwned(provider, workspaceId, 'providerStreamId', patch.providerStreamId);
    live.providerStreamId = patch.providerStreamId;
  }
  if (patch.title !== undefined) live.title = patch.title;
  if (patch.description !== undefined) live.description = patch.description;
  if (patch.membersOnly !== undefined) live.membersOnly = patch.membersOnly;
  if (patch.scheduledStartAt !== undefined) live.scheduledStartAt = patch.scheduledStartAt;
  if (statusChange) Object.assign(live, statusChange);
  await flushUnique(em, () => alreadyRegistered('providerStreamId', live.providerStreamId));
  return live;
}

/** A page of what the lists show, newest first; `after` is the last id of the previous page. */
interface PageQuery {
  after: string | undefined;
  limit: number;
}

const before = (after: string | undefined) => (after ? { id: { $lt: after } } : {});

/** Published videos only: drafts and scheduled ones appear once their time comes. */
export const listVideos = (em: EntityManager, query: PageQuery, now: Date): Promise<IContentVideo[]> =>
  em.find(
    ContentVideo,
    { publishedAt: { $lte: now }, ...before(query.after) },
    { orderBy: { id: 'desc' }, limit: query.limit },
  );

/** Published posts and articles only: scheduled ones appear once their time comes. */
export const listPosts = (
  em: EntityManager,
  query: PageQuery & { kind?: PostKind | undefined },
  now: Date,
): Promise<IContentPost[]> =>
  em.find(
    ContentPost,
    { publishedAt: { $lte: now }, ...(query.kind ? { kind: query.kind } : {}), ...before(query.after) },
    { orderBy: { id: 'desc' }, limit: query.limit },
  );

export const listLives = (
  em: EntityManager,
  query: PageQuery & { status?: IContentLive['status'] | undefined },
): Promise<IContentLive[]> =>
  em.find(
    ContentLive,
    { ...(query.status ? { status: query.status } : {}), ...before(query.after) },
    { orderBy: { id: 'desc' }, limit: query.limit },
  );

const isActiveMember = async (em: EntityManager, workspaceId: string, buyerId: string, now: Date): Promise<boolean> =>
  (await activeMembership(em, workspaceId, buyerId, now)) !== null;

export interface NewPost {
  kind: PostKind;
  title?: string | undefined;
  body: string;
  publishedAt?: Date | undefined;
}

/** Who publishes: a member (the buyer of the session sent with the key), else the organizer user of the key. */
export type PostAuthor =
  | { type: 'member'; buyerId: string; name: string | null }
  | { type: 'organizer'; userId: string | null; name: string | null };

/**
 * Publishes in the community feed. Organizers publish posts and articles, now or scheduled; a member publishes posts
 * only, now, and only while an active member of the workspace (403 members_only / articles_by_organizers).
 */
export async function publishPost(
  em: EntityManager,
  workspaceId: string,
  author: PostAuthor,
  input: NewPost,
  now: Date,
): Promise<IContentPost> {
  if (author.type === 'member' && input.publishedAt !== undefined) {
    throw new AppError('VALIDATION_FAILED', 'body.publishedAt: members publish now; only organizers schedule', {
      details: { fields: [{ field: 'body.publishedAt', message: 'only organizers schedule posts' }] },
    });
  }
  const isMember = author.type === 'member' && (await isActiveMember(em, workspaceId, author.buyerId, now));
  assertMayPublishPost({ type: author.type, isActiveMember: isMember }, input.kind);
  const post = em.create(ContentPost, {
    id: newId(),
    workspace: workspaceId,
    kind: input.kind,
    title: input.title ?? null,
    body: input.body,
    authorType: author.type,
    authorUser: author.type === 'organizer' ? author.userId : null,
    authorBuyer: author.type === 'member' ? author.buyerId : null,
    authorName: author.name,
    publishedAt: input.publishedAt ?? now,
  });
  await em.flush();
  return post;
}

export type PlaybackSigner = Pick<PlaybackTokens, 'issue'>;

/**
 * A signed playback token for a buyer: the asset must be published (404 otherwise), a members-only one needs an
 * active membership in the workspace (403), an ended live cannot be played (409); a signing key the provider does not
 * give is 502 PROVIDER_UNAVAILABLE.
 */
export async function issuePlaybackToken(
  em: EntityManager,
  signer: PlaybackSigner,
  request: { workspaceId: string; buyerId: string; assetType: AssetType; assetId: string },
  now: Date,
): Promise<SignedPlayback> {
  let asset: { playbackId: string; membersOnly: boolean; liveStatus?: IContentLive['status'] };
  if (request.assetType === 'video') {
    const video = await findVideo(em, request.assetId);
    if (!isPublished(video.publishedAt, now)) throw notFound('Video');
    asset = { playbackId: video.providerAssetId, membersOnly: video.membersOnly };
  } else {
    const live = await findLive(em, request.assetId);
    asset = { playbackId: live.providerStreamId, membersOnly: live.membersOnly, liveStatus: live.status };
  }
  const member = asset.membersOnly ? await isActiveMember(em, request.workspaceId, request.buyerId, now) : false;
  assertPlayable({ type: request.assetType, ...asset }, { isActiveMember: member });
  try {
    return await signer.issue({ playbackId: asset.playbackId, viewerId: request.buyerId }, now);
  } catch (error) {
    if (error instanceof VideoProviderError) {
      throw new AppError('PROVIDER_UNAVAILABLE', 'The video provider did not issue a signing key; retry', {
        details: { reason: 'signing_key_unavailable' },
      });
    }
    throw error;
  }
}
