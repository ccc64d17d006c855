import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { LIVE_STATUSES, POST_AUTHOR_TYPES, POST_KINDS } from '../domain/content.js';
import { Buyer } from './buyer.js';
import { baseProperties, tenantFilter } from './common.js';
import { User } from './user.js';
import { Workspace } from './workspace.js';

/**
 * Member content of a workspace (contract 4.1, content group). Media lives at the video provider; these rows hold
 * what members browse and the provider's playback id a signed playback token names.
 */

export const ContentVideo = defineEntity({
  name: 'ContentVideo',
  tableName: 'content_videos',
  filters: { ...tenantFilter },
  indexes: [{ properties: ['workspace', 'publishedAt'] }],
  // One row per provider asset on the whole platform: one playback id never carries two members-only flags, and no
  // workspace can hold (and mint playback tokens for) another workspace's playback id (api/services/content.ts).
  uniques: [{ properties: ['providerAssetId'] }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    title: p.string().length(200),
    description: p.text().nullable(),
    /** The provider's playback id: the `sub` of every playback token for this video. */
    providerAssetId: p.string().length(200),
    membersOnly: p.boolean().default(false),
    /** Null is a draft; a future time publishes it then. */
    publishedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IContentVideo = InferEntity<typeof ContentVideo>;

export const ContentPost = defineEntity({
  name: 'ContentPost',
  tableName: 'content_posts',
  filters: { ...tenantFilter },
  indexes: [{ properties: ['workspace', 'publishedAt'] }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    kind: p.enum(POST_KINDS),
    title: p.string().length(200).nullable(),
    body: p.text(),
    authorType: p.enum(POST_AUTHOR_TYPES),
    /** Set for organizer posts: the user behind the API key. */
    authorUser: () => p.manyToOne(User).mapToPk().nullable().deleteRule('set null'),
    /** Set for member posts: the buyer of the session sent with the key. */
    authorBuyer: () => p.manyToOne(Buyer).mapToPk().nullable().deleteRule('set null').index(),
    /** Shown as the author; copied at publication so a later rename does not rewrite the feed's history. */
    authorName: p.string().length(120).nullable(),
    /** A future time publishes it then. */
    publishedAt: p.datetime().columnType('timestamptz'),
  },
});
export type IContentPost = InferEntity<typeof ContentPost>;

export const ContentLive = defineEntity({
  name: 'ContentLive',
  tableName: 'content_lives',
  filters: { ...tenantFilter },
  indexes: [{ properties: ['workspace', 'status'] }],
  // As for videos: a live stream's playback id belongs to one workspace on the whole platform.
  uniques: [{ properties: ['providerStreamId'] }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    title: p.string().length(200),
    description: p.text().nullable(),
    /** The provider's playback id of the live stream: the `sub` of its playback tokens. */
    providerStreamId: p.string().length(200),
    membersOnly: p.boolean().default(false),
    scheduledStartAt: p.datetime().columnType('timestamptz'),
    status: p.enum(LIVE_STATUSES).default('scheduled'),
    /** When it went live and when it ended (domain/content.ts liveTransition). */
    startedAt: p.datetime().columnType('timestamptz').nullable(),
    endedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IContentLive = InferEntity<typeof ContentLive>;
