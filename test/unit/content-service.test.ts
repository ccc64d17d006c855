/**
 * Content rules that hold without the stack (api/services/content.ts): members publish now, never scheduled; a
 * signing key the video provider does not give is 502 PROVIDER_UNAVAILABLE, not a 500.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { issuePlaybackToken, publishPost } from '../../api/services/content.js';
import type { IContentVideo } from '../../entities/content.js';
import { VideoProviderError } from '../../integrations/video/client.js';
import { appErrorOf } from '../support/app-errors.js';

const videoId = '0190a0b0-0000-7000-8000-000000000001';
const publicVideo = {
  id: videoId,
  providerAssetId: 'abc123',
  membersOnly: false,
  publishedAt: new Date('2026-01-01T00:00:00Z'),
} as IContentVideo;

/** Only what the rules under test read: one video found by id; nothing is written. */
const emWith = (video: IContentVideo | null) =>
  ({
    findOne: async () => video,
    create: () => {
      throw new Error('nothing may be created');
    },
  }) as unknown as EntityManager;

describe('content service rules', () => {
  test('a member scheduling a post is 422 VALIDATION_FAILED naming body.publishedAt, and nothing is stored', async () => {
    const error = await appErrorOf(
      publishPost(
        emWith(null),
        'workspace-1',
        { type: 'member', buyerId: 'buyer-1', name: 'Ana' },
        { kind: 'post', body: 'Later', publishedAt: new Date('2030-01-01T00:00:00Z') },
        new Date('2026-06-01T00:00:00Z'),
      ),
    );
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toEqual({
      fields: [{ field: 'body.publishedAt', message: 'only organizers schedule posts' }],
    });
  });

  test('a signing key the provider does not give is 502 PROVIDER_UNAVAILABLE (signing_key_unavailable)', async () => {
    const signer = {
      issue: async () => {
        throw new VideoProviderError('video provider: creating a signing key answered 503', 503);
      },
    };
    const error = await appErrorOf(
      issuePlaybackToken(
        emWith(publicVideo),
        signer,
        { workspaceId: 'workspace-1', buyerId: 'buyer-1', assetType: 'video', assetId: videoId },
        new Date('2026-06-01T00:00:00Z'),
      ),
    );
    expect(error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(error.details).toEqual({ reason: 'signing_key_unavailable' });
  });

  test('a token is signed for the buyer and the playback id of a published public video', async () => {
    const grants: unknown[] = [];
    const signer = {
      issue: async (grant: { playbackId: string; viewerId: string }) => {
        grants.push(grant);
        return { token: 't', expiresAt: new Date(), playbackUrl: 'u' };
      },
    };
    await issuePlaybackToken(
      emWith(publicVideo),
      signer,
      { workspaceId: 'workspace-1', buyerId: 'buyer-1', assetType: 'video', assetId: videoId },
      new Date('2026-06-01T00:00:00Z'),
    );
    expect(grants).toEqual([{ playbackId: 'abc123', viewerId: 'buyer-1' }]);
  });
});
