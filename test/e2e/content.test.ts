/**
 * Member content (contract 4.1, content group) over HTTP against the real stack: organizers publish videos, posts,
 * articles and live streams with their API key; members' apps send the buyer session with the key to get signed
 * playback tokens, which the sandbox's video provider checks the way Mux checks signed playback. The active member
 * joins through the real membership flow (PSE payment in the sandbox, membership workflow).
 */
import { generateKeyPairSync } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { loadEnv } from '../../config/env.js';
import { decodeRsaPrivateKey } from '../../config/video-signing-key.js';
import { signPlaybackToken } from '../../integrations/video/playback-token.js';
import { DEV_VIDEO_CREDENTIALS } from '../../sandbox/video.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { confirmAtBank, eventually, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi, testEnv } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
/** The signing key the provider issued for this suite, as an operator configures it. */
let signingKey: { id: string; privateKeyText: string };
let member: { token: string; buyerId: string };
let nonMember: { token: string };
/** Signed up for a plan but never paid: not an active member. */
let pendingMember: { token: string };

const unique = () => Math.random().toString(36).slice(2, 8);
const sandboxUrl = () => api.env.SANDBOX_URL;

async function createSigningKeyAtProvider(): Promise<{ id: string; privateKeyText: string }> {
  const credentials = `${DEV_VIDEO_CREDENTIALS.tokenId}:${DEV_VIDEO_CREDENTIALS.tokenSecret}`;
  const response = await fetch(`${testEnv().SANDBOX_URL}/video/system/v1/signing-keys`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` },
  });
  expect(response.status).toBe(201);
  const { data } = (await response.json()) as { data: { id: string; private_key: string } };
  return { id: data.id, privateKeyText: data.private_key };
}

const providerAuthorization = () =>
  `Basic ${Buffer.from(`${DEV_VIDEO_CREDENTIALS.tokenId}:${DEV_VIDEO_CREDENTIALS.tokenSecret}`).toString('base64')}`;

/**
 * Creates a video asset or live stream at the provider as the platform does for a workspace: its passthrough names
 * the owning workspace. Answers its playback id.
 */
async function createAtProvider(
  kind: 'assets' | 'live-streams',
  passthrough: string | null = organizer.workspaceId,
): Promise<string> {
  const response = await fetch(`${sandboxUrl()}/video/video/v1/${kind}`, {
    method: 'POST',
    headers: { authorization: providerAuthorization(), 'content-type': 'application/json' },
    body: JSON.stringify({ playback_policy: ['signed'], ...(passthrough === null ? {} : { passthrough }) }),
  });
  expect(response.status).toBe(201);
  const { data } = (await response.json()) as { data: { playback_ids: Array<{ id: string }> } };
  return data.playback_ids[0]!.id;
}

const asOrganizer = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object, key = organizer.key) =>
  api.request({ method, url: `/api/v1${url}`, headers: bearer(key), ...(payload ? { payload } : {}) });

const asBuyer = (method: 'GET' | 'POST', url: string, buyerToken: string, payload?: object, key = organizer.key) =>
  api.request({
    method,
    url: `/api/v1${url}`,
    headers: { ...bearer(key), ...session(buyerToken) },
    ...(payload ? { payload } : {}),
  });

async function createVideo(body: Record<string, unknown> = {}) {
  const response = await asOrganizer('POST', '/content/videos', {
    title: `Backstage ${unique()}`,
    providerAssetId: body.providerAssetId ?? (await createAtProvider('assets')),
    ...body,
  });
  expect(response.statusCode).toBe(201);
  return response.json().data as { id: string; providerAssetId: string; membersOnly: boolean; publishedAt: string };
}

async function createLive(body: Record<string, unknown> = {}) {
  const response = await asOrganizer('POST', '/content/lives', {
    title: `Live ${unique()}`,
    providerStreamId: body.providerStreamId ?? (await createAtProvider('live-streams')),
    scheduledStartAt: new Date(Date.now() + 3_600_000).toISOString(),
    ...body,
  });
  expect(response.statusCode).toBe(201);
  return response.json().data as { id: string; providerStreamId: string; status: string };
}

const playbackToken = (buyerToken: string, assetType: 'video' | 'live', assetId: string, key = organizer.key) =>
  asBuyer('POST', '/content/playback-token', buyerToken, { assetType, assetId }, key);

const play = (playbackId: string, token: string) =>
  fetch(`${sandboxUrl()}/video/play/${encodeURIComponent(playbackId)}?token=${encodeURIComponent(token)}`);

/** A buyer joins a plan and pays by PSE in the sandbox; the membership workflow makes them an active member. */
async function joinAsMember(planId: string): Promise<{ token: string; buyerId: string }> {
  const email = `member-${unique()}@content.test`;
  const token = await signInBuyer(api, email);
  const signup = await api.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions',
    headers: session(token),
    payload: { planId },
  });
  expect(signup.statusCode).toBe(201);
  const membership = () =>
    api
      .request({
        method: 'GET',
        url: `/api/v1/customer/membership?workspaceId=${organizer.workspaceId}`,
        headers: session(token),
      })
      .then((response) => response.json().data);
  const pending = await eventually(membership, (m) => Boolean(m?.payment?.checkoutUrl));
  expect((await confirmAtBank(pending.payment.checkoutUrl, email)).status).toBe(302);
  const settled = await fetch(`${sandboxUrl()}/control/gateway-a/pse/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reference: pending.payment.reference, outcome: 'approved' }),
  });
  expect(settled.status).toBe(200);
  await eventually(membership, (m) => m?.status === 'ACTIVE', 30_000);
  const me = await api.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) });
  return { token, buyerId: me.json().data.id };
}

beforeAll(async () => {
  signingKey = await createSigningKeyAtProvider();
  api = await startTestApi({
    MEMBERSHIP_PAYMENT_POLL_MS: '2000',
    VIDEO_SIGNING_KEY_ID: signingKey.id,
    VIDEO_SIGNING_PRIVATE_KEY: signingKey.privateKeyText,
  });
  organizer = await createOrganizer(api.orm.em.fork());
  const plan = await asOrganizer('POST', '/membership-plans', {
    name: `Club ${unique()}`,
    price: 20_000,
    period: 'MONTHLY',
  });
  expect(plan.statusCode).toBe(201);
  const planId = plan.json().data.id as string;
  member = await joinAsMember(planId);
  nonMember = { token: await signInBuyer(api, `fan-${unique()}@content.test`) };
  pendingMember = { token: await signInBuyer(api, `pending-${unique()}@content.test`) };
  const unpaid = await api.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions',
    headers: session(pendingMember.token),
    payload: { planId },
  });
  expect(unpaid.statusCode).toBe(201);
}, 120_000);

afterAll(async () => {
  await api.close();
});

describe('videos', () => {
  test('the list shows published videos only: drafts and scheduled ones appear once their time comes', async () => {
    const published = await createVideo({ membersOnly: true, description: 'Members only' });
    const draft = await createVideo({ publishedAt: null });
    const scheduled = await createVideo({ publishedAt: new Date(Date.now() + 86_400_000).toISOString() });
    expect(published).toMatchObject({ membersOnly: true, description: 'Members only' });

    const listedIds = async () =>
      (
        (await asOrganizer('GET', '/content/videos?limit=100', undefined, organizer.readKey)).json().data as Array<{
          id: string;
        }>
      ).map((video) => video.id);
    const before = await listedIds();
    expect(before).toContain(published.id);
    expect(before).not.toContain(draft.id);
    expect(before).not.toContain(scheduled.id);

    const publish = await asOrganizer('PATCH', `/content/videos/${draft.id}`, {
      publishedAt: new Date().toISOString(),
    });
    expect(publish.statusCode).toBe(200);
    expect(await listedIds()).toContain(draft.id);

    const unpublish = await asOrganizer('PATCH', `/content/videos/${draft.id}`, { publishedAt: null });
    expect(unpublish.json().data.publishedAt).toBeNull();
    expect(await listedIds()).not.toContain(draft.id);
  });

  test('the list pages with limit and cursor like every other list, newest first', async () => {
    const older = await createVideo();
    const newer = await createVideo();
    const first = (await asOrganizer('GET', '/content/videos?limit=1')).json();
    expect(first.data.map((video: { id: string }) => video.id)).toEqual([newer.id]);
    expect(first.page.hasMore).toBe(true);
    const second = (await asOrganizer('GET', `/content/videos?limit=1&cursor=${first.page.nextCursor}`)).json();
    expect(second.data.map((video: { id: string }) => video.id)).toEqual([older.id]);
  });

  test('one provider asset is registered once (409 ALREADY_EXISTS)', async () => {
    const video = await createVideo();
    const again = await asOrganizer('POST', '/content/videos', {
      title: 'Copy',
      providerAssetId: video.providerAssetId,
    });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('ALREADY_EXISTS');
  });

  test('validation errors use the contract error body', async () => {
    const response = await asOrganizer('POST', '/content/videos', { title: '', providerAssetId: 'not a playback id' });
    expect(response.statusCode).toBe(422);
    const { error } = response.json();
    expect(error).toMatchObject({ code: 'VALIDATION_FAILED', retryable: false });
    expect(error.details.fields.map((field: { field: string }) => field.field).sort()).toEqual(
      ['body.providerAssetId', 'body.title'].sort(),
    );
  });

  test('VIEWER reads content; writing it needs ADMIN', async () => {
    const viewer = await createOrganizer(api.orm.em.fork(), { role: 'VIEWER', workspaceId: organizer.workspaceId });
    expect((await asOrganizer('GET', '/content/videos', undefined, viewer.key)).statusCode).toBe(200);
    const write = await asOrganizer('POST', '/content/videos', { title: 'x', providerAssetId: 'abc' }, viewer.key);
    expect(write.statusCode).toBe(403);
    expect(write.json().error.code).toBe('INSUFFICIENT_ROLE');
  });

  test("another workspace's key sees none of this workspace's content", async () => {
    const video = await createVideo();
    const stranger = await createOrganizer(api.orm.em.fork());
    const listed = (await asOrganizer('GET', '/content/videos?limit=100', undefined, stranger.key)).json().data;
    expect(listed).toEqual([]);
    const token = await playbackToken(member.token, 'video', video.id, stranger.key);
    expect(token.statusCode).toBe(404);
  });
});

describe('community feed', () => {
  test('organizers publish posts and articles; scheduled ones stay hidden; an article needs a title', async () => {
    const article = await asOrganizer('POST', '/content/posts', {
      kind: 'article',
      title: 'Tour diary',
      body: 'Day one.',
    });
    expect(article.statusCode).toBe(201);
    expect(article.json().data).toMatchObject({
      kind: 'article',
      title: 'Tour diary',
      author: { type: 'organizer' },
    });
    const later = await asOrganizer('POST', '/content/posts', {
      body: 'Coming soon',
      publishedAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(later.statusCode).toBe(201);

    const feed = (await asOrganizer('GET', '/content/posts?limit=100')).json().data as Array<{ id: string }>;
    expect(feed.map((post) => post.id)).toContain(article.json().data.id);
    expect(feed.map((post) => post.id)).not.toContain(later.json().data.id);
    const articles = (await asOrganizer('GET', '/content/posts?kind=article&limit=100')).json().data;
    expect(articles.every((post: { kind: string }) => post.kind === 'article')).toBe(true);

    const untitled = await asOrganizer('POST', '/content/posts', { kind: 'article', body: 'No title' });
    expect(untitled.statusCode).toBe(422);
    expect(untitled.json().error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { fields: [{ field: 'body.title' }] },
    });
  });

  test('an active member posts in the feed; non-members, pending members and member articles are refused', async () => {
    const post = await asBuyer('POST', '/content/posts', member.token, { body: 'See you at the show!' });
    expect(post.statusCode).toBe(201);
    expect(post.json().data.author.type).toBe('member');
    const feed = (await asOrganizer('GET', '/content/posts?limit=100')).json().data as Array<{ id: string }>;
    expect(feed.map((row) => row.id)).toContain(post.json().data.id);

    for (const token of [nonMember.token, pendingMember.token]) {
      const refused = await asBuyer('POST', '/content/posts', token, { body: 'Hello' });
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'members_only' } });
    }
    const article = await asBuyer('POST', '/content/posts', member.token, { kind: 'article', title: 'T', body: 'B' });
    expect(article.statusCode).toBe(403);
    expect(article.json().error.details.reason).toBe('articles_by_organizers');
    const scheduled = await asBuyer('POST', '/content/posts', member.token, {
      body: 'Later',
      publishedAt: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(scheduled.statusCode).toBe(422);
  });
});

describe('a workspace registers and plays only the media it owns', () => {
  /** Another self-serve workspace, trying to replay the victim's media through its own key. */
  let attacker: Organizer;
  beforeAll(async () => {
    attacker = await createOrganizer(api.orm.em.fork());
  });

  const register = (kind: 'video' | 'live', playbackId: string, key: string) =>
    kind === 'video'
      ? asOrganizer('POST', '/content/videos', { title: 'Copy', providerAssetId: playbackId, membersOnly: false }, key)
      : asOrganizer(
          'POST',
          '/content/lives',
          {
            title: 'Copy',
            providerStreamId: playbackId,
            membersOnly: false,
            scheduledStartAt: new Date(Date.now() + 3_600_000).toISOString(),
          },
          key,
        );

  test.each([
    ['video', 'assets'],
    ['live', 'live-streams'],
  ] as const)("another workspace cannot register the victim's %s as public to mint tokens for it", async (kind, at) => {
    const victimPlaybackId = await createAtProvider(at);
    const registered = await register(kind, victimPlaybackId, organizer.key);
    expect(registered.statusCode).toBe(201);

    const replay = await register(kind, victimPlaybackId, attacker.key);
    expect(replay.statusCode).toBe(403);
    expect(replay.json().error).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'playback_id_not_owned' } });
    // The answer does not say whose media it is.
    expect(JSON.stringify(replay.json())).not.toContain(organizer.workspaceId);

    // Nothing of it is listed in the attacker's workspace, so it has nothing to mint a token for.
    const listed = await asOrganizer(
      'GET',
      `/content/${kind === 'video' ? 'videos' : 'lives'}?limit=100`,
      undefined,
      attacker.key,
    );
    expect(listed.json().data).toEqual([]);
  });

  test.each([
    ['video', 'assets'],
    ['live', 'live-streams'],
  ] as const)('media not yet registered by its owner is still refused to another workspace (%s)', async (kind, at) => {
    const notYetRegistered = await createAtProvider(at);
    const squat = await register(kind, notYetRegistered, attacker.key);
    expect(squat.statusCode).toBe(403);
    expect(squat.json().error.details.reason).toBe('playback_id_not_owned');
    expect((await register(kind, notYetRegistered, organizer.key)).statusCode).toBe(201);
  });

  test("another workspace cannot move its own video or live onto the victim's playback id", async () => {
    const own = await asOrganizer(
      'POST',
      '/content/videos',
      { title: 'Own', providerAssetId: await createAtProvider('assets', attacker.workspaceId) },
      attacker.key,
    );
    expect(own.statusCode).toBe(201);
    const victim = await createVideo({ membersOnly: true });
    const moved = await asOrganizer(
      'PATCH',
      `/content/videos/${own.json().data.id}`,
      { providerAssetId: victim.providerAssetId },
      attacker.key,
    );
    expect(moved.statusCode).toBe(403);

    const ownLive = await asOrganizer(
      'POST',
      '/content/lives',
      {
        title: 'Own live',
        providerStreamId: await createAtProvider('live-streams', attacker.workspaceId),
        scheduledStartAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
      attacker.key,
    );
    expect(ownLive.statusCode).toBe(201);
    const victimLive = await createLive({ membersOnly: true });
    const movedLive = await asOrganizer(
      'PATCH',
      `/content/lives/${ownLive.json().data.id}`,
      { providerStreamId: victimLive.providerStreamId },
      attacker.key,
    );
    expect(movedLive.statusCode).toBe(403);
  });

  test('a playback id unknown at the provider (422), without an owner (403) or of the other kind (422) is refused', async () => {
    const unknown = await register('video', `asset${unique()}${unique()}`, organizer.key);
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error.details.fields[0].field).toBe('body.providerAssetId');
    const ownerless = await register('video', await createAtProvider('assets', null), organizer.key);
    expect(ownerless.statusCode).toBe(403);
    const liveAsVideo = await register('video', await createAtProvider('live-streams'), organizer.key);
    expect(liveAsVideo.statusCode).toBe(422);
    const videoAsLive = await register('live', await createAtProvider('assets'), organizer.key);
    expect(videoAsLive.statusCode).toBe(422);
  });
});

describe('signed playback', () => {
  test('a member gets a short-lived token bound to them and the asset, and the provider plays it', async () => {
    const video = await createVideo({ membersOnly: true });
    const response = await playbackToken(member.token, 'video', video.id);
    expect(response.statusCode).toBe(200);
    const { token, expiresAt, playbackUrl } = response.json().data;

    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'RS256', kid: signingKey.id });
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ sub: video.providerAssetId, aud: 'v', viewer_id: member.buyerId });
    expect(claims.exp! - claims.iat!).toBe(api.env.VIDEO_PLAYBACK_TOKEN_TTL_SECONDS);
    expect(Date.parse(expiresAt)).toBe(claims.exp! * 1000);

    const played = await fetch(playbackUrl);
    expect(played.status).toBe(200);
    expect(played.headers.get('content-type')).toMatch(/mpegurl/);
    expect(await played.text()).toMatch(/^#EXTM3U/);
  });

  test('non-members and unpaid signups are refused members-only assets (403) but play public ones', async () => {
    const membersOnly = await createVideo({ membersOnly: true });
    const open = await createVideo({ membersOnly: false });
    for (const token of [nonMember.token, pendingMember.token]) {
      const refused = await playbackToken(token, 'video', membersOnly.id);
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'members_only' } });
    }
    const allowed = await playbackToken(nonMember.token, 'video', open.id);
    expect(allowed.statusCode).toBe(200);
    expect((await play(open.providerAssetId, allowed.json().data.token)).status).toBe(200);
  });

  test('no buyer session is 401, an unknown or unpublished asset 404, a read key 403 READ_ONLY_KEY', async () => {
    const video = await createVideo();
    const anonymous = await asOrganizer('POST', '/content/playback-token', { assetType: 'video', assetId: video.id });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error.code).toBe('CUSTOMER_SESSION_REQUIRED');

    const expiredSession = await playbackToken('not-a-session', 'video', video.id);
    expect(expiredSession.statusCode).toBe(401);

    const unknown = await playbackToken(member.token, 'video', '0190a5b2-0000-7000-8000-000000000000');
    expect(unknown.statusCode).toBe(404);
    const draft = await createVideo({ publishedAt: null });
    expect((await playbackToken(member.token, 'video', draft.id)).statusCode).toBe(404);
    // A live id asked for as a video names no video.
    const live = await createLive();
    expect((await playbackToken(member.token, 'video', live.id)).statusCode).toBe(404);

    const readOnly = await playbackToken(member.token, 'video', video.id, organizer.readKey);
    expect(readOnly.statusCode).toBe(403);
    expect(readOnly.json().error.code).toBe('READ_ONLY_KEY');

    const invalid = await playbackToken(member.token, 'audio' as 'video', video.id);
    expect(invalid.statusCode).toBe(422);
    expect(invalid.json().error.details.fields[0].field).toBe('body.assetType');
  });

  test('the provider rejects a forged token, an expired one, one for another asset and one for another use', async () => {
    const video = await createVideo();
    const other = await createVideo();
    const issued = (await playbackToken(member.token, 'video', video.id)).json().data.token as string;
    const realKey = { id: signingKey.id, privateKey: decodeRsaPrivateKey(signingKey.privateKeyText) };
    const refusal = async (response: Response) => {
      expect(response.status).toBe(403);
      return ((await response.json()) as { error: { type: string } }).error.type;
    };

    // Same kid, another key: the signature does not verify against the key the provider issued.
    const { privateKey: forgedKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = await signPlaybackToken(
      { id: signingKey.id, privateKey: forgedKey },
      { playbackId: video.providerAssetId, viewerId: member.buyerId },
      { now: new Date(), ttlSeconds: 600 },
    );
    expect(await refusal(await play(video.providerAssetId, forged.token))).toBe('invalid_signature');
    const unknownKid = await signPlaybackToken(
      { id: 'not-issued-by-the-provider', privateKey: forgedKey },
      { playbackId: video.providerAssetId, viewerId: member.buyerId },
      { now: new Date(), ttlSeconds: 600 },
    );
    expect(await refusal(await play(video.providerAssetId, unknownKid.token))).toBe('unknown_signing_key');

    // The real key, but issued twenty minutes ago with the ten-minute lifetime.
    const expired = await signPlaybackToken(
      realKey,
      { playbackId: video.providerAssetId, viewerId: member.buyerId },
      { now: new Date(Date.now() - 20 * 60_000), ttlSeconds: 600 },
    );
    expect(await refusal(await play(video.providerAssetId, expired.token))).toBe('token_expired');

    // A valid token names its asset: it opens no other.
    expect(await refusal(await play(other.providerAssetId, issued))).toBe('invalid_claims');
    expect((await play(video.providerAssetId, issued)).status).toBe(200);

    // A thumbnail token (aud t) is not a playback token.
    const thumbnail = await new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: signingKey.id })
      .setSubject(video.providerAssetId)
      .setAudience('t')
      .setExpirationTime('10m')
      .sign(realKey.privateKey);
    expect(await refusal(await play(video.providerAssetId, thumbnail))).toBe('invalid_claims');

    const missing = await fetch(`${sandboxUrl()}/video/play/${video.providerAssetId}`);
    expect(await refusal(missing)).toBe('missing_token');
  });

  test('without a configured key, outside production, the API gets a development key from the provider', async () => {
    const devApi = await startTestApi();
    try {
      expect(devApi.env.VIDEO_SIGNING_KEY_ID).toBeUndefined();
      const video = await createVideo();
      const response = await devApi.request({
        method: 'POST',
        url: '/api/v1/content/playback-token',
        headers: { ...bearer(organizer.key), ...session(member.token) },
        payload: { assetType: 'video', assetId: video.id },
      });
      expect(response.statusCode).toBe(200);
      const { token, playbackUrl } = response.json().data;
      expect(decodeProtectedHeader(token).kid).not.toBe(signingKey.id);
      expect((await fetch(playbackUrl)).status).toBe(200);
    } finally {
      await devApi.close();
    }
  });
});

describe('live streams', () => {
  test('scheduled → live → ended, with the time of each change; no way back', async () => {
    const live = await createLive({ membersOnly: true });
    expect(live.status).toBe('scheduled');
    const read = async () =>
      (await asOrganizer('GET', `/content/lives/${live.id}`, undefined, organizer.readKey)).json();
    expect((await read()).data).toMatchObject({ status: 'scheduled', startedAt: null, endedAt: null });

    const started = await asOrganizer('PATCH', `/content/lives/${live.id}`, { status: 'live' });
    expect(started.statusCode).toBe(200);
    expect(started.json().data.status).toBe('live');
    const startedAt = started.json().data.startedAt as string;
    expect(Date.parse(startedAt)).toBeLessThanOrEqual(Date.now());
    // Asking again changes nothing (a retried call is harmless).
    const again = await asOrganizer('PATCH', `/content/lives/${live.id}`, { status: 'live' });
    expect(again.json().data.startedAt).toBe(startedAt);

    const liveNow = (await asOrganizer('GET', '/content/lives?status=live&limit=100')).json().data;
    expect(liveNow.map((row: { id: string }) => row.id)).toContain(live.id);
    expect(liveNow.every((row: { status: string }) => row.status === 'live')).toBe(true);

    const token = await playbackToken(member.token, 'live', live.id);
    expect(token.statusCode).toBe(200);
    expect(decodeJwt(token.json().data.token).sub).toBe(live.providerStreamId);
    expect((await fetch(token.json().data.playbackUrl)).status).toBe(200);
    expect((await playbackToken(nonMember.token, 'live', live.id)).statusCode).toBe(403);

    const ended = await asOrganizer('PATCH', `/content/lives/${live.id}`, { status: 'ended' });
    expect(ended.json().data).toMatchObject({ status: 'ended', startedAt });
    expect(Date.parse(ended.json().data.endedAt)).toBeGreaterThanOrEqual(Date.parse(startedAt));

    for (const status of ['live', 'scheduled']) {
      const back = await asOrganizer('PATCH', `/content/lives/${live.id}`, { status });
      expect(back.statusCode).toBe(409);
      expect(back.json().error).toMatchObject({
        code: 'INVALID_STATE',
        details: { reason: 'live_transition_not_allowed', from: 'ended', to: status },
      });
    }
    const afterEnd = await playbackToken(member.token, 'live', live.id);
    expect(afterEnd.statusCode).toBe(409);
    expect(afterEnd.json().error.details.reason).toBe('live_ended');
  });

  test('a stream called off before it starts ends without a start; lives list and 404 for unknown ids', async () => {
    const live = await createLive();
    const calledOff = await asOrganizer('PATCH', `/content/lives/${live.id}`, { status: 'ended' });
    expect(calledOff.json().data).toMatchObject({ status: 'ended', startedAt: null });
    const live2 = await createLive();
    const ids = (await asOrganizer('GET', '/content/lives?limit=100')).json().data.map((row: { id: string }) => row.id);
    expect(ids).toEqual(expect.arrayContaining([live.id, live2.id]));
    expect((await asOrganizer('GET', '/content/lives/0190a5b2-0000-7000-8000-000000000000')).statusCode).toBe(404);
    const badStatus = await asOrganizer('PATCH', `/content/lives/${live2.id}`, { status: 'paused' });
    expect(badStatus.statusCode).toBe(422);
    expect(badStatus.json().error.code).toBe('VALIDATION_FAILED');
  });
});

describe('configuration', () => {
  const realSecrets = {
    SECRETS_ENCRYPTION_KEY: 'a1'.repeat(32),
    PAYLOAD_CODEC_KEYS: `prod-1:${Buffer.alloc(32, 7).toString('base64')}`,
    PAYLOAD_CODEC_ACTIVE_KEY: 'prod-1',
    GATEWAY_A_ACCESS_TOKEN: 'APP_USR-real-access-token',
    GATEWAY_A_WEBHOOK_SECRET: 'real-webhook-secret',
    GATEWAY_B_API_KEY: 'real-identity-key',
    GATEWAY_B_SECRET_KEY: 'real-secret-key',
    SEATMAP_SECRET_KEY: 'real-seatmap-key',
    // The providers are the sandbox's here: what this file checks is the playback key.
    ALLOW_SANDBOX_PROVIDERS: 'true',
  };

  test('production refuses to start without the playback signing key, and accepts PEM, base64 PEM or JWK', () => {
    expect(() => loadEnv({ NODE_ENV: 'production', ...realSecrets })).toThrow(
      /VIDEO_SIGNING_KEY_ID and VIDEO_SIGNING_PRIVATE_KEY are required in production/,
    );
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const jwk = JSON.stringify(privateKey.export({ format: 'jwk' }));
    for (const configured of [pem, Buffer.from(pem).toString('base64'), jwk]) {
      const env = loadEnv({
        NODE_ENV: 'production',
        ...realSecrets,
        VIDEO_SIGNING_KEY_ID: 'key-1',
        VIDEO_SIGNING_PRIVATE_KEY: configured,
      });
      expect(env.VIDEO_SIGNING_KEY_ID).toBe('key-1');
    }
  });

  test('a key id without its key, or a key that is not an RSA private key, is refused in any environment', () => {
    expect(() => loadEnv({ NODE_ENV: 'development', VIDEO_SIGNING_KEY_ID: 'key-1' })).toThrow(/together/);
    const { privateKey: ecKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(() =>
      loadEnv({
        NODE_ENV: 'development',
        VIDEO_SIGNING_KEY_ID: 'key-1',
        VIDEO_SIGNING_PRIVATE_KEY: ecKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      }),
    ).toThrow(/VIDEO_SIGNING_PRIVATE_KEY: must be an RSA private key/);
  });
});
