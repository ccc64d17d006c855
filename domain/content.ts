import { AppError } from './errors.js';

/**
 * Member content rules (contract 4.1, content group): what a list shows, who may publish what in the community
 * feed, how a live stream moves through its states, and who may play an asset. Pure: callers bring the rows and
 * the caller's membership, this module decides.
 */

export const POST_KINDS = ['post', 'article'] as const;
export type PostKind = (typeof POST_KINDS)[number];

/** Organizer posts come from the API key's user; member posts from the buyer session sent with it. */
export const POST_AUTHOR_TYPES = ['organizer', 'member'] as const;
export type PostAuthorType = (typeof POST_AUTHOR_TYPES)[number];

export const LIVE_STATUSES = ['scheduled', 'live', 'ended'] as const;
export type LiveStatus = (typeof LIVE_STATUSES)[number];

export const ASSET_TYPES = ['video', 'live'] as const;
export type AssetType = (typeof ASSET_TYPES)[number];

/** Published means a publication time that has arrived: no time is a draft, a future time is scheduled. */
export const isPublished = (publishedAt: Date | null | undefined, now: Date): boolean =>
  publishedAt != null && publishedAt.getTime() <= now.getTime();

const membersOnlyRefusal = (what: string) =>
  new AppError('FORBIDDEN', `${what} is for members of this workspace; join a membership plan first`, {
    details: { reason: 'members_only' },
  });

/**
 * The community feed belongs to the workspace's members and its organizers: a buyer posts only while an active
 * member, and articles (the organizer's editorial pieces) come from organizers only.
 */
export function assertMayPublishPost(author: { type: PostAuthorType; isActiveMember: boolean }, kind: PostKind): void {
  if (author.type === 'organizer') return;
  if (!author.isActiveMember) throw membersOnlyRefusal('Posting in the community feed');
  if (kind === 'article') {
    throw new AppError('FORBIDDEN', 'Articles are published by the organizer; members publish posts', {
      details: { reason: 'articles_by_organizers' },
    });
  }
}

/**
 * The live-stream lifecycle: scheduled → live → ended, or scheduled → ended when a stream is called off before it
 * starts. Asking for the state a stream is already in changes nothing, so a retried call is harmless; anything
 * else (back to scheduled, live again after the end) is refused.
 */
export function liveTransition(
  from: LiveStatus,
  to: LiveStatus,
  now: Date,
): { status: LiveStatus; startedAt?: Date; endedAt?: Date } | null {
  if (from === to) return null;
  if (from === 'scheduled' && to === 'live') return { status: 'live', startedAt: now };
  if ((from === 'scheduled' || from === 'live') && to === 'ended') return { status: 'ended', endedAt: now };
  throw new AppError('INVALID_STATE', `A ${from} live stream cannot become ${to}`, {
    details: { reason: 'live_transition_not_allowed', from, to },
  });
}

/**
 * Who may play an asset. Members-only assets play for active members of the workspace only (any active membership:
 * the plan's membersOnlyAccess benefit is about members-only ticket types). A live stream that has ended has
 * nothing left to play.
 */
export function assertPlayable(
  asset: { type: AssetType; membersOnly: boolean; liveStatus?: LiveStatus },
  viewer: { isActiveMember: boolean },
): void {
  if (asset.membersOnly && !viewer.isActiveMember) {
    throw membersOnlyRefusal(asset.type === 'video' ? 'This video' : 'This live stream');
  }
  if (asset.type === 'live' && asset.liveStatus === 'ended') {
    throw new AppError('INVALID_STATE', 'This live stream has ended', { details: { reason: 'live_ended' } });
  }
}
