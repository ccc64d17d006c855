import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ASSET_TYPES, LIVE_STATUSES, POST_AUTHOR_TYPES, POST_KINDS } from '../../../domain/content.js';
import { AppError } from '../../../domain/errors.js';
import type { IContentLive, IContentPost, IContentVideo } from '../../../entities/content.js';
import { playbackTokensFromEnv, videoProviderClientFromEnv } from '../../../integrations/video/playback-token.js';
import { dataOf, listOf } from '../../http/envelope.js';
import { decodeCursor, PageQuerySchema, toPage } from '../../http/pagination.js';
import { organizer } from '../../http/route-access.js';
import { IdParamSchema, IsoDateTimeSchema, isoOrNull } from '../../http/schemas.js';
import { activeWorkspace } from '../../plugins/auth.js';
import { type CustomerContext, presentedSessionToken, resolveBuyerSession } from '../../plugins/customer-auth.js';
import { organizerKeyWithBuyerSession } from '../../plugins/openapi-contract.js';
import {
  changeLiveStream,
  findLive,
  issuePlaybackToken,
  listLives,
  listPosts,
  listVideos,
  type PostAuthor,
  publishPost,
  registerLive,
  registerVideo,
  updateVideo,
} from '../../services/content.js';
import type { ApiServices } from '../../services.js';

/**
 * The content group (contract 4.1): member videos, the community feed and live streams of the active workspace, and
 * signed playback tokens. Like every B2B group outside `customer`, it is called with an organizer API key (5.1): the
 * organizer's member site or app calls it. When it acts for a member (a playback token, a member's post) it also
 * sends that buyer's session as X-Customer-Session (5.6), and membership is checked for that buyer in the workspace.
 */

const SECTION = 'content';
const TAGS = ['content'];

/**
 * The member a call acts for, checked for shape here; loose, so every other header still reaches the hooks, and the
 * handlers decide whether it is required. The OpenAPI documents show it as the buyer-session security scheme (with
 * its cookie form) next to the organizer key: `security: organizerKeyWithBuyerSession(…)` on the route.
 */
const buyerSessionHeader = (description: string) =>
  z.looseObject({ 'x-customer-session': z.string().max(200).optional().meta({ description }) });

const PublicationTime = IsoDateTimeSchema.transform((value) => new Date(value));

const VideoSchema = z
  .object({
    id: z.string(),
    title: z.string(),
    description: z.string().nullable(),
    providerAssetId: z.string().meta({ description: "The video provider's playback id" }),
    membersOnly: z.boolean().meta({ description: 'Listed for everyone; playable by active members only' }),
    publishedAt: z.string().nullable().meta({ description: 'Null for a draft; a future time is scheduled' }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'ContentVideo' });

const VideoFields = z.object({
  title: z.string().trim().min(1).max(200),
  description: z.string().trim().max(5000).nullable(),
  providerAssetId: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be the provider playback id (letters, digits, _ and -)'),
  membersOnly: z.boolean(),
  publishedAt: PublicationTime.nullable().meta({
    description: 'ISO 8601; null keeps it a draft, a future time schedules it',
  }),
});

const CreateVideoBody = VideoFields.extend({
  description: VideoFields.shape.description.optional(),
  membersOnly: VideoFields.shape.membersOnly.default(false),
  publishedAt: VideoFields.shape.publishedAt.optional().meta({ description: 'Default: published now' }),
});
const UpdateVideoBody = VideoFields.partial();

const PostSchema = z
  .object({
    id: z.string(),
    kind: z.enum(POST_KINDS),
    title: z.string().nullable(),
    body: z.string(),
    author: z.object({ type: z.enum(POST_AUTHOR_TYPES), name: z.string().nullable() }),
    publishedAt: z.string(),
    createdAt: z.string(),
  })
  .meta({ id: 'ContentPost' });

const CreatePostBody = z
  .object({
    kind: z.enum(POST_KINDS).default('post'),
    title: z.string().trim().min(1).max(200).optional().meta({ description: 'Required for an article' }),
    body: z.string().trim().min(1).max(20_000),
    publishedAt: PublicationTime.optional().meta({
      description: 'Organizer posts only; a future time schedules it. Default: now',
    }),
  })
  .refine((post) => post.kind !== 'article' || post.title !== undefined, {
    path: ['title'],
    message: 'an article needs a title',
  });

const LiveSchema = z
  .object({
    id: z.string(),
    title: z.string(),
    description: z.string().nullable(),
    providerStreamId: z.string().meta({ description: "The video provider's playback id of the live stream" }),
    membersOnly: z.boolean(),
    status: z.enum(LIVE_STATUSES),
    scheduledStartAt: z.string(),
    startedAt: z.string().nullable().meta({ description: 'When it went live' }),
    endedAt: z.string().nullable().meta({ description: 'When it ended (or was called off before starting)' }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'ContentLive' });

const LiveFields = z.object({
  title: VideoFields.shape.title,
  description: VideoFields.shape.description,
  providerStreamId: VideoFields.shape.providerAssetId,
  membersOnly: z.boolean(),
  scheduledStartAt: PublicationTime,
});
const CreateLiveBody = LiveFields.extend({
  description: LiveFields.shape.description.optional(),
  membersOnly: LiveFields.shape.membersOnly.default(false),
});
const UpdateLiveBody = LiveFields.partial().extend({
  status: z.enum(LIVE_STATUSES).optional().meta({
    description: 'scheduled → live → ended, or scheduled → ended; the same status again changes nothing',
  }),
});
const ListLivesQuery = PageQuerySchema.extend({ status: z.enum(LIVE_STATUSES).optional() });

const PlaybackTokenBody = z.object({
  assetType: z.enum(ASSET_TYPES),
  assetId: z.string().min(1).max(200).meta({ description: 'Id of the video or live stream in this API' }),
});

const PlaybackTokenSchema = z
  .object({
    token: z.string().meta({ description: 'RS256 JWT for the video provider: sub = playback id, aud = v, kid' }),
    expiresAt: z.string(),
    playbackUrl: z.string().meta({ description: 'Stream address with the token; hand it to the player as is' }),
    assetType: z.enum(ASSET_TYPES),
    assetId: z.string(),
  })
  .meta({ id: 'PlaybackToken' });

const toVideo = (video: IContentVideo) => ({
  id: video.id,
  title: video.title,
  description: video.description ?? null,
  providerAssetId: video.providerAssetId,
  membersOnly: video.membersOnly,
  publishedAt: isoOrNull(video.publishedAt),
  createdAt: video.createdAt.toISOString(),
  updatedAt: video.updatedAt.toISOString(),
});

const toPost = (post: IContentPost) => ({
  id: post.id,
  kind: post.kind,
  title: post.title ?? null,
  body: post.body,
  author: { type: post.authorType, name: post.authorName ?? null },
  publishedAt: post.publishedAt.toISOString(),
  createdAt: post.createdAt.toISOString(),
});

const toLive = (live: IContentLive) => ({
  id: live.id,
  title: live.title,
  description: live.description ?? null,
  providerStreamId: live.providerStreamId,
  membersOnly: live.membersOnly,
  status: live.status,
  scheduledStartAt: live.scheduledStartAt.toISOString(),
  startedAt: isoOrNull(live.startedAt),
  endedAt: isoOrNull(live.endedAt),
  createdAt: live.createdAt.toISOString(),
  updatedAt: live.updatedAt.toISOString(),
});

/** The buyer of the X-Customer-Session sent with the key, if any; a session that is sent must be valid. */
async function presentedBuyer(request: FastifyRequest): Promise<CustomerContext | null> {
  const token = presentedSessionToken(request);
  if (!token) return null;
  const buyer = await resolveBuyerSession(request, token);
  if (!buyer) {
    throw new AppError('CUSTOMER_SESSION_REQUIRED', 'The buyer session is invalid or has expired; sign in again');
  }
  return buyer;
}

const OWNERSHIP_RULE =
  'The playback id must be one the video provider attributes to this workspace: the asset or live stream was created ' +
  'with its passthrough set to the workspace id. Unknown at the provider, or of the other kind (a live stream’s id ' +
  'as a video): 422 VALIDATION_FAILED. Created for another workspace: 403 FORBIDDEN (details.reason ' +
  'playback_id_not_owned). A playback id is held by one workspace on the whole platform: 409 ALREADY_EXISTS when it ' +
  'is registered already. 502 PROVIDER_UNAVAILABLE when the provider cannot confirm it.';

export const contentRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  const playbackTokens = playbackTokensFromEnv(services.env);
  const videoProvider = videoProviderClientFromEnv(services.env);
  const warningsOf = (request: FastifyRequest) => (request.warnings.length ? { warnings: request.warnings } : {});

  // ---------------------------------------------------------------- videos
  app.get(
    '/content/videos',
    {
      config: organizer('VIEWER', SECTION),
      schema: {
        tags: TAGS,
        summary: 'Published videos, newest first',
        description: 'Members-only videos are listed too (membersOnly true); only active members can play them.',
        querystring: PageQuerySchema,
        response: { 200: listOf(VideoSchema) },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      const rows = await listVideos(request.em, { after: decodeCursor(cursor), limit: limit + 1 }, new Date());
      const { items, page } = toPage(rows, limit);
      return { data: items.map(toVideo), page, ...warningsOf(request) };
    },
  );

  app.post(
    '/content/videos',
    {
      config: organizer('ADMIN', SECTION),
      schema: {
        tags: TAGS,
        summary: 'Register a video uploaded to the video provider',
        description:
          'The media stays at the provider; providerAssetId is its playback id (with a signed playback policy). ' +
          `Published now unless publishedAt says otherwise. ${OWNERSHIP_RULE}`,
        body: CreateVideoBody,
        response: { 201: dataOf(VideoSchema) },
      },
    },
    async (request, reply) => {
      const { workspaceId } = activeWorkspace(request);
      const video = await registerVideo(request.em, videoProvider, workspaceId, request.body, new Date());
      return reply.status(201).send({ data: toVideo(video) });
    },
  );

  app.patch(
    '/content/videos/:id',
    {
      config: organizer('ADMIN', SECTION),
      schema: {
        tags: TAGS,
        summary: 'Update a video (partial); publishedAt null unpublishes it',
        description: `A new providerAssetId is checked as on registration. ${OWNERSHIP_RULE}`,
        params: IdParamSchema,
        body: UpdateVideoBody,
        response: { 200: dataOf(VideoSchema) },
      },
    },
    async (request) => {
      const { workspaceId } = activeWorkspace(request);
      const video = await updateVideo(request.em, videoProvider, workspaceId, request.params.id, request.body);
      return { data: toVideo(video) };
    },
  );

  // ---------------------------------------------------------------- community feed
  app.get(
    '/content/posts',
    {
      config: organizer('VIEWER', SECTION),
      schema: {
        tags: TAGS,
        summary: 'The community feed: published posts and articles, newest first',
        querystring: PageQuerySchema.extend({ kind: z.enum(POST_KINDS).optional() }),
        response: { 200: listOf(PostSchema) },
      },
    },
    async (request) => {
      const { limit, cursor, kind } = request.query;
      const rows = await listPosts(request.em, { after: decodeCursor(cursor), limit: limit + 1, kind }, new Date());
      const { items, page } = toPage(rows, limit);
      return { data: items.map(toPost), page, ...warningsOf(request) };
    },
  );

  app.post(
    '/content/posts',
    {
      config: organizer('ADMIN', SECTION),
      schema: {
        tags: TAGS,
        summary: 'Publish in the community feed: an organizer post or article, or a member post',
        description:
          'With the key alone the author is the key’s user (organizer), who may publish articles and schedule with ' +
          'publishedAt. With X-Customer-Session as well, the post is that buyer’s: published now, kind post only, ' +
          'and only while an active member of the workspace (403 FORBIDDEN, details.reason members_only).',
        headers: buyerSessionHeader('A member’s session_token: the post is theirs (see above)'),
        security: organizerKeyWithBuyerSession('optional'),
        body: CreatePostBody,
        response: { 201: dataOf(PostSchema) },
      },
    },
    async (request, reply) => {
      const buyer = await presentedBuyer(request);
      const author: PostAuthor = buyer
        ? { type: 'member', buyerId: buyer.buyerId, name: buyer.name }
        : { type: 'organizer', userId: request.organizer?.user.id ?? null, name: request.organizer?.user.name ?? null };
      const { workspaceId } = activeWorkspace(request);
      const post = await publishPost(request.em, workspaceId, author, request.body, new Date());
      return reply.status(201).send({ data: toPost(post) });
    },
  );

  // ---------------------------------------------------------------- live streams
  app.get(
    '/content/lives',
    {
      config: organizer('VIEWER', SECTION),
      schema: {
        tags: TAGS,
        summary: 'Live streams (scheduled, live, ended), newest first',
        querystring: ListLivesQuery,
        response: { 200: listOf(LiveSchema) },
      },
    },
    async (request) => {
      const { limit, cursor, status } = request.query;
      const rows = await listLives(request.em, { after: decodeCursor(cursor), limit: limit + 1, status });
      const { items, page } = toPage(rows, limit);
      return { data: items.map(toLive), page, ...warningsOf(request) };
    },
  );

  app.get(
    '/content/lives/:id',
    {
      config: organizer('VIEWER', SECTION),
      schema: {
        tags: TAGS,
        summary: 'A live stream and its status',
        params: IdParamSchema,
        response: { 200: dataOf(LiveSchema) },
      },
    },
    async (request) => ({ data: toLive(await findLive(request.em, request.params.id)) }),
  );

  app.post(
    '/content/lives',
    {
      config: organizer('ADMIN', SECTION),
      schema: {
        tags: TAGS,
        summary: 'Schedule a live stream created at the video provider',
        description: `Starts as scheduled. ${OWNERSHIP_RULE}`,
        body: CreateLiveBody,
        response: { 201: dataOf(LiveSchema) },
      },
    },
    async (request, reply) => {
      const { workspaceId } = activeWorkspace(request);
      const live = await registerLive(request.em, videoProvider, workspaceId, request.body);
      return reply.status(201).send({ data: toLive(live) });
    },
  );

  app.patch(
    '/content/lives/:id',
    {
      config: organizer('ADMIN', SECTION),
      schema: {
        tags: TAGS,
        summary: 'Update a live stream (partial), or move its status',
        description:
          'status: scheduled → live records startedAt, → ended records endedAt; any other change is 409 INVALID_STATE ' +
          `(details.reason live_transition_not_allowed). A new providerStreamId is checked as on registration. ${OWNERSHIP_RULE}`,
        params: IdParamSchema,
        body: UpdateLiveBody,
        response: { 200: dataOf(LiveSchema) },
      },
    },
    async (request) => {
      const { workspaceId } = activeWorkspace(request);
      const live = await changeLiveStream(
        request.em,
        videoProvider,
        workspaceId,
        request.params.id,
        request.body,
        new Date(),
      );
      return { data: toLive(live) };
    },
  );

  // ---------------------------------------------------------------- signed playback
  app.post(
    '/content/playback-token',
    {
      config: organizer('VIEWER', SECTION),
      schema: {
        tags: TAGS,
        summary: 'A short-lived signed token for a member to play a video or live stream',
        description:
          'Send the member’s X-Customer-Session with the key: the token is bound to that buyer, the asset and an ' +
          'expiry. Members-only assets: 403 FORBIDDEN (details.reason members_only) unless the buyer is an active ' +
          'member of the workspace. Unknown or unpublished asset: 404. Ended live stream: 409 INVALID_STATE. ' +
          'Issuing a token stores nothing, so VIEWER suffices; as a POST it needs a write key (5.3).',
        headers: buyerSessionHeader('Required: the session_token of the member the token is for'),
        security: organizerKeyWithBuyerSession('required'),
        body: PlaybackTokenBody,
        response: { 200: dataOf(PlaybackTokenSchema) },
      },
    },
    async (request) => {
      const { assetType, assetId } = request.body;
      const buyer = await presentedBuyer(request);
      if (!buyer) {
        throw new AppError(
          'CUSTOMER_SESSION_REQUIRED',
          'Playback tokens are issued to a member: send their session_token as X-Customer-Session',
        );
      }
      const { workspaceId } = activeWorkspace(request);
      const signed = await issuePlaybackToken(
        request.em,
        playbackTokens,
        { workspaceId, buyerId: buyer.buyerId, assetType, assetId },
        new Date(),
      );
      return {
        data: {
          token: signed.token,
          expiresAt: signed.expiresAt.toISOString(),
          playbackUrl: signed.playbackUrl,
          assetType,
          assetId,
        },
      };
    },
  );
};
